"""Average precision from ranked true/false positives, in each reference's exact flavour.

The 11-point VOC2007 AP is ``sum_t max(prec[rec >= t]) / 11`` over 11 recall thresholds, but the
references build those thresholds differently, and a recall of exactly 0.3, 0.6 or 0.7 (e.g.
3 of 10 ground-truth pairs found) lands on different sides of them:

=====================  ================================================  ===========================
flavour                thresholds                                        used by
=====================  ================================================  ===========================
``"matlab"``           MATLAB ``0:0.1:1`` (= ``torch.linspace(0,1,11)``)   ho-rcnn ``eval_one.m``
                       0.3 is ``0.30000000000000004``; 0.6, 0.7 exact
``"linspace"``         ``torch.linspace(0, 1, 11, dtype=float64)``       pocket (UPT, PViC)
``"arange"``           ``np.arange(0., 1.1, 0.1)``: 0.3, 0.6 and 0.7     QPIC, CDN, HOTR
                       are each one ulp above the decimal value
``"decimal"``          the doubles nearest to 0, 0.1, ..., 1             (reference-free option)
=====================  ================================================  ===========================

The sum is accumulated in threshold order (``ap = ap + p / 11``) as all three references do.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from hoibench._exceptions import ConfigError

__all__ = [
    "RECALL_THRESHOLDS",
    "all_point_ap",
    "precision_recall",
    "recall_thresholds",
    "voc11_ap",
    "weighted_voc11_ap",
]


def _symmetric_linspace(n: int) -> np.ndarray:
    # MATLAB's colon operator and torch.linspace fill the first half as start + k*step and the
    # second half as end - (n-1-k)*step (checked against torch 2.x: 0.3 -> 0.30000000000000004).
    step = 1.0 / (n - 1)
    half = n // 2
    return np.array([k * step if k < half else 1.0 - (n - 1 - k) * step for k in range(n)])


RECALL_THRESHOLDS: dict[str, np.ndarray] = {
    "matlab": _symmetric_linspace(11),
    "linspace": _symmetric_linspace(11),
    "arange": np.arange(0.0, 1.1, 0.1),
    "decimal": np.array([k / 10 for k in range(11)]),
}
for _t in RECALL_THRESHOLDS.values():
    _t.setflags(write=False)

ThresholdFlavour = Literal["matlab", "linspace", "arange", "decimal"]


def recall_thresholds(flavour: str) -> np.ndarray:
    """The 11 recall thresholds of a flavour (see the module docstring)."""
    try:
        return RECALL_THRESHOLDS[flavour]
    except KeyError:
        raise ConfigError(
            f"recall thresholds must be one of {sorted(RECALL_THRESHOLDS)}; got {flavour!r}"
        ) from None


def precision_recall(tp: np.ndarray, n_gt: int) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall after each detection, given TP flags in ranked order.

    ``rec = cumsum(tp) / n_gt`` and ``prec = cumsum(tp) / (cumsum(tp) + cumsum(fp))``, the same
    float operations as the references. ``n_gt == 0`` gives recall 0 (pocket's ``div``); the
    11-point AP of such a class is then 0 in every flavour since no detection is a TP.
    """
    tp = np.asarray(tp, dtype=np.float64)
    ctp = np.cumsum(tp)
    cfp = np.cumsum(1.0 - tp)
    prec = ctp / (cfp + ctp) if len(tp) else ctp
    rec = ctp / n_gt if n_gt else np.zeros_like(ctp)
    return prec, rec


def voc11_ap(rec: np.ndarray, prec: np.ndarray, *,
             thresholds: ThresholdFlavour = "matlab") -> float:
    """VOC2007 11-point interpolated AP: ``sum_t max(prec[rec >= t]) / 11`` (0 where empty)."""
    ts = recall_thresholds(thresholds)
    rec = np.asarray(rec, dtype=np.float64)
    prec = np.asarray(prec, dtype=np.float64)
    ap = 0.0
    if len(rec) == 0:
        return ap
    # rec is non-decreasing: rec >= t is a suffix, whose max precision is a suffix maximum
    suffix_max = np.maximum.accumulate(prec[::-1])[::-1]
    first = np.searchsorted(rec, ts, side="left")
    for k in range(len(ts)):
        p = float(suffix_max[first[k]]) if first[k] < len(rec) else 0.0
        ap = ap + p / 11.0
    return ap


def weighted_voc11_ap(tp: np.ndarray, weights: np.ndarray, n_gt: float, *,
                      thresholds: ThresholdFlavour = "matlab") -> float:
    """11-point AP of a ranked TP/FP sequence in which detection ``i`` occurs ``weights[i]`` times.

    Equals :func:`voc11_ap` of the expanded sequence (each detection repeated ``weights[i]``
    times in place, e.g. by a bootstrap resample of images) without expanding it: inside a run of
    copies precision rises along a TP run and falls along an FP run at constant recall, so the
    maximum precision at each recall level is reached at the end of a TP run; only the run ends
    (cumulative counts) are needed. ``n_gt`` is the weighted number of ground-truth pairs.
    """
    w = np.asarray(weights, dtype=np.float64)
    tpf = np.asarray(tp, dtype=np.float64)
    keep = w > 0
    ctp = np.cumsum(w * tpf)[keep]
    cfp = np.cumsum(w * (1.0 - tpf))[keep]
    if n_gt <= 0:
        return float("nan")
    return voc11_ap(ctp / n_gt, ctp / (cfp + ctp), thresholds=thresholds)


def all_point_ap(rec: np.ndarray, prec: np.ndarray) -> float:
    """VOC2010+ all-point AP (area under the interpolated precision envelope).

    Same steps as ``voc_ap`` of V-COCO's ``vsrl_eval.py``: pad recall with 0 and 1 and precision
    with 0 and 0, make precision non-increasing from the right, and sum
    ``(rec[i+1] - rec[i]) * prec[i+1]`` where recall changes (``np.sum``, pairwise).
    """
    mrec = np.concatenate(([0.0], np.asarray(rec, dtype=np.float64), [1.0]))
    mpre = np.concatenate(([0.0], np.asarray(prec, dtype=np.float64), [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))
