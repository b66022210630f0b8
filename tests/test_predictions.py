"""Prediction files: round trips, format detection, the generic layout's 1-based frame, QPIC
outputs, precise errors and lenient reading, and the MATLAB detections.mat export."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoibench._exceptions import ConfigError, FormatError
from hoibench.data import HOIPredictions
from hoibench.formats import (
    detect_prediction_format,
    load_predictions,
    read_dataset,
    read_predictions,
    write_matlab_detections,
    write_predictions,
)
from hoibench.formats._frame import _top_per_image
from hoibench.formats._matfile import read_cells, write_cells
from hoibench.vocab import hico_det

V = hico_det()
HORSE = V.object_index("horse")
RIDE = V.verb_index("ride")


def sample(n_images: int = 3, per: int = 4, seed: int = 0) -> HOIPredictions:
    rng = np.random.default_rng(seed)
    n = n_images * per
    xy = rng.uniform(0, 300, (n, 2, 2))
    wh = rng.uniform(1, 100, (n, 2, 2))
    hv = V.hoi_verb_object[rng.integers(0, V.n_hois, n)]
    return HOIPredictions.from_arrays(
        V, [f"img{i}.jpg" for i in range(n_images)], [per] * n_images,
        np.concatenate([xy[:, 0], xy[:, 0] + wh[:, 0]], 1), np.concatenate([xy[:, 1], xy[:, 1] + wh[:, 1]], 1),
        hv[:, 1], hv[:, 0], rng.random(n))


def same(a: HOIPredictions, b: HOIPredictions, atol: float = 0.0) -> None:
    assert a.file_names == b.file_names
    np.testing.assert_array_equal(a.offsets, b.offsets)
    for attr in ("boxes_h", "boxes_o", "scores"):
        np.testing.assert_allclose(getattr(a, attr), getattr(b, attr), rtol=0, atol=atol)
    np.testing.assert_array_equal(a.objects, b.objects)
    np.testing.assert_array_equal(a.verbs, b.verbs)


@pytest.mark.parametrize("fmt", ["hoibench", "generic"])
def test_round_trip_and_detection(tmp_path, fmt):
    p = sample()
    path = tmp_path / f"{fmt}.json"
    write_predictions(p, path, format=fmt)
    assert detect_prediction_format(path) == fmt
    same(read_predictions(path), p, atol=1e-9 if fmt == "generic" else 0.0)


def test_careful_reader_agrees_with_fast_reader(tmp_path, monkeypatch):
    import hoibench.formats.predictions as mod

    p = sample()
    write_predictions(p, tmp_path / "g.json", format="generic")
    fast = read_predictions(tmp_path / "g.json")
    monkeypatch.setattr(mod, "_FAST", None)  # as without msgspec
    same(read_predictions(tmp_path / "g.json"), fast)


def test_generic_layout_is_in_the_hicodet_frame(tmp_path):
    # a prediction equal to a ground-truth pair of instances_test2015.json (1-based boxes) must
    # land exactly on the pair after reading both files
    doc = {"images": [{"file_name": "a.jpg", "boxes_h": [[1, 1, 10, 20]], "boxes_o": [[5, 5, 30, 30]],
                       "hoi": [int(V.hoi_index(RIDE, HORSE))], "scores": [0.5]}]}
    (tmp_path / "g.json").write_text(json.dumps(doc))
    p = read_predictions(tmp_path / "g.json")
    np.testing.assert_array_equal(p.boxes_h, [[0, 0, 9, 19]])
    assert p.objects.tolist() == [HORSE] and p.verbs.tolist() == [RIDE]


def _errors(tmp_path, doc, match, **kw):
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=match):
        read_predictions(tmp_path / "bad.json", **kw)


def test_errors_name_file_record_and_field(tmp_path):
    good = {"file_name": "a.jpg", "boxes_h": [[0, 0, 1, 1]], "boxes_o": [[0, 0, 1, 1]],
            "object": [HORSE], "verb": [RIDE], "scores": [0.5]}
    _errors(tmp_path, {"images": [good, {**good, "file_name": "b.jpg", "boxes_h": [[2, 2, 1, 1]]}]},
            r"bad.json: record 1: boxes_h\[0\]: inverted box")
    _errors(tmp_path, {"images": [{**good, "boxes_o": [[0, 0, float("nan"), 1]]}]},
            r"record 0: boxes_o\[0\]: non-finite")
    _errors(tmp_path, {"images": [{**good, "object": [99]}]}, r"record 0: object\[0\]: object id outside")
    _errors(tmp_path, {"images": [good, {k: v for k, v in good.items() if k != "scores"} | {"file_name": "b.jpg"}]},
            r"record 1: scores: missing")
    _errors(tmp_path, {"images": [{**good, "scores": [0.5, 0.4]}]}, r"record 0: boxes_h: expected a list of 2")
    _errors(tmp_path, {"images": [{**good, "hoi": [3]}]}, r"record 0: hoi\[0\]: disagrees")
    _errors(tmp_path, {"images": [{**good, "scores": ["x"]}]}, r"record 0: scores\[0\]: expected a number")
    _errors(tmp_path, {"images": [good, good]}, r"record 0: file_name: image 'a.jpg' appears")
    _errors(tmp_path, {"something": 1}, "unknown prediction format")
    with pytest.raises(ConfigError, match="prediction format must be one of"):
        read_predictions(tmp_path / "bad.json", format="nope")


def test_lenient_drops_and_counts(tmp_path):
    good = {"file_name": "a.jpg", "boxes_h": [[0, 0, 1, 1]] * 3, "boxes_o": [[0, 0, 1, 1]] * 3,
            "object": [HORSE] * 3, "verb": [RIDE, 500, RIDE], "scores": [0.5, 0.4, float("nan")]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"images": [good]}))
    with pytest.raises(FormatError, match="--lenient"):
        read_predictions(path)
    loaded = load_predictions(path, lenient=True)
    assert len(loaded.predictions) == 1 and loaded.n_dropped == 2
    assert set(loaded.dropped) == {"verb id outside 0..116", "score is not a finite number"}


def test_qpic_outputs(tmp_path):
    # one image, two query pairs; labels are COCO-80 indices (person 0, horse 17)
    horse80 = int(V.coco80[HORSE])
    scores = np.zeros((2, V.n_verbs))
    scores[0, RIDE] = 0.9
    scores[1, RIDE] = 0.2
    eat = V.verb_index("eat")
    scores[1, eat] = 0.95  # "eat horse" is no HICO class: dropped as QPIC masks it
    doc = [{"file_name": "a.jpg", "boxes": [[0, 0, 10, 10], [20, 20, 30, 30], [5, 5, 15, 15], [40, 40, 50, 50]],
            "labels": [0, 0, horse80, horse80], "verb_scores": scores.tolist(), "sub_ids": [0, 1], "obj_ids": [2, 3]}]
    path = tmp_path / "qpic.json"
    path.write_text(json.dumps(doc))
    assert detect_prediction_format(path) == "qpic"
    p = read_predictions(path, max_per_image=2)
    assert V.hoi_index(eat, HORSE) < 0
    assert p.scores.tolist() == [0.9, 0.2]
    np.testing.assert_array_equal(p.boxes_h, [[0, 0, 10, 10], [20, 20, 30, 30]])
    np.testing.assert_array_equal(p.boxes_o, [[5, 5, 15, 15], [40, 40, 50, 50]])
    assert set(p.objects.tolist()) == {HORSE}
    assert len(read_predictions(path, max_per_image=1)) == 1
    doc[0].pop("file_name")
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="record 0: file_name: missing"):
        read_predictions(path)


def test_matlab_export(tmp_path):
    scipy_io = pytest.importorskip("scipy.io")
    from hoibench.data import HOIDataset, HOIImage

    gt = HOIDataset.from_images(V, [HOIImage.from_lists(f"img{i}.jpg", [], [], []) for i in range(3)])
    p = sample()
    write_matlab_detections(p, gt, tmp_path / "detections.mat")
    m = scipy_io.loadmat(tmp_path / "detections.mat")["all_boxes"]
    assert m.shape == (600, 3)
    c = int(p.hois[0])
    rows = m[c, 0]
    k = np.flatnonzero(p.hois[:4] == c)
    np.testing.assert_allclose(rows[:, :4], p.boxes_h[k])
    np.testing.assert_allclose(rows[:, 8], p.scores[k])
    # an empty cell is a zero-length matrix element: [] (scipy: an empty (1, 0) array)
    assert sum(m[h, i].reshape(-1, 9).shape[0] for h in range(600) for i in range(3)) == len(p)


def test_real_test_set_ground_truth_as_predictions(tmp_path, shared):
    """Writing the real ground-truth pairs as generic predictions scores 100 under every protocol."""
    from hoibench.evaluation import hico_mean_ap

    gt = read_dataset(shared.file("hico-det/instances_test2015.json"))
    gt = gt.subset(np.arange(0, gt.n_images, 25))
    keep = gt.pair_hoi >= 0
    counts = np.bincount(gt.pair_image[keep], minlength=gt.n_images)
    p = HOIPredictions.from_arrays(gt.vocab, gt.file_names, counts, gt.pair_subject_boxes[keep],
                                   gt.pair_object_boxes[keep], gt.pair_object_label[keep],
                                   gt.pair_verb[keep], np.linspace(1, 0.5, int(keep.sum())))
    write_predictions(p, tmp_path / "gt_as_pred.json", format="generic")
    back = read_predictions(tmp_path / "gt_as_pred.json")
    for proto in ("official", "qpic", "pocket"):
        r = hico_mean_ap(back, gt, protocol=proto)
        has = r.n_gt > 0
        np.testing.assert_allclose(r.per_class_ap[has], 1.0, atol=1e-12)


@pytest.mark.parametrize("tag", ["hoi-det-generic/v1", "", "hoibench-predictions-v2"])
def test_generic_file_with_any_format_value_is_parsed_once(tmp_path, monkeypatch, tag):
    import orjson

    import hoibench.formats.predictions as mod

    p = sample()
    write_predictions(p, tmp_path / "g.json", format="generic")
    data = orjson.loads((tmp_path / "g.json").read_bytes())
    (tmp_path / "g.json").write_bytes(orjson.dumps({"format": tag, "producer": {"any": "key"}, **data}))
    monkeypatch.setattr(mod, "_parse_json", lambda raw, path: pytest.fail("parsed a second time"))
    loaded = load_predictions(tmp_path / "g.json")
    assert loaded.format == "generic"
    np.testing.assert_allclose(loaded.predictions.boxes_h, p.boxes_h)
    np.testing.assert_array_equal(loaded.predictions.verbs, p.verbs)


def test_top_detections_per_image_grouped_or_not() -> None:
    """The frame check's per-image top-k (per-image sorts for a grouped file, two global stable
    sorts otherwise) equals lexsort by (image, -score), ties in file order."""
    rng = np.random.default_rng(3)

    def expected(neg: np.ndarray, image: np.ndarray) -> np.ndarray:
        order = np.lexsort((neg, image))
        first = np.r_[0, np.cumsum(np.bincount(image, minlength=45))][image[order]]
        return order[(np.arange(len(order)) - first) < 5]

    image = np.sort(rng.integers(0, 40, 2000))
    neg = -np.round(rng.random(2000), 2)  # many ties
    np.testing.assert_array_equal(_top_per_image(neg, image, 45, 5), expected(neg, image))
    shuffled = rng.permutation(2000)
    np.testing.assert_array_equal(_top_per_image(neg[shuffled], image[shuffled], 45, 5),
                                  expected(neg[shuffled], image[shuffled]))


@pytest.mark.parametrize("compress", [False, True])
def test_mat_cells_read_back_and_scipy_empty_cells(tmp_path, compress: bool) -> None:
    """hoibench's zero-length empty cells (compressed or not) and scipy's 0 x 0 ones read the same."""
    scipy_io = pytest.importorskip("scipy.io")
    rng = np.random.default_rng(0)
    cell = np.sort(rng.choice(40 * 7, 25))
    rows = rng.random((25, 9))
    write_cells(tmp_path / "a.mat", "all_boxes", (40, 7), cell, rows, compress=compress)
    got = read_cells(tmp_path / "a.mat", "all_boxes")
    assert got is not None and got.shape == (40, 7)
    np.testing.assert_array_equal(got.cell, cell)
    np.testing.assert_array_equal(got.rows, rows)
    loaded = scipy_io.loadmat(tmp_path / "a.mat")["all_boxes"]
    assert sum(c.size for c in loaded.ravel()) == rows.size
    cells = np.empty((40, 7), dtype=object)
    for j in range(40 * 7):
        cells[j % 40, j // 40] = rows[cell == j] if (cell == j).any() else np.zeros((0, 0))
    scipy_io.savemat(tmp_path / "s.mat", {"all_boxes": cells})
    theirs = read_cells(tmp_path / "s.mat", "all_boxes")
    assert theirs is not None
    np.testing.assert_array_equal(theirs.cell, cell)
    np.testing.assert_array_equal(theirs.rows, rows)
