"""Position sensitivity: answers given under several choice orders, one file per order (as
``mcq run --permutation K`` writes them), are scored order by order."""

from __future__ import annotations

import json
import subprocess
import sys

from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.formats import write_answers, write_questions


def _questions() -> list[MCQuestion]:
    return [MCQuestion(f"q{i}", f"img{i}.jpg", 1, (Choice("a"), Choice("b"), Choice("c"), Choice("d")),
                       frozenset({0})) for i in range(6)]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hoibench", *args], capture_output=True, text=True, timeout=120)


def test_score_several_order_files_and_reject_the_same_order_twice(tmp_path):
    qs = _questions()
    write_questions(tmp_path / "q.jsonl", qs)
    # order 0: always right; order 1: right on half of the questions
    write_answers(tmp_path / "o0.jsonl", [MCAnswer(q.id, frozenset({"a"})) for q in qs], header={"permutation": 0})
    write_answers(tmp_path / "o1.jsonl", [MCAnswer(q.id, frozenset({"a" if i % 2 else "b"}))
                                          for i, q in enumerate(qs)], header={"permutation": 1})
    out = tmp_path / "m.json"
    r = _run("mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(tmp_path / "o0.jsonl"),
             "--answers", str(tmp_path / "o1.jsonl"), "--json", str(out))
    assert r.returncode == 0, r.stderr
    metrics = json.loads(out.read_text())
    orders = metrics["permutations"]
    assert len(orders) == 2
    ems = sorted(v["exact_match"] for v in orders.values())
    assert ems == [0.5, 1.0]
    r = _run("mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(tmp_path / "o0.jsonl"),
             "--answers", str(tmp_path / "o0.jsonl"))
    assert r.returncode == 2 and "also answered in" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_run_several_orders_then_score_them(tmp_path, capsys):
    from PIL import Image

    from hoibench.cli import main
    from hoibench.formats import read_answers
    from hoibench.testing import FakeChatServer

    images = tmp_path / "images"
    images.mkdir()
    qs = [MCQuestion(f"q{i}", f"im{i}.jpg", 1, tuple(Choice(f"{v} a/an obj{i}") for v in ("hold", "ride", "feed", "wash")),
                     frozenset({0})) for i in range(5)]
    for q in qs:
        Image.new("RGB", (64, 48), (90, 90, 200)).save(images / q.file_name)
    write_questions(tmp_path / "q.jsonl", qs)
    out = tmp_path / "ans.jsonl"
    with FakeChatServer(lambda body: "A") as server:  # always the first letter shown
        main(["mcq", "run", "--questions", str(tmp_path / "q.jsonl"), "--images", str(images), "--model",
              "llava-onevision-7b", "--base-url", server.url, "--out", str(out), "--permutations", "3",
              "--no-progress", "--json"])
        orders = json.loads(capsys.readouterr().out)["orders"]
        assert [o["ok"] for o in orders] == [5, 5, 5] and server.count == 15
    files = [tmp_path / f"ans.order{k}.jsonl" for k in range(3)]
    picked = []
    for k, f in enumerate(files):
        answers = read_answers(f, qs)
        assert answers.header["permutation"] == k
        # "A" is the first choice of order k: the runner resolved it with that order
        picked.append({a.question_id: a.selected for a in answers})
        for q in qs:
            assert picked[k][q.id] == {q.choices[q.order(0, k)[0]].text}
    assert picked[0] != picked[1] or picked[0] != picked[2]
    main(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), *[x for f in files for x in ("--answers", str(f))],
          "--json", str(tmp_path / "m.json")])
    capsys.readouterr()
    scored = json.loads((tmp_path / "m.json").read_text())
    assert len(scored["permutations"]) == 3 and "position_sensitivity" in scored
