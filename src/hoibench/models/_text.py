"""Text conventions shared by every caller of a chat model: how a box is written into a prompt and
how a yes/no reply is read. One floor below the tasks (the multiple-choice runner, the
augmentation pipeline, the question builder's judges), so that they all write and read alike."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["format_box", "parse_yes_no"]


def format_box(box: Sequence[float], *, decimals: int = 2) -> str:
    """A box as prompt text, written like a Python list: ``decimals=2`` gives the released
    CrossHOI code's ``[310.0, 19.0, 362.0, 123.0]`` (floats rounded to two decimals),
    ``decimals=0`` integers, ``[310, 19, 362, 123]`` (0–1000 grids, Ferret's pixel boxes)."""
    if decimals == 0:
        return "[" + ", ".join(str(round(float(v))) for v in box) + "]"
    return "[" + ", ".join(repr(round(float(v), decimals)) for v in box) + "]"


_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def parse_yes_no(text: str | None) -> bool | None:
    """``True`` for a reply whose first word is "yes", ``False`` for "no" (punctuation and markup
    before it are skipped: ``"**No**"``), ``None`` otherwise, e.g. ``"I think yes"``.

    Only the first word counts: a reply that reasons before it answers ("there is no cup, so
    yes") is unclear, and every caller has a safe reading of unclear (the augmentation pipeline
    rejects the image, the judges drop the negative).
    """
    if not text:
        return None
    m = _YES_NO.match(text.strip())
    if m is None:
        return None
    return m.group(1).lower() == "yes"
