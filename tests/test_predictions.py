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
from hoibench.formats._repr_results import REPR_ROOT
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


def test_careful_reader_agrees_with_the_c_scanner(tmp_path, monkeypatch):
    p = sample()
    write_predictions(p, tmp_path / "g.json", format="generic")
    _assert_agree(_by_every_reader(tmp_path / "g.json", monkeypatch))


@pytest.fixture(autouse=True)
def _careful_path(monkeypatch):
    """These tests pin the careful reader (the reference), so the C scanner in front of it is
    off; :func:`_by_every_reader` turns it on for its "native" reading, which must agree with
    the careful one on every file here (tests/test_colscan.py has the scanner's own tests)."""
    import hoibench.formats._scan as scan

    monkeypatch.setattr(scan, "_colscan", None)
    monkeypatch.setattr(scan, "AVAILABLE", False)


def _by_every_reader(path, monkeypatch, **kw) -> dict[str, object]:
    """What the C scanner (where it is built; the careful reader takes what it refuses) and the
    careful reader alone make of ``path``: the predictions, or the error line."""
    import hoibench.formats._scan as scan

    native = scan._NATIVE
    assert native is not None or not scan.BUILT, "the C scanner is built but cannot be imported"
    out: dict[str, object] = {}
    for label in ("native", "careful"):
        with monkeypatch.context() as m:
            if label == "native":
                m.setattr(scan, "_colscan", native)
                m.setattr(scan, "AVAILABLE", native is not None)
            try:
                out[label] = load_predictions(path, **kw)
            except FormatError as exc:
                out[label] = str(exc)
    return out


def _scanner_on(monkeypatch) -> None:
    """The C scanner in front of the careful reader (the test is skipped where it is not built)."""
    import hoibench.formats._scan as scan

    if scan._NATIVE is None:
        pytest.skip("the C scanner is not built")
    monkeypatch.setattr(scan, "_colscan", scan._NATIVE)
    monkeypatch.setattr(scan, "AVAILABLE", True)


def _assert_agree(results: dict[str, object]) -> object:
    ref = results["careful"]
    for label, got in results.items():
        if isinstance(ref, str):
            assert got == ref, label
        else:
            assert not isinstance(got, str), (label, got)
            assert got.format == ref.format, label
            same(got.predictions, ref.predictions)
            assert got.predictions.vocab.name == ref.predictions.vocab.name
    return ref


def _variants() -> dict[str, tuple[dict, ...]]:
    """Well-formed and malformed files: (document, top-level extras)."""
    box = [[0, 0, 10.5, 20], [1, 2, 3, 4.25]]
    im = {"file_name": "a.jpg", "boxes_h": box, "boxes_o": box[::-1], "object": [HORSE, HORSE],
          "verb": [RIDE, RIDE], "scores": [0.5, 1]}
    hoi = int(V.hoi_index(RIDE, HORSE))
    other = {**im, "file_name": "b [1].jpg", "scores": [0.25, 0.125]}
    empty = {**im, "file_name": "c.jpg", "boxes_h": [], "boxes_o": [], "object": [], "verb": [], "scores": []}
    return {
        "generic": ({"images": [im, other, empty]},),
        "hoi only": ({"images": [{k: v for k, v in im.items() if k not in ("object", "verb")} | {"hoi": [hoi, hoi]}]},),
        "all three, agreeing": ({"images": [{**im, "hoi": [hoi, hoi]}]},),
        "null ids": ({"images": [{**im, "hoi": None}]},),
        "unknown keys with brackets": ({"format": "hoi-det-generic/v1", "producer": {"args": [[1], "[x"]},
                                        "k[": [], "images": [{**im, "extra": [[1, 2], {"a": "]["}]}, other]},),
        "hoibench": ({"format": "hoibench-predictions", "version": 1, "label_space": "hico-det",
                      "images": [{"file_name": "a.jpg", "boxes_h": box, "boxes_o": box, "objects": [HORSE, 1],
                                  "verbs": [RIDE, 0], "scores": [0.5, 0.25]}]},),
        "generic with a label_space key": ({"label_space": "v-coco", "images": [im]},),
        "integral float id": ({"images": [{**im, "verb": [float(RIDE), RIDE]}]},),
        "nested row": ({"images": [{**im, "boxes_h": [[[0], 0, 10, 20], [1, 2, 3, 4]]}]},),
        "ragged rows": ({"images": [{**im, "boxes_h": [[0, 0, 10], [20, 1, 2, 3, 4]]}]},),
        "string score": ({"images": [{**im, "scores": ["0.5", 1]}]},),
        "boolean id": ({"images": [{**im, "verb": [True, RIDE]}]},),
        "id beyond 2**62": ({"images": [{**im, "verb": [2**62, RIDE]}]},),
        "hoi contradicting": ({"images": [{**im, "hoi": [hoi, hoi + 1]}]},),
        "ids for some images only": ({"images": [im, {k: v for k, v in other.items() if k != "verb"}]},),
        "unknown version": ({"format": "hoibench-predictions", "version": 9, "images": []},),
        "bad label_space": ({"format": "hoibench-predictions", "label_space": 3, "images": []},),
        "boxes not a list": ({"images": [{**im, "boxes_o": 5}]},),
        # braces in strings and objects around the images: read like any other layout
        "braces in strings": ({"meta": {"a": [{}]}, "images": [{**im, "note": "},{"}, other]},),
        "objects around the images": ({"meta": {"a": [{}]}, "images": [im, other], "after": {"b": {}}},),
        "images twice": ({"images": [im, other]}, '"images": [' + json.dumps(empty) + "]"),
    }


@pytest.mark.parametrize("variant", list(_variants()))
def test_c_scanner_and_careful_reader_agree(tmp_path, monkeypatch, variant):
    doc, *again = _variants()[variant]
    path = tmp_path / "p.json"
    text = json.dumps(doc)
    path.write_text(text[:-1] + ", " + again[0] + "}" if again else text)  # a key given twice
    ref = _assert_agree(_by_every_reader(path, monkeypatch))
    want = _ERRORS.get(variant)
    if want is None:
        assert not isinstance(ref, str), ref
        # floats as ids, null ids, a repeated top-level key: the careful reader's to accept
        if variant not in ("integral float id", "null ids", "images twice"):
            import hoibench.formats.predictions as mod

            _scanner_on(monkeypatch)
            monkeypatch.setattr(mod, "_parse_json", lambda raw, path: pytest.fail("not read by the C scanner"))
            same(load_predictions(path).predictions, ref.predictions)
    else:
        assert isinstance(ref, str) and f"p.json: {want}" in ref, ref


_ERRORS = {  # variant -> where the one error line must point
    "nested row": "record 0: boxes_h[0]: expected a number, got [0]", "ragged rows": "record 0: boxes_h[0]: expected a box",
    "string score": "record 0: scores[0]: expected a number", "boolean id": "record 0: verb[0]: expected a number",
    "id beyond 2**62": "record 0: verb[0]: expected an integer id", "hoi contradicting": "record 0: hoi[1]: disagrees",
    "ids for some images only": "record 1: verb: missing while", "unknown version": "version: version 9",
    "bad label_space": "label_space: expected a label space name", "boxes not a list": "record 0: boxes_o: expected a list",
}


def test_duplicate_keys_and_escapes_read_as_the_careful_reader_reads_them(tmp_path, monkeypatch):
    path = tmp_path / "p.json"
    boxes = '"boxes_h": [[0, 0, 1, 1]], "boxes_o": [[0, 0, 1, 1]]'
    # JSON keeps the last of duplicate keys; an escaped "["
    path.write_text('{"images": [{"file_name": "a.jpg", "file_name": "b\\u005b.jpg", ' + boxes
                    + ', "hoi": [0], "hoi": [1], "scores": [0.5]}]}')
    ref = _assert_agree(_by_every_reader(path, monkeypatch))
    assert list(ref.predictions.file_names) == ["b[.jpg"] and ref.predictions.hois.tolist() == [1]
    path.write_text('{"images": [{"file_name": "a.jpg", ' + boxes + ', "hoi": [0], "scores": [NaN]}]}')
    assert "scores[0]: score is not a finite number" in _assert_agree(_by_every_reader(path, monkeypatch))


def _qpic_doc(seed: int = 0, n_images: int = 3, triplet: bool = False) -> list[dict]:
    """QPIC post-processor outputs with dense, tied scores (and an image without queries)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_images):
        n = 0 if i == 1 else int(rng.integers(3, 12))
        boxes = np.concatenate([rng.uniform(0, 100, (2 * n, 2)), rng.uniform(100, 200, (2 * n, 2))], 1)
        rec = {"file_name": f"img{i}.jpg", "boxes": boxes.tolist(), "sub_ids": list(range(n)),
               "obj_ids": list(range(n, 2 * n)), "image_id": [i]}
        if triplet:
            rec["hoi_scores"] = rng.choice([0.0, 0.25, 0.5, 0.75], (n, V.n_hois)).tolist()
            rec["obj_scores"] = rng.choice([0.0, 0.5], (n, 81)).tolist()
        else:
            rec["labels"] = [0] * n + rng.integers(0, 80, n).tolist()
            rec["verb_scores"] = rng.choice([0.0, 0.125, 0.5, 0.9], (n, V.n_verbs)).tolist()
        out.append(rec)
    return out


@pytest.mark.parametrize("variant", ["qpic", "triplet", "max 7", "ragged verb_scores", "string label",
                                     "boolean label", "nested labels", "short labels", "sub_id out of range",
                                     "label 80", "flat boxes", "huge obj_id"])
def test_qpic_c_scanner_and_careful_reader_agree(tmp_path, monkeypatch, variant):
    doc = _qpic_doc(triplet=variant == "triplet")
    kw = {"max_per_image": 7} if variant == "max 7" else {}
    im = doc[2]
    if variant == "ragged verb_scores":
        im["verb_scores"][1] = im["verb_scores"][1][:-1]
    elif variant == "string label":
        im["labels"][3] = "3"
    elif variant == "boolean label":
        im["labels"][3] = True
    elif variant == "nested labels":
        im["labels"] = [[x] for x in im["labels"]]
    elif variant == "short labels":
        im["labels"] = im["labels"][:-1]
    elif variant == "sub_id out of range":
        im["sub_ids"][0] = len(im["boxes"])
    elif variant == "label 80":
        im["labels"][-1] = 80
    elif variant == "flat boxes":
        im["boxes"] = [x for b in im["boxes"] for x in b]
    elif variant == "huge obj_id":
        im["obj_ids"][0] = 2**63 - 1
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc))
    ref = _assert_agree(_by_every_reader(path, monkeypatch, **kw))
    if variant in ("qpic", "triplet", "max 7", "nested labels", "flat boxes"):
        assert not isinstance(ref, str), ref
        assert ref.format == "qpic" and len(ref.predictions) > 0
    else:
        assert isinstance(ref, str) and "q.json: record 2" in ref, ref


def test_qpic_file_is_parsed_once(tmp_path, monkeypatch):
    import hoibench.formats.predictions as mod

    path = tmp_path / "q.json"
    path.write_text(json.dumps(_qpic_doc()))
    want = load_predictions(path)
    _scanner_on(monkeypatch)
    monkeypatch.setattr(mod, "_parse_json", lambda raw, path: pytest.fail("parsed a second time"))
    monkeypatch.setattr(mod, "_qpic_image", lambda *a: pytest.fail("the per-image selection ran"))
    same(load_predictions(path).predictions, want.predictions)


@pytest.mark.parametrize("variant", ["string label", "ragged verb_scores", "brace in a name", "a number between",
                                     "an object around"])
def test_qpic_odd_layouts_read_alike(tmp_path, monkeypatch, variant):
    """A brace in a file name is read; a refused value, a number between the outputs or an object
    around them is one error line, the same with and without the C scanner."""

    doc = _qpic_doc(n_images=4)
    if variant == "string label":
        doc[2]["labels"][3] = "3"
    elif variant == "ragged verb_scores":
        doc[2]["verb_scores"][1] = doc[2]["verb_scores"][1][:-1]
    elif variant == "brace in a name":
        doc[0]["file_name"] = 'odd}, {"x": [1], "y": {.jpg'
    text = json.dumps(doc)
    if variant == "a number between":
        text = text[:-1] + ", 5]"
    elif variant == "an object around":
        text = '{"outputs": ' + text + "}"
    path = tmp_path / "q.json"
    path.write_text(text)
    ref = _assert_agree(_by_every_reader(path, monkeypatch))
    if variant == "brace in a name":
        assert ref.format == "qpic" and 'odd}, {"x": [1], "y": {.jpg' in ref.predictions.file_names
    else:
        assert isinstance(ref, str), ref


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
    _scanner_on(monkeypatch)
    monkeypatch.setattr(mod, "_parse_json", lambda raw, path: pytest.fail("parsed a second time"))
    loaded = load_predictions(tmp_path / "g.json")
    assert loaded.format == "generic"
    np.testing.assert_allclose(loaded.predictions.boxes_h, p.boxes_h)
    np.testing.assert_array_equal(loaded.predictions.verbs, p.verbs)


@pytest.mark.parametrize("mapped", [False, True])
@pytest.mark.parametrize("compress", [False, True])
def test_mat_cells_read_back_and_scipy_empty_cells(tmp_path, monkeypatch, compress: bool, mapped: bool) -> None:
    """hoibench's zero-length empty cells (compressed or not) and scipy's 0 x 0 ones read the same,
    from the file's bytes or from a map of it (what a large file gets)."""
    scipy_io = pytest.importorskip("scipy.io")
    if mapped:
        import hoibench._io

        monkeypatch.setattr(hoibench._io, "_MAP_AT", 0)
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


def test_frame_hint_top_detections_equal_a_stable_sort():

    rng = np.random.default_rng(3)
    counts = rng.integers(0, 12, 200)
    offsets = np.r_[0, np.cumsum(counts)]
    image = np.repeat(np.arange(len(counts)), counts)
    for scores in (rng.random(int(counts.sum())), rng.integers(0, 3, int(counts.sum())) / 2):  # distinct; tied
        order = np.lexsort((-scores, image))
        first = offsets[:-1][image[order]]
        np.testing.assert_array_equal(_top_per_image(scores, offsets, image, 5),
                                      order[(np.arange(len(order)) - first) < 5])


@pytest.fixture(autouse=True)
def _every_access(file_access) -> None:
    """Every test of this module with the file read and with it memory-mapped."""


def _wrong_kind_cases() -> list[tuple[str, str]]:
    """(format, field) for every top-level record field of each JSON format's schema, the one
    description the C scanner and the careful reader both read."""
    import hoibench.formats.predictions as mod

    out = [("generic", f[0].decode()) for f in mod._S.fields_of(mod._COLUMNAR_ROOT, "images")[2][1]
           if f[0].decode() not in ("objects", "verbs", "hois")]  # (the hoibench format's ids: ignored here)
    out += [("qpic", f[0].decode()) for f in mod._QPIC_ROOT[2][1] if f[0] != b"file_name"]
    return out + [("cdn", f[0].decode()) for f in REPR_ROOT[2][1]]


@pytest.mark.parametrize(("fmt", "key"), _wrong_kind_cases())
def test_a_field_of_the_wrong_kind_is_named_from_the_schema(tmp_path, monkeypatch, fmt, key):
    """Each field the schema describes, given as a value of another kind in the first record: one
    line naming the record and the field, with and without the C scanner in front."""
    import hoibench.formats.predictions as mod

    box = [0.0, 0.0, 10.0, 10.0]
    if fmt == "generic":
        doc: object = {"images": [{"file_name": "a.jpg", "boxes_h": [box], "boxes_o": [box], "object": [HORSE],
                                   "verb": [RIDE], "hoi": [int(V.hoi_index(RIDE, HORSE))], "scores": [0.5]}]}
    elif fmt == "qpic":
        doc = _qpic_doc()
    else:
        doc = {"preds": [{"filename": "a.jpg", "predictions": [{"bbox": box, "category_id": 0}],
                          "hoi_prediction": [{"subject_id": 0, "object_id": 0, "category_id": 0, "score": 0.5}]}],
               "gts": []}
    records = doc["images"] if fmt == "generic" else doc if fmt == "qpic" else doc["preds"]
    records[0][key] = 5 if key in ("file_name", "filename") else "x"
    path = tmp_path / "p.json"
    path.write_text(json.dumps(str(doc) if fmt == "cdn" else doc))
    kind = next(f[1] for root in (mod._S.fields_of(mod._COLUMNAR_ROOT, "images"), mod._QPIC_ROOT, REPR_ROOT)
                for f in root[2][1] if f[0] == key.encode())
    want = "expected a string, got 5" if kind == mod._S.STR else "expected a list, got str"
    got = _assert_agree(_by_every_reader(path, monkeypatch, format=fmt))
    assert got == f"{path}: record 0: {key}: {want}", got


@pytest.mark.parametrize("fmt", ["hoibench", "generic"])
def test_a_negative_zero_coordinate_reads_as_zero_in_both_tiers(tmp_path, monkeypatch, fmt):
    """The frame shift (0 for hoibench, -1 for generic) is added after either tier: -0.0 reads as 0.0."""
    write_predictions(sample(n_images=1, per=1), tmp_path / "p.json", format=fmt)
    doc = json.loads((tmp_path / "p.json").read_text())
    doc["images"][0]["boxes_h"][0][0] = -0.0 if fmt == "hoibench" else 1.0
    doc["images"][0]["boxes_o"][0][1] = -0.0
    (tmp_path / "p.json").write_text(json.dumps(doc))
    for label, got in _by_every_reader(tmp_path / "p.json", monkeypatch).items():
        p = got.predictions
        assert p.boxes_h[0, 0] == 0.0 and not np.signbit(p.boxes_h[0, 0]), label
        assert not np.signbit(p.boxes_o[0, 1]) or fmt == "generic", label
