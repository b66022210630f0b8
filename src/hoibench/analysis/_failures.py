"""Why a detection is a false positive (the SG paper's Figure 3: wrong interaction, wrong object,
both): every detection of a matches file (``eval hico --matches``) put in one category by comparing
it with the ground-truth pairs of its image.

The evaluator already decided TP / FP (:class:`~hoibench.evaluation.HICOMatches`); this module only
explains the FPs, in this order (the first that applies):

``duplicate``
    a ground-truth pair of the same HOI class overlaps it enough (human and object IoU at the
    protocol's threshold) but a higher-scored detection took that pair.
``poor_localisation``
    a pair of the same class overlaps it, but less: both IoUs at least ``low_iou`` (0.1).
``wrong_verb``
    a pair with the same object category whose human and object boxes both match: another verb
    (Figure 3a: *straddle* horse for *wash* horse).
``wrong_object``
    a pair whose human box matches, with the same verb, but whose object box or category does not
    (Figure 3b: *lie on* bench for *lie on* bed).
``wrong_verb_and_object``
    a pair whose human box matches, with neither verb nor object right (Figure 3c: *hit* baseball
    bat for *swing* tennis racket).
``background``
    no ground-truth person there (or none in the image).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench.data import HOIDataset, HOIPredictions
from hoibench.evaluation import HICOMatches, paired_box_iou

__all__ = ["FAILURE_CATEGORIES", "DetectionVerdict", "classify_detections", "failure_counts"]

#: every category, TP first, in the order they are tested
FAILURE_CATEGORIES: tuple[str, ...] = ("tp", "duplicate", "poor_localisation", "wrong_verb", "wrong_object",
                                       "wrong_verb_and_object", "background")


@dataclass(frozen=True)
class DetectionVerdict:
    """One detection of a matches file with its category and the ground-truth pair that explains it
    (``gt_pair``: global pair index of the ground truth, -1 for none; IoUs with that pair)."""

    row: int  # row of the matches file (the evaluator's ranked order)
    det_index: int  # row of the predictions
    image_index: int
    file_name: str
    hoi: int
    score: float
    category: str
    gt_pair: int
    iou_human: float
    iou_object: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_same_run(matches: HICOMatches, predictions: HOIPredictions, target: HOIDataset, rows: np.ndarray,
                    source: str) -> None:
    """The matches must index these predictions and this ground truth: one line naming the first
    record that does not, never drawings of other detections."""
    det, img, hoi = matches.det_index[rows], matches.image_index[rows], matches.hoi[rows]
    bad = np.flatnonzero((det < 0) | (det >= len(predictions)) | (img < 0) | (img >= target.n_images))
    if len(bad):
        k = int(rows[bad[0]])
        raise FormatError(f"det_index {int(matches.det_index[k])} / image_index {int(matches.image_index[k])} "
                          f"outside the {len(predictions):,} detections / {target.n_images:,} ground-truth "
                          f"images given: the matches come from another --pred or --gt",
                          file=source or None, record=k)
    names = np.asarray(predictions.file_names, dtype=object)[predictions.image_index[det]]
    gt_names = np.asarray(target.file_names, dtype=object)[img]
    bad = np.flatnonzero((predictions.hois[det] != hoi) | (names != gt_names))
    if len(bad):
        k = int(rows[bad[0]])
        raise FormatError(f"detection {int(matches.det_index[k])} is class {int(predictions.hois[det[bad[0]]])} "
                          f"on {names[bad[0]]!r} in --pred but class {int(hoi[bad[0]])} on {gt_names[bad[0]]!r} "
                          f"here: the matches come from another --pred or --gt (give the files and options "
                          f"eval hico --matches was run with)", file=source or None, record=k)


def classify_detections(matches: HICOMatches, predictions: HOIPredictions, target: HOIDataset, *,
                        rows: Sequence[int] | np.ndarray | None = None, low_iou: float = 0.1,
                        source: str = "") -> list[DetectionVerdict]:
    """The category of each detection (``rows`` of ``matches``; default all), comparing its boxes
    with the ground-truth pairs of its image under the matches' protocol (IoU convention, box
    offset, threshold). ``source`` names the matches file in errors."""
    if not 0 < low_iou < matches.protocol.iou_threshold:
        raise ConfigError(f"low_iou must be in (0, {matches.protocol.iou_threshold}); got {low_iou}")
    idx = np.arange(len(matches.scores)) if rows is None else np.asarray(rows, dtype=np.int64)
    if len(idx) == 0:
        return []
    _check_same_run(matches, predictions, target, idx, source)
    proto = matches.protocol
    off = proto.box_offset

    def hit(x: np.ndarray) -> np.ndarray:
        return (x > proto.iou_threshold) if proto.strict else (x >= proto.iou_threshold)

    hois = matches.hoi
    out = []
    for k in idx.tolist():
        d, i, c = int(matches.det_index[k]), int(matches.image_index[k]), int(hois[k])
        pairs = np.arange(target.pair_offsets[i], target.pair_offsets[i + 1])  # pairs are stored image by image
        n = len(pairs)
        bh = np.broadcast_to(predictions.boxes_h[d] + off, (n, 4))
        bo = np.broadcast_to(predictions.boxes_o[d] + off, (n, 4))
        ih = paired_box_iou(bh, target.pair_subject_boxes[pairs] + off, convention=proto.iou)
        io = np.nan_to_num(paired_box_iou(bo, target.pair_object_boxes[pairs] + off, convention=proto.iou))
        both = np.minimum(ih, io)
        same = target.pair_hoi[pairs] == c
        verb = target.pair_verb[pairs] == predictions.verbs[d]
        obj = target.pair_object_label[pairs] == predictions.objects[d]
        if matches.tp[k]:
            cat, cand = "tp", np.flatnonzero(pairs == matches.gt_pair[k])
        else:
            cat, cand = "background", np.zeros(0, dtype=np.int64)
            for name, mask in (("duplicate", same & hit(ih) & hit(io)),
                               ("poor_localisation", same & (both >= low_iou)),
                               ("wrong_verb", hit(ih) & hit(io) & obj & ~verb),
                               ("wrong_object", hit(ih) & verb & ~(hit(io) & obj)),
                               ("wrong_verb_and_object", hit(ih) & ~verb)):
                if mask.any():
                    cat, cand = name, np.flatnonzero(mask)
                    break
        j = int(cand[np.argmax(both[cand])]) if len(cand) else -1
        out.append(DetectionVerdict(row=k, det_index=d, image_index=i, file_name=target.file_names[i], hoi=c,
                                    score=float(matches.scores[k]), category=cat,
                                    gt_pair=int(pairs[j]) if j >= 0 else -1,
                                    iou_human=float(ih[j]) if j >= 0 else float("nan"),
                                    iou_object=float(io[j]) if j >= 0 else float("nan")))
    return out


def failure_counts(verdicts: Sequence[DetectionVerdict]) -> dict[str, int]:
    """Detections per category, every category listed (0 where none)."""
    c = Counter(v.category for v in verdicts)
    return {k: int(c.get(k, 0)) for k in FAILURE_CATEGORIES}
