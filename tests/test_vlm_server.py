"""The VLM runner against a local OpenAI-compatible server started in the test (127.0.0.1):
prompts, images and boxes as each model family expects them, recovery from 500/429/hangs,
round-robin servers, setting 3, the CLI, and a run killed half-way then resumed."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hoibench.cli import main
from hoibench.data import Choice, MCQuestion
from hoibench.formats import read_answers, read_questions
from hoibench.formats.questions import write_questions
from hoibench.models import CachedBackend, make_backend
from hoibench.runners import MCQRunner
from hoibench.runners.mcq import load_template, render_question
from hoibench.testing import FakeChatServer, FakeReply, request_image, request_text

from .conftest import shared_file

BOX = (310.0, 19.0, 362.0, 123.0)
# the same box written in each family's coordinates for a 640x480 image (worked out by hand:
# Qwen2.5 640x480 → 644x476, x*644/640, y*476/480; Qwen3 0–1000; original pixels)
EXPECTED_BOX = {
    "qwen2.5": ("[311.94, 18.84, 364.26, 121.97]", (644, 476)),
    "qwen3": ("[484, 40, 566, 256]", (640, 480)),
    "original": ("[310.0, 19.0, 362.0, 123.0]", (640, 480)),
    "relative-1000": ("[484, 40, 566, 256]", (640, 480)),
}


def _questions(n, setting=2, box=BOX):
    return [MCQuestion(id=f"q{i}", file_name=f"im{i % 3}.jpg", setting=setting,
                       choices=(Choice(f"hold a/an obj{i}"), Choice(f"ride a/an obj{i}"),
                                Choice(f"no_interaction with a/an obj{i}"), Choice(f"feed a/an obj{i}")),
                       correct=frozenset({0}), person_box=box if setting > 1 else None)
            for i in range(n)]


@pytest.fixture
def images(tmp_path):
    d = tmp_path / "images"
    d.mkdir()
    for k in range(3):
        Image.new("RGB", (640, 480), (40 * k, 90, 200)).save(d / f"im{k}.jpg", quality=95)
    return d


def _qid(body):
    m = re.search(r"\(A\) \S+ a/an obj(\d+)|obj(\d+)", request_text(body))
    return None if m is None else f"q{m.group(1) or m.group(2)}"


def _runner(url, images, *, model="Qwen/Qwen2.5-VL-7B-Instruct", cache=None, **kw):
    backend = make_backend("openai", model=model, base_urls=url if isinstance(url, list) else [url],
                           concurrency=kw.pop("concurrency", 8), backoff=0.01,
                           timeout=kw.pop("timeout", 30.0), max_retries=kw.pop("max_retries", 5))
    if cache is not None:
        backend = CachedBackend(backend, cache)
    return MCQRunner(backend, images=images, model=model, progress=False, **kw)


@pytest.mark.parametrize("convention", sorted(EXPECTED_BOX))
def test_requests_carry_exact_prompt_image_and_box(tmp_path, images, convention):
    qs = _questions(4)
    tpl = load_template()
    with FakeChatServer(lambda body: "A") as server:
        summary = _runner(server.url, images, box_convention=convention, seed=5).run(qs, tmp_path / "a.jsonl")
    assert summary.ok == 4 and summary.requests == 4
    box_text, size = EXPECTED_BOX[convention]
    by_q = {_qid(b): b for b in server.bodies}
    for q in qs:
        body = by_q[q.id]
        assert body["model"] == "Qwen/Qwen2.5-VL-7B-Instruct"
        assert body["temperature"] == 0.0 and body["max_tokens"] == 512
        content = body["messages"][0]["content"]
        assert [p["type"] for p in content] == ["image_url", "text"]  # image first, then the text
        expected = render_question(q, tpl, box_text=box_text, seed=5).text
        assert content[1]["text"] == expected
        assert f"bounding box {box_text}.\nQuestion:" in expected
        img = Image.open(io.BytesIO(request_image(body)))
        assert img.size == size
        if size == (640, 480):  # not resized: the file's own bytes are sent
            assert request_image(body) == (images / q.file_name).read_bytes()
    answers = read_answers(tmp_path / "a.jsonl", qs)
    for q in qs:
        a = answers.by_id()[q.id]
        assert a.selected == {q.choices[q.order(5)[0]].text} and a.raw == "A"


def test_a_letter_named_twice_is_two_picks(tmp_path, images):
    """The released code keeps a reply's letters as a list; the answer keeps the repeat for the
    crosshoi protocol, and ``selected`` stays the set."""
    qs = _questions(1)
    with FakeChatServer(lambda body: "A, B, A") as server:
        _runner(server.url, images).run(qs, tmp_path / "a.jsonl")
    assert server.count == 1
    a = read_answers(tmp_path / "a.jsonl", qs).by_id()["q0"]
    order = [qs[0].choices[i].text for i in qs[0].order()]
    assert a.selected == {order[0], order[1]} and a.meta["letters"] == ["A", "B"]
    assert a.picks == tuple(sorted([order[0], order[1], order[0]]))


def test_internvl_asks_the_perceived_size_first(tmp_path, images):
    def handler(body):
        text = request_text(body)
        return "```json\n[448, 336]\n```" if text.startswith("Please provide the coordinates") else "B"

    qs = _questions(3)
    with FakeChatServer(handler) as server:
        s = _runner(server.url, images, model="OpenGVLab/InternVL3-8B").run(qs, tmp_path / "a.jsonl")
    assert s.ok == 3 and server.count == 6
    texts = [request_text(b) for b in server.bodies]
    sized = [t.startswith("Please provide") for t in texts]
    assert sum(sized) == 3  # one size query per image
    # each image's size query comes before its question (how questions interleave across images
    # depends on when each image is ready, so only the per-image order is fixed)
    seen: set[bytes] = set()
    for body, is_size in zip(server.bodies, sized):
        image = request_image(body)
        if is_size:
            seen.add(image)
        else:
            assert image in seen, "a question was asked before its image's perceived size"
    # 310 * 448/640 = 217.0, 19 * 336/480 = 13.3, 362 * 0.7 = 253.4, 123 * 0.7 = 86.1
    assert all("[217.0, 13.3, 253.4, 86.1]" in t for t, s in zip(texts, sized) if not s)
    for b in server.bodies:  # InternVL sees the original image
        assert Image.open(io.BytesIO(request_image(b))).size == (640, 480)


def test_internvl_size_parse_failure_is_recorded(tmp_path, images):
    qs = _questions(1)
    with FakeChatServer(lambda body: "I cannot tell") as server:
        s = _runner(server.url, images, model="InternVL3-8B").run(qs, tmp_path / "a.jsonl")
    assert s.parse_error == 1 and server.count == 1
    a = read_answers(tmp_path / "a.jsonl").by_id()["q0"]
    assert a.status == "parse_error" and a.meta["failed_stage"] == "image_size"


def test_setting3_detects_matches_and_asks_with_the_detected_box(tmp_path, images):
    # detections in the Qwen2.5 frame (644x476): the first box is the target (IoU ~0.9)
    replies = {
        "im0.jpg": '```json\n{"boxes": [[5, 5, 60, 60], [313.0, 20.5, 366.1, 122.0]]}\n```',
        "im1.jpg": 'Here you go: {"boxes": [[0, 0, 50, 50]]}',  # nobody near the target
        "im2.jpg": "```json\n{boxes: broken\n```",  # malformed JSON
    }
    by_color = {(40 * k, 90, 200): f"im{k}.jpg" for k in range(3)}

    def image_name(body):
        img = Image.open(io.BytesIO(request_image(body))).convert("RGB")
        assert img.size == (644, 476)  # detection is asked on the resized image too
        r, g, b = img.getpixel((5, 5))
        return next(n for c, n in by_color.items() if max(abs(r - c[0]), abs(g - c[1]), abs(b - c[2])) < 8)

    def handler(body):
        if "every single person" in request_text(body):
            return replies[image_name(body)]
        return "A,B"

    qs = _questions(6, setting=3)
    with FakeChatServer(handler) as server:
        s = _runner(server.url, images).run(qs, tmp_path / "a.jsonl")
    assert server.count == 3 + 2  # one detection per image, then the two matched questions
    assert (s.ok, s.no_person_match) == (2, 4)
    asked = [request_text(b) for b in server.bodies if "every single person" not in request_text(b)]
    assert all("bounding box [313.0, 20.5, 366.1, 122.0]." in t for t in asked)
    answers = read_answers(tmp_path / "a.jsonl").by_id()
    assert answers["q0"].meta["matched_box"] == pytest.approx([311.06, 20.67, 363.83, 123.03], abs=0.01)
    assert answers["q1"].status == "no_person_match" and answers["q1"].meta["n_detected"] == 1
    assert answers["q2"].meta["detection_status"] == "parse_error"


def test_setting3_with_external_detections(tmp_path, images):
    dets = {"im0.jpg": np.array([[308.0, 20.0, 360.0, 125.0]]), "im1.jpg": np.zeros((0, 4))}
    with FakeChatServer(lambda body: "C") as server:
        s = _runner(server.url, images, box_convention="original", detections=dets,
                    detections_id="d").run(_questions(2, setting=3), tmp_path / "a.jsonl")
    assert server.count == 1 and (s.ok, s.no_person_match) == (1, 1)
    assert "bounding box [308.0, 20.0, 360.0, 125.0]." in request_text(server.bodies[0])


def test_recovers_from_500_429_and_hangs(tmp_path, images):
    seen: dict[str, int] = {}

    def handler(body):
        q = _qid(body)
        seen[q] = seen.get(q, 0) + 1
        n = int(q[1:])
        if seen[q] == 1 and n % 3 == 0:
            return FakeReply(status=500)
        if seen[q] == 1 and n % 3 == 1:
            return FakeReply(status=429)
        if seen[q] <= 2 and n % 3 == 2:
            return FakeReply("A", delay=5.0)  # hangs past the client's timeout
        return "A"

    qs = _questions(9)
    with FakeChatServer(handler) as server:
        s = _runner(server.url, images, timeout=0.5).run(qs, tmp_path / "a.jsonl")
    assert s.ok == 9 and s.error == 0
    assert server.count == 3 * 2 + 3 * 2 + 3 * 3


def test_gives_up_and_records_errors_then_retries_them_on_rerun(tmp_path, images):
    state = {"down": True}
    qs = _questions(3)
    with FakeChatServer(lambda b: FakeReply(status=503) if state["down"] else "B") as server:
        s = _runner(server.url, images, max_retries=1, cache=tmp_path / "c.sqlite").run(qs, tmp_path / "a.jsonl")
        assert s.error == 3 and server.count == 6
        errs = read_answers(tmp_path / "a.jsonl").by_id()
        assert errs["q0"].status == "error" and "gave up after 2 attempts" in errs["q0"].meta["error"]
        state["down"] = False
        s2 = _runner(server.url, images, max_retries=1, cache=tmp_path / "c.sqlite").run(qs, tmp_path / "a.jsonl")
    assert s2.ok == 3 and s2.requests == 3 and s2.resumed == 0
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    assert len(lines) == 4  # header + one line per question after compaction


def test_round_robin_and_failover(tmp_path, images):
    qs = _questions(12)
    with FakeChatServer(lambda b: "A") as good, FakeChatServer(lambda b: FakeReply(status=500)) as bad, \
            FakeChatServer(lambda b: "A") as good2:
        s = _runner([good.url, bad.url, good2.url], images, concurrency=1).run(qs, tmp_path / "a.jsonl")
    assert s.ok == 12
    assert good.count > 0 and good2.count > 0 and bad.count > 0
    assert good.count + good2.count == 12  # every 500 went on to the next server


def test_parse_failures_are_recorded_not_guessed(tmp_path, images):
    with FakeChatServer(lambda b: "I would say (A) and maybe B") as server:
        s = _runner(server.url, images).run(_questions(2), tmp_path / "a.jsonl")
    assert s.parse_error == 2 and server.count == 2
    a = read_answers(tmp_path / "a.jsonl").by_id()["q0"]
    assert a.selected == frozenset() and a.raw == "I would say (A) and maybe B"


def test_cli_run_and_one_line_errors(tmp_path, images, capsys):
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(4), header={"seed": 0})
    out = tmp_path / "ans.jsonl"
    with FakeChatServer(lambda b: "A,B") as server:
        args = ["mcq", "run", "--questions", str(qpath), "--images", str(images), "--model",
                "Qwen/Qwen2.5-VL-7B-Instruct", "--base-url", server.url, "--out", str(out),
                "--no-progress", "--json", "--limit", "3"]
        main(args)
        summary = json.loads(capsys.readouterr().out)
        assert summary["ok"] == 3 and summary["requests"] == 3 and server.count == 3
        header = json.loads(out.read_text().splitlines()[0])["header"]
        assert header["template"] == "crosshoi@1.0" and header["box_convention"] == "qwen2.5"
        main([*args, "--out", str(tmp_path / "extra.jsonl"), "--extra-body", '{"top_k": 1}'])
        capsys.readouterr()
        assert server.bodies[-1]["top_k"] == 1 and server.count == 6
        with pytest.raises(SystemExit):
            main([*args, "--extra-body", "[1]"])
        assert "--extra-body must be a JSON object" in capsys.readouterr().err
        main(args)  # same arguments: nothing left to ask
        assert json.loads(capsys.readouterr().out)["resumed"] == 3 and server.count == 6
        with pytest.raises(SystemExit) as exc:
            main([*args[:-2], "--setting", "3"])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.startswith("error: ") and "other settings" in err
        assert len(err.strip().splitlines()) == 1
        (images / "im1.jpg").unlink()
        with pytest.raises(SystemExit):
            main([*args[:-2], "--out", str(tmp_path / "other.jsonl")])
        err = capsys.readouterr().err
        assert "image(s) not found" in err and len(err.strip().splitlines()) == 1


KILL_SCRIPT = """
import sys
from hoibench.cli import main
main(sys.argv[1:])
"""


def test_killed_run_resumes_with_only_the_missing_requests(tmp_path, images):
    n = 40
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(n), header={"seed": 0})
    out = tmp_path / "ans.jsonl"
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT)
    asked: list[list[str]] = [[], []]
    phase = [0]

    def handler(body):
        asked[phase[0]].append(_qid(body))
        return FakeReply("A", delay=0.08)

    with FakeChatServer(handler) as server:
        args = [sys.executable, str(script), "mcq", "run", "--questions", str(qpath), "--images",
                str(images), "--model", "Qwen/Qwen2.5-VL-7B-Instruct", "--base-url", server.url,
                "--out", str(out), "--concurrency", "2", "--no-progress", "--json"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            if out.exists() and out.read_text().count("\n") >= 12:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        lines = out.read_text().splitlines()
        answered = {json.loads(ln)["question_id"] for ln in lines[1:] if ln.strip().endswith("}")}
        assert 10 <= len(answered) < n, "the run should have been killed half-way"
        time.sleep(0.3)  # let requests that were in flight drain
        phase[0] = 1
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
    # the re-run asked only for questions that had no answer, each at most once
    assert not set(asked[1]) & answered
    assert len(asked[1]) == len(set(asked[1])) == summary["requests"]
    assert summary["resumed"] >= len(answered)
    assert summary["requests"] + summary["cache_hits"] + summary["resumed"] == n
    assert summary["requests"] <= n - len(answered)
    assert set(asked[0]) | set(asked[1]) == {f"q{i}" for i in range(n)}
    final = read_answers(out)
    assert sorted(a.question_id for a in final) == sorted(f"q{i}" for i in range(n))
    assert all(a.status == "ok" for a in final) and final.n_replaced == 0


def test_released_crosshoi_prompts_reproduced(tmp_path):
    """On the released HICO-DET question file, the prompt box is the file's box printed as the
    released code prints it (a Python list of the JSON floats) when ``box_shift=1`` undoes the
    reader's 1-based → 0-based shift, and the choices are the file's texts."""
    path = shared_file("crosshoi-bench/hicodet/our_test/crosshoi_bench_hum_box_final.json")
    raw = json.loads(Path(path).read_text())
    qs = list(read_questions(path))[:25]
    img_dir = tmp_path / "img"
    img_dir.mkdir()
    for q in qs:
        Image.new("RGB", (64, 48)).save(img_dir / q.file_name)
    with FakeChatServer(lambda b: "A") as server:
        runner = MCQRunner(make_backend("openai", model="llava-onevision", base_urls=[server.url]),
                           images=img_dir, model="llava-onevision", box_shift=1.0, progress=False)
        s = runner.run(qs, tmp_path / "a.jsonl")
    assert s.ok == len(qs)
    texts = {request_text(b).split("Choices:")[0]: request_text(b) for b in server.bodies}
    for q in qs:
        entry = raw[q.file_name]
        head = ("Context: You are given an image  <image> and a target person with a bounding box "
                f"{entry['boxes']['human']}.\n")
        prompt = next(t for h, t in texts.items() if h.startswith(head))
        lines = prompt.split("Choices:\n")[1].split("\nIMPORTANT")[0].split("\n")
        shown = {ln[4:] for ln in lines}
        expect = {t if "no_interaction" not in t else "no_interaction with" + t[t.index(" a/an ") + 5:]
                  for t in entry["gt_choices"] + entry["wrong_choices"]}
        if len(expect) < 4:
            expect.add("None")
        assert shown == expect


def test_oracle_server_scores_perfectly_on_released_questions(tmp_path, capsys):
    """run → score on real questions: a server that knows the released answers and replies with
    their letters must score 100%, which proves the letter ↔ choice mapping end to end."""
    path = shared_file("crosshoi-bench/hicodet/our_test/crosshoi_bench_hum_box_final.json")
    raw = json.loads(Path(path).read_text())
    qs = list(read_questions(path))[:30]
    img_dir = tmp_path / "img"
    img_dir.mkdir()
    color = {}
    for k, q in enumerate(qs):
        c = (k * 8 % 256, 255 - k * 8 % 256, 100)
        color[c] = q.file_name
        Image.new("RGB", (96, 64), c).save(img_dir / q.file_name, format="PNG")
    sub = tmp_path / "sub.json"
    sub.write_text(json.dumps({q.file_name: raw[q.file_name] for q in qs}))

    def oracle(body):
        img = Image.open(io.BytesIO(request_image(body))).convert("RGB")
        entry = raw[color[img.getpixel((3, 3))]]
        gt = {t if "no_interaction" not in t else "no_interaction with" + t[t.index(" a/an ") + 5:]
              for t in entry["gt_choices"]}
        text = request_text(body)
        letters = [m.group(1) for m in re.finditer(r"^\(([A-Z])\) (.*)$", text, re.M) if m.group(2) in gt]
        return ",".join(letters)

    out = tmp_path / "answers.jsonl"
    with FakeChatServer(oracle) as server:
        main(["mcq", "run", "--questions", str(sub), "--images", str(img_dir), "--model", "Qwen2.5-VL-7B",
              "--base-url", server.url, "--out", str(out), "--no-progress", "--json", "--seed", "11"])
    assert json.loads(capsys.readouterr().out)["ok"] == len(qs)
    main(["mcq", "score", "--questions", str(sub), "--answers", str(out), "--json", str(tmp_path / "s.json")])
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["instance_f1"] == pytest.approx(1.0) and scores["exact_match"] == pytest.approx(1.0)


def test_small_chunks_prefetch_images_and_keep_question_order(tmp_path, images):
    qs = _questions(7, setting=3)
    dets = {f"im{k}.jpg": np.array([BOX]) for k in range(3)}
    with FakeChatServer(lambda b: "D") as server:
        s = _runner(server.url, images, chunk_size=2, box_convention="original", detections=dets,
                    detections_id="d").run(qs, tmp_path / "a.jsonl")
    assert s.ok == 7 and server.count == 7
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    assert [json.loads(ln)["question_id"] for ln in lines[1:]] == [q.id for q in qs]


def test_cli_detections_file_and_missing_extra(tmp_path, images, capsys):
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(3), header={"seed": 0})
    det = tmp_path / "det.json"
    det.write_text(json.dumps({"im0.jpg": {"boxes": [[309, 20, 361, 122]], "scores": [0.9], "labels": ["person"]},
                               "im1.jpg": [], "im2.jpg": [[0, 0, 5, 5]]}))
    base = ["mcq", "run", "--questions", str(qpath), "--images", str(images), "--model", "llava-onevision-7b",
            "--no-progress", "--json"]
    with FakeChatServer(lambda b: "A") as server:
        main([*base, "--base-url", server.url, "--setting", "3", "--detections", str(det),
              "--out", str(tmp_path / "a.jsonl")])
    summary = json.loads(capsys.readouterr().out)
    assert (summary["ok"], summary["no_person_match"]) == (1, 2) and server.count == 1
    assert "with a bounding box [309.0, 20.0, 361.0, 122.0]." in request_text(server.bodies[0])
    header = read_answers(tmp_path / "a.jsonl").header
    assert header["detections"].startswith("det.json:sha256:") and header["setting"] == 3
    with pytest.raises(SystemExit) as exc:
        main([*base, "--setting", "2", "--detections", str(det), "--out", str(tmp_path / "b.jsonl")])
    assert exc.value.code == 2 and "only used with --setting 3" in capsys.readouterr().err
    pytest.importorskip("openai")
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(SystemExit) as exc:
            main([*base, "--backend", "vllm", "--out", str(tmp_path / "c.jsonl")])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "pip install 'hoibench[vllm]'" in err and len(err.strip().splitlines()) == 1


def test_person_and_object_boxes_share_the_frame(tmp_path, images):
    q = MCQuestion(id="po", file_name="im0.jpg", setting=2, choices=(Choice("hold a/an cup"), Choice("wash a/an cup")),
                   correct=frozenset({0}), person_box=BOX, object_box=(0.0, 0.0, 640.0, 480.0))
    with FakeChatServer(lambda b: "A") as server:
        s = _runner(server.url, images).run([q], tmp_path / "a.jsonl")
    assert s.ok == 1
    text = request_text(server.bodies[0])
    assert "- Person bbox: [311.94, 18.84, 364.26, 121.97]\n- Object bbox: [0.0, 0.0, 644.0, 476.0]\n" in text
    assert read_answers(tmp_path / "a.jsonl").by_id()["po"].meta["prompt_object_box"] == "[0.0, 0.0, 644.0, 476.0]"
