"""The three papers' published result tables, shipped as data (``data/published_results.json``)
and read, validated, in one place.

Each row is one printed number: the model, the benchmark and part (train/test) it was scored
on, the metric (and for mAP the class set it averages), the setting (``default``, ``zero-shot``,
a multiple-choice setting ``1``/``2``/``3`` or ``3 (DETR boxes)``), the protocol where the
paper's numbers fix one (``crosshoi``: the released multiple-choice script), the value in
percent (``None`` where the paper prints a dash) and where it was printed (paper and table).
What a user's result may be compared with is decided by ``hoibench.reports`` from these fields.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from hoibench._exceptions import FormatError
from hoibench.evaluation import MCQ_METRIC_NAMES

__all__ = [
    "PUBLISHED_BENCHMARKS",
    "PUBLISHED_METRICS",
    "PUBLISHED_RESOURCE",
    "PublishedRow",
    "load_published_results",
    "published_results",
]

PUBLISHED_RESOURCE = ("data", "published_results.json")

#: benchmark names of the rows: hoibench's own names (``split sg`` / the demo / ``eval``), the
#: ``-sg`` family names standing for the printed mean over SG splits 1-3, and the zero-shot
#: protocols of B-RIGHT Table 3 (HICO-DET RF-UC, the B-RIGHT balanced zero-shot test set)
PUBLISHED_BENCHMARKS = frozenset({
    "hico-det", "hico-det-sg1", "hico-det-sg2", "hico-det-sg3", "hico-det-sg",
    "v-coco", "v-coco-sg1", "v-coco-sg2", "v-coco-sg3", "v-coco-sg",
    "b-right", "b-right-zero-shot", "hico-det-rf-uc", "mcq-hoi"})
#: metric names: HICO-DET ``mAP``, V-COCO ``role_ap``, the multiple-choice metrics' JSON keys
PUBLISHED_METRICS = frozenset({"mAP", "role_ap", *MCQ_METRIC_NAMES})
_CLASSES = frozenset({"full", "unseen", "selected"})
_SETTINGS = frozenset({"default", "zero-shot", "1", "2", "3", "3 (DETR boxes)"})
_PAPERS = {"000": "SG", "001": "MCQ", "002": "B-RIGHT"}


@dataclass(frozen=True)
class PublishedRow:
    """One published number (percent; ``None`` where the paper prints a dash, see ``note``)."""

    model: str
    benchmark: str
    part: str
    metric: str
    classes: str | None
    setting: str
    protocol: str | None
    value: float | None
    paper: str
    table: str
    row: str
    note: str = ""
    rank: int | None = None

    @property
    def source(self) -> str:
        """``SG paper (000) Table 3``: where the number was printed."""
        return f"{_PAPERS[self.paper]} paper ({self.paper}) {self.table}"


def _row(d: Any, file: object, i: int) -> PublishedRow:
    def need(key: str, types: type | tuple[type, ...], *, null: bool = False) -> Any:
        v = d.get(key) if isinstance(d, dict) else None
        if v is None and null:
            return None
        if not isinstance(v, types) or isinstance(v, bool):
            raise FormatError(f"expected {getattr(types, '__name__', types)}, got {v!r}", file=file,
                              record=i, field=key)
        return v

    value = need("value", (int, float), null=True)
    row = PublishedRow(
        model=need("model", str), benchmark=need("benchmark", str), part=need("part", str),
        metric=need("metric", str), classes=need("classes", str, null=True), setting=need("setting", str),
        protocol=need("protocol", str, null=True), value=None if value is None else float(value),
        paper=need("paper", str), table=need("table", str), row=need("row", str),
        note=need("note", str, null=True) or "", rank=need("rank", int, null=True))
    checks = (("benchmark", row.benchmark, PUBLISHED_BENCHMARKS), ("metric", row.metric, PUBLISHED_METRICS),
              ("part", row.part, {"train", "test"}), ("setting", row.setting, _SETTINGS),
              ("paper", row.paper, set(_PAPERS)))
    for key, v, allowed in checks:
        if v not in allowed:
            raise FormatError(f"expected one of {sorted(allowed)}, got {v!r}", file=file, record=i, field=key)
    if (row.metric == "mAP") != (row.classes in _CLASSES):
        raise FormatError(f"an mAP names the classes it averages ({sorted(_CLASSES)}), no other metric "
                          f"does; got {row.classes!r} for {row.metric}", file=file, record=i, field="classes")
    if row.value is None and not row.note:
        raise FormatError("a value left out says why in its note", file=file, record=i, field="note")
    if row.value is not None and not (math.isfinite(row.value) and 0.0 <= row.value <= 100.0):
        raise FormatError(f"expected a percent in [0, 100], got {row.value}", file=file, record=i, field="value")
    return row


def load_published_results(path: str | Path | None = None) -> tuple[PublishedRow, ...]:
    """Read and validate a published-results file (default: the one shipped with hoibench).

    Every row's benchmark and metric must be ones hoibench uses (:data:`PUBLISHED_BENCHMARKS`,
    :data:`PUBLISHED_METRICS`); a bad row is one error naming the file, row and field.
    """
    if path is None:
        file: object = "published_results.json (bundled)"
        text = resources.files("hoibench.benchmarks").joinpath(*PUBLISHED_RESOURCE).read_bytes()
    else:
        file, text = path, Path(path).read_bytes()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FormatError(f"not JSON: {exc}", file=file) from None
    if not isinstance(data, dict) or data.get("kind") != "hoibench_published_results":
        raise FormatError("expected an object with kind 'hoibench_published_results'", file=file, field="kind")
    rows = data.get("rows")
    if not isinstance(rows, list) or not rows:
        raise FormatError("expected a non-empty list of rows", file=file, field="rows")
    out = tuple(_row(d, file, i) for i, d in enumerate(rows))
    seen: dict[tuple[Any, ...], int] = {}
    for i, r in enumerate(out):
        key = (r.model, r.benchmark, r.part, r.metric, r.setting, r.paper, r.table, r.row)
        if key in seen:
            raise FormatError(f"the same number twice (first at row {seen[key]})", file=file, record=i)
        seen[key] = i
    return out


@lru_cache(maxsize=1)
def published_results() -> tuple[PublishedRow, ...]:
    """The rows shipped with hoibench (read once)."""
    return load_published_results()
