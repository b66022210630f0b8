"""The dry-run helpers users get from ``hoibench.testing``: ``noisy_predictions`` (a stand-in
detector) and ``python -m hoibench.testing.fake_server`` (a stand-in VLM server)."""

from __future__ import annotations

import numpy as np
import pytest

from hoibench.data import HOIDataset, HOIImage
from hoibench.evaluation import hico_mean_ap
from hoibench.vocab import hico_det

V = hico_det()


def _ground_truth(n_images: int = 60, seed: int = 0) -> HOIDataset:
    """Images with 0-4 pairs over a dozen classes at random places."""
    rng = np.random.default_rng(seed)
    classes = rng.choice(V.n_hois, size=12, replace=False)
    images = []
    for i in range(n_images):
        boxes, labels, pairs = [], [], []
        for _ in range(int(rng.integers(0, 5))):
            verb, obj = V.hoi_verb_object[rng.choice(classes)]
            xy = rng.uniform(0, 400, size=(2, 2))
            wh = rng.uniform(30, 200, size=(2, 2))
            boxes += [[*xy[0], *(xy[0] + wh[0])], [*xy[1], *(xy[1] + wh[1])]]
            labels += [V.person, int(obj)]
            pairs.append([len(boxes) - 2, len(boxes) - 1, int(verb)])
        images.append(HOIImage.from_lists(f"im_{i:03d}.jpg", boxes, labels, pairs, width=640, height=640))
    return HOIDataset.from_images(V, images, name="built")


def test_noisy_predictions_is_public_seeded_and_scores_as_documented():
    from hoibench.testing import noisy_predictions

    gt = _ground_truth()
    has_gt = gt.hoi_counts() > 0
    a = noisy_predictions(gt, seed=3, per_image=(8, 30))
    b = noisy_predictions(gt, seed=3, per_image=(8, 30))
    c = noisy_predictions(gt, seed=4, per_image=(8, 30))
    np.testing.assert_array_equal(a.scores, b.scores)  # the same seed, the same detections
    assert not np.array_equal(a.scores, c.scores) or len(a.scores) != len(c.scores)
    assert sorted(a.file_names) == sorted(gt.file_names) and list(a.file_names) != list(gt.file_names)
    counts = np.diff(a.offsets)
    assert counts.min() >= 8 and counts.max() <= 30 + 3 * 4  # 1-3 copies of up to 4 pairs
    for seed in range(3):  # the docstring: mean AP over the classes with ground truth in 30-70
        r = hico_mean_ap(noisy_predictions(gt, seed=seed, per_image=(8, 30)), gt, protocol="qpic")
        assert 0.30 < r.full < 0.70
        assert r.full == pytest.approx(np.mean(r.per_class_ap[has_gt]))
    perfect = hico_mean_ap(_as_predictions(gt), gt, protocol="qpic")
    assert perfect.full == pytest.approx(1.0)


def _as_predictions(gt: HOIDataset):
    """The ground truth itself through ``HOIPredictions.from_arrays`` (docs/evaluation.md)."""
    from hoibench.data import HOIPredictions

    keep = gt.pair_hoi >= 0
    return HOIPredictions.from_arrays(
        V, gt.file_names, np.bincount(gt.pair_image[keep], minlength=gt.n_images),
        gt.pair_subject_boxes[keep], gt.pair_object_boxes[keep], gt.pair_object_label[keep],
        gt.pair_verb[keep], np.ones(int(keep.sum())))
