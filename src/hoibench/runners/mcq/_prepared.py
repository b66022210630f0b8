"""One question as a single-turn harness shows it: the image the model family expects (resized
once, as ``mcq run`` sends it) and hoibench's prompt with the target box in that image's
coordinates, so the box in the text and the image agree (``001_*.txt`` appendix D.1).

Harnesses (lmms-eval, VLMEvalKit) ask one question per request and cannot run ``mcq run``'s
extra rounds, so two things stay with ``mcq run``: setting 3 (the model first detects the people)
and the ``internvl`` convention (the model first reports the size it perceives); ``relative-1000``
is InternVL's documented single-turn convention.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench.data import MCAnswer, MCQuestion
from hoibench.runners.mcq._boxes import BOX_CONVENTIONS, ModelFrame, model_frame
from hoibench.runners.mcq._frames import encode_png, resize_rgb
from hoibench.runners.mcq._parsing import parse_letters
from hoibench.runners.mcq._prompts import PromptTemplate, RenderedQuestion, render_question

__all__ = ["SINGLE_TURN_CONVENTIONS", "PreparedQuestion", "answer_from_reply", "check_single_turn",
           "prepare_question"]

#: box conventions a single request can serve (``internvl`` needs a size question first)
SINGLE_TURN_CONVENTIONS = tuple(c for c in BOX_CONVENTIONS if c != "internvl")


@dataclass(frozen=True)
class PreparedQuestion:
    """What the model sees for one question: ``image`` (PIL, RGB, at the size sent), the rendered
    prompt (``rendered.text``; ``rendered.letters`` parses the reply), the frame and the box text."""

    question: MCQuestion
    image: Any
    frame: ModelFrame
    rendered: RenderedQuestion
    box_text: str | None

    def image_bytes(self, original: bytes | None = None) -> tuple[bytes, str]:
        """The image as a file's bytes and MIME type: ``original`` (the file as read) when the
        convention keeps the image unchanged, else the resized image as lossless PNG."""
        if original is not None and not self.frame.resized:
            return original, "image/jpeg" if original[:3] == b"\xff\xd8\xff" else "image/png"
        return encode_png(self.image), "image/png"  # the runner's encoder: the bytes it sends


def check_single_turn(convention: str, setting: int) -> None:
    """A clear error for what only ``mcq run`` can do (module docstring)."""
    if convention not in SINGLE_TURN_CONVENTIONS:
        raise ConfigError(f"box convention {convention!r} needs an extra round (the perceived image size) "
                          f"that a one-request harness cannot run; use one of {list(SINGLE_TURN_CONVENTIONS)} "
                          "(relative-1000 is InternVL's documented convention) or `hoibench mcq run`")
    if setting not in (1, 2):
        raise ConfigError(f"setting {setting} asks the model to detect the people first (two rounds); "
                          "harness exports serve settings 1 and 2, `hoibench mcq run --setting 3` serves it")


def prepare_question(question: MCQuestion, image: str | Path | Any, *, box_convention: str,
                     template: PromptTemplate, answer_format: str = "letters", seed: int = 0,
                     permutation: int = 0, box_shift: float = 0.0, **frame_kwargs: Any) -> PreparedQuestion:
    """The image and prompt of ``question`` under ``box_convention`` (settings 1-2).

    ``image`` is a path or an open PIL image (original pixels). ``frame_kwargs``:
    ``min_pixels``/``max_pixels`` of the Qwen conventions. ``box_shift`` as :class:`MCQRunner`'s.
    """
    from PIL import Image

    check_single_turn(box_convention, question.setting)
    im = Image.open(image) if isinstance(image, (str, Path)) else image
    try:
        rgb = im.convert("RGB")
    finally:
        if im is not image:
            im.close()
    frame = model_frame(box_convention, rgb.width, rgb.height, **frame_kwargs)
    rgb = resize_rgb(rgb, frame.sent_width, frame.sent_height)
    box_text = object_box_text = None
    if question.setting == 2:
        if question.person_box is None:
            raise ConfigError(f"question {question.id!r}: setting 2 without a person box")
        box_text = frame.format(frame.to_model([v + box_shift for v in question.person_box]))
        if question.object_box is not None and template.question_person_object:
            object_box_text = frame.format(frame.to_model([v + box_shift for v in question.object_box]))
    rendered = render_question(question, template, box_text=box_text, object_box_text=object_box_text,
                               answer_format=answer_format, seed=seed, permutation=permutation)
    return PreparedQuestion(question, rgb, frame, rendered, box_text)


def answer_from_reply(question_id: str, reply: str | None, letters: Mapping[str, str | None], *,
                      answer_format: str = "letters", meta: Mapping[str, Any] | None = None) -> MCAnswer:
    """A reply read as ``mcq run`` reads it: the letters parsed (:func:`parse_letters`), each
    mapped to its choice text through ``letters`` (a letter named twice: two picks, a padding
    letter dropped and flagged), the raw text kept."""
    parsed = parse_letters(reply, letters, answer_format=answer_format)
    texts = [letters[x] for x in parsed.tokens]
    info: dict[str, Any] = {**(meta or {}), "letters": sorted(parsed.letters)}
    if parsed.invalid:
        info["invalid_tokens"] = list(parsed.invalid)
    if any(t is None for t in texts):
        info["padding_selected"] = True  # the "None" filler of a short question
    return MCAnswer.from_picks(question_id, [t for t in texts if t is not None], reply, parsed.status, info)
