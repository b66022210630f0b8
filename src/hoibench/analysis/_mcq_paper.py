"""The multiple-choice paper's Figure 1b and the training-question frequencies of Figure 3
(``001_*.txt``).

- :func:`mcq_vs_map` — per model, its Instance-F1 in setting 3 next to its HICO-DET mAP, for the
  models that have both results (Figure 1b: what the benchmark changes in the comparison).
- :func:`question_class_counts` — how often each HOI class is a correct choice of a set of
  (training) questions: Figure 3's frequency axis when a training-question set is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench.data import MCQuestion
from hoibench.evaluation import HICOMapResult, MCQResult
from hoibench.results import ResultRecord

__all__ = ["MCQvsMap", "mcq_setting", "mcq_vs_map", "question_class_counts"]

_SETTING = re.compile(r"setting[\s_-]*(\d)\b", re.IGNORECASE)


def mcq_setting(rec: ResultRecord[Any]) -> int | None:
    """The setting of a multiple-choice record: ``setting`` or ``evaluate_by_hand.setting`` of
    its file (what the demo writes), else ``setting N`` in its benchmark name; None if unknown."""
    for holder in (rec.extra, rec.extra.get("evaluate_by_hand") or {}):
        if isinstance(holder, dict) and isinstance(holder.get("setting"), int):
            return int(holder["setting"])
    m = _SETTING.search(rec.benchmark)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class MCQvsMap:
    """One point of Figure 1b (fractions)."""

    model: str
    instance_f1: float
    hico_map: float
    mcq_benchmark: str
    map_benchmark: str


def mcq_vs_map(records: Sequence[ResultRecord[Any]], *, map_benchmark: str = "hico-det",
               setting: int = 3) -> list[MCQvsMap]:
    """Models with both a multiple-choice result in ``setting`` and an mAP result (Default
    setting) on ``map_benchmark`` (case-insensitive); several of either for one model are refused."""
    mcq: dict[str, ResultRecord[MCQResult]] = {}
    maps: dict[str, ResultRecord[HICOMapResult]] = {}
    for rec in records:
        if isinstance(rec.result, MCQResult) and mcq_setting(rec) == setting:
            target: dict[str, Any] = mcq
        elif (isinstance(rec.result, HICOMapResult) and not rec.result.known_object
              and rec.benchmark.strip().lower() == map_benchmark.lower()):
            target = maps
        else:
            continue
        if rec.model in target:
            raise ConfigError(f"{rec.source or rec.model}: a second result of {rec.model} on {rec.benchmark} "
                              f"(the first: {target[rec.model].source or 'in memory'})")
        target[rec.model] = rec
    return [MCQvsMap(m, float(mcq[m].result.instance_f1), float(maps[m].result.headline_map),
                     mcq[m].benchmark, maps[m].benchmark)
            for m in mcq if m in maps and not np.isnan(mcq[m].result.instance_f1)]


def question_class_counts(questions: Iterable[MCQuestion], n_classes: int) -> np.ndarray:
    """Per HOI class, the number of questions with that class among their correct choices."""
    counts = np.zeros(n_classes, dtype=np.int64)
    for q in questions:
        for h in {q.choices[i].hoi for i in q.correct}:
            if h >= n_classes:
                raise ConfigError(f"question {q.id!r}: class {h} outside the {n_classes} classes")
            if h >= 0:
                counts[h] += 1
    return counts
