"""VLMEvalKit sends the message ``mcq run`` sends: the exported TSV read by hoibench's VLMEvalKit
dataset (:func:`hoibench.tasks.vlmevalkit.vlmevalkit_dataset_class`) gives, per question, the
image first and then the very text of ``mcq run``'s request (no ``Hint:``/``Question:``/
``Options:`` frame, no model MCQ prompt), checked against the requests of a real ``MCQRunner``.

VLMEvalKit is not a dependency: where it is not importable, :class:`_StandInDataset` does what
its ``ImageBaseDataset`` does for these rows (load ``$LMUData/NAME.tsv``, resolve short image
cells, decode the image to ``{img_root}/{index}.png``); where it is, the real classes run.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hoibench.data import Choice, MCQuestion
from hoibench.formats import write_questions
from tests.conftest import one_line_error
from tests.test_vlmevalkit import TEXTS, _read_like_vlmevalkit

pd = pytest.importorskip("pandas", reason="VLMEvalKit reads its TSVs with pandas")

NAME = "HOIBench_MCQ"


def _questions(tmp_path: Path) -> tuple[list[MCQuestion], Path]:
    """test_vlmevalkit's questions (settings 1 and 2, a padded one) and one with person and object boxes."""
    from tests.test_vlmevalkit import _setup

    qs, images = _setup(tmp_path)
    qs.append(MCQuestion("s2_po", "im0.jpg", 2, tuple(Choice(t) for t in TEXTS[:4]), frozenset({0}),
                         person_box=(10.0, 20.0, 300.0, 400.0), object_box=(200.0, 100.0, 400.0, 300.0)))
    write_questions(tmp_path / "q.jsonl", qs)
    return qs, images


def _export(tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str = "Qwen2.5-VL-7B-Instruct",
            convention: str = "auto") -> tuple[list[MCQuestion], Path]:
    from hoibench.cli import main

    qs, images = _questions(tmp_path)
    main(["mcq", "export", "--questions", str(tmp_path / "q.jsonl"), "--to", "vlmevalkit", "--images",
          str(images), "--out", str(tmp_path / "lmu"), "--model", model, "--box-convention", convention])
    capsys.readouterr()
    return qs, images


def _mcq_run_requests(qs: list[MCQuestion], images: Path, tmp_path: Path, model: str,
                      convention: str = "auto") -> dict[str, object]:
    """What ``mcq run`` sends per question: its ChatRequest (a real run on a scripted backend)."""
    from hoibench.models import ScriptedBackend
    from hoibench.runners.mcq import MCQRunner

    backend = ScriptedBackend(lambda req: "A", model=model)
    MCQRunner(backend, images=images, model=model, box_convention=convention, progress=False).run(qs, tmp_path / "answers.jsonl")
    return {req.meta["question_id"]: req for req in backend.calls}


class _StandInDataset:
    """VLMEvalKit's ``ImageBaseDataset`` as far as these rows use it (only where VLMEvalKit is absent)."""

    def __init__(self, dataset: str = NAME) -> None:
        root = os.environ["LMUData"]  # noqa: SIM112 - VLMEvalKit's variable
        self.dataset_name = dataset
        self.img_root = os.path.join(root, "images", dataset)
        data = _read_like_vlmevalkit(os.path.join(root, f"{dataset}.tsv"))
        data["index"] = [int(x) for x in data["index"]]
        self.data = data
        self.meta_only = False
        self.post_build(dataset)

    def post_build(self, dataset: str) -> None:
        pass

    def dump_image(self, line) -> list[str]:
        from PIL import Image

        os.makedirs(self.img_root, exist_ok=True)
        path = os.path.join(self.img_root, f"{line['index']}.png")
        Image.open(io.BytesIO(base64.b64decode(line["image"]))).save(path)  # decode_base64_to_image_file
        return [path]


def _dataset_base() -> type:
    try:
        from vlmeval.dataset import CustomMCQDataset
    except ImportError:
        return _StandInDataset
    return CustomMCQDataset


def _assert_same_message(msg: list[dict[str, str]], req, label: str) -> None:
    """``msg`` (VLMEvalKit's message) is ``req`` (mcq run's request): one user turn, the same
    parts in the same order, the same text byte for byte, the same pixels."""
    from PIL import Image

    from hoibench.models import ImagePart, TextPart

    assert len(req.messages) == 1 and req.messages[0].role == "user", label  # no system prompt
    parts = req.messages[0].parts
    assert [type(p) for p in parts] == [ImagePart, TextPart], label  # mcq run: the image first
    assert [m["type"] for m in msg] == ["image", "text"], (label, msg)
    assert msg[1]["value"].encode() == parts[1].text.encode(), (label, msg[1]["value"], parts[1].text)
    with Image.open(msg[0]["value"]) as got, Image.open(io.BytesIO(parts[0].data)) as sent:
        assert got.size == sent.size and got.convert("RGB").tobytes() == sent.convert("RGB").tobytes(), label


@pytest.mark.parametrize(("model", "convention"), [("Qwen2.5-VL-7B-Instruct", "auto"), ("gpt-4o", "auto"),
                                                  ("InternVL3-8B", "relative-1000")])
def test_vlmevalkit_dataset_sends_mcq_runs_message(tmp_path, capsys, monkeypatch, model, convention):
    """Settings 1 and 2 (person box, person and object boxes), under the qwen2.5 (resized),
    original and relative-1000 conventions: VLMEvalKit's message is ``mcq run``'s request."""
    from hoibench.tasks.vlmevalkit import ROUTE_COLUMN, vlmevalkit_dataset_class

    qs, images = _export(tmp_path, capsys, model, convention)
    monkeypatch.setenv("LMUData", str(tmp_path / "lmu"))
    cls = vlmevalkit_dataset_class(_dataset_base())
    assert cls.force_use_dataset_prompt  # VLMEvalKit's inference: no model's own MCQ prompt instead
    cls.DATASET_NAMES = (NAME,)
    assert cls.supported_datasets() == [NAME]
    ds = cls(dataset=NAME)
    sent = _mcq_run_requests(qs, images, tmp_path, model, convention)
    assert {q.setting for q in qs} == {1, 2} and set(sent) == {q.id for q in qs}
    for i in range(len(ds.data)):
        line = ds.data.iloc[i]
        msg = ds.build_prompt(line)
        _assert_same_message(msg, sent[line["hoibench_id"]], line["hoibench_id"])
        assert ds.build_prompt(i) == msg  # by position, as VLMEvalKit may call it
    assert set(ds.data[ROUTE_COLUMN]) == {"hoibench_prompt"}  # carried into the prediction file


def test_setting_3_is_refused_with_one_line(tmp_path, capsys):
    """Setting 3 (the model detects the people first) is two requests: not exportable, said so."""
    _, images = _questions(tmp_path)
    write_questions(tmp_path / "q3.jsonl", [MCQuestion("s3", "im0.jpg", 3, tuple(Choice(t) for t in TEXTS[:4]),
                                                       frozenset({0}), person_box=(10.0, 20.0, 300.0, 400.0))])
    err = one_line_error(["mcq", "export", "--questions", str(tmp_path / "q3.jsonl"), "--to", "vlmevalkit",
                          "--images", str(images), "--out", str(tmp_path / "lmu"), "--model", "gpt-4o"], capsys)
    assert "setting 3" in err and "mcq run --setting 3" in err


def test_a_row_without_the_prompt_is_one_clear_error(tmp_path, capsys, monkeypatch):
    """A TSV of an older export (no ``hoibench_prompt``): the message is refused, naming file,
    record and field, and the launcher refuses to run it under VLMEvalKit's own prompt."""
    from hoibench._exceptions import FormatError
    from hoibench.tasks.vlmevalkit import vlmevalkit_message
    from hoibench.tasks.vlmevalkit_run import hoibench_datasets

    with pytest.raises(FormatError, match=r"old\.tsv.*index 3.*hoibench_prompt"):
        vlmevalkit_message({"index": 3, "question": "Which?"}, "x.png", file="old.tsv")
    _export(tmp_path, capsys)
    tsv = tmp_path / "lmu" / f"{NAME}.tsv"
    assert hoibench_datasets([NAME, "MMBench_DEV_EN"], tmp_path / "lmu") == [NAME]
    rows = list(csv.reader(tsv.open(newline=""), delimiter="\t"))
    k = rows[0].index("hoibench_prompt")
    with (tmp_path / "lmu" / "Old.tsv").open("w", newline="") as fh:
        csv.writer(fh, delimiter="\t").writerows([r[:k] + r[k + 1:] for r in rows])
    with pytest.raises(SystemExit, match=r"Old\.tsv: no hoibench_prompt column .*re-export"):
        hoibench_datasets(["Old"], tmp_path / "lmu")


def test_launcher_reads_run_py_data_names():
    from hoibench.tasks.vlmevalkit_run import data_names

    assert data_names(["--data", "A", "B", "--model", "M"]) == ["A", "B"]
    assert data_names(["--model", "M", "--data=A", "--verbose"]) == ["A"]
    assert data_names(["--config", "c.json"]) == []


def test_launcher_reads_config_data_entries(tmp_path):
    from hoibench.tasks.vlmevalkit_run import config_data_names

    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"model": {"m": {"class": "GPT4V"}}, "data": {
        "HOI": {"class": "HOIBenchMCQDataset", "dataset": NAME}, "MMB": {"class": "ImageMCQDataset"}}}))
    assert config_data_names(["--config", str(cfg)]) == [NAME, "HOI"]
    assert config_data_names([f"--config={cfg}", "--mode", "infer"]) == [NAME, "HOI"]
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SystemExit, match=r"bad\.json: not a readable JSON config"):
        config_data_names(["--config", str(tmp_path / "bad.json")])


def test_launcher_without_vlmevalkit_says_so(tmp_path):
    pytest.importorskip("pandas")
    try:
        import vlmeval  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("VLMEvalKit is importable here")
    (tmp_path / "run.py").write_text("raise SystemExit('not reached')\n")
    proc = subprocess.run([sys.executable, "-m", "hoibench.tasks.vlmevalkit_run", str(tmp_path / "run.py"),
                           "--data", NAME], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and proc.stderr.strip().splitlines()[-1].startswith(
        "error: VLMEvalKit is not importable here"), proc.stderr


def test_real_vlmevalkit_builds_mcq_runs_message(tmp_path, capsys, monkeypatch):
    """With VLMEvalKit importable: ``python -m hoibench.tasks.vlmevalkit_run run.py --data NAME``
    makes its ``build_dataset`` pick hoibench's dataset, and its inference's prompt choice
    (``force_use_dataset_prompt`` before a model's ``use_custom_prompt``) yields mcq run's message."""
    pytest.importorskip("vlmeval.dataset", reason="VLMEvalKit is not installed (not a hoibench dependency)")
    model = "Qwen2.5-VL-7B-Instruct"
    qs, images = _export(tmp_path, capsys, model)
    monkeypatch.setenv("LMUData", str(tmp_path / "lmu"))
    run_py = tmp_path / "run.py"  # a run.py doing what VLMEvalKit's inference does per row
    run_py.write_text(
        "import json, sys\n"
        "from vlmeval.dataset import DATASET_TYPE, build_dataset\n"
        "name = sys.argv[sys.argv.index('--data') + 1]\n"
        "ds = build_dataset(name)\n"
        "class Model:  # a model class with its own MCQ prompt, as Qwen2-VL's\n"
        "    def use_custom_prompt(self, dataset): return DATASET_TYPE(dataset) == 'MCQ'\n"
        "    def build_prompt(self, line, dataset=None): return [{'type': 'text', 'value': 'model prompt'}]\n"
        "model, out = Model(), {}\n"
        "for i in range(len(ds.data)):\n"
        "    line = ds.data.iloc[i]\n"
        "    if getattr(ds, 'force_use_dataset_prompt', False): struct = ds.build_prompt(line)\n"
        "    elif model.use_custom_prompt(name): struct = model.build_prompt(line, dataset=name)\n"
        "    else: struct = ds.build_prompt(line)\n"
        "    out[line['hoibench_id']] = struct\n"
        "print(json.dumps({'class': type(ds).__name__, 'type': DATASET_TYPE(name), 'messages': out}))\n")
    proc = subprocess.run([sys.executable, "-m", "hoibench.tasks.vlmevalkit_run", str(run_py), "--data", NAME],
                          capture_output=True, text=True, timeout=300, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["class"] == "HOIBenchMCQDataset" and got["type"] == "MCQ"
    sent = _mcq_run_requests(qs, images, tmp_path, model)
    assert set(got["messages"]) == set(sent)
    for qid, msg in got["messages"].items():
        _assert_same_message(msg, sent[qid], qid)


def test_mcq_score_says_which_prompt_the_model_got(tmp_path, capsys, monkeypatch):
    """A prediction file of rows hoibench's dataset served scores without a word about the
    prompt; one of VLMEvalKit's own MCQ route (no ``hoibench_route`` column) is scored with a
    warning that the model did not get mcq run's prompt."""
    from hoibench.cli import main
    from hoibench.tasks.vlmevalkit import vlmevalkit_dataset_class

    _export(tmp_path, capsys)
    monkeypatch.setenv("LMUData", str(tmp_path / "lmu"))
    ds = vlmevalkit_dataset_class(_StandInDataset)(dataset=NAME)
    pred = ds.data.drop(columns=["image"]).assign(prediction="A")  # VLMEvalKit's prediction table
    pred.to_csv(tmp_path / "ours.tsv", sep="\t", index=False, quoting=csv.QUOTE_ALL)
    pred.drop(columns=["hoibench_route"]).to_csv(tmp_path / "theirs.tsv", sep="\t", index=False,
                                                 quoting=csv.QUOTE_ALL)
    scores = {}
    for name in ("ours", "theirs"):
        main(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(tmp_path / f"{name}.tsv"),
              "--json", "-"])
        out, err = capsys.readouterr()
        scores[name] = json.loads(out)["exact_match"]
        assert ("VLMEvalKit's own MCQ prompt" in err) is (name == "theirs"), err
    assert scores["ours"] == scores["theirs"]
