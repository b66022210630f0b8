"""Box overlap (IoU) in the conventions the reference evaluators use.

Three conventions exist in the wild and they are not interchangeable:

* ``continuous`` (torchvision / pocket): area = (x2 - x1) * (y2 - y1), no pixel offset.
* ``pixel`` (ho-rcnn ``VOCevaldet_bboxpair.m``, V-COCO ``vsrl_eval.py``, PASCAL VOC): boxes are
  inclusive pixel indices, so widths are ``x2 - x1 + 1``; an intersection is empty when its
  ``+1`` width or height is <= 0.
* ``qpic`` (``datasets/hico_eval.py`` of QPIC, CDN, HOTR): the ``+1`` areas of ``pixel``, but an
  intersection counts as empty as soon as ``min(x2) <= max(x1)`` (before adding 1), so boxes
  that overlap by less than one pixel get IoU 0 instead of a small positive value.

Every function broadcasts, so ``box_iou(a, b)`` is the ``(N, M)`` matrix and
``paired_box_iou(a, b)`` the row-wise overlap of two ``(N, 4)`` arrays; both run the same
arithmetic in the same order as the references (so thresholds at exactly 0.5 agree).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from hoibench._exceptions import ConfigError

__all__ = ["IOU_CONVENTIONS", "box_iou", "pair_iou", "paired_box_iou"]

IouConvention = Literal["continuous", "pixel", "qpic"]
IOU_CONVENTIONS: tuple[str, ...] = ("continuous", "pixel", "qpic")


def _check(convention: str) -> None:
    if convention not in IOU_CONVENTIONS:
        raise ConfigError(f"IoU convention must be one of {list(IOU_CONVENTIONS)}; got {convention!r}")


def _iou(a: np.ndarray, b: np.ndarray, convention: str) -> np.ndarray:
    """Element-wise IoU of broadcastable ``(..., 4)`` arrays (xyxy)."""
    ax1, ay1, ax2, ay2 = (a[..., k] for k in range(4))
    bx1, by1, bx2, by2 = (b[..., k] for k in range(4))
    ix1 = np.maximum(ax1, bx1)
    iy1 = np.maximum(ay1, by1)
    ix2 = np.minimum(ax2, bx2)
    iy2 = np.minimum(ay2, by2)
    with np.errstate(divide="ignore", invalid="ignore"):
        if convention == "continuous":
            # torchvision.ops.box_iou: inter = clamp(rb - lt, 0); union = area1 + area2 - inter
            area_a = (ax2 - ax1) * (ay2 - ay1)
            area_b = (bx2 - bx1) * (by2 - by1)
            inter = np.clip(ix2 - ix1, 0, None) * np.clip(iy2 - iy1, 0, None)
            return inter / (area_a + area_b - inter)
        area_a = (ax2 - ax1 + 1) * (ay2 - ay1 + 1)
        area_b = (bx2 - bx1 + 1) * (by2 - by1 + 1)
        iw = ix2 - ix1 + 1
        ih = iy2 - iy1 + 1
        inter = iw * ih
        # ho-rcnn: ua = area_det + area_gt - iw*ih; vsrl_eval and qpic use the same sum
        iou = inter / (area_a + area_b - inter)
        # pixel: an empty +1 intersection; qpic: "if left_line >= right_line or top_line >=
        # bottom_line: return 0" on the raw coordinates
        empty = ((iw <= 0) | (ih <= 0)) if convention == "pixel" else ((iy1 >= iy2) | (ix1 >= ix2))
        return np.where(empty, 0.0, iou)


def box_iou(boxes1: np.ndarray, boxes2: np.ndarray, *,
            convention: IouConvention = "continuous") -> np.ndarray:
    """``(N, M)`` IoU matrix between ``(N, 4)`` and ``(M, 4)`` xyxy boxes.

    Parameters
    ----------
    convention:
        ``"continuous"`` (no +1, torchvision/pocket), ``"pixel"`` (+1 pixel-inclusive areas:
        ho-rcnn MATLAB, V-COCO ``vsrl_eval.py``) or ``"qpic"`` (+1 areas with QPIC's empty
        intersection test). See the module docstring.
    """
    _check(convention)
    a = np.asarray(boxes1, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(boxes2, dtype=np.float64).reshape(-1, 4)
    return _iou(a[:, None, :], b[None, :, :], convention)


def paired_box_iou(boxes1: np.ndarray, boxes2: np.ndarray, *,
                   convention: IouConvention = "continuous") -> np.ndarray:
    """Row-wise IoU of two ``(N, 4)`` box arrays (``(N,)`` result); broadcasts like numpy."""
    _check(convention)
    return _iou(np.asarray(boxes1, dtype=np.float64), np.asarray(boxes2, dtype=np.float64), convention)


def pair_iou(h1: np.ndarray, o1: np.ndarray, h2: np.ndarray, o2: np.ndarray, *,
             convention: IouConvention = "continuous") -> np.ndarray:
    """Row-wise overlap of (human, object) box pairs: ``min(IoU_human, IoU_object)``.

    This is the pair overlap of every HICO-DET evaluator (MATLAB ``min(ov_1, ov_2)``, QPIC's
    ``min_overlap_gt``, pocket's ``BoxPairAssociation``).
    """
    return np.minimum(paired_box_iou(h1, h2, convention=convention),
                      paired_box_iou(o1, o2, convention=convention))
