"""HICO-DET mAP: one vectorised evaluator, each reference protocol reproduced as named options.

The three implementations people report numbers from disagree in small ways (see
``docs/protocols.md`` for the sources and what was verified against each):

``official`` (ywchao/ho-rcnn ``eval_one.m`` + ``VOCevaldet_bboxpair.m``)
    Per HOI class, detections sorted by score (stable); each takes the ground-truth pair with the
    largest ``min(IoU_h, IoU_o)`` (first one on ties); TP when that is >= 0.5 and the pair is not
    matched yet, otherwise FP (even when another pair would still match). IoU with +1 pixel areas
    on 1-based boxes (detections shifted by +1). 11-point AP over MATLAB's ``0:0.1:1``. Every
    test image, no cap per image. Full = mean over all classes (no ground truth: AP 0).
``qpic`` (hitachi-rd-cv/qpic ``datasets/hico_eval.py``; CDN and HOTR copy it)
    Top 100 (pair, verb) triplets per image after dropping invalid verb-object combinations;
    same greedy matching; QPIC's IoU (empty intersection test before the +1); 11-point AP over
    ``np.arange(0., 1.1, 0.1)``; ranking with numpy's default (unstable) ``argsort`` of the
    scores in QPIC's append order; means over classes that have ground truth; and QPIC's bug:
    detections in images without ground-truth pairs are never counted.
``pocket`` (fredzzhang/upt and pvic through ``pocket.utils``)
    Each detection is associated with its highest-IoU pair, a TP candidate when that IoU is
    strictly > 0.5 (no +1 pixel); the best-scoring candidate of each pair is the TP. 11-point AP
    over ``torch.linspace(0, 1, 11)``; images without pairs dropped; means over all classes.

Known-Object (any protocol): a class's detections count only in images whose labels contain the
class's object (HICO's image-level ``anno.mat`` labels when given, otherwise the objects of the
image's annotated pairs).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.data import HOIDataset, HOIPredictions
from hoibench.data._dataset import concat_ranges
from hoibench.evaluation._ap import precision_recall, recall_thresholds, voc11_ap
from hoibench.evaluation._fields import Fields, from_percent, json_float, result_header, to_percent
from hoibench.evaluation._iou import IOU_CONVENTIONS, pair_iou, paired_box_iou
from hoibench.evaluation._metric import Metric, Verbatim

__all__ = [
    "HICO_PROTOCOLS",
    "MAP_METRICS",
    "ClassesWithoutGroundTruthWarning",
    "HICOMapCI",
    "HICOMapResult",
    "HICOMatches",
    "HICOMeanAP",
    "HICOProtocol",
    "hico_mean_ap",
    "match_hico_detections",
]

logger = logging.getLogger(__name__)


class ClassesWithoutGroundTruthWarning(UserWarning):
    """Some HOI classes have no ground-truth pair in the evaluated images and a mean over all
    classes (official, pocket) counts each as AP 0: a validation subset in a training loop, an SG
    test set. Raised once per ``compute``; the message says how many and which means."""


# ----------------------------------------------------------------------------- protocols
@dataclass(frozen=True)
class HICOProtocol:
    """Every choice that makes two HICO-DET evaluators disagree, as a named field.

    Use a preset (:meth:`preset` / :data:`HICO_PROTOCOLS`) and ``dataclasses.replace`` (or
    :meth:`replace`) to vary one choice.

    Attributes
    ----------
    name:
        Label echoed in results.
    iou:
        Box IoU convention: ``"pixel"`` (+1 areas), ``"qpic"`` or ``"continuous"``
        (see :mod:`hoibench.evaluation._iou`).
    box_offset:
        Added to every box before the IoU (official: +1, MATLAB's 1-based frame). Only
        rounding can depend on it, but it makes the arithmetic identical to the reference.
    iou_threshold, strict:
        A pair matches when its overlap is ``>= iou_threshold`` (``> `` when ``strict``).
    recall_thresholds:
        11-point flavour: ``"matlab"``, ``"arange"``, ``"linspace"`` or ``"decimal"``.
    max_per_image:
        Keep only the best ``max_per_image`` detections per image (ranked by score, stable),
        after dropping detections whose (verb, object) is no HOI class. ``None``: no cap.
    count_images_without_pairs:
        Whether detections in ground-truth images that have no pair count (as FPs).
    mean_over:
        ``"all"``: means over every class of the subset, classes without ground truth count as
        0; ``"with_gt"``: means over the classes that have ground truth.
    pair_nms, pair_nms_alpha, pair_nms_beta:
        CDN's optional pair-NMS after the per-image cap (``None``: off; CDN uses 0.7, 1, 0.5):
        per image and HOI class, in descending score order, a detection suppresses the later
        ones whose ``IoU_h ** alpha * IoU_o ** beta`` (+1 pixel IoU) exceeds the threshold.
    ranking:
        Order of tied scores when ranking a class's detections for AP: ``"stable"`` (image
        order, then file order) or ``"numpy"`` (numpy's default argsort of the scores in QPIC's
        append order, reproducing QPIC's tie order exactly).
    """

    name: str = "official"
    iou: Literal["continuous", "pixel", "qpic"] = "pixel"
    box_offset: float = 1.0
    iou_threshold: float = 0.5
    strict: bool = False
    recall_thresholds: str = "matlab"
    max_per_image: int | None = None
    count_images_without_pairs: bool = True
    mean_over: Literal["all", "with_gt"] = "all"
    ranking: Literal["stable", "numpy"] = "stable"
    pair_nms: float | None = None
    pair_nms_alpha: float = 1.0
    pair_nms_beta: float = 0.5

    def __post_init__(self) -> None:
        if self.iou not in IOU_CONVENTIONS:
            raise ConfigError(f"iou must be one of {list(IOU_CONVENTIONS)}; got {self.iou!r}")
        recall_thresholds(self.recall_thresholds)
        if not 0.0 <= self.iou_threshold <= 1.0:
            raise ConfigError(f"iou_threshold must be in [0, 1]; got {self.iou_threshold!r}")
        if self.max_per_image is not None and self.max_per_image < 1:
            raise ConfigError(f"max_per_image must be a positive integer or None; got {self.max_per_image!r}")
        if self.mean_over not in ("all", "with_gt"):
            raise ConfigError(f"mean_over must be one of ['all', 'with_gt']; got {self.mean_over!r}")
        if self.pair_nms is not None and not 0.0 <= self.pair_nms <= 1.0:
            raise ConfigError(f"pair_nms must be None or in [0, 1]; got {self.pair_nms!r}")
        if self.ranking not in ("stable", "numpy"):
            raise ConfigError(f"ranking must be one of ['numpy', 'stable']; got {self.ranking!r}")

    @classmethod
    def preset(cls, name: str | HICOProtocol) -> HICOProtocol:
        """The protocol called ``name`` (``official``, ``qpic``, ``pocket``)."""
        if isinstance(name, HICOProtocol):
            return name
        try:
            return HICO_PROTOCOLS[name.lower()]
        except KeyError:
            raise ConfigError(f"protocol must be one of {sorted(HICO_PROTOCOLS)}; got {name!r}") from None

    def replace(self, **changes: Any) -> HICOProtocol:
        """A copy with some choices changed (``name`` becomes ``"<name>+custom"`` unless given)."""
        changes.setdefault("name", f"{self.name}+custom" if not self.name.endswith("+custom") else self.name)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


HICO_PROTOCOLS: dict[str, HICOProtocol] = {
    "official": HICOProtocol(),
    "qpic": HICOProtocol(name="qpic", iou="qpic", box_offset=0.0, recall_thresholds="arange",
                         max_per_image=100, count_images_without_pairs=False, mean_over="with_gt",
                         ranking="numpy"),
    "cdn": HICOProtocol(name="cdn", iou="qpic", box_offset=0.0, recall_thresholds="arange",
                        max_per_image=100, count_images_without_pairs=False, mean_over="with_gt",
                        ranking="numpy", pair_nms=0.7),
    "pocket": HICOProtocol(name="pocket", iou="continuous", box_offset=0.0, strict=True,
                           recall_thresholds="linspace", count_images_without_pairs=False),
}


# ----------------------------------------------------------------------------- matching
@dataclass(frozen=True, repr=False)
class HICOMatches:
    """Per-class ranked detections with their TP flags: what the AP is computed from.

    Class ``c``'s detections are rows ``class_offsets[c]:class_offsets[c+1]``, in the order the
    protocol ranks them for AP. ``det_index`` points into the evaluated predictions
    (concatenated over ``update`` calls), ``image_index`` into the ground-truth images and
    ``gt_pair`` to the matched ground-truth pair (``-1`` for FPs).
    """

    protocol: HICOProtocol
    class_offsets: np.ndarray
    scores: np.ndarray
    tp: np.ndarray
    det_index: np.ndarray
    image_index: np.ndarray
    gt_pair: np.ndarray
    n_gt: np.ndarray
    n_dropped: Counter[str] = field(default_factory=Counter)
    class_names: tuple[str, ...] = ()

    kind: ClassVar[str] = "hoi_matches"
    json_keys: ClassVar[frozenset[str]] = frozenset({
        "protocol", "protocol_options", "n_gt", "class_names", "hoi", "score", "tp", "det_index",
        "image_index", "gt_pair", "dropped"})

    @property
    def n_classes(self) -> int:
        return len(self.n_gt)

    def __repr__(self) -> str:
        """Sizes, not the arrays (which hold one entry per detection)."""
        return (f"HICOMatches(protocol={self.protocol.name!r}, n_classes={self.n_classes}, "
                f"n_detections={len(self.scores)}, n_tp={int(np.count_nonzero(self.tp))}, "
                f"n_gt={int(self.n_gt.sum())}, n_dropped={sum(self.n_dropped.values())})")

    @property
    def hoi(self) -> np.ndarray:
        """HOI class of every detection (rows in ranked order)."""
        return np.repeat(np.arange(self.n_classes), np.diff(self.class_offsets))

    def to_json(self, *, model: str | None = None, benchmark: str | None = None) -> dict[str, Any]:
        """The ``hoi_matches`` object of ``docs/interfaces.md``: every counted detection's class,
        score and TP flag in the protocol's ranked order, with the evaluator's indices."""
        out = result_header(self.kind, model, benchmark)
        out.update({
            "protocol": self.protocol.name, "protocol_options": self.protocol.to_dict(),
            "n_gt": [int(x) for x in self.n_gt], "class_names": list(self.class_names),
            "hoi": self.hoi.tolist(), "score": [float(x) for x in self.scores], "tp": self.tp.tolist(),
            "det_index": self.det_index.tolist(), "image_index": self.image_index.tolist(),
            "gt_pair": self.gt_pair.tolist(), "dropped": dict(self.n_dropped)})
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, file: object = None, record: object = None) -> HICOMatches:
        """Read a ``hoi_matches`` object. Required: ``n_gt``, ``hoi``, ``score``, ``tp``; without
        ``protocol`` the official one. Detections are ranked per class by score (stable, so a
        file in the evaluator's order keeps that order, ties included); indices a file lacks
        are -1."""
        f = Fields(d, file=file, record=record)
        f.check_kind(cls.kind)
        n_gt = f.integers("n_gt", lo=0)
        hoi = f.integers("hoi", lo=0, hi=len(n_gt))
        n = len(hoi)
        score = f.numbers("score", n=n)
        tp = f.booleans("tp", n=n)
        names = f.strings("class_names", n=len(n_gt) if f.d.get("class_names") else None, default=())
        missing = np.full(n, -1, dtype=np.int64)
        det_index = f.integers("det_index", n=n, lo=-1, default=missing)
        image_index = f.integers("image_index", n=n, lo=-1, default=missing)
        gt_pair = f.integers("gt_pair", n=n, lo=-1, default=missing)
        over = np.bincount(hoi[tp], minlength=len(n_gt)) > n_gt
        if over.any():
            raise f.error("tp", f"class {int(np.flatnonzero(over)[0])} has more true positives than "
                                "ground-truth pairs (n_gt)")
        order = np.lexsort((-score, hoi))
        return cls(protocol=_read_protocol(f), class_offsets=np.searchsorted(hoi[order], np.arange(len(n_gt) + 1)),
                   scores=score[order], tp=tp[order], det_index=det_index[order],
                   image_index=image_index[order], gt_pair=gt_pair[order], n_gt=n_gt,
                   n_dropped=Counter(f.counts("dropped", default={})), class_names=names)

    def for_class(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, tp)`` of class ``c`` in ranked order."""
        s = slice(int(self.class_offsets[c]), int(self.class_offsets[c + 1]))
        return self.scores[s], self.tp[s]

    def average_precision(self) -> np.ndarray:
        """Per-class AP (fractions); NaN for classes without ground truth."""
        ap = np.full(self.n_classes, np.nan)
        for c in range(self.n_classes):
            n = int(self.n_gt[c])
            if n == 0:
                continue
            _, tp = self.for_class(c)
            ap[c] = _class_ap(tp, n, self.protocol.recall_thresholds)
        return ap


def _class_ap(tp: np.ndarray, n_gt: int, flavour: str) -> float:
    prec, rec = precision_recall(tp, n_gt)
    return voc11_ap(rec, prec, thresholds=flavour)  # type: ignore[arg-type]


@dataclass
class _Aligned:
    """Detections restricted to known images and valid classes, in ground-truth image indices."""

    image: np.ndarray
    hoi: np.ndarray
    objects: np.ndarray
    boxes_h: np.ndarray
    boxes_o: np.ndarray
    scores: np.ndarray
    det_index: np.ndarray
    dropped: Counter[str]


def _align(preds: HOIPredictions, target: HOIDataset, *, lenient: bool, det_base: int = 0) -> _Aligned:
    if preds.vocab.n_hois != target.vocab.n_hois or preds.vocab.n_hois == 0:
        raise ConfigError(f"predictions ({preds.vocab.name}) and ground truth ({target.vocab.name}) "
                          "need the same label space with HOI classes (HICO-DET)")
    index = {f: i for i, f in enumerate(target.file_names)}
    img_map = np.fromiter((index.get(f, -1) for f in preds.file_names), dtype=np.int64,
                          count=preds.n_images)
    dropped: Counter[str] = Counter()
    unknown = np.flatnonzero(img_map < 0)
    counts = np.diff(preds.offsets)
    if len(unknown):
        n_unknown = int(counts[unknown].sum())
        if not lenient and n_unknown:
            i = int(unknown[np.argmax(counts[unknown] > 0)])
            raise ValidationError(f"{preds.name or 'predictions'}: record {i}: file_name: image "
                                  f"{preds.file_names[i]!r} "
                                  f"is not in the ground truth {target.name or ''}".rstrip()
                                  + " (use --lenient to drop such detections)")
        if n_unknown:
            dropped["image not in the ground truth"] += n_unknown
    image = img_map[preds.image_index]
    hoi = preds.hois
    keep = image >= 0
    no_class = keep & (hoi < 0)
    if no_class.any():
        dropped["(verb, object) is no HOI class"] += int(no_class.sum())
    keep &= hoi >= 0
    idx = np.flatnonzero(keep)
    kept = _rows(idx, len(keep))
    return _Aligned(kept(image), kept(hoi), kept(preds.objects), kept(preds.boxes_h), kept(preds.boxes_o),
                    kept(preds.scores), idx + det_base, dropped)


def _rows(idx: np.ndarray, n: int) -> Callable[[np.ndarray], np.ndarray]:
    """Selects rows ``idx`` of arrays of ``n`` rows; where ``idx`` is every row (the usual case),
    the arrays themselves, not gathered copies."""
    if len(idx) == n:
        return lambda a: a
    return lambda a: a[idx]


def _ranks_within(keys: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Position of each element inside its key group, following ``order``."""
    sk = keys[order]
    start = np.r_[0, np.flatnonzero(sk[1:] != sk[:-1]) + 1]
    grp_start = np.repeat(start, np.diff(np.r_[start, len(sk)]))
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys)) - grp_start
    return rank


def _order_by_image(image: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The argsort of ``image * (pos.max() + 1) + pos`` (by image, then by file position). Where
    ``pos`` increases along the array (as :func:`_align` leaves it), the detections come in
    runs of one image (a file lists them image by image): the runs are sorted, stably, by
    image and expanded, instead of sorting every detection."""
    n = len(image)
    if n < 2 or not bool((pos[1:] > pos[:-1]).all()):
        return np.argsort(image * (int(pos.max(initial=0)) + 1) + pos)
    starts = np.r_[0, np.flatnonzero(image[1:] != image[:-1]) + 1]
    lengths = np.diff(np.r_[starts, n])
    b = np.argsort(image[starts], kind="stable")
    return concat_ranges(starts[b], lengths[b])


def _stable_argsort_descending(values: np.ndarray) -> np.ndarray:
    """``np.argsort(-values, kind="stable")`` (NaN last, -0.0 equal to 0.0) as a least-significant
    digit radix sort: an integer key that orders as the values do, sorted 16 bits at a time by
    numpy's stable argsort (a counting sort for 16-bit keys), each pass stable, so equal values
    stay in index order. Scores that are all float32 values (what models output) need a 32-bit
    key, two passes; others a 64-bit key, four; a pass whose digit is the same everywhere is
    skipped. 1M scores: ~25 ms, against ~130 ms for a quicksort with its ties put back in order."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = v.astype(np.float32)
    if np.array_equal(f, v, equal_nan=True):
        bits, top = (f + np.float32(0)).view(np.uint32), np.uint32(1 << 31)  # + 0: -0.0 as 0.0
    else:
        bits, top = (v + 0.0).view(np.uint64), np.uint64(1 << 63)
    # ascending order of the floats is that of the bits with the sign flipped, or all bits
    # flipped for negatives; descending is its complement, NaN given the largest key (last)
    key = np.where(bits >= top, bits, ~(bits | top))
    nan = np.isnan(v)
    if nan.any():
        key[nan] = ~key.dtype.type(0)
    order: np.ndarray | None = None
    for shift in range(0, 8 * key.itemsize, 16):
        digit = (key >> key.dtype.type(shift)).astype(np.uint16)  # the low 16 bits
        if order is not None:
            digit = digit[order]
        if len(digit) and (digit == digit[0]).all():
            continue
        step = np.argsort(digit, kind="stable")
        order = step if order is None else order[step]
    return np.arange(len(v)) if order is None else order


def _then_by(order: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``order`` (positions into ``group``) stably re-sorted by ``group`` (values in
    0..n_groups-1): the positions by group, then as ``order`` had them. Equal to an argsort of
    ``group * len + rank in order``, but a radix sort (16-bit keys) where the groups fit."""
    g = group[order]
    if n_groups <= 1 << 16:
        g = g.astype(np.uint16)
    return order[np.argsort(g, kind="stable")]


def _pair_nms(det: _Aligned, keep: np.ndarray, protocol: HICOProtocol) -> np.ndarray:
    """CDN's ``triplet_nms_filter``: greedy pair-NMS per (image, HOI class), all groups at once.

    Rounds: every group's best remaining detection is kept and removes the remaining ones it
    overlaps by more than the threshold; at most (largest group) rounds. Within a group CDN
    orders by ``scores.argsort()[::-1]``, i.e. ties in reverse input order for small groups.
    """
    idx = np.flatnonzero(keep)
    n_img = int(det.image.max(initial=0)) + 1
    group = det.hoi[idx] * n_img + det.image[idx]
    # descending score, ties in reverse file order (numpy's argsort()[::-1] on small groups)
    order = idx[np.lexsort((-det.det_index[idx], -det.scores[idx], group))]
    g = det.hoi[order] * n_img + det.image[order]
    start = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    gid = np.repeat(np.arange(len(start)), np.diff(np.r_[start, len(g)]))
    h, o = det.boxes_h[order], det.boxes_o[order]
    alive = np.ones(len(order), dtype=bool)
    kept = np.zeros(len(order), dtype=bool)
    while alive.any():
        pos = np.flatnonzero(alive)
        first_of_group = np.r_[True, gid[pos][1:] != gid[pos][:-1]]
        pivots = pos[first_of_group]
        kept[pivots] = True
        alive[pivots] = False
        pivot_of = np.full(len(start), -1, dtype=np.int64)
        pivot_of[gid[pivots]] = pivots
        rest = np.flatnonzero(alive)
        if not len(rest):
            break
        pv = pivot_of[gid[rest]]
        has = pv >= 0
        rest, pv = rest[has], pv[has]
        ih = paired_box_iou(h[pv], h[rest], convention="pixel")
        io = paired_box_iou(o[pv], o[rest], convention="pixel")
        ovr = np.power(ih, protocol.pair_nms_alpha) * np.power(io, protocol.pair_nms_beta)
        alive[rest[~(ovr <= protocol.pair_nms)]] = False
    out = np.zeros(len(keep), dtype=bool)
    out[order[kept]] = True
    return out


def _match(det: _Aligned, target: HOIDataset, protocol: HICOProtocol,
           image_labels: np.ndarray | None, dropped: Counter[str]) -> HICOMatches:
    n_cls = target.vocab.n_hois
    n_img = target.n_images
    # One stable score rank serves every ordering below: descending score, ties by ground-truth
    # image, then by position in the prediction file (MATLAB's stable sort of the per-image lists).
    n_all = len(det.scores)
    pos = det.det_index - det.det_index.min(initial=0)
    by_image = _order_by_image(det.image, pos)
    srank_order = by_image[_stable_argsort_descending(det.scores[by_image])]
    srank_all = np.empty(n_all, dtype=np.int64)
    srank_all[srank_order] = np.arange(n_all)
    keep = np.ones(n_all, dtype=bool)
    if protocol.max_per_image is not None:
        within = _then_by(srank_order, det.image, n_img)  # by image, then score rank
        rank = _ranks_within(det.image, within)
        over = rank >= protocol.max_per_image
        if over.any():
            dropped[f"beyond the top {protocol.max_per_image} of its image"] += int(over.sum())
        keep &= ~over
    if protocol.pair_nms is not None:
        suppressed = keep & ~_pair_nms(det, keep, protocol)
        if suppressed.any():
            dropped[f"suppressed by pair-NMS ({protocol.pair_nms})"] += int(suppressed.sum())
        keep &= ~suppressed
    pairs_per_image = target.pairs_per_image
    if not protocol.count_images_without_pairs:
        nopair = keep & (pairs_per_image[det.image] == 0)
        if nopair.any():
            dropped["image without ground-truth pairs (not counted by this protocol)"] += int(nopair.sum())
        keep &= ~nopair
    if image_labels is not None:
        unlabelled = keep & ~image_labels[det.image, det.objects]
        if unlabelled.any():
            dropped["Known-Object: object not in the image"] += int(unlabelled.sum())
        keep &= ~unlabelled
    sel = np.flatnonzero(keep)
    n = len(sel)
    kept = _rows(sel, n_all)
    image, hoi, scores = kept(det.image), kept(det.hoi), kept(det.scores)
    off = protocol.box_offset
    det_index = kept(det.det_index)
    srank = kept(srank_all)

    # --- ground truth pairs grouped by (image, class): image-major, as a file lists its
    # detections, so that the search below walks the table forward (4x faster on 1M detections)
    g_hoi = target.pair_hoi
    g_valid = np.flatnonzero(g_hoi >= 0)
    g_key = target.pair_image[g_valid] * n_cls + g_hoi[g_valid]
    g_order = np.argsort(g_key, kind="stable")
    g_pairs = g_valid[g_order]  # global pair indices, sorted by key, file order inside a key
    g_key = g_key[g_order]
    gh = target.pair_subject_boxes[g_pairs] + off
    go = target.pair_object_boxes[g_pairs] + off
    n_gt = target.hoi_counts()

    key = image * n_cls + hoi
    lo = np.searchsorted(g_key, key, side="left")
    # the end of each key's run from the ground truth's own (small) table: one search, not two
    g_end = np.searchsorted(g_key, g_key, side="right")
    at = np.minimum(lo, len(g_key) - 1)
    hi = np.where((lo < len(g_key)) & (g_key[at] == key), g_end[at], lo) if len(g_key) else lo
    n_cand = hi - lo
    d_rep = np.repeat(np.arange(n), n_cand)
    c_start = np.repeat(np.cumsum(n_cand) - n_cand, n_cand)
    g_rep = np.repeat(lo, n_cand) + (np.arange(len(d_rep)) - c_start)
    # the candidates' boxes gathered from the aligned arrays in one step (through sel), not the
    # kept detections' boxes first: two fewer copies of 32 MB per 1M detections
    rows = sel[d_rep] if n < n_all else d_rep
    bh, bo = det.boxes_h[rows], det.boxes_o[rows]
    if off:
        bh += off
        bo += off
    ov = pair_iou(bh, bo, gh[g_rep], go[g_rep], convention=protocol.iou)
    ov = np.where(np.isnan(ov), 0.0, ov)
    best = np.full(n, -np.inf)
    np.maximum.at(best, d_rep, ov)
    # first ground-truth pair reaching the maximum (MATLAB's strict ">" scan; QPIC and pocket alike)
    is_best = ov == best[d_rep]
    first = np.full(n, -1, dtype=np.int64)
    pos = np.flatnonzero(is_best)
    hit, at = np.unique(d_rep[pos], return_index=True)  # d_rep is sorted: first occurrence
    first[hit] = g_rep[pos[at]]
    ok = (best > protocol.iou_threshold) if protocol.strict else (best >= protocol.iou_threshold)
    ok &= first >= 0
    # --- greedy assignment in score order (stable): the first detection to claim a pair is TP
    tp = np.zeros(n, dtype=bool)
    claim = np.flatnonzero(ok)
    if len(claim):
        c_order = claim[np.argsort(first[claim] * n_all + srank[claim])]
        fg = first[c_order]
        winners = c_order[np.r_[True, fg[1:] != fg[:-1]]]
        tp[winners] = True
    gt_pair = np.where(tp, g_pairs[np.where(first >= 0, first, 0)], -1)

    # --- ranking for AP: by class, then by the stable score rank
    in_sel = np.cumsum(keep) - 1  # a kept detection's position in sel
    a_order = _then_by(in_sel[srank_order[keep[srank_order]]], hoi, n_cls)
    class_offsets = np.searchsorted(hoi[a_order], np.arange(n_cls + 1))
    if protocol.ranking != "stable":
        # QPIC appends per image (dataset order) in its stable score order, then ranks each
        # class with np.argsort(-score) (numpy's default, unstable kind). A class without tied
        # scores has one descending order, whichever the sort; only a class with ties is
        # ranked again as QPIC does, so that tied entries land where its argsort puts them.
        ranked_scores, ranked_hoi = scores[a_order], hoi[a_order]
        tie = (ranked_scores[1:] == ranked_scores[:-1]) & (ranked_hoi[1:] == ranked_hoi[:-1])
        for c in np.unique(ranked_hoi[1:][tie]).tolist():
            lo, hi = class_offsets[c], class_offsets[c + 1]
            members = a_order[lo:hi]
            appended = members[np.argsort(image[members] * n_all + srank[members])]
            a_order[lo:hi] = appended[np.argsort(-scores[appended])]
    return HICOMatches(protocol=protocol, class_offsets=class_offsets, scores=scores[a_order],
                       tp=tp[a_order], det_index=det_index[a_order], image_index=image[a_order],
                       gt_pair=gt_pair[a_order], n_gt=n_gt, n_dropped=dropped,
                       class_names=tuple(target.vocab.hoi_name(c) for c in range(n_cls)))


def _image_label_matrix(target: HOIDataset, image_labels: Mapping[str, Iterable[int]] | None
                        ) -> tuple[np.ndarray, str]:
    m = np.zeros((target.n_images, target.vocab.n_objects), dtype=bool)
    if image_labels is None:
        lab = target.pair_object_label
        has = lab >= 0
        m[target.pair_image[has], lab[has]] = True
        return m, "objects of the annotated pairs"
    missing = [f for f in target.file_names if f not in image_labels]
    if missing:
        raise ValidationError(f"image labels: {len(missing)} ground-truth images have no labels "
                              f"(first: {missing[0]!r})")
    for i, f in enumerate(target.file_names):
        objs = list(image_labels[f])
        if objs:
            m[i, objs] = True
    return m, "image-level labels"


def match_hico_detections(preds: HOIPredictions, target: HOIDataset, *,
                          protocol: str | HICOProtocol = "official", known_object: bool = False,
                          image_labels: Mapping[str, Iterable[int]] | None = None,
                          lenient: bool = False) -> HICOMatches:
    """Per-class ranked scores and TP flags (plus ``n_gt``) under a protocol.

    This is the matching step of :func:`hico_mean_ap`, exposed for analyses that need the
    ranked TP/FP sequence (e.g. B-RIGHT's TP -> FP sensitivity).
    """
    proto = HICOProtocol.preset(protocol)
    det = _align(preds, target, lenient=lenient)
    labels = _image_label_matrix(target, image_labels)[0] if known_object else None
    return _match(det, target, proto, labels, Counter(det.dropped))


# ----------------------------------------------------------------------------- results
#: the mAP metrics of every result besides its ``subsets``
MAP_METRICS = ("full", "rare", "non_rare")


@dataclass(frozen=True)
class HICOMapCI:
    """Bootstrap confidence intervals of a result's mAPs (fractions), as
    :func:`hoibench.analysis.hico_map_bootstrap` computes them.

    ``intervals[metric]`` is ``(low, high)`` or ``None`` where undefined (no class with ground
    truth in a replicate); ``bias`` is the mean of the replicates minus the estimate, ``se`` their
    standard deviation. ``method`` ``"se"``: no interval passed the coverage check for one model's
    mAP (:data:`~hoibench.evaluation.CI_METHOD_OF`), so there are no intervals and no level, only
    ``se`` and ``bias``. The JSON (``"ci"`` of ``hico_map``) holds these in percent.
    """

    intervals: Mapping[str, tuple[float, float] | None]
    bias: Mapping[str, float] = field(default_factory=dict)
    confidence: float | None = None
    n_resamples: int | None = None
    seed: int | None = None
    method: str | None = None
    resampled: str = "images"
    se: Mapping[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``"ci"`` object of ``hico_map`` (percent)."""
        out: dict[str, Any] = {m: None if iv is None else [to_percent(iv[0]), to_percent(iv[1])]
                               for m, iv in self.intervals.items()}
        if self.confidence is not None:
            out["level"] = self.confidence
        out.update({"n_boot": self.n_resamples, "seed": self.seed,
                    "method": self.method, "resampled": self.resampled,
                    "bias": {m: json_float(to_percent(b)) for m, b in self.bias.items()}})
        if self.se:
            out["se"] = {m: json_float(to_percent(v)) for m, v in self.se.items()}
        return out

    @classmethod
    def from_json(cls, f: Fields) -> HICOMapCI:
        """Read the ``"ci"`` object; ``f`` is its :class:`Fields` (percent in, fractions out)."""
        meta = {"level", "n_boot", "seed", "method", "resampled", "bias", "se"}
        intervals = {str(k): f.interval(k, scale=from_percent) for k in f.d if k not in meta}
        seed = f.d.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise f.error("seed", f"expected an integer or null, got {seed!r}")
        return cls(intervals=intervals,
                   bias=f.number_map("bias", null=True, default={}, scale=from_percent),
                   confidence=f.number("level", default=None, lo=0.0, hi=1.0, unit="a fraction")
                   if f.has("level") else None,
                   n_resamples=f.integer("n_boot", default=None, lo=1), seed=seed,
                   method=f.string("method", default=None), resampled=f.string("resampled", default="images"),
                   se=f.number_map("se", null=True, default={}, scale=from_percent))


@dataclass(frozen=True, repr=False)
class HICOMapResult:
    """HICO-DET mAP. Every AP is a fraction in [0, 1] (``full``, ``rare``, ``non_rare``,
    ``subsets`` and per-class AP alike); the ``hico_map`` JSON writes the mAPs in percent.

    ``per_class_ap`` is NaN where a class has no ground truth. A result read from a file of
    published numbers may lack the per-class fields (``None``). ``headline`` names the
    benchmark's main number: ``"full"`` or a key of ``subsets`` (``"unseen"`` on an SG split,
    whose test set holds only unseen classes; ``"selected"`` for a balanced split's classes).
    ``ci``: bootstrap intervals, when computed.
    """

    full: float
    rare: float = math.nan
    non_rare: float = math.nan
    subsets: Mapping[str, float] = field(default_factory=dict)
    per_class_ap: np.ndarray | None = None
    n_gt: np.ndarray | None = None
    n_detections: np.ndarray | None = None
    class_names: tuple[str, ...] = ()
    classes: np.ndarray | None = None
    protocol: HICOProtocol = field(default_factory=HICOProtocol)
    known_object: bool = False
    known_object_source: str | None = None
    n_dropped: Mapping[str, int] = field(default_factory=dict)
    headline: str = "full"
    ci: HICOMapCI | None = None

    kind: ClassVar[str] = "hico_map"
    #: the keys :meth:`to_json` writes (every other key of a file is the record's ``extra``)
    json_keys: ClassVar[frozenset[str]] = frozenset({
        "protocol", "known_object", "known_object_source", "full", "rare", "non_rare", "subsets",
        "per_class_ap", "n_gt", "class_names", "classes", "protocol_options", "n_detections",
        "dropped", "headline", "ci"})

    def __post_init__(self) -> None:
        if self.headline != "full" and self.headline not in self.subsets:
            raise ConfigError(f"headline must be 'full' or a key of subsets {sorted(self.subsets)}; "
                              f"got {self.headline!r}")

    def __repr__(self) -> str:
        """The mAPs, not the per-class arrays."""
        subsets = ", ".join(f"{k!r}: {v:.4f}" for k, v in self.subsets.items())
        n = "none" if self.per_class_ap is None else f"{len(self.per_class_ap)} classes"
        return (f"HICOMapResult(full={self.full:.4f}, rare={self.rare:.4f}, non_rare={self.non_rare:.4f}, "
                f"subsets={{{subsets}}}, headline={self.headline!r}, protocol={self.protocol.name!r}, "
                f"per_class_ap={n}{', with ci' if self.ci is not None else ''})")

    def mean_ap(self, metric: str = "full") -> float:
        """``full``, ``rare``, ``non_rare`` or a subset's mAP (fraction)."""
        if metric in MAP_METRICS:
            return float(getattr(self, metric))
        if metric in self.subsets:
            return float(self.subsets[metric])
        raise ConfigError(f"no mAP {metric!r}; have {', '.join([*MAP_METRICS, *self.subsets])}")

    @property
    def headline_map(self) -> float:
        """The benchmark's main number (fraction): the mAP named by :attr:`headline`."""
        return self.mean_ap(self.headline)

    @property
    def headline_ci(self) -> tuple[float, float] | None:
        """Bootstrap interval of :attr:`headline_map` (fractions), when one was computed."""
        return None if self.ci is None else self.ci.intervals.get(self.headline)

    def class_ap(self) -> np.ndarray:
        """AP (fractions) of the classes with ground truth, in class order (empty without
        per-class AP): ``n_gt > 0`` when known, else a non-null AP."""
        if self.per_class_ap is None:
            return np.zeros(0)
        ap = self.per_class_ap
        keep = ~np.isnan(ap) if self.n_gt is None else (self.n_gt > 0) & ~np.isnan(ap)
        return ap[keep]

    def to_json(self, *, model: str | None = None, benchmark: str | None = None) -> dict[str, Any]:
        """The ``hico_map`` object of ``docs/interfaces.md`` (mAPs in percent)."""
        out = result_header(self.kind, model, benchmark)
        out.update({
            "protocol": self.protocol.name, "known_object": self.known_object,
            "known_object_source": self.known_object_source,
            "full": json_float(to_percent(self.full)), "rare": json_float(to_percent(self.rare)),
            "non_rare": json_float(to_percent(self.non_rare)),
            "subsets": {k: json_float(to_percent(v)) for k, v in self.subsets.items()},
            "per_class_ap": None if self.per_class_ap is None else [json_float(a) for a in self.per_class_ap],
            "n_gt": None if self.n_gt is None else [int(x) for x in self.n_gt],
            "class_names": list(self.class_names),
            "classes": None if self.classes is None else [int(c) for c in self.classes],
            "protocol_options": self.protocol.to_dict(),
            "n_detections": None if self.n_detections is None else [int(x) for x in self.n_detections],
            "dropped": dict(self.n_dropped),
            "headline": self.headline,
        })
        if self.ci is not None:
            out["ci"] = self.ci.to_json()
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, file: object = None, record: object = None) -> HICOMapResult:
        """Read a ``hico_map`` object (written by any hoibench version, or by hand: only ``full``
        is required); each problem is a :class:`~hoibench.FormatError` naming the field."""
        f = Fields(d, file=file, record=record)
        f.check_kind(cls.kind)
        # 11 x (1/11) summed in threshold order is 1 + 2.2e-16: a perfect model writes 100.00000000000003
        pct = {"lo": 0.0, "hi": 100.0 + 1e-7, "unit": "a percentage"}
        full = f.number("full", **pct)
        rare = f.number("rare", null=True, default=math.nan, **pct)
        non_rare = f.number("non_rare", null=True, default=math.nan, **pct)
        subsets = f.number_map("subsets", null=True, default={}, scale=from_percent, **pct)
        ap = f.numbers("per_class_ap", null=True, lo=0.0, hi=1.0 + 1e-9, default=None, unit="a fraction")
        n = None if ap is None else len(ap)
        n_gt = f.integers("n_gt", n=n, lo=0, default=None)
        n_det = f.integers("n_detections", n=n, lo=0, default=None)
        names = f.strings("class_names", n=n if f.d.get("class_names") else None, default=())
        n_cls = n if n is not None else (len(names) or None)
        classes = f.integers("classes", lo=0, hi=n_cls, default=None)
        headline = f.string("headline", default="full")
        if headline != "full" and headline not in subsets:
            raise f.error("headline", f"must be 'full' or a key of subsets {sorted(subsets)}; got {headline!r}")
        ci = f.optional_sub("ci")
        return cls(
            full=from_percent(full), rare=from_percent(rare), non_rare=from_percent(non_rare),
            subsets=subsets, per_class_ap=ap, n_gt=n_gt, n_detections=n_det, class_names=names,
            classes=classes, protocol=_read_protocol(f), known_object=f.boolean("known_object", default=False),
            known_object_source=f.string("known_object_source", default=None),
            n_dropped=f.counts("dropped", default={}), headline=headline,
            ci=None if ci is None else HICOMapCI.from_json(ci))


def _read_protocol(f: Fields) -> HICOProtocol:
    """The protocol of a result or matches file: every option when written (``protocol_options``),
    else a preset by name (``official`` when absent)."""
    name = f.string("protocol", default="official")
    opts = f.mapping("protocol_options", default=None)
    if opts is not None:
        try:
            return HICOProtocol(**{**opts, "name": name})
        except (TypeError, ConfigError) as exc:
            raise f.error("protocol_options", str(exc)) from None
    if name.lower() not in HICO_PROTOCOLS:
        raise f.error("protocol", f"unknown protocol {name!r} without protocol_options; "
                                  f"presets: {sorted(HICO_PROTOCOLS)}")
    return HICO_PROTOCOLS[name.lower()]


def _mean(ap: np.ndarray, classes: np.ndarray, mean_over: str) -> float:
    """Mean AP over ``classes``; NaN when none of them has ground truth (NaN AP), under either
    rule: a mean over no scored class is undefined, not the 0.0 that counting absent classes
    as AP 0 would give (an SG test set's seen classes, the Rare classes of a small subset)."""
    vals = ap[classes]
    scored = ~np.isnan(vals)
    if not scored.any():
        return float("nan")
    return float(np.mean(vals[scored] if mean_over == "with_gt" else np.nan_to_num(vals, nan=0.0)))


def _zero_ap_warning(ap: np.ndarray, means: Mapping[str, np.ndarray], protocol: HICOProtocol) -> str | None:
    """The warning of a mean over all classes when some classes have no ground truth: each
    counts as AP 0 in every defined mean that includes it (None when none does)."""
    missing = np.isnan(ap)
    k, n = int(missing.sum()), len(ap)
    if k == 0 or protocol.mean_over != "all":
        return None
    head = f"{k:,} of {n:,} HOI classes have no ground-truth pairs in the evaluated images"
    if k == n:
        return head + ": every mAP is undefined (NaN)"
    hit = [name for name, cls in means.items()
           if len(cls) and missing[cls].any() and not missing[cls].all()]
    names = ", ".join(hit[:-1]) + f" and {hit[-1]}" if len(hit) > 1 else hit[0]
    return (f"{head}: the {protocol.name} protocol averages over all classes, so {names} count each of "
            f"them as AP 0 (the qpic protocol averages only the {n - k:,} "
            f"{'class' if n - k == 1 else 'classes'} with ground truth)")


def _result(matches: HICOMatches, target: HOIDataset, known_object: bool, source: str | None,
            class_subsets: Mapping[str, Sequence[int] | np.ndarray] | None,
            classes: np.ndarray | None) -> HICOMapResult:
    vocab = target.vocab
    ap = matches.average_precision()
    proto = matches.protocol
    all_cls = np.arange(vocab.n_hois)
    rare = vocab.rare_classes() if vocab.name == "hico-det" else np.zeros(0, dtype=np.int64)
    non_rare = np.setdiff1d(all_cls, rare)
    subsets = {}
    means = {"Full": all_cls, "Rare": rare, "Non-rare": non_rare}
    for name, cls in (class_subsets or {}).items():
        cls = np.asarray(cls, dtype=np.int64)
        if len(cls) and (cls.min() < 0 or cls.max() >= vocab.n_hois):
            raise ConfigError(f"class subset {name!r} has ids outside 0..{vocab.n_hois - 1}")
        subsets[name] = _mean(ap, cls, proto.mean_over)
        means.setdefault(name, cls)
    warning = _zero_ap_warning(ap, means, proto)
    if warning is not None:
        warnings.warn(warning, ClassesWithoutGroundTruthWarning, stacklevel=4)
    return HICOMapResult(
        protocol=proto, known_object=known_object, known_object_source=source,
        full=_mean(ap, all_cls, proto.mean_over), rare=_mean(ap, rare, proto.mean_over),
        non_rare=_mean(ap, non_rare, proto.mean_over), subsets=subsets, per_class_ap=ap,
        n_gt=matches.n_gt, n_detections=np.diff(matches.class_offsets), classes=classes,
        class_names=tuple(vocab.hoi_name(c) for c in all_cls), n_dropped=dict(matches.n_dropped))


# ----------------------------------------------------------------------------- metric
class HICOMeanAP(Metric[HICOMapResult]):
    """HICO-DET mAP as a metric object: ``update`` per batch of images, then ``compute``.

    Parameters
    ----------
    protocol:
        ``"official"`` (default), ``"qpic"``, ``"pocket"`` or a :class:`HICOProtocol`.
    known_object:
        Known-Object setting instead of Default.
    image_labels:
        Image-level object labels for Known-Object (:func:`read_image_labels`); default: the
        objects of each image's annotated pairs.
    class_subsets:
        Extra class sets to report (name -> HOI ids), e.g. ``{"unseen": ..., "seen": ...}``.
    classes:
        The class selection echoed in the result (``classes`` of the results JSON).
    lenient:
        Drop detections on images that are not in the ground truth instead of raising.

    Examples
    --------
    >>> metric = HICOMeanAP(protocol="official")            # doctest: +SKIP
    >>> metric.update(predictions, ground_truth)             # doctest: +SKIP
    >>> metric.compute().full                                # doctest: +SKIP
    """

    higher_is_better = True

    def __init__(self, *, protocol: str | HICOProtocol = "official", known_object: bool = False,
                 image_labels: Mapping[str, Iterable[int]] | None = None,
                 class_subsets: Mapping[str, Sequence[int] | np.ndarray] | None = None,
                 classes: Sequence[int] | np.ndarray | None = None, lenient: bool = False) -> None:
        super().__init__()
        self.protocol = HICOProtocol.preset(protocol)
        if image_labels is not None and not known_object:
            raise ConfigError("image_labels only apply with known_object=True")
        self.known_object = known_object
        self.image_labels = image_labels
        self.class_subsets = dict(class_subsets or {})
        self.classes = None if classes is None else np.asarray(classes, dtype=np.int64)
        self.lenient = lenient
        self.add_state("_preds", [])  # list[HOIPredictions], one per update
        self.add_state("_targets", [])  # list[HOIDataset], one per update
        self.add_state("_names", set())  # ground-truth file names seen so far

    def _repr_param(self, name: str) -> Any:
        if name == "protocol":  # a preset by its name, a custom protocol by its label
            p = self.protocol
            return p.name if HICO_PROTOCOLS.get(p.name) == p else Verbatim(f"<HICOProtocol {p.name!r}>")
        return super()._repr_param(name)

    def update(self, preds: HOIPredictions, target: HOIDataset) -> None:
        """Add the detections of ``preds`` on the images of ``target`` (images must not repeat
        across updates; ground-truth images without detections count their pairs)."""
        dup = self._names.intersection(target.file_names)
        if dup:
            raise ValidationError(f"image {sorted(dup)[0]!r} was already added by an earlier update")
        self._names.update(target.file_names)
        self._preds.append(preds)
        self._targets.append(target)

    def _matches(self) -> tuple[HICOMatches, HOIDataset, str | None]:
        target = self._targets[0] if len(self._targets) == 1 else HOIDataset.concat(self._targets)
        parts, base, img_base = [], 0, 0
        for p, t in zip(self._preds, self._targets):
            a = _align(p, t, lenient=self.lenient, det_base=base)
            a.image = a.image + img_base
            parts.append(a)
            base += len(p)
            img_base += t.n_images
        det = parts[0] if len(parts) == 1 else _Aligned(
            *(np.concatenate([getattr(a, f) for a in parts]) for f in
              ("image", "hoi", "objects", "boxes_h", "boxes_o", "scores", "det_index")),
            dropped=sum((a.dropped for a in parts), Counter()))
        labels, source = (None, None)
        if self.known_object:
            labels, source = _image_label_matrix(target, self.image_labels)
        return _match(det, target, self.protocol, labels, Counter(det.dropped)), target, source

    def matches(self) -> HICOMatches:
        """The matching behind :meth:`compute` (see :func:`match_hico_detections`)."""
        self._check_updated("matches")
        return self._matches()[0]

    def compute(self) -> HICOMapResult:
        """mAP over everything added so far (cached until the next update)."""
        m, target, source = self._matches()
        return _result(m, target, self.known_object, source, self.class_subsets, self.classes)


def hico_mean_ap(preds: HOIPredictions, target: HOIDataset, *,
                 protocol: str | HICOProtocol = "official", known_object: bool = False,
                 image_labels: Mapping[str, Iterable[int]] | None = None,
                 class_subsets: Mapping[str, Sequence[int] | np.ndarray] | None = None,
                 classes: Sequence[int] | np.ndarray | None = None,
                 lenient: bool = False) -> HICOMapResult:
    """Functional twin of :class:`HICOMeanAP` (same parameters, one call)."""
    metric = HICOMeanAP(protocol=protocol, known_object=known_object, image_labels=image_labels,
                        class_subsets=class_subsets, classes=classes, lenient=lenient)
    metric.update(preds, target)
    return metric.compute()
