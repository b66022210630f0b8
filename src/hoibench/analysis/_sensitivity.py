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

__all__ = [
    "SensitivityResult",
    "TPFPSensitivity",
    "ap_function",
    "flip_top_true_positive",
    "ideal_sensitivity",
    "read_matches",
    "sensitivity_figure",
    "sensitivity_from_matches",
    "sensitivity_table",
    "tp_fp_sensitivity",
]

APFunction = Callable[[np.ndarray, int], float]
AP_METHODS = ("voc11", "all_point")


def ap_function(ap_method: str = "voc11", *, thresholds: str = "matlab") -> APFunction:
    """``f(tp_flags_in_rank_order, n_gt) -> AP`` built from the evaluator's AP primitives.

    ``voc11`` with ``thresholds="matlab"`` is the official HICO-DET 11-point AP; ``all_point`` is
    the VOC2010+ area (see :mod:`hoibench.evaluation`).
    """
    from hoibench.evaluation import all_point_ap, precision_recall, recall_thresholds, voc11_ap

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
    """Per class: test instances, AP, AP after the flip, absolute and relative drop (AP as fractions)."""

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
        """Percent of the AP lost (NaN where AP is 0 or no TP exists)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.ap > 0, 100.0 * self.drop / self.ap, np.nan)

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
    """Relative AP drop (percent) for a class with ``n`` test instances all detected first (AP 1).

    Flipping the top TP leaves an FP followed by ``n - 1`` TPs: the reference curve of the figure,
    which already shows the drop shrinking roughly as ``1/n``.
    """
    ap = ap_function(ap_method, thresholds=thresholds)
    out = []
    for n in np.asarray(n_values, dtype=np.int64).tolist():
        if n < 1:
            raise ConfigError(f"instance counts must be positive; got {n}")
        base, flipped = flip_top_true_positive(-np.arange(n, dtype=float), np.ones(n, dtype=bool), n, ap=ap)
        out.append(100.0 * (base - flipped) / base)
    return np.asarray(out)


def sensitivity_table(result: SensitivityResult, *, name: str = "tp-fp-sensitivity") -> Any:
    """Per-class rows as a :class:`~hoibench.reports.Table` (AP in percent)."""
    from hoibench.reports import Table

    rows = tuple((r["class"], r["name"], r["n_gt"], 100 * r["ap"], 100 * r["ap_flipped"], 100 * r["drop"],
                  r["relative_drop"]) for r in result.records())
    return Table(name, "TP→FP sensitivity per class",
                 ("class", "name", "n_gt", "ap", "ap_flipped", "drop", "relative_drop"), rows,
                 caption="AP (%) before and after the highest-scoring true positive of the class "
                         "becomes a false positive; relative_drop in percent of the AP.")


def sensitivity_figure(result: SensitivityResult, *, ideal: bool = True, name: str = "tp-fp-sensitivity",
                       title: str = "AP drop when the top true positive becomes a false positive",
                       ap_method: str = "voc11", thresholds: str = "matlab") -> Any:
    """Scatter of relative AP drop against test instances per class (log x), like Figure 3.

    With ``ideal``, the curve of a class whose detections are all correct is drawn for reference.
    """
    from hoibench.reports import Figure
    from hoibench.reports._figures import _pyplot, _render

    plt = _pyplot()
    rel = result.relative_drop
    ok = ~np.isnan(rel)
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    ax.scatter(result.n_gt[ok], rel[ok], s=10, alpha=0.6, color="#08519c", label="classes")
    if ideal and ok.any():
        hi = int(result.n_gt[ok].max())
        ns = np.unique(np.geomspace(1, max(hi, 2), num=60).astype(np.int64))
        ax.plot(ns, ideal_sensitivity(ns, ap_method=ap_method, thresholds=thresholds), color="#e6550d",
                linewidth=1.2, label="all detections correct")
    ax.set_xscale("log")
    ax.set_xlabel("test instances of the class")
    ax.set_ylabel("relative AP drop (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return Figure(name, title, _render(fig),
                  "Each dot is a class: the percentage of its AP lost when its highest-scoring true "
                  "positive is counted as a false positive.")


def read_matches(path: Any) -> dict[str, Any]:
    """Read a ``hoi_matches`` file (contract in ``docs/interfaces.md``): matched detections.

    Returns ``{"hoi", "score", "tp", "n_gt", "class_names"}`` as arrays (names a tuple, maybe empty).
    """
    from hoibench._exceptions import FormatError
    from hoibench._io import read_json

    d = read_json(path)
    if not isinstance(d, dict) or d.get("kind") != "hoi_matches":
        raise FormatError("expected a JSON object with kind 'hoi_matches'", file=path, field="kind")

    def column(key: str, kind: type, n: int | None = None) -> np.ndarray:
        v = d.get(key)
        if not isinstance(v, list):
            raise FormatError("expected a list", file=path, field=key)
        if n is not None and len(v) != n:
            raise FormatError(f"expected {n} entries, got {len(v)}", file=path, field=key)
        for i, x in enumerate(v):
            ok = isinstance(x, (int, float)) and not isinstance(x, bool) if kind is float else (
                isinstance(x, int) and not isinstance(x, bool) if kind is int else isinstance(x, (bool, int)))
            if not ok or (kind is float and not np.isfinite(x)):
                raise FormatError(f"entry {i}: expected {kind.__name__}, got {x!r}", file=path, field=key)
        return np.asarray(v, dtype={int: np.int64, float: np.float64, bool: bool}[kind])

    n_gt = column("n_gt", int)
    hoi = column("hoi", int)
    score = column("score", float, len(hoi))
    tp = column("tp", bool, len(hoi))
    if (n_gt < 0).any():
        raise FormatError("ground-truth counts must be >= 0", file=path, field="n_gt")
    if len(hoi) and (hoi.min() < 0 or hoi.max() >= len(n_gt)):
        bad = int(np.flatnonzero((hoi < 0) | (hoi >= len(n_gt)))[0])
        raise FormatError(f"entry {bad}: class {hoi[bad]} outside [0, {len(n_gt)})", file=path, field="hoi")
    names = d.get("class_names") or []
    if not isinstance(names, list) or (names and len(names) != len(n_gt)):
        raise FormatError(f"expected {len(n_gt)} names", file=path, field="class_names")
    return {"hoi": hoi, "score": score, "tp": tp, "n_gt": n_gt, "class_names": tuple(str(x) for x in names)}
