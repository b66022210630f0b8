"""The harness and fine-tuning journeys as docs/mcq-harnesses.md writes them: the lmms-eval venv recipe,
lmms-eval's ``--log_samples`` file read by ``mcq score``/``analyze``, VLMEvalKit's prompt and its
failure text, TRL's answer-only loss, and the dataset card. Each file is built here as the tool
writes it (no network, no downloaded weights)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from hoibench.tasks import TASKS_DIR

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "mcq-harnesses.md"


# --- lmms-eval: the --no-deps venv recipe -------------------------------------------------------

def _recipe_base_pth_line() -> str:
    """The line the documented recipe writes into the lmms-eval venv's ``_base.pth``."""
    m = re.search(r'echo "(.+?)" > /tmp/lmms-venv/lib/python3\.11/site-packages/_base\.pth', DOCS.read_text())
    assert m, "docs/mcq-harnesses.md: the lmms-eval recipe's _base.pth line is gone"
    return m.group(1)


def test_lmms_eval_recipe_venv_imports_the_task_functions(tmp_path):
    """A venv made as the recipe makes it (the project's site-packages through ``_base.pth``) can
    import ``hoibench.tasks.lmms``: a plain path in a .pth file does not run the .pth files of that
    folder, so an editable hoibench stayed invisible and lmms-eval found no task function."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    line = _recipe_base_pth_line().replace("$PWD/.venv/lib/python3.11/site-packages",
                                           sysconfig.get_paths()["purelib"])
    (site / "_base.pth").write_text(line.replace("\\'", "'") + "\n")
    r = subprocess.run([str(venv / "bin" / "python"), "-c", "import hoibench.tasks.lmms"],
                       capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]


# lmms-eval 0.7.3's ``import_function`` (lmms_eval/utils.py) and ``cli_evaluate``'s handling of
# an error while it loads a task: logged, exit status 0
_LMMS_EVAL_LOADER = r'''
import importlib, importlib.util, os, sys
def import_function(yaml_path, function_name):
    *module_name, function_name = function_name.split(".")
    module_name = ".".join(module_name)
    module_path = os.path.normpath(os.path.join(os.path.dirname(yaml_path), "{}.py".format(module_name)))
    if os.path.exists(module_path):
        spec = importlib.util.spec_from_file_location(module_name, module_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, function_name)
    try:
        return getattr(importlib.import_module(module_name), function_name)
    except Exception as ex:
        raise ImportError(f"Failed to import function '{function_name}' from module '{module_name}'") from ex
try:
    for name in sys.argv[2:]:
        import_function(sys.argv[1], name)
except Exception as e:
    print(f"Error during evaluation: {e}", file=sys.stderr)
print("loaded")
'''


def _task_functions(yaml_text: str) -> list[str]:
    return re.findall(r"!function (\S+)", yaml_text)


def test_lmms_eval_task_import_failure_is_not_exit_0(tmp_path):
    """Where hoibench cannot be imported, loading a task ends the run with status 1 and one line
    saying what to install, not lmms-eval's logged error and status 0."""
    yaml_path = TASKS_DIR / "hoibench_mcq_s2_qwen25.yaml"
    names = _task_functions(yaml_path.read_text()) + _task_functions(
        (TASKS_DIR / "_hoibench_mcq_template_yaml").read_text())
    assert len(names) == 11
    (tmp_path / "loader.py").write_text(_LMMS_EVAL_LOADER)
    # -S -I: no site-packages, no PYTHONPATH — a Python where hoibench is not installed
    r = subprocess.run([sys.executable, "-S", "-I", str(tmp_path / "loader.py"), str(yaml_path), *names],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1 and "loaded" not in r.stdout, (r.stdout, r.stderr)
    assert r.stderr.strip().splitlines()[-1].startswith("error: hoibench lmms-eval tasks: cannot import")
    # with hoibench importable, every function the task files name loads
    r = subprocess.run([sys.executable, str(tmp_path / "loader.py"), str(yaml_path), *names],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "loaded" and not r.stderr, r.stderr


# --- lmms-eval: the --log_samples file read by mcq score / analyze / report -----------------------

ANN = ROOT / "tests" / "fixtures" / "mini_instances_test2015.json"
QWEN25 = {"box_convention": "qwen2.5"}


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Questions of settings 1 and 2 from the mini HICO-DET fixture, and images of their sizes."""
    from PIL import Image

    from hoibench.cli import main
    from hoibench.formats import read_questions

    d = tmp_path_factory.mktemp("bench")
    main(["mcq", "build", "--dataset", str(ANN), "--no-redistribute", "--no-remove-easy",
          "--out", str(d / "q.jsonl"), "--json"])
    for q in read_questions(d / "q.jsonl"):
        p = d / "images" / q.file_name
        if not p.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (q.width, q.height), (120, 60, 30)).save(p)
    return d


def _reply_to(text: str) -> str:
    """A model's reply fixed by the prompt text, so both harnesses get the same answers."""
    import hashlib

    return ("A", "A,B", "B, C", "I cannot tell", "C", "A, B, A")[int(hashlib.sha256(text.encode()).hexdigest(), 16) % 6]


def write_lmms_eval_samples(path: Path, rows: list[dict], replies: list[str | None]) -> None:
    """The file lmms-eval 0.7.3 writes with ``--log_samples`` for a generate_until task: the
    record ``evaluator._process_document`` logs (``doc_id``, ``doc``, ``target``, ``arguments``,
    ``resps``, ``filtered_resps``, ``token_counts``, ``doc_hash`` (here of the row as read here, not
    of ``datasets``' row), ``input_media``, then the task's
    ``process_results`` items), as ``EvaluationTracker.save_results_samples`` writes it
    (``input`` = the prompt, one-request lists flattened, ``resps`` dropped when equal, ``doc``
    and ``arguments`` dropped, ``json.dumps(..., ensure_ascii=False)`` per line)."""
    import hashlib

    from hoibench.tasks import lmms

    with path.open("a", encoding="utf-8") as fh:
        for doc_id, (doc, reply) in enumerate(zip(rows, replies)):
            gen = {"max_new_tokens": 64, "temperature": 0, "do_sample": False, "until": ["\n\n"]}
            sample = {"doc_id": doc_id, "doc": doc, "target": lmms.doc_to_target(doc),
                      "arguments": [lmms.doc_to_text(doc, QWEN25), gen, "doc_to_visual", doc_id, "hoibench", "test"],
                      "resps": [[reply]], "filtered_resps": [reply],
                      "token_counts": [{"input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0}],
                      "doc_hash": hashlib.sha256(json.dumps(doc, indent=2, ensure_ascii=False).encode()).hexdigest(),
                      "input_media": [doc["file_name"]]}
            sample.update(lmms.process_results(doc, [reply]))
            sample["input"] = sample["arguments"][0]
            sample["resps"] = sample["resps"][0]
            sample["filtered_resps"] = sample["filtered_resps"][0]
            if sample["resps"] == sample["filtered_resps"] or sample["resps"] == [sample["filtered_resps"]]:
                sample.pop("resps")
            sample["target"] = str(sample["target"])
            sample.pop("arguments")
            sample.pop("doc")
            fh.write(json.dumps(sample, ensure_ascii=False) + "\n")


def _json_of(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict, str]:
    from hoibench.cli import main

    main([*args, "--json", "-"])
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_lmms_eval_samples_are_scored_analysed_and_reported(bench, tmp_path, capsys, monkeypatch):
    """``mcq score``, ``mcq analyze`` and ``report`` read lmms-eval's samples file of the
    setting-2 task directly and give what they give on ``mcq run``'s answers to the same replies."""
    from hoibench.cli import main
    from hoibench.testing import FakeChatServer, request_text

    qpath = str(bench / "q.jsonl")
    main(["mcq", "export", "--questions", qpath, "--to", "lmms-eval", "--out", str(tmp_path / "run"), "--json"])
    capsys.readouterr()
    rows = [json.loads(ln) for ln in (tmp_path / "run" / "hoibench_mcq.jsonl").read_text().splitlines()]
    rows2 = [r for r in rows if r["setting"] == 2]
    monkeypatch.setenv("HOIBENCH_MCQ_IMAGES", str(bench / "images"))
    from hoibench.tasks import lmms

    samples = tmp_path / "out" / "20260101_000000_samples_hoibench_mcq_s2_qwen25.jsonl"
    samples.parent.mkdir()
    write_lmms_eval_samples(samples, rows2, [_reply_to(lmms.doc_to_text(r, QWEN25)) for r in rows2])

    ran = tmp_path / "ran.jsonl"
    with FakeChatServer(lambda body: _reply_to(request_text(body))) as server:
        main(["mcq", "run", "--questions", qpath, "--images", str(bench / "images"), "--model", "vlm-x",
              "--base-url", server.url, "--box-convention", "qwen2.5", "--setting", "2", "--out", str(ran),
              "--no-progress", "--json"])
    capsys.readouterr()

    metrics = ("macro_f1", "instance_f1", "micro_f1", "exact_match", "avg_precision", "avg_recall",
               "n_questions", "n_missing", "n_empty")
    want, _ = _json_of(capsys, "mcq", "score", "--questions", qpath, "--answers", str(ran))
    got, err = _json_of(capsys, "mcq", "score", "--questions", qpath, "--answers", str(samples))
    assert {m: got[m] for m in metrics} == {m: want[m] for m in metrics}
    assert got["n_questions"] == len(rows2) and got["setting"] == 2 and 0 < got["exact_match"] < 1
    assert "does not record which questions it was asked" in err  # the setting-1 questions left out

    want_a, _ = _json_of(capsys, "mcq", "analyze", "--questions", qpath, "--answers", str(ran), "--dataset", str(ANN))
    got_a, _ = _json_of(capsys, "mcq", "analyze", "--questions", qpath, "--answers", str(samples),
                        "--dataset", str(ANN))
    assert got_a["head_to_tail"] == want_a["head_to_tail"] and got_a["misattribution"] == want_a["misattribution"]
    assert got_a["n_questions"] == len(rows2) and got_a["setting"] == 2

    res = tmp_path / "lmms.json"
    main(["mcq", "score", "--questions", qpath, "--answers", str(samples), "--json", str(res),
          "--model", "vlm-x"])
    main(["report", str(res), "--out", str(tmp_path / "report")])
    capsys.readouterr()
    assert "q.jsonl (setting 2)" in (tmp_path / "report" / "report.md").read_text()


def test_lmms_eval_samples_of_another_question_file_are_refused(bench, tmp_path, capsys, monkeypatch):
    from hoibench.cli import main
    from hoibench.formats import read_questions, write_questions

    qpath = bench / "q.jsonl"
    main(["mcq", "export", "--questions", str(qpath), "--to", "lmms-eval", "--out", str(tmp_path / "run")])
    rows = [json.loads(ln) for ln in (tmp_path / "run" / "hoibench_mcq.jsonl").read_text().splitlines()]
    rows1 = [r for r in rows if r["setting"] == 1]
    monkeypatch.setenv("HOIBENCH_MCQ_IMAGES", str(bench / "images"))
    samples = tmp_path / "samples.jsonl"
    write_lmms_eval_samples(samples, rows1, ["A"] * len(rows1))
    qs = list(read_questions(qpath))
    other = tmp_path / "other.jsonl"  # the same ids, the first question's correct choices changed
    first = next(i for i, q in enumerate(qs) if q.setting == 1)
    flipped = frozenset(range(len(qs[first].choices))) - qs[first].correct
    qs[first] = dataclasses.replace(qs[first], correct=flipped)
    write_questions(other, qs)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["mcq", "score", "--questions", str(other), "--answers", str(samples)])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert str(samples) in err and "record 1" in err and "another question file" in err


# --- TRL: the loss is on the answer only -----------------------------------------------------------

def test_trl_export_trains_on_the_answer_only(tmp_path, capsys, monkeypatch):
    """The documented recipe (``SFTTrainer(..., SFTConfig(max_length=None))`` on the export) builds
    its batches with TRL's own collator, and the tokens that carry a label are the answer's (and
    the end of the assistant turn), not the prompt's or the image's."""
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    from trl import SFTConfig, SFTTrainer

    try:  # transformers 5 without torchvision: the PIL image processor
        from transformers import Qwen2VLImageProcessorPil as ImageProcessor
    except ImportError:  # pragma: no cover - transformers 4
        from transformers import Qwen2VLImageProcessor as ImageProcessor

    from tests.test_finetune_export import _export, _write_train_set
    from tests.test_vlm_transformers import _tiny_qwen2_vl

    questions, images = _write_train_set(tmp_path, scale=0.2)
    out = tmp_path / "trl"
    _export(capsys, questions, images, out, "trl")
    rows = [json.loads(ln) for ln in (out / "hoibench_mcq_train.jsonl").read_text().splitlines()]
    model, processor, _ = _tiny_qwen2_vl(monkeypatch)
    processor.image_processor = ImageProcessor()
    ds = datasets.load_dataset("json", data_files=str(out / "hoibench_mcq_train.jsonl"), split="train",
                               cache_dir=str(tmp_path / "cache")).select(range(4)).remove_columns(["id"])
    args = SFTConfig(output_dir=str(tmp_path / "run"), max_steps=1, per_device_train_batch_size=2,
                     max_length=None, gradient_checkpointing=False, save_strategy="no", report_to=[],
                     use_cpu=True, dataloader_num_workers=0, seed=0)
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=processor)
    batch = trainer.data_collator([dict(ds[i]) for i in range(4)])
    tok = processor.tokenizer
    end = tok.decode(tok("<|im_end|>", add_special_tokens=False)["input_ids"])
    for i in range(4):
        labelled = batch["labels"][i][batch["labels"][i] != -100]
        answer = rows[i]["completion"][0]["content"][0]["text"]
        want = tok(answer, add_special_tokens=False)["input_ids"]
        assert tok.decode(labelled).startswith(answer) and tok.decode(labelled[len(want):]).strip() == end
        assert 0 < len(labelled) <= len(want) + 2  # the answer and the turn's end: "<|im_end|>\n"
        assert len(labelled) * 10 < int(batch["attention_mask"][i].sum())
    assert trainer.train().global_step == 1


# --- VLMEvalKit: the prompt the model sees, and its failure text ---------------------------------

def _vlmevalkit_mcq_prompt(row) -> str:
    """The text of VLMEvalKit's ``ImageMCQDataset.build_prompt`` (CustomMCQDataset) for a row."""
    import string

    import pandas as pd

    options = {c: row[c] for c in string.ascii_uppercase if c in row and not pd.isna(row[c])}
    prompt = f"Hint: {row['hint']}\n" if not pd.isna(row["hint"]) else ""
    prompt += f"Question: {row['question']}\n"
    if options:
        prompt += "Options:\n" + "".join(f"{k}. {v}\n" for k, v in options.items())
        prompt += "Please select the correct answer from the options above. \n"
    return prompt


def _vlmevalkit_export(tmp_path: Path, capsys):
    from hoibench.cli import main
    from tests.test_vlmevalkit import _read_like_vlmevalkit, _setup

    qs, images = _setup(tmp_path)
    main(["mcq", "export", "--questions", str(tmp_path / "q.jsonl"), "--to", "vlmevalkit", "--images", str(images),
          "--out", str(tmp_path / "out"), "--model", "Qwen2.5-VL-7B-Instruct"])
    capsys.readouterr()
    return qs, images, _read_like_vlmevalkit(tmp_path / "out" / "HOIBench_MCQ.tsv")


def test_vlmevalkit_prompt_holds_mcq_runs_lines_with_one_question_label(tmp_path, capsys):
    """VLMEvalKit writes ``Question: {question}``: the cell holds the question without the
    template's own label, and every line of it is a line of what ``mcq run`` sends (the image
    placeholder and the label aside), box included."""
    pytest.importorskip("pandas")
    from hoibench.runners.mcq import load_template, prepare_question

    qs, images, data = _vlmevalkit_export(tmp_path, capsys)
    template = load_template("crosshoi")
    for q, (_, row) in zip(qs, data.iterrows()):
        sent = prepare_question(q, images / q.file_name, box_convention="qwen2.5", template=template).rendered.text
        prompt = _vlmevalkit_mcq_prompt(row)
        assert prompt.count("Question:") == 1, prompt
        sent_lines = [re.sub(r"\s*<image>", "", ln).removeprefix("Question: ").strip() for ln in sent.splitlines()]
        for line in str(row["question"]).splitlines():
            assert line.strip() in sent_lines, (line, sent)
        assert str(row["hint"]).strip() in sent  # the answer instruction, word for word


def test_vlmevalkit_failure_text_is_an_error(tmp_path, capsys):
    """A row holding VLMEvalKit's failure text is an answer with status ``error``: ``mcq score``
    warns how many, as it does for ``mcq run``'s failed requests."""
    pytest.importorskip("pandas")
    import csv

    from hoibench.cli import main
    from hoibench.tasks.vlmevalkit import read_vlmevalkit_answers

    qs, _, data = _vlmevalkit_export(tmp_path, capsys)
    # VLMEvalKit's API wrappers return fail_msg 'Failed to obtain answer via API. ' (with its space)
    replies = ["Failed to obtain answer via API. "] * 4 + [",".join(data["answer"].iloc[4])]
    pred = tmp_path / "M_HOIBench_MCQ.tsv"
    data.drop(columns=["image"]).assign(prediction=replies).to_csv(pred, sep="\t", index=False, quoting=csv.QUOTE_ALL)
    answers = read_vlmevalkit_answers(pred, qs)
    assert [a.status for a in answers] == ["error"] * 4 + ["ok"]
    assert answers[0].meta["error"] == "Failed to obtain answer via API."
    main(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(pred), "--json", "-"])
    captured = capsys.readouterr()
    assert "4 an 'error' status" in captured.err
    assert json.loads(captured.out)["exact_match"] == pytest.approx(1 / 5)


# --- the Hugging Face dataset card ------------------------------------------------------------------

#: values of the Hub's dataset-card fields (huggingface.co/docs/hub/datasets-cards: task ids of
#: huggingface.js ``PIPELINE_DATA``, the size bins, ISO 639-1 codes)
HUB_TASKS = {"object-detection", "visual-question-answering", "multiple-choice", "image-text-to-text",
             "zero-shot-object-detection", "question-answering"}
HUB_SIZES = {"n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M"}


def test_hf_dataset_card_has_the_fields_the_hub_validates(tmp_path):
    """The card's YAML names ``task_categories``, ``size_categories``, ``language`` and, for
    ``license: other``, a ``license_link`` to a licence file in the folder."""
    import yaml

    from hoibench.benchmarks._hf import _size_category, export_hf
    from hoibench.benchmarks._release import folder_manifest, select_benchmarks
    from hoibench.benchmarks.mcq import build_mcq_training_set
    from tests.test_mcq_builder import synthetic_dataset

    release = tmp_path / "release"
    build = build_mcq_training_set(synthetic_dataset(), random_state=0)
    (release / "mcq" / "train").mkdir(parents=True)
    build.write(release / "mcq" / "train" / "questions.jsonl")
    manifest = folder_manifest(release, select_benchmarks(["mcq/train"]))
    export_hf(release, tmp_path / "hf", ["mcq/train"], manifest=manifest)
    text = (tmp_path / "hf" / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["language"] == ["en"]
    assert meta["task_categories"] == ["visual-question-answering", "multiple-choice"]
    assert set(meta["task_categories"]) <= HUB_TASKS and meta["size_categories"] == ["n<1K"]
    assert meta["license"] == "other" and meta["license_name"] == "annotations-only"
    licence = tmp_path / "hf" / meta["license_link"]
    assert licence.is_file() and "Annotations only" in licence.read_text() and "MIT" in licence.read_text()
    assert [_size_category(n) for n in (999, 1_000, 112_425, 2_000_000)] == ["n<1K", "1K<n<10K", "100K<n<1M",
                                                                               "1M<n<10M"]
    assert {_size_category(10 ** k) for k in range(8)} <= HUB_SIZES
    try:
        from huggingface_hub import DatasetCard
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers and datasets
        return
    card = DatasetCard.load(tmp_path / "hf" / "README.md")
    assert card.data.task_categories == meta["task_categories"] and card.data.license_link == "LICENSE.md"


# --- LLaMA-Factory and ms-swift: where the image is ------------------------------------------------

def test_llamafactory_and_swift_rows_put_the_image_where_mcq_run_does(tmp_path, capsys):
    """The image first, then ``mcq run``'s text; the one difference is the template's literal
    ``<image>`` (``the image  <image>?``), which ``mcq run`` sends as text and these two layouts
    drop (they read every ``<image>`` as an image slot)."""
    from tests.test_finetune_export import _export, _write_train_set

    questions, images = _write_train_set(tmp_path)
    _export(capsys, questions, images, tmp_path / "trl", "trl")
    sent = {}
    for ln in (tmp_path / "trl" / "hoibench_mcq_train.jsonl").read_text().splitlines():
        row = json.loads(ln)
        image, text = row["prompt"][0]["content"]
        assert image["type"] == "image" and text["type"] == "text"  # mcq run's order: image, text
        sent[row["id"]] = text["text"]
    assert any("<image>" in t for t in sent.values())  # the template writes one in settings 1 and 2
    for target in ("llamafactory", "swift"):
        _export(capsys, questions, images, tmp_path / target, target)
        for ln in (tmp_path / target / "hoibench_mcq_train.jsonl").read_text().splitlines():
            row = json.loads(ln)
            user = row["conversations"][0]["value"] if target == "llamafactory" else row["messages"][0]["content"]
            assert user == "<image>" + re.sub(r"\s*<image>", "", sent[row["id"]]), (target, user)
