"""Recall of the correct choices per HOI class (``001_*.txt``, Figure 3): the numbers behind the
head-to-tail plots, a result kind of its own (``class_recall``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench.data import MCAnswer, MCQuestion
from hoibench.evaluation._fields import Fields, json_float, result_header

__all__ = ["ClassRecall", "mcq_class_recall"]


@dataclass(frozen=True, repr=False)
class ClassRecall:
    """Recall (fraction) of each HOI class among the correct choices, with its train count.

    ``recall[i]`` is NaN for a class never among the correct choices. ``classes`` (HOI ids),
    ``n_gt`` (times the class was a correct choice) and ``n_tp`` (times it was selected then)
    are ``None`` for a result read from a file that does not record them.
    """

    train_counts: np.ndarray
    recall: np.ndarray
    class_names: tuple[str, ...] = ()
    classes: np.ndarray | None = None
    n_gt: np.ndarray | None = None
    n_tp: np.ndarray | None = None

    kind: ClassVar[str] = "class_recall"
    json_keys: ClassVar[frozenset[str]] = frozenset(
        {"class_names", "train_counts", "recall", "classes", "n_gt", "n_tp"})

    def __post_init__(self) -> None:
        n = len(self.train_counts)
        for name in ("recall", "classes", "n_gt", "n_tp"):
            v = getattr(self, name)
            if v is not None and len(v) != n:
                raise ConfigError(f"{name} has {len(v)} entries for {n} classes")
        if self.class_names and len(self.class_names) != n:
            raise ConfigError(f"class_names has {len(self.class_names)} entries for {n} classes")

    def __repr__(self) -> str:
        """Sizes and the mean, not the arrays."""
        ok = self.recall[~np.isnan(self.recall)]
        mean = f"{float(ok.mean()):.4f}" if len(ok) else "nan"
        return f"ClassRecall(n_classes={len(self.recall)}, mean_recall={mean})"

    def to_json(self, *, model: str | None = None, benchmark: str | None = None) -> dict[str, Any]:
        """The ``class_recall`` object of ``docs/interfaces.md`` (fractions)."""
        out = result_header(self.kind, model, benchmark)
        out.update({"class_names": list(self.class_names), "train_counts": self.train_counts.tolist(),
                    "recall": [json_float(r) for r in self.recall]})
        for key in ("classes", "n_gt", "n_tp"):
            v = getattr(self, key)
            if v is not None:
                out[key] = v.tolist()
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, file: object = None, record: object = None) -> ClassRecall:
        """Read a ``class_recall`` object; each problem is a :class:`~hoibench.FormatError`."""
        f = Fields(d, file=file, record=record)
        f.check_kind(cls.kind)
        counts = f.numbers("train_counts", lo=0.0)
        n = len(counts)
        return cls(train_counts=counts,
                   recall=f.numbers("recall", n=n, null=True, lo=0.0, hi=1.0, unit="a fraction"),
                   class_names=f.strings("class_names", n=n if f.d.get("class_names") else None, default=()),
                   classes=f.integers("classes", n=n, lo=0, default=None),
                   n_gt=f.integers("n_gt", n=n, lo=0, default=None),
                   n_tp=f.integers("n_tp", n=n, lo=0, default=None))


def mcq_class_recall(answers: Mapping[str, MCAnswer] | Iterable[MCAnswer], questions: Iterable[MCQuestion], *,
                     train_counts: Sequence[float] | np.ndarray,
                     class_names: Sequence[str] | None = None) -> ClassRecall:
    """Recall per HOI class over the correct choices of ``questions`` (classes in id order).

    Answers (predictions) first, questions (ground truth) second, like every metric.

    A correct choice counts once per question; it is recalled when the answer selects its text
    (a missing answer selects nothing). Choices outside the label space (HOI id -1) are skipped.
    ``train_counts`` gives each class's train frequency (e.g. ``hico_det().train_counts_official()``)
    and ``class_names`` optional names, both indexed by HOI id.
    """
    counts = np.asarray(train_counts, dtype=np.float64)
    by_id = answers if isinstance(answers, Mapping) else {a.question_id: a for a in answers}
    gt: dict[int, int] = {}
    tp: dict[int, int] = {}
    for q in questions:
        a = by_id.get(q.id)
        selected = a.selected if a is not None else frozenset()
        for i in q.correct:
            c = q.choices[i]
            if c.hoi < 0:
                continue
            if c.hoi >= len(counts):
                raise ConfigError(f"question {q.id!r}: class {c.hoi} outside the train counts "
                                  f"({len(counts)} classes)")
            gt[c.hoi] = gt.get(c.hoi, 0) + 1
            tp[c.hoi] = tp.get(c.hoi, 0) + (c.text in selected)
    classes = np.asarray(sorted(gt), dtype=np.int64)
    n_gt = np.asarray([gt[h] for h in classes.tolist()], dtype=np.int64)
    n_tp = np.asarray([tp[h] for h in classes.tolist()], dtype=np.int64)
    if class_names is not None and len(class_names) != len(counts):
        raise ConfigError(f"class_names has {len(class_names)} entries for {len(counts)} train counts")
    return ClassRecall(train_counts=counts[classes], recall=n_tp / n_gt,
                       class_names=() if class_names is None else tuple(class_names[h] for h in classes.tolist()),
                       classes=classes, n_gt=n_gt, n_tp=n_tp)
