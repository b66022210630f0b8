"""``hoibench mcq export --to trl|llamafactory|swift``: the training pairs read back through the
runner's own parsers, LLaMA-Factory's file loaded with ``datasets`` as LLaMA-Factory loads it, and
TRL's ``SFTTrainer`` trained for 2 steps on a tiny random Qwen2-VL fed by the TRL export."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from hoibench.benchmarks.mcq import build_mcq_training_set
from hoibench.cli import main
from hoibench.data import MCQuestion
from hoibench.formats import read_questions, write_questions
from hoibench.runners.finetune import training_examples
from hoibench.runners.mcq import (
    load_template,
    model_frame,
    parse_detection,
    parse_letters,
    render_question,
)
from tests.conftest import one_line_error
from tests.test_mcq_builder import synthetic_dataset


def _scaled(q: MCQuestion, s: float) -> MCQuestion:
    def box(b):
        return None if b is None else tuple(v * s for v in b)

    meta = dict(q.meta)
    if "person_boxes" in meta:
        meta["person_boxes"] = [list(box(b)) for b in meta["person_boxes"]]
    return replace(q, width=round(q.width * s), height=round(q.height * s), person_box=box(q.person_box),
                   object_box=box(q.object_box), meta=meta)


def _write_train_set(folder: Path, scale: float = 1.0) -> tuple[Path, Path]:
    """The App. C.3 training questions of the builder's toy scenes (images and boxes scaled by
    ``scale``), and blank images of their sizes."""
    build = build_mcq_training_set(synthetic_dataset(), random_state=0)
    qs = [_scaled(q, scale) for q in build.questions] if scale != 1.0 else list(build.questions)
    questions = folder / "train.jsonl"
    write_questions(questions, qs, header=build.header)
    images = folder / "images"
    images.mkdir()
    for q in qs:
        if not (images / q.file_name).exists():
            Image.new("RGB", (q.width, q.height), (120, 90, 60)).save(images / q.file_name)
    return questions, images


@pytest.fixture
def train_set(tmp_path: Path) -> tuple[Path, Path]:
    return _write_train_set(tmp_path)


def _export(capsys, questions: Path, images: Path, out: Path, target: str, *extra: str) -> dict:
    main(["mcq", "export", "--questions", str(questions), "--images", str(images), "--to", target,
          "--out", str(out), "--json", *extra])
    return json.loads(capsys.readouterr().out)


def test_pairs_read_back_through_the_runner_parsers(train_set) -> None:
    questions, images = train_set
    qs = read_questions(questions)
    tpl = load_template("crosshoi")
    examples = {ex.id: ex for ex in training_examples(qs, images=images, model="Qwen2.5-VL-7B-Instruct")}
    assert {q.setting for q in qs} == {1, 2, 3} and set(examples) == {q.id for q in qs}
    for q in qs:
        ex = examples[q.id]
        frame = model_frame("qwen2.5", q.width, q.height)
        assert ex.sent_size == (frame.sent_width, frame.sent_height) == (644, 476)
        if q.setting == 3:
            assert ex.prompt == tpl.detection
            parsed = parse_detection(ex.answer, strict=True)  # the released parser reads it too
            assert parsed.status == "ok"
            back = [frame.from_model(b) for b in parsed.boxes]
            assert len(back) == len(q.meta["person_boxes"])
            for got, want in zip(back, q.meta["person_boxes"], strict=True):
                assert max(abs(a - b) for a, b in zip(got, want, strict=True)) <= 1.0  # integer rounding
            continue
        box = None if q.setting == 1 else frame.format(frame.to_model(q.person_box))
        rendered = render_question(q, tpl, box_text=box)
        assert ex.prompt == rendered.text  # what `mcq run` sends, digit for digit
        if box is not None:
            assert box in ex.prompt
        picked = parse_letters(ex.answer, rendered.letters)
        assert {rendered.letters[x] for x in picked.letters} == q.correct_texts
        assert re.fullmatch(r"[A-D](,[A-D])*", ex.answer)


def test_object_box_questions_are_asked_as_the_runner_asks_them(train_set) -> None:
    """A setting-2 question with an object box (CrossHOI-Bench's hum_obj_box file) gets the
    template's person-and-object prompt, both boxes in the model's frame."""
    questions, images = train_set
    q = next(q for q in read_questions(questions) if q.setting == 2)
    q = replace(q, object_box=(100.0, 100.0, 300.0, 300.0))
    ex = next(training_examples([q], images=images))
    frame = model_frame("qwen2.5", q.width, q.height)
    tpl = load_template("crosshoi")
    want = render_question(q, tpl, box_text=frame.format(frame.to_model(q.person_box)),
                           object_box_text=frame.format(frame.to_model(q.object_box)))
    assert ex.prompt == want.text and "Object bbox: [100.62, 99.17, 301.88, 297.5]" in ex.prompt


def test_llamafactory_export_loads_with_datasets(train_set, tmp_path, capsys) -> None:
    datasets = pytest.importorskip("datasets")
    questions, images = train_set
    out = tmp_path / "lf"
    summary = _export(capsys, questions, images, out, "llamafactory")
    info = json.loads((out / "dataset_info.json").read_text())
    entry = info["hoibench_mcq_train"]
    assert entry["formatting"] == "sharegpt" and entry["columns"] == {"messages": "conversations", "images": "images"}
    ds = datasets.load_dataset("json", data_files=str(out / entry["file_name"]), split="train",
                               cache_dir=str(tmp_path / "cache"))  # as LLaMA-Factory reads it
    n = len(read_questions(questions))
    assert len(ds) == n == summary["examples"]
    assert summary["framework_settings"]["image_max_pixels"] == 12_845_056
    for row in ds:
        human, gpt = row["conversations"]
        assert (human["from"], gpt["from"]) == ("human", "gpt")
        assert human["value"].count("<image>") == len(row["images"]) == 1  # LLaMA-Factory's rule
        assert Path(row["images"][0]).is_file()
        # the image first, as `mcq run` sends it (the template's literal <image> dropped)
        assert human["value"].startswith("<image>")
        if row["id"].endswith("#s3"):
            assert human["value"].startswith("<image>Provide the bounding box") and '"boxes"' in gpt["value"]


def test_swift_export_and_resized_images(train_set, tmp_path, capsys) -> None:
    questions, images = train_set
    out = tmp_path / "swift"
    summary = _export(capsys, questions, images, out, "swift", "--resize-images")
    rows = [json.loads(x) for x in (out / "hoibench_mcq_train.jsonl").read_text().splitlines()]
    assert len(rows) == summary["examples"] and summary["resize_images"] is True
    for row in rows:
        user, assistant = row["messages"]
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        assert user["content"].count("<image>") == 1
        with Image.open(row["images"][0]) as im:
            assert im.size == (644, 476)  # the size `mcq run` sends for Qwen2.5-VL


def test_bad_input_is_one_line(train_set, tmp_path, capsys) -> None:
    questions, images = train_set
    err = one_line_error(["mcq", "export", "--questions", str(questions), "--images", str(images), "--to", "trl",
                          "--out", str(tmp_path / "x"), "--model", "InternVL3-8B"], capsys)
    assert "internvl" in err
    bad = tmp_path / "bad.jsonl"
    lines = questions.read_text().splitlines()
    s3 = next(i for i, ln in enumerate(lines) if '#s3"' in ln)
    obj = json.loads(lines[s3])
    obj["meta"].pop("person_boxes")
    lines[s3] = json.dumps(obj)
    bad.write_text("\n".join(lines) + "\n")
    err = one_line_error(["mcq", "export", "--questions", str(bad), "--images", str(images), "--to", "trl",
                          "--out", str(tmp_path / "y")], capsys)
    assert "bad.jsonl" in err and obj["id"] in err and "person_boxes" in err


def test_trl_sft_trainer_runs_two_steps_on_the_export(tmp_path, capsys, monkeypatch) -> None:
    """2 optimizer steps of TRL's SFTTrainer on a randomly initialised Qwen2-VL (no download) on
    the TRL export, images loaded from the exported paths by the processor (~10 s on one core)."""
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    from trl import SFTConfig, SFTTrainer

    try:  # transformers 5 without torchvision: the PIL image processor
        from transformers import Qwen2VLImageProcessorPil as ImageProcessor
    except ImportError:  # pragma: no cover - transformers 4
        from transformers import Qwen2VLImageProcessor as ImageProcessor

    from tests.test_vlm_transformers import _tiny_qwen2_vl

    questions, images = _write_train_set(tmp_path, scale=0.2)  # 128x96 images: a short sequence
    out = tmp_path / "trl"
    _export(capsys, questions, images, out, "trl")
    model, processor, _ = _tiny_qwen2_vl(monkeypatch)
    # the Qwen2/2.5-VL default pixel limits, as in the export (the helper's are smaller)
    processor.image_processor = ImageProcessor()
    ds = datasets.load_dataset("json", data_files=str(out / "hoibench_mcq_train.jsonl"), split="train",
                               cache_dir=str(tmp_path / "cache"))
    ds = ds.select(range(4)).remove_columns(["id"])
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    args = SFTConfig(output_dir=str(tmp_path / "run"), max_steps=2, per_device_train_batch_size=2,
                     learning_rate=1e-3, max_length=None, gradient_checkpointing=False, logging_steps=1, save_strategy="no", report_to=[],
                     use_cpu=True, dataloader_num_workers=0, seed=0)
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=processor)
    result = trainer.train()
    assert result.global_step == 2
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    assert len(losses) == 2 and all(loss == loss and loss > 0 for loss in losses)
    changed = [k for k, v in model.named_parameters() if not bool((v.detach() == before[k]).all())]
    assert any("visual" in k for k in changed) and any("language_model" in k or "lm_head" in k for k in changed)
