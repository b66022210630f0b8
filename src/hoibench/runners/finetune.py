"""Fine-tuning exports of multiple-choice training questions (``001_*.txt`` App. C.3, Table 7) for
TRL, LLaMA-Factory and ms-swift.

Each exported example is what :class:`~hoibench.runners.MCQRunner` would send for the question —
the same prompt template, the same box convention and the same image size — paired with the
answer a perfect model gives, so that a model trained on the export and evaluated with
``hoibench mcq run`` sees one format (LLaMA-Factory and ms-swift rows drop the template's literal
``<image>``, which those frameworks would read as an image slot; :func:`without_image_tag`):

* setting 1 and 2 questions: the prompt rendered by
  :func:`~hoibench.runners.mcq.render_question` (choice order ``question.order(seed)``); the answer
  is the correct letters in the shown order as the ``letters`` instruction asks for (``A,C``);
* setting-3 training questions (``#s3``, :func:`~hoibench.benchmarks.mcq.build_mcq_training_set`):
  the template's person-detection prompt; the answer is every annotated person's box in the model's
  coordinates (:func:`~hoibench.runners.mcq.model_frame`), written as the prompt's JSON in a
  ```` ```json ```` fence, integers (what both detection parsers of the runner read back).

Images: ``resize_images=False`` writes the original image's path. Qwen-VL processors resize it
with the same ``smart_resize`` rule and pixel limits as the runner (``QWEN_MIN_PIXELS``,
``QWEN_MAX_PIXELS``), so the model sees the size the boxes are written for, provided the framework
does not shrink it first (LLaMA-Factory's ``image_max_pixels`` defaults to 768²;
``hoibench_export.json`` lists the settings that keep every image). ``resize_images=True``
writes the image the runner sends under ``images/`` instead, byte for byte (the PNG of
:func:`~hoibench.runners.mcq.frame_png`, or the file itself when the frame keeps it).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError, ValidationError
from hoibench._io import (
    ImageFolder,
    atomic_write,
    atomic_write_bytes,
    atomic_write_json,
    dumps_json,
    ensure_dir,
    read_bytes,
)
from hoibench._version import __version__
from hoibench.data import MCQuestion
from hoibench.models import format_box
from hoibench.runners.mcq._boxes import (
    QWEN_MAX_PIXELS,
    QWEN_MIN_PIXELS,
    ModelFrame,
    model_frame,
    resolve_box_convention,
)
from hoibench.runners.mcq._frames import frame_png
from hoibench.runners.mcq._prompts import PromptTemplate, load_template, render_question

__all__ = [
    "FINETUNE_TARGETS",
    "ExportReport",
    "TrainingExample",
    "export_finetune",
    "training_examples",
    "without_image_tag",
]

#: fine-tuning frameworks ``export_finetune`` writes for
FINETUNE_TARGETS = ("trl", "llamafactory", "swift")

#: answer formats a training answer can be written in (the others need a reasoning text)
TRAINABLE_ANSWER_FORMATS = ("letters", "answer_tag")

#: the image placeholder of LLaMA-Factory's and ms-swift's text layouts
IMAGE_TAG = "<image>"

EXPORT_KIND = "mcq_finetune_export"


@dataclass(frozen=True)
class TrainingExample:
    """One question-answer pair as a fine-tuning framework reads it.

    ``prompt`` is the user text exactly as :class:`~hoibench.runners.MCQRunner` sends it (the image
    goes before it); ``image`` the path written in the export; ``sent_size`` the ``(width,
    height)`` the model sees the image at, the frame the boxes in ``prompt`` and ``answer`` use.
    """

    id: str
    setting: int
    file_name: str
    image: str
    prompt: str
    answer: str
    sent_size: tuple[int, int]


@dataclass(frozen=True)
class ExportReport:
    """What :func:`export_finetune` wrote (``files``) and its ``summary``, the sidecar's content."""

    files: Mapping[str, Path]
    summary: Mapping[str, Any]


def _letters_answer(q: MCQuestion, template: PromptTemplate, frame: ModelFrame, seed: int,
                    answer_format: str) -> tuple[str, str]:
    box_text = object_text = None
    if q.setting == 2:  # the boxes as MCQRunner writes them (the object's only where the template asks)
        box_text = frame.format(frame.to_model(q.person_box))  # type: ignore[arg-type]
        if q.object_box is not None and template.question_person_object:
            object_text = frame.format(frame.to_model(q.object_box))
    rendered = render_question(q, template, box_text=box_text, object_box_text=object_text,
                               answer_format=answer_format, seed=seed)
    correct = q.correct_texts
    letters = ",".join(k for k, text in rendered.letters.items() if text is not None and text in correct)
    return rendered.text, (f"<answer>{letters}</answer>" if answer_format == "answer_tag" else letters)


def _detection_answer(q: MCQuestion, frame: ModelFrame, file: str | None) -> str:
    boxes = q.meta.get("person_boxes")
    if not isinstance(boxes, list) or not boxes:
        raise ValidationError(f"{file or 'questions'}: question {q.id!r}: meta.person_boxes: a setting-3 "
                              "training question needs the annotated people's boxes (build the file with "
                              "`hoibench mcq build --split train`)")
    written = ", ".join(format_box(frame.to_model(b), decimals=0) for b in boxes)
    return "```json\n{\"boxes\": [" + written + "]}\n```"


def training_examples(questions: Sequence[MCQuestion], *, images: str | Path, model: str = "Qwen2.5-VL-7B-Instruct",
                      box_convention: str = "auto", template: str | Path | PromptTemplate = "crosshoi",
                      answer_format: str = "letters", seed: int = 0, min_pixels: int = QWEN_MIN_PIXELS,
                      max_pixels: int = QWEN_MAX_PIXELS, follow_symlinks: bool = False,
                      questions_file: str | None = None,
                      image_path: Any = None) -> Iterator[TrainingExample]:
    """The training pair of every question (see the module docstring), in file order.

    ``image_path(question, frame, path)`` returns the image path to write (default: the original
    image's absolute path). Questions without a correct choice have no answer to learn and are
    skipped. The ``internvl`` convention (a size the model reports at run time) has no fixed frame
    to train on and is refused.
    """
    convention = resolve_box_convention(box_convention, model)
    if convention == "internvl":
        raise ConfigError("box convention 'internvl' depends on the size a model reports at run time; "
                          "fine-tune with 'relative-1000' (InternVL's grounding format) instead")
    if answer_format not in TRAINABLE_ANSWER_FORMATS:
        raise ConfigError(f"answer_format must be one of {list(TRAINABLE_ANSWER_FORMATS)} for training "
                          f"(the others need a reasoning text); got {answer_format!r}")
    tpl = template if isinstance(template, PromptTemplate) else load_template(template)
    folder = ImageFolder(Path(images), follow_symlinks=follow_symlinks)
    frames: dict[str, tuple[ModelFrame, Path]] = {}
    for q in questions:
        if q.setting != 3 and not q.correct:
            continue
        if q.file_name not in frames:
            path = folder.path(q.file_name, file=questions_file, record=repr(q.id))
            if not path.is_file():
                raise ConfigError(f"{questions_file or 'questions'}: question {q.id!r}: image {path} not found")
            width, height = q.width, q.height
            if not (width and height):
                from PIL import Image

                with Image.open(path) as im:
                    width, height = im.size
            frame = model_frame(convention, width, height, min_pixels=min_pixels, max_pixels=max_pixels)
            frames[q.file_name] = (frame, path)
        frame, path = frames[q.file_name]
        if q.setting == 3:
            prompt, answer = tpl.detection, _detection_answer(q, frame, questions_file)
        else:
            prompt, answer = _letters_answer(q, tpl, frame, seed, answer_format)
        written = str(path) if image_path is None else str(image_path(q, frame, path))
        yield TrainingExample(q.id, q.setting, q.file_name, written, prompt, answer,
                              (frame.sent_width, frame.sent_height))


def without_image_tag(text: str) -> str:
    """``text`` without the template's literal ``<image>`` (and the space before it), for the
    layouts that read that tag as an image slot or place the image themselves."""
    return re.sub(r"\s*" + re.escape(IMAGE_TAG), "", text)


def _tagged(prompt: str) -> str:
    """The prompt in the ``<image>``-tag layout with the image first, where ``mcq run`` sends it:
    ``<image>`` then the text. The template's own literal ``<image>`` (``... the image  <image>?``,
    which ``mcq run`` sends as text) is dropped: these frameworks read every tag as an image, so
    keeping it would place the image mid-sentence or ask for a second one."""
    return IMAGE_TAG + without_image_tag(prompt)


def _row(target: str, ex: TrainingExample) -> dict[str, Any]:
    if target == "trl":
        # TRL's conversational prompt-completion vision layout, the image block first as the runner
        # sends it: SFTTrainer computes the loss on the completion (the answer) only
        return {"id": ex.id, "images": [ex.image],
                "prompt": [{"role": "user", "content": [{"type": "image", "text": None},
                                                        {"type": "text", "text": ex.prompt}]}],
                "completion": [{"role": "assistant", "content": [{"type": "text", "text": ex.answer}]}]}
    if target == "llamafactory":
        return {"id": ex.id, "conversations": [{"from": "human", "value": _tagged(ex.prompt)},
                                               {"from": "gpt", "value": ex.answer}], "images": [ex.image]}
    if target == "swift":
        return {"id": ex.id, "messages": [{"role": "user", "content": _tagged(ex.prompt)},
                                          {"role": "assistant", "content": ex.answer}], "images": [ex.image]}
    raise ConfigError(f"target must be one of {list(FINETUNE_TARGETS)}; got {target!r}")


def export_finetune(questions: Sequence[MCQuestion], out: str | os.PathLike[str], *, target: str,
                    images: str | Path, model: str = "Qwen2.5-VL-7B-Instruct", box_convention: str = "auto",
                    template: str | Path | PromptTemplate = "crosshoi", answer_format: str = "letters",
                    seed: int = 0, resize_images: bool = False, name: str = "hoibench_mcq_train",
                    min_pixels: int = QWEN_MIN_PIXELS, max_pixels: int = QWEN_MAX_PIXELS,
                    follow_symlinks: bool = False, header: Mapping[str, Any] | None = None,
                    questions_file: str | None = None) -> ExportReport:
    """Write ``questions`` as a ``target`` fine-tuning dataset into the folder ``out``.

    Files: ``<name>.jsonl`` (one example a line, no header line, so ``datasets`` reads every line
    as a row), ``hoibench_export.json`` (provenance and the framework settings that keep the
    image size), for ``llamafactory`` also ``dataset_info.json`` (the dataset's entry, ``name``),
    and with ``resize_images`` the resized images under ``images/``.
    """
    if target not in FINETUNE_TARGETS:
        raise ConfigError(f"target must be one of {list(FINETUNE_TARGETS)}; got {target!r}")
    out_dir = ensure_dir(out)
    tpl = template if isinstance(template, PromptTemplate) else load_template(template)
    image_dir = out_dir / "images"

    def resized(q: MCQuestion, frame: ModelFrame, path: Path) -> Path:
        """The image as ``mcq run`` sends it, byte for byte: the runner's resize and encoder
        (:func:`~hoibench.runners.mcq.frame_png`), or the file itself when the frame keeps it."""
        digest = hashlib.sha256(q.file_name.encode()).hexdigest()[:16]
        suffix = ".png" if frame.resized else path.suffix
        dest = image_dir / f"{Path(q.file_name).stem}-{digest}{suffix}"
        if not dest.exists():
            raw = read_bytes(path)
            ensure_dir(image_dir)
            atomic_write_bytes(dest, frame_png(raw, frame.sent_width, frame.sent_height) if frame.resized else raw)
        return dest.resolve()

    data_path = out_dir / f"{name}.jsonl"
    settings: Counter[int] = Counter()
    largest = 0
    with atomic_write(data_path, "wb") as fh:
        for ex in training_examples(questions, images=images, model=model, box_convention=box_convention,
                                    template=tpl, answer_format=answer_format, seed=seed,
                                    min_pixels=min_pixels, max_pixels=max_pixels,
                                    follow_symlinks=follow_symlinks, questions_file=questions_file,
                                    image_path=resized if resize_images else None):
            fh.write(dumps_json(_row(target, ex)) + b"\n")
            settings[ex.setting] += 1
            largest = max(largest, ex.sent_size[0] * ex.sent_size[1])
    files: dict[str, Path] = {"data": data_path}
    if target == "llamafactory":
        info = {name: {"file_name": data_path.name, "formatting": "sharegpt",
                       "columns": {"messages": "conversations", "images": "images"}}}
        files["dataset_info"] = out_dir / "dataset_info.json"
        atomic_write_json(files["dataset_info"], info, indent=True)
    convention = resolve_box_convention(box_convention, model)
    src = dict(header or {})
    summary = {
        "kind": EXPORT_KIND, "target": target, "name": name, "model": model, "box_convention": convention,
        "template": tpl.tag, "answer_format": answer_format, "seed": seed, "resize_images": resize_images,
        "min_pixels": min_pixels, "max_pixels": max_pixels, "examples": sum(settings.values()),
        "examples_per_setting": {str(k): settings[k] for k in sorted(settings)},
        "skipped_no_correct_choice": sum(1 for q in questions if q.setting != 3 and not q.correct),
        "largest_sent_image_pixels": largest,
        "framework_settings": _framework_settings(target, min_pixels, max_pixels),
        "questions": {"file": questions_file, "kind": src.get("kind"), "builder": src.get("builder"),
                      "builder_version": src.get("builder_version"), "dataset": src.get("dataset"),
                      "seed": src.get("seed")},
        "hoibench": __version__,
    }
    files["summary"] = out_dir / "hoibench_export.json"
    atomic_write_json(files["summary"], summary, indent=True)
    return ExportReport(files, summary)


def _framework_settings(target: str, min_pixels: int, max_pixels: int) -> dict[str, Any]:
    """The settings under which ``target`` resizes every image exactly as the runner does."""
    if target == "llamafactory":
        return {"image_max_pixels": max_pixels, "image_min_pixels": min_pixels,
                "note": "LLaMA-Factory shrinks images above image_max_pixels (default 768*768) with its own "
                        "rule before the processor's smart_resize; raise it so boxes stay in frame"}
    if target == "swift":
        return {"MAX_PIXELS": max_pixels, "MIN_PIXELS": min_pixels,
                "note": "environment variables read by ms-swift's Qwen-VL templates (qwen_vl_utils)"}
    return {"min_pixels": min_pixels, "max_pixels": max_pixels,
            "note": "Qwen-VL image processor arguments (Qwen2/2.5-VL's defaults)"}
