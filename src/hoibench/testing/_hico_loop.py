"""A deliberately plain per-class, per-detection loop evaluator for HICO-DET.

It transliterates the reference scripts' control flow (ho-rcnn ``VOCevaldet_bboxpair.m``, QPIC's
``compute_fptp``/``compute_map``, pocket's ``BoxPairAssociation`` + ``DetectionAPMeter``) with
scalar Python arithmetic and shares no code with the vectorised evaluator in
:mod:`hoibench.evaluation._hico_map` except the protocol presets. It serves two purposes:
an independent oracle in the tests, and the "straightforward loop" baseline of
``perf/bench_eval_hico.py``. It is slow (tens of seconds on the full test set).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from hoibench.data import HOIDataset, HOIPredictions
from hoibench.evaluation import HICOProtocol, recall_thresholds

__all__ = ["hico_average_precision_loop"]


def _iou(a: tuple[float, ...], b: tuple[float, ...], convention: str) -> float:
    if convention == "pixel":  # VOCevaldet_bboxpair.m
        iw = min(a[2], b[2]) - max(a[0], b[0]) + 1
        ih = min(a[3], b[3]) - max(a[1], b[1]) + 1
        if iw > 0 and ih > 0:
            ua = (a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1) - iw * ih
            return iw * ih / ua
        return 0.0
    if convention == "qpic":  # HICOEvaluator.compute_IOU
        s1 = (a[2] - a[0] + 1) * (a[3] - a[1] + 1)
        s2 = (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
        left, right = max(a[1], b[1]), min(a[3], b[3])
        top, bottom = max(a[0], b[0]), min(a[2], b[2])
        if left >= right or top >= bottom:
            return 0.0
        inter = (right - left + 1) * (bottom - top + 1)
        return inter / (s1 + s2 - inter)
    # torchvision.ops.box_iou
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def _pair_nms(rows: list[int], preds: HOIPredictions, hois: list[int], scores: list[float],
              proto: HICOProtocol) -> list[int]:
    """CDN's ``triplet_nms_filter`` + ``pairwise_nms`` for one image, one pivot at a time."""
    groups: dict[int, list[int]] = {}
    for k in rows:
        groups.setdefault(hois[k], []).append(k)
    kept: list[int] = []
    for members in groups.values():
        order = list(np.argsort(np.array([scores[k] for k in members]))[::-1])
        while order:
            i = order.pop(0)
            kept.append(members[i])
            hi, oi = preds.boxes_h[members[i]].tolist(), preds.boxes_o[members[i]].tolist()
            survivors = []
            for t in order:
                ht, ot = preds.boxes_h[members[t]].tolist(), preds.boxes_o[members[t]].tolist()
                ovr = _iou(hi, ht, "pixel") ** proto.pair_nms_alpha * _iou(oi, ot, "pixel") ** proto.pair_nms_beta
                if ovr <= proto.pair_nms:
                    survivors.append(t)
            order = survivors
    return sorted(kept)


def hico_average_precision_loop(preds: HOIPredictions, target: HOIDataset, *,
                                protocol: str | HICOProtocol = "official") -> np.ndarray:
    """Per-class AP (NaN where a class has no ground truth), one detection at a time."""
    proto = HICOProtocol.preset(protocol)
    off = proto.box_offset
    n_cls = target.vocab.n_hois
    index = {f: i for i, f in enumerate(target.file_names)}
    gt: list[dict[int, list[tuple[tuple[float, ...], tuple[float, ...]]]]] = [
        defaultdict(list) for _ in range(n_cls)]
    n_gt = [0] * n_cls
    hb, ob = target.pair_subject_boxes, target.pair_object_boxes
    for p, (c, j) in enumerate(zip(target.pair_hoi.tolist(), target.pair_image.tolist())):
        if c >= 0:
            gt[c][j].append((tuple(float(v) + off for v in hb[p]), tuple(float(v) + off for v in ob[p])))
            n_gt[c] += 1
    n_pairs = target.pairs_per_image.tolist()

    # collect detections per class in (image, file) order, as the references append them
    hois = preds.hois.tolist()
    scores = preds.scores.tolist()
    dets: list[list[tuple[int, int]]] = [[] for _ in range(n_cls)]
    image_order = sorted(range(preds.n_images), key=lambda i: index[preds.file_names[i]])
    for i in image_order:
        j = index[preds.file_names[i]]
        s = preds.image_slice(i)
        rows = [k for k in range(s.start, s.stop) if hois[k] >= 0]
        if proto.max_per_image is not None:
            rows = sorted(rows, key=lambda k: -scores[k])[:proto.max_per_image]
            rows.sort()
        if proto.pair_nms is not None:
            rows = _pair_nms(rows, preds, hois, scores, proto)
        if not proto.count_images_without_pairs and n_pairs[j] == 0:
            continue
        for k in rows:
            dets[hois[k]].append((j, k))

    thresholds = recall_thresholds(proto.recall_thresholds).tolist()
    ap = np.full(n_cls, np.nan)
    for c in range(n_cls):
        if n_gt[c] == 0:
            continue
        ranked = sorted(dets[c], key=lambda jk: -scores[jk[1]])  # stable: (image, file) ties
        if proto.ranking == "numpy":  # QPIC: matching per image in score order, then argsort
            appended = sorted(dets[c], key=lambda jk: (jk[0], -scores[jk[1]]))
        matched: set[tuple[int, int]] = set()
        flags: dict[int, int] = {}
        for j, k in ranked:
            best, g_best = -math.inf, -1
            h = tuple(float(v) + off for v in preds.boxes_h[k])
            o = tuple(float(v) + off for v in preds.boxes_o[k])
            for g, (gh, go) in enumerate(gt[c].get(j, ())):
                ov = min(_iou(h, gh, proto.iou), _iou(o, go, proto.iou))
                if ov > best:
                    best, g_best = ov, g
            hit = best > proto.iou_threshold if proto.strict else best >= proto.iou_threshold
            if hit and (j, g_best) not in matched:
                matched.add((j, g_best))
                flags[k] = 1
            else:
                flags[k] = 0
        if proto.ranking == "numpy":
            sc = np.array([scores[k] for _, k in appended])
            ranked = [appended[t] for t in np.argsort(-sc)]
        tp = fp = 0
        rec, prec = [], []
        for _, k in ranked:
            tp += flags[k]
            fp += 1 - flags[k]
            rec.append(tp / n_gt[c])
            prec.append(tp / (fp + tp))
        total = 0.0
        for t in thresholds:
            ps = [p for r, p in zip(rec, prec) if r >= t]
            total = total + (max(ps) if ps else 0.0) / 11.0
        ap[c] = total
    return ap
