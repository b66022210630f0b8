"""Parsing model replies: answer letters, detection boxes, the perceived image size.

Parsers never guess: a reply either yields letters that are among the question's choices, or it
is a parse failure recorded with the raw text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DetectionParse", "LetterParse", "parse_detection", "parse_image_size", "parse_letters"]

_ANSWER_TAG = re.compile(r"<answer>\s*([A-Za-z, ]+)\s*</answer>", re.IGNORECASE | re.DOTALL)
_MARKUP = re.compile(r"</?[A-Za-z][^<>]*>")
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class LetterParse:
    """``letters``: the valid letters found (a set); ``status``: ``ok`` or ``parse_error``;
    ``invalid``: tokens that were not letters of the question (kept for the record);
    ``tokens``: the valid letters in reply order, a letter named twice twice (the released code
    keeps that list, so its scoring counts such a letter twice)."""

    letters: frozenset[str]
    status: str
    invalid: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()


def _strip_thinking(text: str) -> str:
    # reasoning models put their final reply after </think> (the released code's "thinking" mode)
    return text.rsplit("</think>", 1)[-1] if "</think>" in text else text


def parse_letters(text: str | None, valid: Mapping[str, object] | frozenset[str] | set[str], *,
                  answer_format: str = "letters") -> LetterParse:
    """Letters of ``valid`` in a reply, as the released code reads them.

    ``letters`` format: the whole reply is split on commas; each token is stripped, upper-cased
    and loses a trailing full stop (``"A, b."`` → ``{A, B}``). Tag formats read the first
    ``<answer>…</answer>`` only. Tokens that are not valid letters (``"(A)"``, ``"A and B"``, a letter
    beyond the choices) are never reinterpreted; with no valid letter at all the status is
    ``parse_error``. Under ``letters`` a reply with markup (``<answer>A,C,D</answer>``, another
    format's reply) is a parse error as a whole, never the partial answer its bare tokens make.
    """
    if text is None:
        return LetterParse(frozenset(), "parse_error")
    body = _strip_thinking(text)
    if answer_format == "letters" and _MARKUP.search(body):
        return LetterParse(frozenset(), "parse_error", (body.strip()[:80],))
    if answer_format != "letters":
        m = _ANSWER_TAG.search(body)
        if m is None:
            return LetterParse(frozenset(), "parse_error")
        body = m.group(1).replace(" ", "")
    tokens = [t.strip().upper().rstrip(".") for t in body.split(",") if t.strip()]
    keys = set(valid)
    good = tuple(t for t in tokens if t in keys)
    bad = tuple(t for t in tokens if t not in keys)
    return LetterParse(frozenset(good), "ok" if good else "parse_error", bad, good)


@dataclass(frozen=True)
class DetectionParse:
    """Boxes found in a detection reply (model coordinates) and how the parse went:
    ``ok``, ``no_boxes`` (valid JSON without boxes) or ``parse_error`` (no usable JSON)."""

    boxes: tuple[tuple[float, float, float, float], ...]
    status: str
    dropped: int = 0
    notes: tuple[str, ...] = field(default=())


def _json_candidates(text: str) -> list[str]:
    """Fenced blocks when there are any; otherwise the text from its first ``{`` or ``[`` (the
    first JSON value, whatever follows it). A broken value is not searched for inner lists."""
    fenced = [m.group(1).strip() for m in _FENCE.finditer(text)]
    if fenced:
        return fenced
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    return [text[min(starts):]] if starts else []


def _decode_prefix(candidate: str) -> object:
    """``json.loads`` that tolerates trailing text after the first complete value."""
    return json.JSONDecoder().raw_decode(candidate.lstrip())[0]


def _as_box(item: object) -> tuple[float, float, float, float] | None:
    if isinstance(item, Mapping):
        for key in ("bbox_2d", "bbox", "box"):
            if key in item:
                return _as_box(item[key])
        return None
    if isinstance(item, list | tuple) and len(item) == 4:
        try:
            vals = tuple(float(v) for v in item)
        except (TypeError, ValueError):
            return None
        if all(math.isfinite(v) for v in vals) and vals[2] > vals[0] and vals[3] > vals[1]:
            return vals  # type: ignore[return-value]
    return None


def parse_detection(text: str | None, *, strict: bool = False) -> DetectionParse:
    """Person boxes of a setting-3 detection reply.

    Accepts ``{"boxes": [[x1, y1, x2, y2], ...]}`` (the prompt's format), inside a code fence or not,
    with text around it; also a bare list of boxes or of ``{"bbox_2d": [...]}`` objects (what Qwen
    models often return). Boxes that are not four finite numbers with ``x2 > x1`` and ``y2 > y1``
    are dropped and counted. ``strict=True`` reproduces the released parser: only a fenced
    ```` ```json {…} ``` ```` block is read.
    """
    if text is None:
        return DetectionParse((), "parse_error", notes=("no reply",))
    body = _strip_thinking(text)
    if strict:
        m = re.search(r"```json\s*(\{.*\})\s*```", body, re.DOTALL)
        candidates = [m.group(1)] if m else []
    else:
        candidates = _json_candidates(body)
    for cand in candidates:
        try:
            value = _decode_prefix(cand)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, Mapping):
            items = value.get("boxes")
            if not isinstance(items, list):
                continue
        elif isinstance(value, list) and not strict:
            items = value
            if len(items) == 4 and all(isinstance(v, int | float) for v in items):
                items = [items]  # one bare box
        else:
            continue
        boxes = [_as_box(it) for it in items]
        kept = tuple(b for b in boxes if b is not None)
        return DetectionParse(kept, "ok" if kept else "no_boxes", dropped=len(boxes) - len(kept))
    return DetectionParse((), "parse_error", notes=("no JSON with boxes",))


def parse_image_size(text: str | None) -> tuple[float, float] | None:
    """``[width, height]`` from an InternVL size reply (fenced or bare JSON); ``None`` otherwise."""
    if text is None:
        return None
    body = _strip_thinking(text)
    for cand in [m.group(1).strip() for m in _FENCE.finditer(body)] + re.findall(r"\[[^\[\]]*\]", body):
        try:
            value = _decode_prefix(cand)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
            value = value[0]
        if (isinstance(value, list) and len(value) == 2
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)):
            w, h = float(value[0]), float(value[1])
            if w > 0 and h > 0 and math.isfinite(w) and math.isfinite(h):
                return w, h
    return None
