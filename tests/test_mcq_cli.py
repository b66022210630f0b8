"""``hoibench mcq build|stats|score|from-detections`` run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from hoibench.data import HOIPredictions, MCAnswer
from hoibench.formats import read_questions, write_answers
from hoibench.formats.predictions import write_predictions
from hoibench.vocab import hico_det
from tests.conftest import FIXTURES, shared_file

KEYS = {"macro_f1", "instance_f1", "micro_f1", "exact_match", "avg_precision", "avg_recall"}


def run_process(*args: str) -> subprocess.CompletedProcess[str]:
    """A real process: exit codes and the one-line error rule of ``main``."""
    return subprocess.run([sys.executable, "-m", "hoibench", "mcq", *args], capture_output=True, text=True,
                          timeout=300)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run(*args: str) -> Result:
    """In-process (fast) run of a command that is expected to succeed."""
    from click.testing import CliRunner

    from hoibench.cli import cli

    r = CliRunner().invoke(cli, ["mcq", *args], catch_exceptions=False)
    return Result(r.exit_code, r.stdout, r.stderr)


def _letters_answers(questions, path: Path, *, seed: int = 0, frac: float = 0.5) -> None:
    """Random answers given as letters in each question's presentation order."""
    rng = np.random.default_rng(1)
    lines = [json.dumps({"header": {"seed": seed, "model": "random"}})]
    for q in questions:
        letters = [k for k, _ in q.lettered(seed=seed) if rng.random() < frac]
        lines.append(json.dumps({"question_id": q.id, "selected": letters, "raw": ",".join(letters)}))
    path.write_text("\n".join(lines[:-1]) + "\n")  # the last question stays unanswered


def test_build_stats_score_from_detections_on_fixture(tmp_path: Path) -> None:
    ann = FIXTURES / "mini_instances_test2015.json"
    out = tmp_path / "q.jsonl"
    r = run("build", "--dataset", str(ann), "--seed", "1", "--no-redistribute", "--no-remove-easy",
            "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    qs = read_questions(out)
    assert report["questions"] == len(qs) > 0
    assert qs.header["seed"] == 1 and qs.header["negative_filter"] is None
    r2 = run("build", "--dataset", str(ann), "--seed", "1", "--no-redistribute", "--no-remove-easy",
             "--out", str(tmp_path / "q2.jsonl"), "--json")
    assert r2.returncode == 0 and (tmp_path / "q2.jsonl").read_bytes() == out.read_bytes()

    plot = tmp_path / "dist.png"
    r = run("stats", str(out), "--annotations", str(ann), "--json", "--plot", str(plot))
    assert r.returncode == 0, r.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    st = json.loads(r.stdout)
    assert st["questions"] == len(qs) and "scene_composition" in st and st["paper"]["images"] == 1274
    # build and stats report the class distribution of the same questions (setting 2's correct choices)
    same = ("distribution_setting", "classes_correct", "kl_train_benchmark", "kl_train_benchmark_full_support",
            "head_tail_ratio")
    assert {k: report[k] for k in same} == {k: st[k] for k in same} and st["distribution_setting"] == 2
    s2_only = [q for q in qs if q.setting == 2]
    assert st["classes_correct"] == len({q.choices[i].hoi for q in s2_only for i in q.correct})
    assert st["classes_correct_all_settings"] == len({q.choices[i].hoi for q in qs for i in q.correct})
    st1 = json.loads(run("stats", str(out), "--annotations", str(ann), "--json", "--setting", "1").stdout)
    assert st1["distribution_setting"] == 1 and st1["classes_correct"] == st1["classes_correct_all_settings"]
    r = run_process("stats", str(out), "--plot", str(tmp_path / "dist.pdf"))
    assert r.returncode == 2 and "dist.pdf: --plot writes a PNG image" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "dist.pdf").exists()

    ans = tmp_path / "a.jsonl"
    _letters_answers(qs, ans)
    res = tmp_path / "scores.json"
    # the file records no questions asked: --count-unanswered scores its unanswered question as a miss
    r = run("score", "--questions", str(out), "--answers", str(ans), "--json", str(res), "--bootstrap", "50",
            "--count-unanswered")
    assert r.returncode == 0, r.stderr
    scores = json.loads(res.read_text())
    assert set(scores) >= KEYS and all(0.0 <= scores[k] <= 1.0 for k in KEYS)
    assert scores["n_missing"] == 1 and "no answer" in r.stderr
    assert set(scores["ci"]) == KEYS - {"macro_f1"} and set(scores["se"]) == KEYS  # macro-F1: its SE only
    assert scores["ci_method"]["macro_f1"] == "se" and scores["ci_method"]["exact_match"] == "percentile"
    assert scores["kind"] == "mcq_metrics" and scores["benchmark"] == out.name  # a result hoibench report reads
    # '-' prints the same object on stdout (no table there), not to a file called '-'
    r = run("score", "--questions", str(out), "--answers", str(ans), "--json", "-", "--bootstrap", "50",
            "--model", "random", "--count-unanswered")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {**scores, "model": "random"} and not (Path.cwd() / "-").exists()

    # perfect answers score 1 everywhere
    perfect = tmp_path / "perfect.jsonl"
    write_answers(perfect, [MCAnswer(q.id, q.correct_texts) for q in qs])
    r = run("score", "--questions", str(out), "--answers", str(perfect), "--json", str(res), "--per-class")
    assert r.returncode == 0, r.stderr
    perfect_scores = json.loads(res.read_text())
    assert all(perfect_scores[k] == pytest.approx(1.0) for k in KEYS)
    assert perfect_scores["per_class"] and all(v["f1"] == 1.0 for v in perfect_scores["per_class"].values())

    # a detector that predicts every correct class of the image with a high score
    v = hico_det()
    names, counts, hb, ob, objs, verbs, scores_ = [], [], [], [], [], [], []
    for q in qs:
        if q.setting != 2:
            continue
        names.append(q.file_name)
        counts.append(len(q.correct))
        for i in sorted(q.correct):
            c = q.choices[i]
            hb.append(q.person_box)
            ob.append([0, 0, 1, 1])
            objs.append(c.object)
            verbs.append(c.verb)
            scores_.append(0.9)
    preds = HOIPredictions.from_arrays(v, names, counts, np.asarray(hb), np.asarray(ob), np.asarray(objs),
                                       np.asarray(verbs), np.asarray(scores_))
    pfile = tmp_path / "preds.json"
    write_predictions(preds, pfile)
    s2 = tmp_path / "s2.jsonl"
    r = run("build", "--dataset", str(ann), "--seed", "1", "--settings", "2", "--no-redistribute",
            "--no-remove-easy", "--out", str(s2))
    assert r.returncode == 0, r.stderr
    dets = tmp_path / "det_answers.jsonl"
    r = run("from-detections", "--questions", str(s2), "--predictions", str(pfile), "--setting", "3",
            "--out", str(dets))
    assert r.returncode == 0, r.stderr
    r = run("score", "--questions", str(s2), "--answers", str(dets), "--json", str(res))
    assert r.returncode == 0, r.stderr
    assert json.loads(res.read_text())["exact_match"] == pytest.approx(1.0)


def test_build_split_train_means_trainval_for_v_coco_and_stats_arguments(tmp_path: Path) -> None:
    from hoibench.cli.mcq_bench import _dataset_for

    assert _dataset_for("v-coco", "train").name == "v-coco:trainval"
    assert _dataset_for("vcoco", "train").name == "v-coco:trainval"
    assert _dataset_for("hico-det", "train").name == "hico-det:train"
    assert _dataset_for("v-coco", "test").name == "v-coco:test"
    r = run_process("stats")
    assert r.returncode == 2 and "give a question FILE or --dataset" in r.stderr
    ann = FIXTURES / "mini_instances_test2015.json"
    r = run_process("stats", "--dataset", str(ann), "--setting", "2")
    assert r.returncode == 2 and "--setting has no effect with --dataset" in r.stderr
    r = run("stats", "--dataset", str(ann), "--json")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["images"] == 26 and 0 < row["classes"] <= 600 and "kl_train_test" in row
    assert row["paper"] is None  # the paper's HICO-DET row is only shown for hico-det:test


def test_score_errors_are_one_line(tmp_path: Path) -> None:
    q = tmp_path / "q.jsonl"
    q.write_text('{"header": {}}\n{"id": "a", "file_name": "a.jpg", "setting": 1, "choices": ["x", "y"], '
                 '"correct": [0]}\n')
    a = tmp_path / "a.jsonl"
    a.write_text('{"question_id": "a", "selected": "x"}\n')
    r = run_process("score", "--questions", str(q), "--answers", str(a))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "a.jsonl: record 1: selected: expected a list" in r.stderr
    r = run_process("score", "--questions", str(tmp_path / "nope.jsonl"), "--answers", str(a))
    assert r.returncode != 0 and "Traceback" not in r.stderr


@pytest.mark.shared_data
def test_released_hico_files_stats_and_scores(tmp_path: Path) -> None:
    path = shared_file("crosshoi-bench/hicodet/our_test/crosshoi_bench_hum_box_final.json")
    r = run("stats", str(path), "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["questions"] == 1274 and st["images_matched_to_annotations"] == 1274
    assert st["kl_train_benchmark"] == pytest.approx(0.619, abs=5e-4)  # paper: 0.629
    assert st["head_tail_ratio"] == pytest.approx(7.13, abs=5e-3)  # paper: 7.1
    qs = read_questions(path)
    ans = tmp_path / "a.jsonl"
    _letters_answers(qs, ans)
    for protocol in ("paper", "crosshoi"):
        res = tmp_path / f"{protocol}.json"
        r = run("score", "--questions", str(path), "--answers", str(ans), "--protocol", protocol,
                "--setting", "3", "--json", str(res))
        assert r.returncode == 0, r.stderr
        assert json.loads(res.read_text())["protocol"] == protocol


def test_build_with_judges_over_http_is_cached_and_recorded(tmp_path: Path) -> None:
    from PIL import Image

    from hoibench.testing import FakeChatServer, request_text

    ann = FIXTURES / "mini_instances_test2015.json"
    images = tmp_path / "images"
    images.mkdir()
    for name in json.loads(ann.read_text())["filenames"]:
        Image.new("RGB", (32, 24), (10, 120, 200)).save(images / name)

    def handler(body: dict) -> str:  # every "hold" negative is plausible, the rest is not
        return "Yes" if '"hold a/an' in request_text(body) else "No"

    out = tmp_path / "q.jsonl"
    args = ["build", "--dataset", str(ann), "--no-redistribute", "--no-remove-easy", "--settings", "2",
            "--images", str(images), "--out", str(out)]
    with FakeChatServer(handler) as server:
        r = run(*args, "--judge", "openai:judge-model", "--judge-base-url", server.url)
        assert r.returncode == 0, r.stderr
        asked = server.count
        assert asked > 0
        qs = read_questions(out)
        assert qs.header["negative_filter"]["first"]["model"] == "judge-model"
        for q in qs:
            assert not any(c.text.startswith("hold a/an") for i, c in enumerate(q.choices) if i not in q.correct)
        r = run(*args, "--judge", "openai:judge-model", "--judge-base-url", server.url)
        assert r.returncode == 0 and server.count == asked  # the re-run is served by the cache
