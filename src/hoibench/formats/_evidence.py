"""Choosing between look-alike readings of a file on evidence, or refusing with the numbers.

Some files can be read two ways that give different numbers without any parse error: a
``results.json`` whose ``category_id`` is a verb (CDN) or an HOI class (GEN-VLKT), a PPDM/QPIC
annotation list in HICO-DET's or V-COCO's verb ids. Each reading gets a *fit*: the share of the
file's records that make sense under it. :func:`choose` picks a reading only when it fits well
and clearly better than the other, and returns the line that says so (the caller prints it);
otherwise it raises one :class:`~hoibench.FormatError` with both numbers and the option that
settles it. A reading the user forced is checked with :func:`poor_fit`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hoibench._exceptions import FormatError

__all__ = ["FIT", "MARGIN", "Reading", "choose", "pct", "poor_fit"]

FIT = 0.5
"""A reading is trusted only if at least this share of the records fit it. The right reading of a
detector's file fits nearly all of them: CDN zeroes every triplet that is no HOI class, so 100% of
its scored ones fit, and an export that forgot to (noisy detections, ``tests/test_format_evidence.py``)
fits 99.7%. Wrong readings of the same files fit 1.4% (verb ids read as HOI classes) and 31% (CDN
read with its box labels in HICO-DET's object order instead of COCO-80's); chance is 6% (600 of
the 117 x 80 verb-object cells are classes). Half sits between the two with room on both sides."""

MARGIN = 0.3
"""...and only if it fits by at least this much (30 points) better than the other reading: when
both fit (every triplet is a class under both) the file does not say which it is."""


@dataclass(frozen=True)
class Reading:
    """One way to read a file: its name (what ``option`` takes), the share of records that fit it
    (``None``: this reading is impossible for the file) and what that share counts."""

    name: str
    fit: float | None
    evidence: str


def pct(share: float) -> str:
    """A share as a percent with one decimal (``99.8%``)."""
    return f"{100 * share:.1f}%"


def _said(r: Reading) -> str:
    return f"{'n/a' if r.fit is None else pct(r.fit)} {r.evidence} ({r.name})"


def choose(a: Reading, b: Reading, *, records: str, path: str | os.PathLike[str], option: str,
           hint: str = "", remedy: str | None = None) -> tuple[str, str]:
    """The name of the reading that fits at least :data:`FIT` and beats the other by
    :data:`MARGIN`, and one line saying which evidence decided; otherwise a :class:`FormatError`
    naming both numbers and ``option``. ``records``: what the shares are of (``"9,700 scored
    triplets"``); ``hint``: appended to a refusal (what else the numbers suggest); ``remedy``:
    the refusal's last words (default ``pass <option> <a> or <option> <b>``)."""
    for win, lose in ((a, b), (b, a)):
        if win.fit is not None and win.fit >= FIT and (lose.fit is None or win.fit - lose.fit >= MARGIN):
            return win.name, f"read as {win.name}: of {records}, {_said(win)} vs {_said(lose)}; {option} overrides"
    remedy = remedy or f"pass {option} {a.name} or {option} {b.name}"
    raise FormatError(f"cannot tell {a.name} from {b.name}: of {records}, {_said(a)}, {_said(b)}{hint}; {remedy}",
                      file=path)


def poor_fit(r: Reading, *, records: str, path: str | os.PathLike[str], hint: str = "") -> str | None:
    """A warning when a reading the user chose fits fewer than :data:`FIT` of ``records``."""
    if r.fit is None or r.fit >= FIT:
        return None
    return f"{os.path.basename(path)}: read as {r.name} as asked, but of {records} only {_said(r)}{hint}"
