"""The dry-run helpers users get from ``hoibench.testing``: ``noisy_predictions`` (a stand-in
detector) and ``python -m hoibench.testing.fake_server`` (a stand-in VLM server)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hoibench.data import HOIDataset
from hoibench.evaluation import hico_mean_ap
from hoibench.formats import read_questions
from hoibench.vocab import hico_det
from tests.conftest import FIXTURES
from tests.test_map_bootstrap import synthetic_ground_truth

V = hico_det()


def test_noisy_predictions_is_public_seeded_and_scores_as_documented():
    from hoibench.testing import noisy_predictions

    gt = synthetic_ground_truth()
    has_gt = gt.hoi_counts() > 0
    a = noisy_predictions(gt, seed=3, per_image=(8, 30))
    b = noisy_predictions(gt, seed=3, per_image=(8, 30))
    c = noisy_predictions(gt, seed=4, per_image=(8, 30))
    np.testing.assert_array_equal(a.scores, b.scores)  # the same seed, the same detections
    assert not np.array_equal(a.scores, c.scores) or len(a.scores) != len(c.scores)
    assert sorted(a.file_names) == sorted(gt.file_names) and list(a.file_names) != list(gt.file_names)
    counts = np.diff(a.offsets)
    assert counts.min() >= 8 and counts.max() <= 30  # background fills up to the drawn count
    for seed in range(3):  # the docstring: mean AP over the classes with ground truth in 30-70
        r = hico_mean_ap(noisy_predictions(gt, seed=seed, per_image=(8, 30)), gt, protocol="qpic")
        assert 0.30 < r.full < 0.70
        assert r.full == pytest.approx(np.mean(r.per_class_ap[has_gt]))
    perfect = hico_mean_ap(_as_predictions(gt), gt, protocol="qpic")
    assert perfect.full == pytest.approx(1.0)


def _as_predictions(gt: HOIDataset):
    """The ground truth itself through ``HOIPredictions.from_arrays`` (docs/evaluation.md)."""
    from hoibench.data import HOIPredictions

    keep = gt.pair_hoi >= 0
    return HOIPredictions.from_arrays(
        V, gt.file_names, np.bincount(gt.pair_image[keep], minlength=gt.n_images),
        gt.pair_subject_boxes[keep], gt.pair_object_boxes[keep], gt.pair_object_label[keep],
        gt.pair_verb[keep], np.ones(int(keep.sum())))


# ------------------------------------------------------------------ the fake server as a command
def _server(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "hoibench.testing.fake_server", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _questions_and_images(tmp_path: Path) -> tuple[Path, Path]:
    """Questions built from the vendored mini annotation file, and an image of the annotated size
    and its own colour for each of its files."""
    from click.testing import CliRunner
    from PIL import Image

    from hoibench.cli import cli

    ann = FIXTURES / "mini_instances_test2015.json"
    q = tmp_path / "q.jsonl"
    r = CliRunner().invoke(cli, ["mcq", "build", "--dataset", str(ann), "--no-redistribute",
                                 "--no-remove-easy", "--out", str(q)])
    assert r.exit_code == 0, r.output
    images = tmp_path / "images"
    images.mkdir()
    raw = json.loads(ann.read_text())
    for k, (name, (w, h)) in enumerate(zip(raw["filenames"], raw["size"], strict=True)):
        Image.new("RGB", (w, h), (k * 9 % 256, 40, 200)).save(images / name, format="JPEG")
    return q, images


def test_fake_server_answers_mcq_run_from_the_ground_truth(tmp_path):
    from click.testing import CliRunner

    from hoibench.cli import cli

    q, images = _questions_and_images(tmp_path)
    proc = _server("--port", "0", "--questions", str(q), "--images", str(images))
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", first)
        assert url is not None, first + proc.stderr.read()  # type: ignore[union-attr]
        assert "mode truth" in first and "48 questions" in first
        command = [proc.stdout.readline() for _ in range(2)][1].split()  # type: ignore[union-attr]
        assert command[:3] == ["hoibench", "mcq", "run"] and url.group(0) in command
        for setting in ("1", "2", "3"):
            out = tmp_path / f"a{setting}.jsonl"
            r = CliRunner().invoke(cli, ["mcq", "run", "--questions", str(q), "--images", str(images),
                                         "--model", "fake-model", "--base-url", url.group(0), "--out", str(out),
                                         "--setting", setting, "--no-progress", "--json", str(tmp_path / "r.json")])
            assert r.exit_code == 0, r.output
            scores = tmp_path / f"s{setting}.json"
            r = CliRunner().invoke(cli, ["mcq", "score", "--questions", str(q), "--answers", str(out),
                                         "--setting", setting, "--json", str(scores)])
            assert r.exit_code == 0, r.output
            got = json.loads(scores.read_text())
            assert got["macro_f1"] == pytest.approx(1.0) and got["exact_match"] == pytest.approx(1.0), setting
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped; answered 72 questions from the ground truth, 24 detection requests" in rest
    assert "several questions" not in rest and err == ""


def test_fake_server_random_mode_and_bad_arguments(tmp_path):
    from hoibench.testing import QuestionAnswerer

    body = {"model": "m", "messages": [{"role": "user", "content": "Q?\nChoices:\n(A) ride a/an horse\n"
                                        "(B) feed a/an horse\n(C) None\n(D) None\nIMPORTANT: letters"}]}
    answer = QuestionAnswerer("random", seed=1).reply(body)
    assert answer and set(answer.split(",")) <= {"A", "B"}  # never a padding choice
    assert QuestionAnswerer("random", seed=1).reply(body) == answer  # the same prompt, the same answer
    # truth: a prompt whose choices no question shows is an HTTP error naming why, never an answer
    from hoibench.data import Choice, MCQuestion

    q = MCQuestion("q1", "a.jpg", 1, (Choice("ride a/an horse"), Choice("no_interaction a/an horse")),
                   frozenset({1}))
    truth = QuestionAnswerer("truth", questions=[q])
    assert truth(body).status == 400 and "matches no question" in (truth(body).text or "")
    shown = {"model": "m", "messages": [{"role": "user", "content": "Q?\nChoices:\n(A) ride a/an horse\n"
                                          "(B) no_interaction with horse\n(C) None\n(D) None\nIMPORTANT"}]}
    assert truth(shown).text == "B" and truth.counts["truth"] == 1 and truth.counts["unmatched"] == 2
    for args, message in [(["--mode", "truth"], "needs the questions"),
                          (["--questions", str(tmp_path / "none.jsonl")], "none.jsonl"),
                          (["--port", "70000"], "--port must be"),
                          (["--latency", "-1"], "--latency must be"),
                          (["--mode", "oracle"], "invalid choice")]:
        proc = _server(*args)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2 and out == "", (args, out, err)
        assert len(err.strip().splitlines()) == 1 and message in err, (args, err)


def test_random_mode_finds_the_target_people_and_score_names_no_person_match(tmp_path):
    """A random dry run of setting 3 asks its questions (the server knows the images' people in
    every mode); answers the runner left empty for want of a person are named by `mcq score`."""
    from click.testing import CliRunner

    from hoibench.cli import cli
    from hoibench.testing import FakeChatServer, QuestionAnswerer

    q, images = _questions_and_images(tmp_path)
    out = tmp_path / "a3.jsonl"
    qs = read_questions(q)
    with FakeChatServer(QuestionAnswerer("random", questions=qs, images=images, seed=0)) as server:
        r = CliRunner().invoke(cli, ["mcq", "run", "--questions", str(q), "--images", str(images),
                                     "--model", "fake-model", "--base-url", server.url, "--out", str(out),
                                     "--setting", "3", "--no-progress"])
    assert r.exit_code == 0, r.output
    statuses = [json.loads(line).get("status") for line in out.read_text().splitlines()[1:]]
    assert statuses and set(statuses) == {"ok"}
    lines = out.read_text().splitlines()  # the same run had its people missed: score says why
    missed = [lines[0], *(json.dumps({**json.loads(x), "selected": [], "status": "no_person_match"})
                          for x in lines[1:])]
    (tmp_path / "missed.jsonl").write_text("\n".join(missed) + "\n")
    r = CliRunner().invoke(cli, ["mcq", "score", "--questions", str(q), "--answers", str(tmp_path / "missed.jsonl")])
    assert r.exit_code == 0, r.output
    assert f"note: {len(statuses)} of {len(statuses)} answers have status no_person_match" in r.output
