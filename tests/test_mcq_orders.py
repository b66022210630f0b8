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
