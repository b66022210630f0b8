"""Comparison of a built split file with a reference (e.g. released) file, image by image and
pair by pair; the released-split reproduction tests rest on it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hoibench.data import HOIDataset
from hoibench.evaluation import box_iou
from hoibench.vocab import LabelSpace

__all__ = ["SplitComparison", "compare_splits"]


@dataclass(frozen=True)
class SplitComparison:
    """How a built split file differs from a reference (e.g. released) file.

    Pairs are compared per image as (verb, object, subject box, object box); boxes match when
    both IoUs reach ``iou_threshold`` (1.0: identical boxes).
    """

    only_ours: list[str]
    only_reference: list[str]
    images_compared: int
    pairs_matched: int
    exact_box_pairs: int
    min_iou: float
    missing_pairs: dict[str, list[tuple[str, str]]]  # image → (verb, object) in the reference only
    extra_pairs: dict[str, list[tuple[str, str]]]  # image → (verb, object) in ours only

    @property
    def identical(self) -> bool:
        return not (self.only_ours or self.only_reference or self.missing_pairs or self.extra_pairs)


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of ``a`` with every box of ``b`` (continuous coordinates); two empty
    boxes (e.g. the zero boxes standing for a missing object) overlap fully when equal."""
    iou = box_iou(a, b)
    return np.where(np.isnan(iou), (a[:, None, :] == b[None, :, :]).all(axis=2), iou)


def compare_splits(
    ours: HOIDataset,
    reference: HOIDataset,
    *,
    iou_threshold: float = 0.5,
    box_shift: np.ndarray | None = None,
) -> SplitComparison:
    """Compare two split files image by image and pair by pair (greedy one-to-one matching).

    ``box_shift`` (per image of ``ours``) is added to our boxes first, e.g. +1 for the images
    that the released files keep in 1-based pixels.
    """
    vocab = ours.vocab
    ref_index = {f: i for i, f in enumerate(reference.file_names)}
    only_ours = [f for f in ours.file_names if f not in ref_index]
    ours_set = set(ours.file_names)
    only_ref = [f for f in reference.file_names if f not in ours_set]
    missing: dict[str, list[tuple[str, str]]] = {}
    extra: dict[str, list[tuple[str, str]]] = {}
    matched = exact = compared = 0
    min_iou = 1.0
    for i, f in enumerate(ours.file_names):
        j = ref_index.get(f)
        if j is None:
            continue
        compared += 1
        a, b = ours.image(i), reference.image(j)
        shift = float(box_shift[i]) if box_shift is not None else 0.0
        used = np.zeros(len(b.pairs), dtype=bool)
        a_sub = a.subject_boxes + shift
        a_obj = a.object_boxes + shift
        b_sub, b_obj = b.subject_boxes, b.object_boxes
        b_lab = b.object_labels
        a_lab = a.object_labels
        q_sub = _iou(a_sub, b_sub) if len(a.pairs) and len(b.pairs) else np.zeros((len(a.pairs), len(b.pairs)))
        q_obj = _iou(np.nan_to_num(a_obj), np.nan_to_num(b_obj)) if len(a.pairs) and len(b.pairs) else q_sub
        for k in range(len(a.pairs)):
            same = (b.pairs[:, 2] == a.pairs[k, 2]) & (b_lab == a_lab[k]) & ~used
            q = np.where(same, np.minimum(q_sub[k], q_obj[k]), -1.0)
            best = int(np.argmax(q)) if len(q) else -1
            if best >= 0 and q[best] >= iou_threshold:
                used[best] = True
                matched += 1
                min_iou = min(min_iou, float(q[best]))
                exact += bool(np.array_equal(a_sub[k], b_sub[best])
                              and np.array_equal(np.nan_to_num(a_obj[k]), np.nan_to_num(b_obj[best])))
            else:
                extra.setdefault(f, []).append(_vo_names(vocab, a.pairs[k, 2], a_lab[k]))
        for k in np.flatnonzero(~used):
            missing.setdefault(f, []).append(_vo_names(vocab, b.pairs[k, 2], b_lab[k]))
    return SplitComparison(only_ours, only_ref, compared, matched, exact, min_iou, missing, extra)


def _vo_names(vocab: LabelSpace, verb: int, obj: int) -> tuple[str, str]:
    return vocab.verbs[int(verb)], vocab.objects[int(obj)] if obj >= 0 else "-"
