"""TP→FP sensitivity (B-RIGHT section 3, Figure 3; the analysis follows PViC).

How much does a class's AP drop when its single highest-scoring true positive becomes a false
positive? With few test instances the drop is large: one detection decides much of the AP. The
drop as a function of the number of test instances shows why an imbalanced test set makes class
APs (and mAP) noisy.

AP comes from :mod:`hoibench.evaluation` (the evaluator's own functions, in the flavour the
caller picks); nothing here re-implements it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.evaluation import all_point_ap, precision_recall, recall_thresholds, voc11_ap

__all__ = [
    "SensitivityResult",
    "TPFPSensitivity",
    "ap_function",
    "flip_top_true_positive",
    "ideal_sensitivity",
    "sensitivity_from_matches",
    "tp_fp_sensitivity",
]

APFunction = Callable[[np.ndarray, int], float]
AP_METHODS = ("voc11", "all_point")


def ap_function(ap_method: str = "voc11", *, thresholds: str = "matlab") -> APFunction:
    """``f(tp_flags_in_rank_order, n_gt) -> AP`` built from the evaluator's AP primitives.

    ``voc11`` with ``thresholds="matlab"`` is the official HICO-DET 11-point AP; ``all_point`` is
    the VOC2010+ area (see :mod:`hoibench.evaluation`).
    """

    if ap_method not in AP_METHODS:
        raise ConfigError(f"ap_method must be one of {set(AP_METHODS)}; got {ap_method!r}")
    recall_thresholds(thresholds)  # validates the flavour now, not at the first call

    def ap(tp: np.ndarray, n_gt: int) -> float:
        prec, rec = precision_recall(tp, n_gt)
        if ap_method == "voc11":
            return float(voc11_ap(rec, prec, thresholds=thresholds))  # type: ignore[arg-type]
        return float(all_point_ap(rec, prec))

    return ap


def _ranked_tp(scores: np.ndarray, is_tp: np.ndarray) -> np.ndarray:
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return np.asarray(is_tp, dtype=bool)[order]


def flip_top_true_positive(scores: Sequence[float] | np.ndarray, is_tp: Sequence[bool] | np.ndarray,
                           n_gt: int, *, ap: APFunction | None = None) -> tuple[float, float]:
    """AP of one class before and after its highest-scoring TP becomes an FP.

    Detections are ranked by score (descending, ties in input order). A class without any TP
    returns ``(ap, nan)``.
    """
    if len(scores) != len(is_tp):
        raise ValidationError(f"scores and is_tp differ in length: {len(scores)} vs {len(is_tp)}")
    return _flip_ranked(_ranked_tp(np.asarray(scores), np.asarray(is_tp)), int(n_gt),
                        ap_function() if ap is None else ap)


def _flip_ranked(tp: np.ndarray, n_gt: int, ap: APFunction) -> tuple[float, float]:
    """AP before/after flipping the first TP of an already ranked TP sequence."""
    tp = np.asarray(tp, dtype=bool)
    base = ap(tp.astype(np.float64), int(n_gt))
    hits = np.flatnonzero(tp)
    if not len(hits):
        return base, float("nan")
    flipped = tp.copy()
    flipped[hits[0]] = False
    return base, ap(flipped.astype(np.float64), int(n_gt))


@dataclass(frozen=True)
class SensitivityResult:
    """Per class: test instances, AP, AP after the flip, absolute and relative drop (fractions)."""

    classes: np.ndarray
    n_gt: np.ndarray
    ap: np.ndarray
    ap_flipped: np.ndarray
    class_names: tuple[str, ...] = ()

    @property
    def drop(self) -> np.ndarray:
        return self.ap - self.ap_flipped

    @property
    def relative_drop(self) -> np.ndarray:
        """Fraction of the AP lost (NaN where AP is 0 or no TP exists)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.ap > 0, self.drop / self.ap, np.nan)

    def records(self) -> list[dict[str, Any]]:
        names = self.class_names or tuple(str(c) for c in self.classes.tolist())
        rel = self.relative_drop
        return [{"class": int(c), "name": names[i], "n_gt": int(self.n_gt[i]), "ap": float(self.ap[i]),
                 "ap_flipped": float(self.ap_flipped[i]), "drop": float(self.drop[i]),
                 "relative_drop": float(rel[i])} for i, c in enumerate(self.classes.tolist())]


class TPFPSensitivity:
    """Accumulate matched detections, then compute the per-class TP→FP sensitivity.

    ``update`` takes the detections of a batch of images (class, score, TP flag); ``n_gt`` is set
    once per class. :func:`tp_fp_sensitivity` is the one-call twin.
    """

    def __init__(self, *, n_classes: int, ap_method: str = "voc11", thresholds: str = "matlab") -> None:
        if not isinstance(n_classes, int) or n_classes < 1:
            raise ConfigError(f"n_classes must be a positive integer; got {n_classes!r}")
        self.n_classes = n_classes
        self.ap_method = ap_method
        self.thresholds = thresholds
        self._ap = ap_function(ap_method, thresholds=thresholds)
        self.reset()

    def reset(self) -> None:
        self._cls: list[np.ndarray] = []
        self._score: list[np.ndarray] = []
        self._tp: list[np.ndarray] = []
        self._n_gt = np.zeros(self.n_classes, dtype=np.int64)
        self._cache: SensitivityResult | None = None

    def update(self, det_class: np.ndarray, det_score: np.ndarray, det_tp: np.ndarray,
               n_gt: np.ndarray | None = None) -> None:
        """Add detections; ``n_gt`` (per class) adds ground-truth counts of the same images."""
        c = np.asarray(det_class, dtype=np.int64)
        s = np.asarray(det_score, dtype=np.float64)
        t = np.asarray(det_tp, dtype=bool)
        if not len(c) == len(s) == len(t):
            raise ValidationError(f"det_class, det_score and det_tp differ in length: {len(c)}, {len(s)}, {len(t)}")
        if len(c) and (c.min() < 0 or c.max() >= self.n_classes):
            raise ValidationError(f"detection classes must be in [0, {self.n_classes})")
        self._cls.append(c)
        self._score.append(s)
        self._tp.append(t)
        if n_gt is not None:
            g = np.asarray(n_gt, dtype=np.int64)
            if g.shape != (self.n_classes,):
                raise ValidationError(f"n_gt must have {self.n_classes} entries; got shape {g.shape}")
            self._n_gt += g
        self._cache = None

    def compute(self, *, class_names: Sequence[str] = ()) -> SensitivityResult:
        """Sensitivity of every class with ground truth."""
        if self._cache is not None:
            return self._cache
        cls = np.concatenate(self._cls) if self._cls else np.zeros(0, np.int64)
        score = np.concatenate(self._score) if self._score else np.zeros(0)
        tp = np.concatenate(self._tp) if self._tp else np.zeros(0, bool)
        if (np.bincount(cls[tp], minlength=self.n_classes) > self._n_gt).any():
            raise ValidationError("a class has more true positives than ground-truth instances")
        order = np.argsort(cls, kind="stable")
        bounds = np.searchsorted(cls[order], np.arange(self.n_classes + 1))
        keep = np.flatnonzero(self._n_gt > 0)
        ap = np.zeros(len(keep))
        flipped = np.zeros(len(keep))
        for j, k in enumerate(keep.tolist()):
            sel = order[bounds[k]:bounds[k + 1]]
            ap[j], flipped[j] = flip_top_true_positive(score[sel], tp[sel], int(self._n_gt[k]), ap=self._ap)
        names = tuple(class_names[k] for k in keep) if len(class_names) else ()
        self._cache = SensitivityResult(classes=keep, n_gt=self._n_gt[keep], ap=ap, ap_flipped=flipped,
                                        class_names=names)
        return self._cache


def tp_fp_sensitivity(det_class: np.ndarray, det_score: np.ndarray, det_tp: np.ndarray, n_gt: np.ndarray,
                      *, ap_method: str = "voc11", thresholds: str = "matlab",
                      class_names: Sequence[str] = ()) -> SensitivityResult:
    """Functional twin of :class:`TPFPSensitivity` for detections already matched to ground truth."""
    metric = TPFPSensitivity(n_classes=len(n_gt), ap_method=ap_method, thresholds=thresholds)
    metric.update(det_class, det_score, det_tp, n_gt)
    return metric.compute(class_names=class_names)


def sensitivity_from_matches(matches: Any, *, class_names: Sequence[str] = (),
                             ap_method: str = "voc11", thresholds: str | None = None) -> SensitivityResult:
    """Sensitivity from the evaluator's :class:`~hoibench.evaluation.HICOMatches`.

    Uses each class's detections in the order the evaluation protocol ranked them (so ties
    break exactly as in the mAP), and by default the protocol's 11-point thresholds.
    """
    ap = ap_function(ap_method, thresholds=thresholds or matches.protocol.recall_thresholds)
    n_gt = np.asarray(matches.n_gt, dtype=np.int64)
    keep = np.flatnonzero(n_gt > 0)
    base = np.zeros(len(keep))
    flipped = np.zeros(len(keep))
    for j, c in enumerate(keep.tolist()):
        _, tp = matches.for_class(c)
        base[j], flipped[j] = _flip_ranked(tp, int(n_gt[c]), ap)
    names = tuple(class_names[c] for c in keep) if len(class_names) else ()
    return SensitivityResult(classes=keep, n_gt=n_gt[keep], ap=base, ap_flipped=flipped, class_names=names)


def ideal_sensitivity(n_values: Sequence[int] | np.ndarray, *, ap_method: str = "voc11",
                      thresholds: str = "matlab") -> np.ndarray:
    """Relative AP drop (fraction) for a class with ``n`` test instances all detected first (AP 1).

    Flipping the top TP leaves an FP followed by ``n - 1`` TPs: the reference curve of the figure,
    which already shows the drop shrinking roughly as ``1/n``.
    """
    ap = ap_function(ap_method, thresholds=thresholds)
    out = []
    for n in np.asarray(n_values, dtype=np.int64).tolist():
        if n < 1:
            raise ConfigError(f"instance counts must be positive; got {n}")
        base, flipped = flip_top_true_positive(-np.arange(n, dtype=float), np.ones(n, dtype=bool), n, ap=ap)
        out.append((base - flipped) / base)
    return np.asarray(out)


