"""A seeded stand-in for a HOI detector: realistic noisy detections made from ground truth, for a
dry run of ``eval hico``, a training loop's metric or a bootstrap without a model or weights (and
the evaluator's tests and benchmarks).

Per image: jittered copies of the ground-truth pairs (small, medium and large jitter), badly
placed boxes, wrong verbs and wrong objects, duplicates with slightly lower scores, a few
(verb, object) combinations that are no HOI class, and background detections with random
boxes and classes, up to ``per_image`` detections in total. Scores are continuous and distinct.
"""

from __future__ import annotations

import numpy as np

from hoibench.data import HOIDataset, HOIPredictions

__all__ = ["noisy_predictions"]


def _jitter(rng: np.random.Generator, boxes: np.ndarray, scale: np.ndarray) -> np.ndarray:
    wh = np.stack([boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]], 1)
    d = rng.normal(0.0, 1.0, boxes.shape) * scale[:, None] * np.concatenate([wh, wh], 1)
    b = boxes + d
    return np.concatenate([np.minimum(b[:, :2], b[:, 2:]), np.maximum(b[:, :2], b[:, 2:])], 1)


def noisy_predictions(gt: HOIDataset, *, seed: int = 0, per_image: tuple[int, int] = (100, 130),
                      images: np.ndarray | None = None) -> HOIPredictions:
    """Detections of a middling detector on the images of ``gt`` (all, or the indices ``images``).

    Every ground-truth pair is detected 1-3 times (the copies jittered by 2%, 8%, 20% or 50% of
    the box size; 15% with the verb redrawn among the object's verbs, 5% with a random HOI class,
    3% with a verb-object pair that is no HOI class), and background detections fill each image up to a
    count drawn from ``per_image`` (inclusive). The same ``seed`` gives the same predictions;
    the images come in another order than the ground truth's, as a model's file would.

    What it scores: well above chance and well below a perfect detector. On HICO-DET's test set
    (``load_dataset("hico-det:test")``, default arguments, ``hico_mean_ap``) the full mAP is
    26.61 for seed 0 and 25.03 for seed 1; on small synthetic sets the mean AP over the classes
    that have ground truth (``protocol="qpic"``) lies between 30 and 70
    (``tests/test_testing_helpers.py``).
    """
    rng = np.random.default_rng(seed)
    vocab = gt.vocab
    hv = vocab.hoi_verb_object
    verbs_of_object = vocab.valid_verbs_for_object()
    images = np.arange(gt.n_images) if images is None else np.asarray(images)
    n_total = rng.integers(per_image[0], per_image[1] + 1, size=len(images))
    parts = []
    for i, n_want in zip(images.tolist(), n_total.tolist()):
        p0, p1 = int(gt.pair_offsets[i]), int(gt.pair_offsets[i + 1])
        ok = gt.pair_hoi[p0:p1] >= 0
        ph = gt.boxes[gt.pair_subject[p0:p1][ok]]
        po_idx = gt.pair_object[p0:p1][ok]
        po = gt.boxes[po_idx]
        pv = gt.pair_verb[p0:p1][ok]
        pobj = gt.box_labels[po_idx]
        w = max(float(gt.widths[i]), 64.0)
        h = max(float(gt.heights[i]), 64.0)
        n_gt = len(pv)
        if n_gt:
            reps = rng.integers(1, 4, size=n_gt)  # 1-3 detections per pair (duplicates)
            src = np.repeat(np.arange(n_gt), reps)
            m = len(src)
            scale = rng.choice([0.02, 0.08, 0.2, 0.5], size=m, p=[0.4, 0.3, 0.2, 0.1])
            bh = _jitter(rng, ph[src], scale)
            bo = _jitter(rng, po[src], rng.choice([0.02, 0.08, 0.2, 0.5], size=m, p=[0.4, 0.3, 0.2, 0.1]))
            obj = pobj[src].copy()
            verb = pv[src].copy()
            u = rng.random(m)
            wrong_verb = u < 0.15
            for k in np.flatnonzero(wrong_verb):
                verb[k] = rng.choice(verbs_of_object[obj[k]])
            wrong_obj = (u >= 0.15) & (u < 0.2)
            for k in np.flatnonzero(wrong_obj):
                c = rng.integers(len(hv))
                verb[k], obj[k] = hv[c]
            invalid = (u >= 0.2) & (u < 0.23)
            verb[invalid] = rng.integers(0, vocab.n_verbs, size=int(invalid.sum()))
            base = rng.beta(4, 2, size=m)
            score = base - 0.05 * np.concatenate([np.arange(r) for r in reps]) * rng.random(m)
        else:
            bh = bo = np.zeros((0, 4))
            obj = verb = np.zeros(0, dtype=np.int64)
            score = np.zeros(0)
        n_bg = max(n_want - len(score), 0)
        xy = rng.uniform(0, 1, size=(n_bg, 2, 2)) * np.array([w, h]) * 0.8
        sz = rng.uniform(0.05, 0.6, size=(n_bg, 2, 2)) * np.array([w, h])
        bg_h = np.concatenate([xy[:, 0], xy[:, 0] + sz[:, 0]], 1)
        bg_o = np.concatenate([xy[:, 1], xy[:, 1] + sz[:, 1]], 1)
        near = rng.random(n_bg) < 0.3  # background near a real pair: plausible but wrong
        if n_gt and near.any():
            k = rng.integers(0, n_gt, size=int(near.sum()))
            bg_h[near] = _jitter(rng, ph[k], np.full(len(k), 0.4))
            bg_o[near] = _jitter(rng, po[k], np.full(len(k), 0.4))
        c = rng.integers(len(hv), size=n_bg)
        parts.append((i, np.concatenate([bh, bg_h]), np.concatenate([bo, bg_o]),
                      np.concatenate([obj, hv[c, 1]]), np.concatenate([verb, hv[c, 0]]),
                      np.concatenate([score, rng.beta(2, 5, size=n_bg)])))
    order = rng.permutation(len(parts))  # file order differs from the ground truth's
    parts = [parts[k] for k in order]
    return HOIPredictions.from_arrays(
        vocab, [gt.file_names[p[0]] for p in parts], [len(p[5]) for p in parts],
        np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]), np.concatenate([p[4] for p in parts]),
        np.concatenate([p[5] for p in parts]), name=f"noisy(seed={seed})")
