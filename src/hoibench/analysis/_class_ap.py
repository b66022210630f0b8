"""Spread of class-wise AP per model and benchmark (B-RIGHT section 5.2, Figure 6 and S5).

A balanced test set should shrink the class-AP variance: with 10 test instances in every class,
no class's AP hinges on one or two detections. These functions compute the spread (variance,
IQR, ...) of mAP results, in fractions like every AP of the Python API; the tables and box
plots (in percent) are rendered by :mod:`hoibench.reports`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.evaluation import HICOMapResult
from hoibench.results import ResultRecord

__all__ = [
    "ClassAPSpread",
    "class_ap_spread",
    "class_ap_spreads",
    "class_ap_values",
    "variance_reduction",
]


@dataclass(frozen=True)
class ClassAPSpread:
    """Summary of one model's class APs on one benchmark (fractions; ``variance`` in squared
    fractions, ``zero_ap_share`` the fraction of classes with AP 0)."""

    model: str
    benchmark: str
    n_classes: int
    mean: float
    median: float
    variance: float
    std: float
    q1: float
    q3: float
    iqr: float
    min: float
    max: float
    zero_ap_share: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def class_ap_values(result: HICOMapResult, *, classes: Sequence[int] | np.ndarray | None = None,
                    name: str = "") -> np.ndarray:
    """Class APs (fractions) of an mAP result.

    Classes without ground truth (null AP or ``n_gt == 0``) are left out; ``classes`` restricts
    to a subset of class indices (e.g. the 351 B-RIGHT classes on HICO-DET). ``name`` says which
    result in an error (its file).
    """
    ap = result.per_class_ap
    if ap is None:
        raise ValidationError(f"{name or 'result'}: per_class_ap is needed for class-AP analyses but the "
                              f"result has none")
    keep = ~np.isnan(ap)
    if result.n_gt is not None:
        keep &= result.n_gt > 0
    if classes is not None:
        cls = np.asarray(classes, dtype=np.int64)
        if len(cls) and (cls.min() < 0 or cls.max() >= len(ap)):
            raise ValidationError(f"class indices must be in [0, {len(ap)}); got {cls.min()}..{cls.max()}")
        sub = np.zeros(len(ap), dtype=bool)
        sub[cls] = True
        keep &= sub
    return ap[keep]


def class_ap_spread(ap: Sequence[float] | np.ndarray, *, model: str = "",
                    benchmark: str = "") -> ClassAPSpread:
    """Mean, median, population variance, IQR and range of class APs (fractions; NaN dropped)."""
    a = np.asarray(ap, dtype=np.float64)
    a = a[~np.isnan(a)]
    if not len(a):
        raise ValidationError(f"{model or 'result'} on {benchmark or 'benchmark'}: no class with an AP")
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return ClassAPSpread(model=model, benchmark=benchmark, n_classes=len(a), mean=float(a.mean()),
                         median=float(med), variance=float(a.var()), std=float(a.std()), q1=float(q1),
                         q3=float(q3), iqr=float(q3 - q1), min=float(a.min()), max=float(a.max()),
                         zero_ap_share=float(np.mean(a == 0)))


def class_ap_spreads(records: Sequence[ResultRecord[HICOMapResult]], *,
                     classes: Sequence[int] | None = None) -> list[ClassAPSpread]:
    """One :class:`ClassAPSpread` per mAP record (its model and benchmark), over ``classes`` or all."""
    return [class_ap_spread(class_ap_values(r.result, classes=classes, name=r.source or r.model),
                            model=r.model, benchmark=r.benchmark) for r in records]


def variance_reduction(spreads: Sequence[ClassAPSpread], *, reference: str, other: str) -> dict[str, float]:
    """Per model, class-AP variance on ``other`` divided by that on ``reference`` (< 1: reduced)."""
    var = {(s.model, s.benchmark): s.variance for s in spreads}
    out = {}
    for s in spreads:
        if s.benchmark == reference and (s.model, other) in var and s.variance > 0:
            out[s.model] = var[(s.model, other)] / s.variance
    return out


