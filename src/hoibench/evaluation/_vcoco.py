"""V-COCO agent AP and role AP, the semantics of s-gupta/v-coco ``vsrl_eval.py``, vectorised.

The reference (``VCOCOeval._do_agent_eval`` / ``_do_role_eval``) works per image and per class:

* ground truth is every valid COCO *person* annotation of the image (``gt_classes == 1``); people
  that are not part of V-COCO carry no action labels and are *ignored*: a detection whose best
  matching person (first arg-max of IoU, even when that IoU is 0) is ignored is dropped, neither
  TP nor FP;
* detections are taken in descending score order; a detection is a TP when the arg-max person has
  the action, IoU(person) >= 0.5 and, for role AP, IoU(role box) >= 0.5, and that person was not
  covered yet for the class; otherwise FP;
* an empty ground-truth role (the person has the action but no role object): **scenario 1**
  matches only a predicted role box that is all zeros or all NaN, **scenario 2** always matches;
* the positives of a role class are *all* people with the action, with or without a role object;
* boxes and scores are float32, IoU uses the +1 pixel rule in float32 arithmetic, recall is
  float32 and precision float64 (numpy 2 promotion of the reference's expressions), AP is VOC
  all-point (sentinels 0 and 1, precision envelope) and is stored as float32.

Differences, on purpose: detections with equal scores are ranked by (image order, detection order)
(the reference's ``argsort`` is not stable, so its tie order depends on the platform's sort);
a class without positives gets AP NaN (the reference crashes); a class without detections gets 0
(the reference crashes); an image without people makes all its detections FP (the reference
crashes). Nothing here reads files: see :mod:`hoibench.formats.vcoco_predictions` and
:mod:`hoibench.formats.vcoco_ground_truth`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.data import VCOCODetections, VCOCOGroundTruth
from hoibench.data._dataset import concat_ranges
from hoibench.data._vcoco import (
    EXCLUDED_FROM_24,
    columns_contiguous,
    vcoco_action_names,
    vcoco_role_action,
    vcoco_role_classes,
)
from hoibench.evaluation._ap import all_point_ap
from hoibench.evaluation._fields import Fields, json_float, result_header, to_percent
from hoibench.evaluation._metric import Metric

__all__ = ["VCOCOResult", "VCOCORoleAP", "vcoco_role_ap"]


_F32 = np.float32
_ONE = np.float32(1.0)


# --------------------------------------------------------------------------- result
@dataclass(frozen=True)
class VCOCOResult:
    """Agent AP per action and role AP per (action, role) class, fractions in [0, 1].

    ``agent_ap[a]`` / ``role_ap[s][c]`` are NaN for a class without positives. Averages skip
    NaN; ``role_map(s)`` is the 24-pair average of the literature (without ``point_instr``) and
    ``role_map(s, pairs=25)`` the average ``vsrl_eval.py`` prints. The detection counts are
    ``None`` for a result read from a file written before they were recorded.
    """

    action_names: tuple[str, ...]
    role_class_names: tuple[str, ...]
    agent_ap: np.ndarray
    role_ap: dict[int, np.ndarray]
    n_positives: np.ndarray
    n_detections_agent: np.ndarray | None
    n_detections_role: np.ndarray | None
    n_images: int
    iou_threshold: float
    complete_ground_truth: bool = True

    kind: ClassVar[str] = "vcoco_role_ap"
    json_keys: ClassVar[frozenset[str]] = frozenset({
        "iou_threshold", "complete_ground_truth", "n_images", "agent_map", "scenario_1", "scenario_2",
        "action_names", "agent_ap", "n_pos", "role_class_names", "role_ap", "n_det_agent", "n_det_role"})

    @property
    def scenarios(self) -> tuple[int, ...]:
        return tuple(sorted(self.role_ap))

    @property
    def agent_map(self) -> float:
        """Mean agent AP over the actions with positives (all 26 on the official test set)."""
        return _nanmean(self.agent_ap)

    def role_map(self, scenario: int, *, pairs: int = 24) -> float:
        """Mean role AP over the 24 (default) or 25 (action, role) classes with positives."""
        if scenario not in self.role_ap:
            raise ConfigError(f"scenario must be one of {list(self.scenarios)}; got {scenario!r}")
        if pairs not in (24, 25):
            raise ConfigError(f"pairs must be 24 or 25; got {pairs!r}")
        ap = self.role_ap[scenario]
        if pairs == 24:
            ap = ap[np.asarray([n != EXCLUDED_FROM_24 for n in self.role_class_names])]
        return _nanmean(ap)

    def per_class_rows(self) -> list[dict[str, Any]]:
        """One row per class: ``kind`` (agent/role), name, positives, detections, AP per scenario."""
        def count(a: np.ndarray | None, i: int) -> int | None:
            return None if a is None else int(a[i])

        rows: list[dict[str, Any]] = []
        for a, name in enumerate(self.action_names):
            rows.append({"kind": "agent", "class": name, "n_pos": int(self.n_positives[a]),
                         "n_det": count(self.n_detections_agent, a), "ap": json_float(self.agent_ap[a])})
        role_action = vcoco_role_action()
        for c, name in enumerate(self.role_class_names):
            row: dict[str, Any] = {"kind": "role", "class": name,
                                   "n_pos": int(self.n_positives[role_action[c]]),
                                   "n_det": count(self.n_detections_role, c)}
            for s in self.scenarios:
                row[f"ap_scenario_{s}"] = json_float(self.role_ap[s][c])
            rows.append(row)
        return rows

    def to_json(self, *, model: str | None = None, benchmark: str | None = None) -> dict[str, Any]:
        """The ``vcoco_role_ap`` object of ``docs/interfaces.md``: the summary means in percent
        (as documented), per-class APs as fractions."""
        out = result_header(self.kind, model, benchmark)
        out.update({
            "iou_threshold": self.iou_threshold,
            "complete_ground_truth": self.complete_ground_truth,
            "n_images": self.n_images,
            "agent_map": json_float(to_percent(self.agent_map)),
        })
        for s in self.scenarios:
            out[f"scenario_{s}"] = {"role_map_24": json_float(to_percent(self.role_map(s))),
                                    "role_map_25": json_float(to_percent(self.role_map(s, pairs=25)))}
        out["action_names"] = list(self.action_names)
        out["agent_ap"] = [json_float(v) for v in self.agent_ap]
        out["n_pos"] = self.n_positives.tolist()
        out["role_class_names"] = list(self.role_class_names)
        out["role_ap"] = {f"scenario_{s}": [json_float(v) for v in self.role_ap[s]] for s in self.scenarios}
        if self.n_detections_agent is not None:
            out["n_det_agent"] = self.n_detections_agent.tolist()
        if self.n_detections_role is not None:
            out["n_det_role"] = self.n_detections_role.tolist()
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, file: object = None, record: object = None) -> VCOCOResult:
        """Read a ``vcoco_role_ap`` object; the summary means are recomputed from the per-class
        APs (they are derived numbers), each problem is a :class:`~hoibench.FormatError`."""
        f = Fields(d, file=file, record=record)
        f.check_kind(cls.kind)
        actions = f.strings("action_names")
        roles = f.strings("role_class_names")
        frac = {"lo": 0.0, "hi": 1.0 + 1e-6, "unit": "a fraction"}
        role_f = f.sub("role_ap")
        role_ap = {}
        for key in role_f.d:
            s = {"scenario_1": 1, "scenario_2": 2}.get(key)
            if s is None:
                raise role_f.error(key, "expected scenario_1 or scenario_2")
            role_ap[s] = role_f.numbers(key, n=len(roles), null=True, **frac)
        if not role_ap:
            raise f.error("role_ap", "no scenario")
        return cls(
            action_names=actions, role_class_names=roles,
            agent_ap=f.numbers("agent_ap", n=len(actions), null=True, **frac),
            role_ap=role_ap, n_positives=f.integers("n_pos", n=len(actions), lo=0),
            n_detections_agent=f.integers("n_det_agent", n=len(actions), lo=0, default=None),
            n_detections_role=f.integers("n_det_role", n=len(roles), lo=0, default=None),
            n_images=f.integer("n_images", lo=0),
            iou_threshold=f.number("iou_threshold", lo=0.0, hi=1.0),
            complete_ground_truth=f.boolean("complete_ground_truth", default=True))


def _nanmean(a: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64)
    ok = ~np.isnan(a)
    return float(a[ok].mean()) if ok.any() else float("nan")


def _overlap_f32(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Row-wise IoU with the +1 pixel rule, in float32 and in the reference's order of operations.

    ``vsrl_eval.get_overlap(gt_boxes, pred_box)`` run under numpy 2, element by element. Not
    :func:`hoibench.evaluation.paired_box_iou` (``convention="pixel"``), which computes in
    float64: the person arg-max must see the reference's float32 ties (two people whose IoUs
    differ by less than float32 rounding go to the first one there), and thresholds the same
    rounded values.
    """
    ixmin = np.maximum(gt[:, 0], pred[:, 0])
    iymin = np.maximum(gt[:, 1], pred[:, 1])
    ixmax = np.minimum(gt[:, 2], pred[:, 2])
    iymax = np.minimum(gt[:, 3], pred[:, 3])
    iw = np.maximum(ixmax - ixmin + _ONE, _F32(0.0))
    ih = np.maximum(iymax - iymin + _ONE, _F32(0.0))
    inters = iw * ih
    uni = ((pred[:, 2] - pred[:, 0] + _ONE) * (pred[:, 3] - pred[:, 1] + _ONE)
           + (gt[:, 2] - gt[:, 0] + _ONE) * (gt[:, 3] - gt[:, 1] + _ONE) - inters)
    with np.errstate(divide="ignore", invalid="ignore"):
        return inters / uni


def _match_persons(gt: VCOCOGroundTruth, det_image: np.ndarray,
                   det_boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each detection, the first arg-max person (global row, -1 if the image has none) and its IoU."""
    n_det = det_image.size
    counts = np.diff(gt.person_offsets)[det_image]
    det_rows = np.repeat(np.arange(n_det, dtype=np.int64), counts)
    person_rows = concat_ranges(gt.person_offsets[det_image], counts)
    ov = _overlap_f32(gt.person_boxes[person_rows], det_boxes[det_rows])
    best = np.full(n_det, -1, dtype=np.int64)
    ovmax = np.zeros(n_det, dtype=_F32)
    has = counts > 0
    if ov.size:
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[has]
        seg_max = np.maximum.reduceat(ov, starts)
        ovmax[has] = seg_max
        local = np.arange(ov.size, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        big = np.iinfo(np.int64).max
        cand = np.where(ov == np.repeat(ovmax, counts), local, big)
        first = np.minimum.reduceat(cand, starts)
        # NaN IoU cannot happen for finite boxes; a NaN-only segment would leave ``big``
        first = np.where(first == big, 0, first)
        best[has] = gt.person_offsets[det_image[has]] + first
    return best, ovmax


#: every detection (``in_tie_order`` when a class takes them all, in order): indexing with it is a view
_EVERY = slice(None)


def _class_rows(scores: np.ndarray) -> np.ndarray:
    """``scores`` (detections x classes) as one contiguous row per class: a view when the
    columns are already contiguous (the typed reader stacks them so), else one transposing pass
    instead of a strided one per class."""
    return scores.T if columns_contiguous(scores) else np.ascontiguousarray(scores.T)


def _first_hits(hit: np.ndarray, group: np.ndarray, score: np.ndarray) -> np.ndarray:
    """True where an entry is a hit and the best-ranked hit of its group (the reference's
    ``covered``): the highest score, the earliest entry (entries are in tie order) among equals."""
    tp = np.zeros(hit.size, dtype=bool)
    idx = np.flatnonzero(hit)
    if idx.size == 0:
        return tp
    o = idx[np.argsort(group[idx], kind="stable")]  # by group, entry order within
    g, s = group[o], score[o]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    best = np.repeat(np.maximum.reduceat(s, starts), np.diff(np.r_[starts, o.size]))
    pos = np.where(s == best, np.arange(o.size), o.size)
    tp[o[np.minimum.reduceat(pos, starts)]] = True
    return tp


def _voc_ap_f32(tp_sorted: np.ndarray, npos: int) -> float:
    """``vsrl_eval.voc_ap`` on float32 recall/precision, result rounded to float32 as stored there.

    The definition on a fully ranked TP sequence; :func:`_class_voc_ap` computes the same number
    from the TPs' ranks (and is tested against this)."""
    if npos <= 0:
        return float("nan")
    tp = np.cumsum(tp_sorted, dtype=_F32)
    fp = np.cumsum(~tp_sorted, dtype=_F32)
    rec = tp / _F32(npos)  # float32 / Python float stays float32
    # ``np.maximum(tp + fp, np.finfo(np.float64).eps)``: a float64 scalar, so precision is float64
    prec = tp.astype(np.float64) / np.maximum((tp + fp).astype(np.float64), np.finfo(np.float64).eps)
    return float(_F32(all_point_ap(rec, prec)))


def _class_voc_ap(score: np.ndarray, tp: np.ndarray, npos: int) -> float:
    """:func:`_voc_ap_f32` of one class's entries (in tie order) ranked by descending score.

    Only the TPs' ranks matter: recall changes only at a TP, and the precision envelope at a TP is
    reached at a TP (precision falls along each run of FPs); so the recall and precision at the
    TPs alone give the same padded steps, the same terms and the same float sum as the full
    ranked sequence. The rank of a TP (entries before it: scored higher, or scored the same and
    earlier in tie order) is found in the sorted scores (a value sort, not a stable index sort).
    """
    if npos <= 0:
        return float("nan")
    at = np.flatnonzero(tp)
    ts = score[at]
    ordered = np.sort(score)  # values only: much faster than the stable index sort
    right = np.searchsorted(ordered, ts, side="right")
    rank = score.size - right  # entries scored higher
    tied = right - np.searchsorted(ordered, ts, side="left") > 1
    if tied.any():  # entries sharing a TP's score come first when earlier in tie order
        eq = np.flatnonzero(np.isin(score, ts[tied]))
        eo = np.lexsort((eq, score[eq]))
        run_start = np.r_[True, score[eq[eo]][1:] != score[eq[eo]][:-1]]
        first = np.maximum.accumulate(np.where(run_start, np.arange(eq.size), 0))
        before = np.empty(eq.size, dtype=np.int64)
        before[eo] = np.arange(eq.size) - first
        rank[tied] += before[np.searchsorted(eq, at[tied])]
    rank = np.sort(rank)  # distinct: the TPs in ranking order
    j = np.arange(1, rank.size + 1, dtype=np.int64)  # TPs so far, at each TP
    rec = j.astype(_F32) / _F32(npos)
    prec = j.astype(np.float64) / np.maximum((rank + 1).astype(np.float64), np.finfo(np.float64).eps)
    return float(_F32(all_point_ap(rec, prec)))


def _class_major(parts: list[tuple[int, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(class, score, tp) columns of per-class entry lists, concatenated in class order."""
    cls = np.repeat(np.asarray([p[0] for p in parts], dtype=np.int16), [p[1].size for p in parts])
    return cls, np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts], axis=1)


# --------------------------------------------------------------------------- metric
_SCENARIOS = (1, 2)


def _check_args(iou_threshold: float, scenarios: Iterable[int]) -> tuple[float, tuple[int, ...]]:
    try:
        thr = float(iou_threshold)
    except (TypeError, ValueError):
        raise ConfigError(f"iou_threshold must be a number in (0, 1]; got {iou_threshold!r}") from None
    if not 0.0 < thr <= 1.0:
        raise ConfigError(f"iou_threshold must be in (0, 1]; got {iou_threshold!r}")
    sc = tuple(sorted(set(scenarios)))
    if not sc or any(s not in _SCENARIOS for s in sc):
        raise ConfigError(f"scenarios must be a non-empty subset of {list(_SCENARIOS)}; got {list(scenarios)!r}")
    return thr, sc


class VCOCORoleAP(Metric[VCOCOResult]):
    """V-COCO agent AP and role AP (scenarios 1 and 2) accumulated over batches of images.

    ``update(detections, ground_truth)`` scores the images of ``ground_truth`` (every image once
    over all updates; detections must belong to them); ``compute()`` ranks all detections of a
    class together and returns a :class:`VCOCOResult`. Same numbers as ``vsrl_eval.py``.

    Examples
    --------
    >>> metric = VCOCORoleAP(scenarios=(1, 2))          # doctest: +SKIP
    >>> metric.update(detections, ground_truth)          # doctest: +SKIP
    >>> metric.compute().role_map(1)                     # doctest: +SKIP
    """

    higher_is_better = True

    def __init__(self, *, iou_threshold: float = 0.5, scenarios: Iterable[int] = _SCENARIOS,
                 validate_args: bool = True) -> None:
        super().__init__()
        self.iou_threshold, self.scenarios = _check_args(iou_threshold, scenarios)
        self.validate_args = validate_args
        self._n_role = len(vcoco_role_classes())
        self.add_state("_agent", [])  # (class, score, tp[1, n]) per update
        self.add_state("_role", [])  # (class, score, tp[n_scenarios, n]) per update
        self.add_state("_npos", np.zeros(len(vcoco_action_names()), dtype=np.int64))
        self.add_state("_seen", set())  # image ids scored so far
        self.add_state("_n_images", 0)
        self.add_state("_complete", True)

    def update(self, detections: VCOCODetections, ground_truth: VCOCOGroundTruth) -> None:
        """Match the detections of the images of ``ground_truth`` and keep (class, score, TP) rows."""
        gt, det = ground_truth, detections
        det_image = gt.image_index(det.image_ids)
        if self.validate_args:
            if np.any(det_image < 0):
                i = int(np.flatnonzero(det_image < 0)[0])
                raise ValidationError(f"detection {i}: image id {int(det.image_ids[i])} is not in the ground truth")
            det.check()
            again = self._seen.intersection(gt.image_ids.tolist())
            if again:
                raise ValidationError(f"image id {min(again)} was already scored by an earlier update")
        self._seen.update(gt.image_ids.tolist())
        self._n_images += gt.n_images
        self._complete &= gt.complete
        self._npos += gt.n_positives()
        if len(det) == 0:
            return
        # rank ties by (image order, detection order): each class's entries are taken in that
        # order (``compute`` sorts stably by score), through the permutation rather than a copy
        order = np.argsort(det_image, kind="stable")
        sorted_already = not np.any(order[1:] < order[:-1])

        def in_tie_order(mask: np.ndarray) -> np.ndarray | slice:
            """The detections of ``mask`` in tie order; every detection, already in that order, as
            ``slice(None)``: the common dense case (each class scored on every detection) then
            takes views instead of gathering 51 copies of every column."""
            if sorted_already:
                return _EVERY if mask.all() else np.flatnonzero(mask)
            return order[mask[order]]

        n_det = len(det)
        person, ovmax = _match_persons(gt, det_image, det.person_boxes)
        keep = person >= 0
        ignored = np.zeros(n_det, dtype=bool)
        ignored[keep] = gt.ignored[person[keep]]
        live = ~ignored
        person_ok = keep & (ovmax >= self.iou_threshold)
        safe_person = np.where(keep, person, 0)
        has_action = np.zeros((n_det, self._npos.size), dtype=bool)
        if gt.n_persons:
            has_action = (gt.person_actions[safe_person] == 1) & keep[:, None]

        # one entry per (class, detection) with a score, on a person not ignored; class by class
        # (class-major, detections in tie order), so no (detections x classes) temporaries
        agent_parts = []
        by_class = _class_rows(det.agent_scores)
        for a in range(self._npos.size):
            d = in_tie_order(~np.isnan(by_class[a]) & live)
            score = by_class[a, d]
            hit = person_ok[d] & has_action[d, a]
            agent_parts.append((a, score, _first_hits(hit, safe_person[d], score)[None]))
        self._agent.append(_class_major(agent_parts))

        # role AP: only the person hits need the role-box test
        role_action = vcoco_role_action()
        role_parts = []
        by_class = _class_rows(det.role_scores)
        for c in range(self._n_role):
            d = in_tie_order(~np.isnan(by_class[c]) & live)
            score = by_class[c, d]
            owner = safe_person[d]
            cand = np.flatnonzero(person_ok[d] & has_action[d, role_action[c]])
            dc = cand if d is _EVERY else d[cand]
            pred = det.role_boxes[dc, c]
            gt_role = gt.role_boxes[safe_person[dc], c]
            gt_empty = np.isnan(gt_role).all(axis=1)
            ov = _overlap_f32(np.where(gt_empty[:, None], _F32(0.0), gt_role), pred)
            with np.errstate(invalid="ignore"):
                role_ok = ov >= self.iou_threshold  # NaN predicted box vs a real role: False, as in the reference
            pred_empty = (pred == 0).all(axis=1) | np.isnan(pred).all(axis=1)
            tps = []
            for s in self.scenarios:
                hit = np.zeros(score.size, dtype=bool)
                hit[cand] = np.where(gt_empty, pred_empty if s == 1 else True, role_ok)
                tps.append(_first_hits(hit, owner, score))
            role_parts.append((c, score, np.stack(tps)))
        self._role.append(_class_major(role_parts))

    def compute(self) -> VCOCOResult:
        """Rank each class's detections (score, then image and detection order) and take VOC AP."""
        agent_ap, n_agent = self._class_ap(self._agent, self._npos.size, self._npos, 1)
        role_ap_all, n_role = self._class_ap(self._role, self._n_role, self._npos[vcoco_role_action()],
                                             len(self.scenarios))
        return VCOCOResult(
            action_names=vcoco_action_names(), role_class_names=vcoco_role_classes(),
            agent_ap=agent_ap[0], role_ap=dict(zip(self.scenarios, role_ap_all)),
            n_positives=self._npos.copy(), n_detections_agent=n_agent, n_detections_role=n_role,
            n_images=self._n_images, iou_threshold=self.iou_threshold,
            complete_ground_truth=self._complete)

    @staticmethod
    def _class_ap(parts: list[tuple[np.ndarray, ...]], n_classes: int, npos: np.ndarray,
                  n_tp: int) -> tuple[np.ndarray, np.ndarray]:
        """AP per class for ``n_tp`` TP columns; entries are (class, score, tp) in tie order."""
        ap = np.full((n_tp, n_classes), np.nan)
        if len(parts) == 1:
            cls, score, tp = parts[0]
        elif parts:
            cls = np.concatenate([p[0] for p in parts])
            score = np.concatenate([p[1] for p in parts])
            tp = np.concatenate([p[2] for p in parts], axis=1)
        else:
            cls, score, tp = np.zeros(0, np.int16), np.zeros(0, _F32), np.zeros((n_tp, 0), bool)
        if len(parts) > 1:  # class-major again, keeping tie order (radix sort on int16)
            by_class = np.argsort(cls, kind="stable")
            cls, score, tp = cls[by_class], score[by_class], tp[:, by_class]
        bounds = np.searchsorted(cls, np.arange(n_classes + 1))
        for k in range(n_classes):
            lo, hi = bounds[k], bounds[k + 1]
            for t in range(n_tp):
                ap[t, k] = _class_voc_ap(score[lo:hi], tp[t, lo:hi], int(npos[k]))
        return ap, np.diff(bounds).astype(np.int64)


def vcoco_role_ap(detections: VCOCODetections, ground_truth: VCOCOGroundTruth, *,
                  iou_threshold: float = 0.5, scenarios: Iterable[int] = _SCENARIOS,
                  validate_args: bool = True) -> VCOCOResult:
    """Functional twin of :class:`VCOCORoleAP`: agent AP and role AP of ``detections`` in one call."""
    metric = VCOCORoleAP(iou_threshold=iou_threshold, scenarios=scenarios, validate_args=validate_args)
    metric.update(detections, ground_truth)
    return metric.compute()
