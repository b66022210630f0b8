"""lmms-eval: the ``hoibench_mcq`` tasks (``hoibench/tasks/*.yaml``, functions in
:mod:`hoibench.tasks.lmms`) show a model what ``mcq run`` shows it — the same prompt, the same
prepared image — and report what ``mcq score`` reports on the same replies.

The first test calls the task functions as lmms-eval does (no lmms-eval needed); the second runs
lmms-eval itself, with its OpenAI-compatible model, against a local fake server (slow; skipped
where lmms-eval is not installed: its full install pulls a CUDA torch, see docs/mcq-harnesses.md)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hoibench.data import Choice, MCQuestion
from hoibench.formats import write_questions
from hoibench.tasks import TASKS_DIR
from hoibench.testing import FakeChatServer, request_image, request_text

TEXTS = ("hold a/an cup", "ride a/an horse", "feed a/an dog", "wash a/an car", "no_interaction a/an cup",
         "carry a/an bag")
REPLIES = ("A", "A,B", "B,C", "C", "I cannot tell", "B", "A, B, A")
CONVENTION = {"box_convention": "qwen2.5"}
SRC = Path(__file__).resolve().parents[1] / "src"


def _reply(body: dict) -> str:
    """A reply fixed by the prompt text: both harnesses get the same answer to the same prompt."""
    return REPLIES[int(hashlib.sha256(request_text(body).encode()).hexdigest(), 16) % len(REPLIES)]


def _bench(tmp_path: Path) -> tuple[list[MCQuestion], Path]:
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    qs = []
    for i in range(20):  # 6 setting-1 and 14 setting-2 questions on 8 images of different sizes
        name = f"im{i % 8}.jpg"
        if i < 8:
            Image.new("RGB", (640 - 20 * i, 480 - 10 * i), (30 * i, 90, 200)).save(images / name)
        choices = tuple(Choice(TEXTS[(i + k) % 6]) for k in range(4 if i % 5 else 3))
        correct = frozenset({0} if i % 3 == 0 else {0, 1} if i % 3 == 1 else {1, 2})
        qs.append(MCQuestion(f"q{i}", name, 2 if i >= 6 else 1, choices, correct,
                             person_box=(10.0 + i, 20.0, 300.0, 400.0) if i >= 6 else None))
    write_questions(tmp_path / "q.jsonl", qs)
    return qs, images


def _mcq_run_and_scores(tmp_path: Path, images: Path, capsys) -> tuple[dict[str, tuple[int, int]], dict[int, dict]]:
    """``mcq run`` on the fake server: prompt text → size of the image sent, and ``mcq score``
    of its answers per setting."""
    from PIL import Image

    from hoibench.cli import main

    with FakeChatServer(_reply) as server:
        main(["mcq", "run", "--questions", str(tmp_path / "q.jsonl"), "--images", str(images), "--model",
              "Qwen2.5-VL-7B-Instruct", "--base-url", server.url, "--out", str(tmp_path / "ans.jsonl"),
              "--no-progress"])
        sent = {request_text(b): Image.open(io.BytesIO(request_image(b))).size for b in server.bodies}
    scores = {}
    for s in (1, 2):
        capsys.readouterr()
        main(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(tmp_path / "ans.jsonl"),
              "--setting", str(s), "--json", "-"])
        scores[s] = json.loads(capsys.readouterr().out)
    return sent, scores


def _export(tmp_path: Path, capsys) -> Path:
    from hoibench.cli import main

    main(["mcq", "export", "--questions", str(tmp_path / "q.jsonl"), "--to", "lmms-eval", "--out",
          str(tmp_path / "run"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["questions"] == 20
    return Path(out["file"])


def test_task_functions_match_mcq_run_and_mcq_score(tmp_path, capsys, monkeypatch):
    from hoibench.evaluation import MCQ_METRIC_NAMES
    from hoibench.tasks import lmms

    qs, images = _bench(tmp_path)
    path = _export(tmp_path, capsys)
    lines = path.read_text().splitlines()
    assert len(lines) == 20  # no header line: every line is a question row
    try:
        import datasets
    except ImportError:
        rows = [json.loads(ln) for ln in lines]
    else:  # what the task files ask lmms-eval to load: dataset_path json, data_files test
        rows = list(datasets.load_dataset("json", data_files={"test": str(path)})["test"])
    assert [r["id"] for r in rows] == [q.id for q in qs]
    assert all(r["source_file"] == "q.jsonl" and len(r["source_sha256"]) == 64 for r in rows)
    assert [lmms.question_of(r) for r in rows] == qs

    sent, scores = _mcq_run_and_scores(tmp_path, images, capsys)
    monkeypatch.setenv("HOIBENCH_MCQ_IMAGES", str(images))
    items: dict[int, list] = {1: [], 2: []}
    for r in rows:
        text = lmms.doc_to_text(r, CONVENTION)
        (image,) = lmms.doc_to_visual(r, CONVENTION)
        assert sent[text] == image.size  # the same prompt, with the same prepared image
        if r["setting"] == 2:
            assert image.size != (640 - 20 * int(r["file_name"][2]), 480 - 10 * int(r["file_name"][2]))
        reply = _reply({"messages": [{"role": "user", "content": text}]})
        items[r["setting"]].append(lmms.process_results(r, [reply])["macro_f1"])
    for s in (1, 2):
        got = {m: getattr(lmms, f"aggregate_{m}")(items[s]) for m in MCQ_METRIC_NAMES}
        assert got == pytest.approx({m: scores[s][m] for m in MCQ_METRIC_NAMES})
    assert 0 < scores[2]["exact_match"] < 1 and scores[2]["micro_f1"] > 0  # not a trivial benchmark


def test_setting1_and_2_docs_filter_and_missing_images_is_one_line(tmp_path, capsys, monkeypatch):
    from hoibench import ConfigError
    from hoibench.tasks import lmms

    _bench(tmp_path)
    rows = [json.loads(ln) for ln in _export(tmp_path, capsys).read_text().splitlines()]
    for name in lmms.IMAGES_ENV:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="HOIBENCH_MCQ_IMAGES"):
        lmms.doc_to_visual(rows[0], CONVENTION)
    monkeypatch.setenv("LMMS_EVAL_MEDIA_ROOT", str(tmp_path / "images"))  # lmms-eval's own convention
    assert lmms.doc_to_visual(rows[0], {"box_convention": "original"})[0].size == (640, 480)
    with pytest.raises(ConfigError, match="relative-1000"):
        lmms.doc_to_text(rows[0], {"box_convention": "internvl"})


@pytest.mark.slow
def test_lmms_eval_reports_what_mcq_score_reports(tmp_path, capsys):
    try:
        import lmms_eval  # noqa: F401
    except ImportError:
        pytest.skip("lmms_eval is not importable here; see docs/mcq-harnesses.md (Harnesses) for the --no-deps venv "
                    "this test runs in")
    from hoibench.evaluation import MCQ_METRIC_NAMES

    qs, images = _bench(tmp_path)
    path = _export(tmp_path, capsys)
    _, scores = _mcq_run_and_scores(tmp_path, images, capsys)
    # no PYTHONPATH: lmms-eval imports hoibench.tasks.lmms as the documented venv installs it
    env = {**os.environ, "HOIBENCH_MCQ_IMAGES": str(images), "OPENAI_API_KEY": "x"}
    env.pop("LMMS_EVAL_PLUGINS", None)
    env.pop("PYTHONPATH", None)
    with FakeChatServer(_reply) as server:
        r = subprocess.run([sys.executable, "-m", "lmms_eval", "--model", "openai", "--model_args",
                            f"model=fake,base_url={server.url}", "--tasks", "hoibench_mcq_qwen25",
                            "--include_path", str(TASKS_DIR), "--output_path", str(tmp_path / "out"),
                            "--batch_size", "1", "--log_samples"], cwd=path.parent, env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        assert server.count == len(qs)
    (results_file,) = (tmp_path / "out").rglob("*_results.json")
    results = json.loads(results_file.read_text())["results"]
    for s in (1, 2):
        got = results[f"hoibench_mcq_s{s}_qwen25"]
        assert {m: got[f"{m},none"] for m in MCQ_METRIC_NAMES} == pytest.approx(
            {m: scores[s][m] for m in MCQ_METRIC_NAMES})
        # its --log_samples file is an answers file for mcq score (read directly)
        (samples,) = (tmp_path / "out").rglob(f"*_samples_hoibench_mcq_s{s}_qwen25.jsonl")
        from hoibench.cli import main

        capsys.readouterr()
        main(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(samples), "--json", "-"])
        again = json.loads(capsys.readouterr().out)
        assert {m: again[m] for m in MCQ_METRIC_NAMES} == pytest.approx({m: scores[s][m] for m in MCQ_METRIC_NAMES})
