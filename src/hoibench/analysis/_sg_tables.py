"""The SG paper's Tables 3/4 and Figure 2 (``000_*.txt`` section 5, appendix B): mAP on the train
and the test data of the original split and of each SG split, per model, with the mean and the
standard deviation over the SG splits.

Which record is which comes from its benchmark name, the names ``hoibench split sg`` and the demo
give: ``hico-det`` (the original split), ``hico-det-sg1`` … (SG splits), and the same with
``:train`` for an evaluation on that split's *train* data (``hoibench eval hico --benchmark
hico-det-sg1:train``); ``:test`` or no suffix is the test data. V-COCO records (``v-coco``,
``v-coco-sg1``, …) use role AP, scenario 1 when the result has it (else scenario 2).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.evaluation import HICOMapResult, VCOCOResult
from hoibench.results import ResultRecord

__all__ = ["SGSplitTable", "parse_sg_benchmark", "sg_split_tables"]

_NAME = re.compile(r"^(?P<family>.+?)(?:-sg(?P<split>\d+))?(?::(?P<part>train|test))?$")
PARTS = ("train", "test")


def parse_sg_benchmark(name: str) -> tuple[str, int | None, str]:
    """``(family, split, part)`` of a benchmark name: ``hico-det-sg2:train`` -> ``("hico-det", 2,
    "train")``; the original split has split ``None``; the part defaults to ``test``."""
    m = _NAME.match(name.strip().lower())
    assert m is not None  # the pattern matches every non-empty string
    split = m.group("split")
    return m.group("family"), None if split is None else int(split), m.group("part") or "test"


def _score(rec: ResultRecord[Any]) -> tuple[float, str] | None:
    r = rec.result
    if isinstance(r, HICOMapResult):
        # the papers' tables are the Default setting; Known-Object results are another table
        return None if r.known_object else (float(r.headline_map), "mAP")
    if isinstance(r, VCOCOResult):
        s = 1 if 1 in r.scenarios else 2
        return float(r.role_map(s)), f"role AP (scenario {s})"
    return None


@dataclass(frozen=True)
class SGSplitTable:
    """One family's Table 3/4: ``values[(model, part)][split]`` (fractions; split 0 is the
    original), and over the SG splits present ``mean``/``std``/``n`` per ``(model, part)``."""

    family: str
    metric: str
    models: tuple[str, ...]
    splits: tuple[int, ...]  # SG split numbers present, sorted
    values: Mapping[tuple[str, str], Mapping[int, float]]

    def cell(self, model: str, part: str, split: int) -> float | None:
        """A fraction, or None when no result exists (undefined, never 0)."""
        return self.values.get((model, part), {}).get(split)

    def sg_values(self, model: str, part: str) -> list[float]:
        return [v for s, v in sorted(self.values.get((model, part), {}).items()) if s > 0]

    def mean(self, model: str, part: str) -> float | None:
        v = self.sg_values(model, part)
        return float(np.mean(v)) if v else None

    def std(self, model: str, part: str) -> float | None:
        """Population standard deviation over the SG splits (as the report's mAP bars); None
        (undefined) with fewer than two splits."""
        v = self.sg_values(model, part)
        return float(np.std(v)) if len(v) > 1 else None

    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in PARTS if any((m, p) in self.values for m in self.models))

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "metric": self.metric, "splits": list(self.splits),
                "models": {m: {p: {"original": self.cell(m, p, 0),
                                   **{f"sg{s}": self.cell(m, p, s) for s in self.splits},
                                   "mean": self.mean(m, p), "std": self.std(m, p),
                                   "n_splits": len(self.sg_values(m, p))}
                               for p in self.parts() if (m, p) in self.values}
                           for m in self.models}}


def sg_split_tables(records: Sequence[ResultRecord[Any]]) -> list[SGSplitTable]:
    """One :class:`SGSplitTable` per benchmark family that has results on some SG split.

    Two results for one (model, benchmark, part) are refused: which one the table shows would be
    a silent choice.
    """
    grouped: dict[str, dict[tuple[str, str], dict[int, float]]] = {}
    metrics: dict[str, str] = {}
    sources: dict[tuple[str, str, str, int], str] = {}
    for rec in records:
        scored = _score(rec)
        if scored is None:
            continue
        family, split, part = parse_sg_benchmark(rec.benchmark)
        key = (family, rec.model, part, split or 0)
        if key in sources:
            raise ValidationError(f"{rec.source or rec.model}: a second {part} result of {rec.model} on "
                                  f"{rec.benchmark} (the first: {sources[key] or 'in memory'})")
        sources[key] = rec.source
        grouped.setdefault(family, {}).setdefault((rec.model, part), {})[split or 0] = scored[0]
        metrics.setdefault(family, scored[1])
    out = []
    for family, values in grouped.items():
        splits = sorted({s for v in values.values() for s in v if s > 0})
        if not splits:
            continue
        models = tuple(dict.fromkeys(m for m, _ in values))
        out.append(SGSplitTable(family, metrics[family], models, tuple(splits), values))
    return out
