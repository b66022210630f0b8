"""Setting 3 person boxes: external detections (``--detections FILE``, e.g. DETR as in the
paper's Table 6) and the matching of detected people to the question's target person."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench._io import read_json
from hoibench.evaluation import box_iou

__all__ = ["load_detections", "match_person", "nms"]


def _iou_with(box: Sequence[float], boxes: np.ndarray) -> np.ndarray:
    """IoU of one box with each row of ``boxes``; 0 where the union is empty."""
    return np.nan_to_num(box_iou(np.asarray([box], dtype=np.float64), boxes)[0], nan=0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float = 0.5) -> np.ndarray:
    """Indices kept by greedy non-maximum suppression, highest score first (stable on ties)."""
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    while order.size:
        i = int(order[0])
        keep.append(i)
        if order.size == 1:
            break
        ious = _iou_with(boxes[i], boxes[order[1:]])
        order = order[1:][ious <= iou_threshold]
    return np.asarray(keep, dtype=np.int64)


def load_detections(path: str | Path, *, score_threshold: float = 0.5, nms_threshold: float = 0.5,
                    person_label: int = 0) -> dict[str, np.ndarray]:
    """Person boxes per image file name, in original pixels (0-based xyxy), from a JSON file::

        {"HICO_test2015_00000014.jpg": [[x1, y1, x2, y2], ...], ...}
        {"HICO_test2015_00000014.jpg": {"boxes": [...], "scores": [...], "labels": [...]}, ...}

    With ``labels`` only people are kept (``"person"``, or ``person_label`` for integer labels:
    0 is the COCO-80 index of person used across hoibench). With ``scores``, detections below
    ``score_threshold`` are dropped after NMS at ``nms_threshold`` (the released code's filter).
    """
    raw = read_json(path)
    if not isinstance(raw, Mapping):
        raise FormatError("expected an object mapping image file names to detections", file=path)
    out: dict[str, np.ndarray] = {}
    for name, entry in raw.items():
        field = "boxes"
        scores: Any = None
        labels: Any = None
        if isinstance(entry, Mapping):
            boxes = entry.get("boxes")
            scores = entry.get("scores")
            labels = entry.get("labels")
        else:
            boxes = entry
        try:
            arr = np.asarray(boxes if boxes is not None else [], dtype=np.float64).reshape(-1, 4)
        except (TypeError, ValueError):
            raise FormatError("must be a list of [x1, y1, x2, y2] boxes", file=path, record=name,
                              field=field) from None
        if not np.isfinite(arr).all():
            raise FormatError("boxes must be finite numbers", file=path, record=name, field=field)
        if (arr[:, 2:] < arr[:, :2]).any():
            raise FormatError("a box is inverted (x2 < x1 or y2 < y1)", file=path, record=name,
                              field=field)
        keep = np.ones(len(arr), dtype=bool)
        if labels is not None:
            if not isinstance(labels, list) or len(labels) != len(arr):
                raise FormatError(f"must be a list as long as boxes ({len(arr)})", file=path,
                                  record=name, field="labels")
            keep &= np.asarray([lb == "person" if isinstance(lb, str) else lb == person_label
                                for lb in labels], dtype=bool)
        if scores is not None:
            try:
                sc = np.asarray(scores, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError):
                raise FormatError("must be a list of numbers", file=path, record=name,
                                  field="scores") from None
            if len(sc) != len(arr):
                raise FormatError(f"must be as long as boxes ({len(arr)})", file=path, record=name,
                                  field="scores")
            idx = np.flatnonzero(keep)
            kept = idx[nms(arr[idx], sc[idx], nms_threshold)] if idx.size else idx
            kept = kept[sc[kept] >= score_threshold]
            arr = arr[kept]
        else:
            arr = arr[keep]
        out[str(name)] = arr
    return out


def match_person(target: tuple[float, float, float, float], boxes: np.ndarray, *,
                 iou_threshold: float = 0.5, strict: bool = False) -> tuple[int, float]:
    """Index of the detected box that best overlaps ``target`` (IoU >= threshold, or > with
    ``strict=True`` as in the released code) and its IoU; ``(-1, best IoU)`` when none does."""
    if len(boxes) == 0:
        return -1, 0.0
    ious = _iou_with(target, boxes)
    best = int(np.argmax(ious))
    ok = ious[best] > iou_threshold if strict else ious[best] >= iou_threshold
    return (best if ok else -1), float(ious[best])
