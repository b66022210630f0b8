"""Does a prediction file's box frame look one pixel off against the ground truth?

A file read in the wrong frame (a 0-based generic file read as the hicodet toolkit's 1-based
one, say) is shifted by a pixel with no error, and the mAP moves a little. The sign: take each
image's top detections, find each human box's best IoU with the image's ground-truth people,
and see whether translating all boxes by a sub-pixel grid of shifts improves it. Translation by
the right amount improves almost every well-localised box, while unbiased noise is symmetric;
so a hint is given only when the best shift on the grid is +-1 pixel *and* the per-box gain
over no shift is clear (t > 4), never for a sub-pixel bias of a model. Human and object
boxes both count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hoibench.data import HOIDataset, HOIPredictions

__all__ = ["FrameHint", "box_frame_hint", "reference_frame_hint"]

SHIFTS = np.array([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5])
_ZERO = 3


@dataclass(frozen=True)
class FrameHint:
    """The shift (pixels, to add to the predictions) that fits the ground truth best."""

    shift: float
    mean_iou: float
    mean_iou_shifted: float
    n_boxes: int


def box_frame_hint(preds: HOIPredictions, gt: HOIDataset, *, top: int = 5, min_iou: float = 0.5,
                   min_boxes: int = 100, max_images: int = 2000) -> FrameHint | None:
    """A :class:`FrameHint` when the top detections' boxes fit ``gt`` clearly better shifted by
    one pixel, else ``None`` (also when fewer than ``min_boxes`` of them overlap a ground-truth
    box of their image by ``min_iou``). At most ``max_images`` images, evenly spread, are
    looked at: 2,000 images give up to 20,000 boxes, far more than a one-pixel shift needs,
    and keep the check at a few hundredths of a second on the full test set."""
    row = {f: k for k, f in enumerate(gt.file_names)}
    pred_row = np.array([row.get(f, -1) for f in preds.file_names], dtype=np.int64)
    image = preds.image_index
    counts = np.diff(preds.offsets)
    if preds.n_images > max_images:  # an even spread of images, the same on every run
        chosen = np.zeros(preds.n_images, dtype=bool)
        chosen[np.linspace(0, preds.n_images - 1, max_images).astype(np.int64)] = True
        counts = np.where(chosen, counts, 0)
        det = np.flatnonzero(chosen[image])
    else:
        det = np.arange(len(image))
    offsets = np.r_[0, np.cumsum(counts)]
    best = det[_top_per_image(preds.scores[det], offsets, image[det], top)]
    best = best[pred_row[image[best]] >= 0]
    det_boxes, gt_boxes, owner = [], [], []
    n = 0
    for boxes, ends in ((preds.boxes_h, gt.pair_subject), (preds.boxes_o, gt.pair_object)):
        # the distinct ground-truth boxes of each image, as CSR rows
        ids = np.unique(ends)  # global box ids are grouped by image, so sorted ids are too
        img_of = np.searchsorted(gt.box_offsets, ids, side="right") - 1
        start = np.searchsorted(img_of, np.arange(gt.n_images))
        count = np.bincount(img_of, minlength=gt.n_images)
        r = pred_row[image[best]]
        c = count[r]
        det = np.repeat(best, c)
        k = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
        det_boxes.append(boxes[det])
        gt_boxes.append(gt.boxes[ids[np.repeat(start[r], c) + k]])
        owner.append(n + np.repeat(np.arange(len(best)), c))
        n += len(best)
    if not n:
        return None
    return _shift_hint(np.concatenate(det_boxes), np.concatenate(gt_boxes), np.concatenate(owner), n,
                       min_iou, min_boxes)


def reference_frame_hint(pairs: Iterable[tuple[Sequence[float], np.ndarray]], *, min_iou: float = 0.5,
                         min_boxes: int = 100) -> FrameHint | None:
    """The same test with each reference box against its own candidates: ``pairs`` of a
    reference box (a question's target person) and ``(m, 4)`` candidate boxes (the human boxes
    of its image's best triplets); each reference's best IoU is what a shift must improve."""
    det_boxes, gt_boxes, owner = [], [], []
    n = 0
    for ref, cands in pairs:
        cands = np.asarray(cands, dtype=np.float64).reshape(-1, 4)
        if not len(cands):
            continue
        det_boxes.append(cands)
        gt_boxes.append(np.repeat(np.asarray([ref], dtype=np.float64), len(cands), axis=0))
        owner.append(np.full(len(cands), n))
        n += 1
    if not n:
        return None
    return _shift_hint(np.concatenate(det_boxes), np.concatenate(gt_boxes), np.concatenate(owner), n,
                       min_iou, min_boxes)


def _shift_hint(d: np.ndarray, g: np.ndarray, o: np.ndarray, n: int, min_iou: float,
                min_boxes: int) -> FrameHint | None:
    """The hint from candidate boxes ``d`` paired with reference boxes ``g``, ``o`` naming each
    pair's owner (ascending; ``n`` owners): each owner's best IoU under every shift."""
    ious = np.empty((n, len(SHIFTS)))
    for k, shift in enumerate(SHIFTS):
        ious[:, k] = _best_per_owner(_iou(d + shift, g), o, n)
    keep = ious[:, _ZERO] >= min_iou
    if keep.sum() < min_boxes:
        return None
    ious = ious[keep]
    means = ious.mean(axis=0)
    k = int(np.argmax(means))
    if abs(SHIFTS[k]) != 1.0:
        return None
    gain = ious[:, k] - ious[:, _ZERO]
    sd = gain.std()
    if sd == 0 or gain.mean() / (sd / np.sqrt(len(gain))) < 4:
        return None
    return FrameHint(float(SHIFTS[k]), float(means[_ZERO]), float(means[k]), len(gain))


def _top_per_image(scores: np.ndarray, offsets: np.ndarray, image: np.ndarray, top: int) -> np.ndarray:
    """Each image's ``top`` best detections, best first, ties in file order: what a stable sort
    by (image, -score) keeps, with only the candidates (at least each image's ``top``-th best
    score, found by partitioning) sorted."""
    counts = np.diff(offsets)
    threshold = np.full(len(counts), -np.inf)
    for i in np.flatnonzero(counts > top).tolist():
        seg = scores[offsets[i]:offsets[i + 1]]
        threshold[i] = np.partition(seg, len(seg) - top)[len(seg) - top]
    cand = np.flatnonzero(scores >= threshold[image])
    order = cand[np.lexsort((-scores[cand], image[cand]))]
    first = np.r_[0, np.cumsum(np.bincount(image[order], minlength=len(counts)))][image[order]]
    return order[(np.arange(len(order)) - first) < top]


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise IoU of continuous boxes (translation is all that is measured); 0 for a box whose
    area overflows (a finite 1e308 in a file: no overflow warning, no NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        iw = np.clip(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
        ih = np.clip(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
        inter = iw * ih
        union = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) - inter)
        return np.divide(inter, union, out=np.zeros_like(inter), where=(union > 0) & np.isfinite(union))


def _best_per_owner(v: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Max of ``v`` per owner (``owner`` ascending), 0 for an owner without entries."""
    out = np.zeros(n)
    if v.size:
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        out[owner[starts]] = np.maximum(np.maximum.reduceat(v, starts), 0.0)
    return out
