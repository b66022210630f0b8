"""What HOI detectors write themselves, read by ``eval hico --pred`` with format detection.

Each file is built here the way the repository's evaluator builds it (from the layouts in issue
16; the repositories' code was not available here), from ``noisy_predictions`` on the bundled
HICO-DET test set, and must score per-class APs equal to the same predictions in hoibench's own
format, in the Default and Known-Object settings.
"""

from __future__ import annotations

import contextlib
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench._exceptions import FormatError
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIPredictions
from hoibench.datasets import load_dataset
from hoibench.formats import (
    detect_prediction_format,
    load_predictions,
    write_hicodet,
    write_predictions,
)
from hoibench.formats._literal import parse_numpy_repr
from hoibench.testing import noisy_predictions
from tests.conftest import one_line_error

MAX_HOIS = 100  # CDN / GEN-VLKT HICOEvaluator max_hois


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """A subset of the bundled test set (as a file), and noisy detections with float32 values
    (what the models' heads produce), at least 100 valid ones per image so that the evaluators'
    top 100 are real detections, not zero-score fillers."""
    gt = load_dataset("hico-det:test")
    gt = gt.subset(np.arange(0, gt.n_images, 25))
    d = tmp_path_factory.mktemp("native")
    write_hicodet(gt, d / "gt.json")
    p = noisy_predictions(gt, seed=4, per_image=(110, 130))
    valid_per_image = np.bincount(np.repeat(np.arange(p.n_images), np.diff(p.offsets))[p.hois >= 0],
                                  minlength=p.n_images)
    assert valid_per_image.min() >= MAX_HOIS  # else zero-score fillers would enter the top 100
    f32 = HOIPredictions.from_arrays(
        p.vocab, p.file_names, np.diff(p.offsets), p.boxes_h.astype(np.float32).astype(np.float64),
        p.boxes_o.astype(np.float32).astype(np.float64), p.objects, p.verbs,
        p.scores.astype(np.float32).astype(np.float64))
    return gt, f32, d


def _embedded_gts(gt: HOIDataset) -> list[dict]:
    """The 'gts' list of results.json (QPIC's evaluator layout; COCO-80 labels)."""
    out = []
    for i, fn in enumerate(gt.file_names):
        b0, b1 = int(gt.box_offsets[i]), int(gt.box_offsets[i + 1])
        p0, p1 = int(gt.pair_offsets[i]), int(gt.pair_offsets[i + 1])
        out.append({"filename": fn,
                    "annotations": [{"bbox": b, "category_id": int(c)} for b, c in
                                    zip(gt.boxes[b0:b1].astype(np.float32), gt.vocab.coco80[gt.box_labels[b0:b1]])],
                    "hoi_annotation": [{"subject_id": np.int64(s - b0), "object_id": np.int64(o - b0),
                                        "category_id": np.int64(v)} for s, o, v in
                                       zip(gt.pair_subject[p0:p1], gt.pair_object[p0:p1], gt.pair_verb[p0:p1])]})
    return out


def cdn_results_json(p: HOIPredictions, gts: list[dict]) -> str:
    """CDN's ``--json_file``: ``json.dumps(str({'preds': self.preds, 'gts': self.gts}))``.

    Per image, the post-processor's outputs for one query per detection (boxes: subjects then
    objects, labels 0 = person then COCO-80 object labels, verb_scores one row per query with the
    detection's score on its verb), then HICOEvaluator: every (query, verb) triplet, scores times
    the verb-object correctness mask, sorted by score (Python's stable sort, reverse=True), the
    first max_hois kept. The sort is done with numpy's stable argsort (same order) for speed.
    """
    v = p.vocab
    correct = np.zeros((v.n_verbs, 80))
    correct[v.hoi_verb_object[:, 0], v.coco80[v.hoi_verb_object[:, 1]]] = 1
    preds = []
    for i, fn in enumerate(p.file_names):
        s = p.image_slice(i)
        n = s.stop - s.start
        boxes = np.concatenate([p.boxes_h[s], p.boxes_o[s]]).astype(np.float32)
        labels = np.concatenate([np.zeros(n, np.int64), v.coco80[p.objects[s]].astype(np.int64)])
        verb_scores = np.zeros((n, v.n_verbs), np.float32)
        verb_scores[np.arange(n), p.verbs[s]] = p.scores[s]
        sub_ids, obj_ids = np.arange(n), np.arange(n, 2 * n)
        bboxes = [{"bbox": b, "category_id": c} for b, c in zip(boxes, labels)]
        verb_labels = np.tile(np.arange(v.n_verbs), (n, 1)).ravel()
        subject_ids = np.tile(sub_ids, (v.n_verbs, 1)).T.ravel()
        object_ids = np.tile(obj_ids, (v.n_verbs, 1)).T.ravel()
        hoi_scores = verb_scores.ravel()
        hoi_scores *= correct[verb_labels, labels[object_ids]].astype(np.float32)
        top = np.argsort(-hoi_scores, kind="stable")[:MAX_HOIS]
        hois = [{"subject_id": subject_ids[k], "object_id": object_ids[k], "category_id": verb_labels[k],
                 "score": hoi_scores[k]} for k in top]
        preds.append({"filename": fn, "predictions": bboxes, "hoi_prediction": hois})
    return json.dumps(str({"preds": preds, "gts": gts}))


def triplet_outputs(p: HOIPredictions) -> list[dict[str, np.ndarray]]:
    """GEN-VLKT's ``PostProcessHOITriplet`` outputs (as numpy) for ``p``: one query per
    detection, its score on its HOI class, object scores 0."""
    hois_of = p.hois
    assert (hois_of >= 0).all()
    out = []
    for i in range(p.n_images):
        s = p.image_slice(i)
        n = s.stop - s.start
        img = {"boxes": np.concatenate([p.boxes_h[s], p.boxes_o[s]]).astype(np.float32),
               "hoi_scores": np.zeros((n, p.vocab.n_hois), np.float32), "obj_scores": np.zeros((n, 81), np.float32),
               "sub_ids": np.arange(n), "obj_ids": np.arange(n, 2 * n)}
        img["hoi_scores"][np.arange(n), hois_of[s]] = p.scores[s]
        out.append(img)
    return out


def qpic_outputs(p: HOIPredictions) -> list[dict[str, np.ndarray]]:
    """QPIC's / CDN's ``PostProcessHOI`` outputs for ``p``: one query per detection (labels 0
    for the subjects, then COCO-80 object labels; ``verb_scores`` with its score on its verb)."""
    v = p.vocab
    out = []
    for i in range(p.n_images):
        s = p.image_slice(i)
        n = s.stop - s.start
        vs = np.zeros((n, v.n_verbs), np.float32)
        vs[np.arange(n), p.verbs[s]] = p.scores[s]
        out.append({"labels": np.concatenate([np.zeros(n, np.int64), v.coco80[p.objects[s]].astype(np.int64)]),
                    "boxes": np.concatenate([p.boxes_h[s], p.boxes_o[s]]).astype(np.float32),
                    "verb_scores": vs, "sub_ids": np.arange(n), "obj_ids": np.arange(n, 2 * n)})
    return out


def gen_vlkt_results_json(p: HOIPredictions, gts: list[dict]) -> str:
    """GEN-VLKT's / HOICLIP's ``results.json``: ``HICOEvaluator.__init__`` of
    ``datasets/hico_eval_triplet.py`` on ``PostProcessHOITriplet`` outputs (``boxes``: subjects
    then objects; ``hoi_scores`` (queries x 600); ``obj_scores`` (queries x 81); ``sub_ids``,
    ``obj_ids``). Boxes are stored as ``{'bbox': list(bbox)}`` without a label (numpy 2 prints
    ``np.float32(...)`` per coordinate); scores ``hoi_scores + obj_scores ** 2`` of the class's
    object; the top max_hois values (their ``util/topk.py`` heap: the same values, descending,
    as ``heapq.nlargest``), each located with ``np.where(hoi_scores == score)[0][0]``. One query
    per detection with its score on its HOI class, object scores 0. Detections whose (verb,
    object) is no HOI class cannot be expressed and must be left out by the caller.
    """
    return _gen_vlkt_json_of(triplet_outputs(p), p.file_names, gts)


def _gen_vlkt_json_of(outputs: list[dict[str, np.ndarray]], file_names, gts: list[dict] | None = None) -> str:
    import heapq

    vocab = load_dataset("hico-det:test").vocab
    hoi_obj_list = vocab.coco80[vocab.hoi_verb_object[:, 1]]  # hico_text_label keys: (verb, COCO-80 object)
    preds = []
    for fn, img_preds in zip(file_names, outputs):
        bboxes = [{"bbox": list(bbox)} for bbox in img_preds["boxes"]]
        obj_scores = img_preds["obj_scores"] * img_preds["obj_scores"]
        hoi_scores = img_preds["hoi_scores"] + obj_scores[:, hoi_obj_list]
        hoi_labels = np.tile(np.arange(hoi_scores.shape[1]), (hoi_scores.shape[0], 1)).ravel()
        subject_ids = np.tile(img_preds["sub_ids"], (hoi_scores.shape[1], 1)).T.ravel()
        object_ids = np.tile(img_preds["obj_ids"], (hoi_scores.shape[1], 1)).T.ravel()
        hoi_scores = hoi_scores.ravel()
        topk_hoi_scores = heapq.nlargest(MAX_HOIS, list(hoi_scores))
        topk_indexes = np.array([np.where(hoi_scores == score)[0][0] for score in topk_hoi_scores])
        hois = [{"subject_id": a, "object_id": b, "category_id": c, "score": d} for a, b, c, d in
                zip(subject_ids[topk_indexes], object_ids[topk_indexes], hoi_labels[topk_indexes], topk_hoi_scores)]
        preds.append({"filename": fn, "predictions": bboxes, "hoi_prediction": hois[:MAX_HOIS]})
    return json.dumps(str({"preds": preds, "gts": gts or []}))


def only_valid(p: HOIPredictions) -> HOIPredictions:
    """``p`` without the detections whose (verb, object) is no HOI class."""
    k = p.hois >= 0
    counts = np.bincount(np.repeat(np.arange(p.n_images), np.diff(p.offsets))[k], minlength=p.n_images)
    return HOIPredictions.from_arrays(p.vocab, p.file_names, counts, p.boxes_h[k], p.boxes_o[k],
                                      p.objects[k], p.verbs[k], p.scores[k])


def evaluate(gt_file, pred_file, *extra: str) -> dict:
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", str(gt_file), "--pred", str(pred_file),
                                 "--protocol", "qpic", *extra, "--json", "-"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def assert_same_aps(a: dict, b: dict) -> None:
    x = np.array([np.nan if v is None else v for v in a["per_class_ap"]], dtype=float)
    y = np.array([np.nan if v is None else v for v in b["per_class_ap"]], dtype=float)
    np.testing.assert_array_equal(np.isnan(x), np.isnan(y))
    np.testing.assert_allclose(x[~np.isnan(x)], y[~np.isnan(y)], rtol=0, atol=1e-12)


@pytest.mark.parametrize("known_object", [False, True], ids=["default", "known-object"])
def test_cdn_results_json_scores_like_hoibench_format(case, known_object):
    gt, p, d = case
    path = d / "cdn_results.json"
    if not path.exists():
        path.write_text(cdn_results_json(p, _embedded_gts(gt)))
        write_predictions(p, d / "own.json")
    assert "np.float32(" in path.read_text() or "array(" in path.read_text()
    extra = ("--known-object",) if known_object else ()
    got = evaluate(d / "gt.json", path, *extra)
    assert got["prediction_format"] == "cdn"
    want = evaluate(d / "gt.json", d / "own.json", *extra)
    assert want["prediction_format"] == "hoibench"
    assert_same_aps(got, want)
    assert 0 < got["full"] == pytest.approx(want["full"], abs=1e-12)


@pytest.mark.parametrize("known_object", [False, True], ids=["default", "known-object"])
def test_gen_vlkt_results_json_scores_like_hoibench_format(case, known_object):
    gt, p, d = case
    path = d / "gen_vlkt_results.json"
    if not path.exists():
        q = only_valid(p)
        path.write_text(gen_vlkt_results_json(q, _embedded_gts(gt)))
        write_predictions(q, d / "own_valid.json")
    text = path.read_text()
    assert "np.float32(" in text and "np.int64(" in text  # numpy 2 scalar reprs
    assert detect_prediction_format(path) == "gen-vlkt"
    extra = ("--known-object",) if known_object else ()
    got = evaluate(d / "gt.json", path, *extra)
    assert got["prediction_format"] == "gen-vlkt"
    want = evaluate(d / "gt.json", d / "own_valid.json", *extra)
    assert_same_aps(got, want)
    assert 0 < got["full"] == pytest.approx(want["full"], abs=1e-12)
    # read as CDN's verb ids, the same file is refused (HOI ids beyond the 117 verbs)
    with pytest.raises(FormatError, match=r"hoi_prediction\[\d+\]\.category_id: verb id outside 0..116"):
        load_predictions(path, format="cdn")


def test_gen_vlkt_with_only_low_hoi_ids_needs_format_or_is_told_apart(tmp_path):
    # HOI ids < 117 on boxes whose label makes them invalid as CDN verbs, and whose HOI classes
    # name another object than the box label: neither reading fits, --format decides
    text = NUMPY1_REPR.replace("'category_id': 76", "'category_id': 3").replace("'score': 0.0", "'score': 0.5")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(text))
    with pytest.raises(FormatError, match=r"cannot tell cdn from gen-vlkt: .* 0\.0% .* 0\.0% .*pass --format cdn"):
        load_predictions(path)
    loaded = load_predictions(path, format="gen-vlkt")
    assert loaded.format == "gen-vlkt"
    assert loaded.predictions.objects.tolist() == [int(loaded.predictions.vocab.hoi_verb_object[3, 1]),
                                                   int(loaded.predictions.vocab.hoi_verb_object[4, 1])]
    path.write_text(json.dumps(NUMPY1_REPR.replace("'category_id': 76", "'category_id': 600")))
    with pytest.raises(FormatError, match=r"record 0: hoi_prediction\[0\]\.category_id: hoi id outside 0..599"):
        load_predictions(path)


def head(p: HOIPredictions, k: int) -> HOIPredictions:
    """The detections of the first ``k`` images of ``p``."""
    n = int(p.offsets[k])
    return HOIPredictions.from_arrays(p.vocab, p.file_names[:k], np.diff(p.offsets[:k + 1]), p.boxes_h[:n],
                                      p.boxes_o[:n], p.objects[:n], p.verbs[:n], p.scores[:n])


def test_fast_and_careful_parsers_agree_on_a_built_file(case, tmp_path, monkeypatch):
    import hoibench.formats._literal as lit

    gt, p, _ = case
    text = json.loads(cdn_results_json(head(p, 4), _embedded_gts(gt.subset(np.arange(3)))))
    fast = parse_numpy_repr(text, tmp_path / "r.json")
    monkeypatch.setattr(lit, "_as_json", lambda text: None)
    assert parse_numpy_repr(text, tmp_path / "r.json") == fast
    assert len(fast["preds"]) == 4 and len(fast["preds"][0]["hoi_prediction"]) == MAX_HOIS


def test_cdn_embedded_ground_truth_is_ignored_with_a_warning(case, tmp_path):
    gt, p, d = case
    path = tmp_path / "results.json"
    path.write_text(cdn_results_json(head(p, 20), _embedded_gts(gt.subset(np.arange(5)))))
    assert detect_prediction_format(path) == "cdn"
    loaded = load_predictions(path, ground_truth=gt)
    assert len(loaded.warnings) == 1 and "5 images" in loaded.warnings[0] and f"{gt.n_images:,} images" in loaded.warnings[0]
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", str(d / "gt.json"), "--pred", str(path), "--protocol", "qpic"])
    assert r.exit_code == 0, r.output
    assert "warning:" in r.output and "embedded ground truth" in r.output
    assert load_predictions(path, ground_truth=None).warnings == []


NUMPY1_REPR = ("{'preds': [{'filename': 'a.jpg', 'predictions': [{'bbox': array([ 1.5,  2. , 30.25, 40.  ], "
               "dtype=float32), 'category_id': 0}, {'bbox': array([5., 6., 70., 80.], dtype=float32), "
               "'category_id': 17}], 'hoi_prediction': [{'subject_id': 0, 'object_id': 1, 'category_id': 76, "
               "'score': 0.8}, {'subject_id': 0, 'object_id': 1, 'category_id': 4, 'score': 0.0}]}], 'gts': []}")


@pytest.mark.parametrize("fast", [True, False], ids=["json-path", "ast-path"])
def test_literal_parser_numpy1_and_numpy2_reprs(fast, tmp_path):
    text = NUMPY1_REPR if fast else NUMPY1_REPR.replace("0.8}", "np.float32(nan)}")
    v = parse_numpy_repr(text, tmp_path / "x")
    assert v["preds"][0]["predictions"][0]["bbox"] == [1.5, 2.0, 30.25, 40.0]
    s = v["preds"][0]["hoi_prediction"][0]["score"]
    assert (s == 0.8) if fast else np.isnan(s)
    two = str({"a": [np.float32(0.25), np.int64(3), np.array([[1, -2]], dtype=np.int32)], "b": -1e-05})
    assert parse_numpy_repr(two, tmp_path / "x") == {"a": [0.25, 3, [[1, -2]]], "b": -1e-05}
    assert parse_numpy_repr(str({"n": "it's"}), tmp_path / "x") == {"n": "it's"}  # ast path


@pytest.mark.parametrize("text", ["{'a': __import__('os').system('true')}", "{'a': (lambda: 1)()}",
                                  "{'a': np.load('x')}", "{'a': array([1], dtype=os.system)}", "{'a': x}",
                                  "{'a': [1, 2, ...]}", "{'a': open('f')}"])
def test_literal_parser_executes_nothing(text, tmp_path):
    with pytest.raises(FormatError, match=r"x.json: (not a literal|an array was printed truncated)"):
        parse_numpy_repr(text, tmp_path / "x.json")


def test_cdn_reader_names_record_and_field(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(NUMPY1_REPR.replace("'object_id': 1, 'category_id': 76", "'object_id': 5, 'category_id': 76")))
    with pytest.raises(FormatError, match=r"r.json: record 0: hoi_prediction.subject_id: box index outside"):
        load_predictions(path)
    path.write_text(json.dumps(NUMPY1_REPR.replace("'score': 0.8", "'score': 'high'")))
    with pytest.raises(FormatError, match=r"record 0: hoi_prediction\[0\]\.score: expected a number"):
        load_predictions(path)
    path.write_text(json.dumps(NUMPY1_REPR.replace("'category_id': 76", "'category_id': 117")))
    with pytest.raises(FormatError, match=r"record 0: hoi_prediction\[0\]\.category_id: verb id outside"):
        load_predictions(path, format="cdn")


# ----------------------------------------------------------------------------- UPT / PViC --cache
def upt_model_boxes(p: HOIPredictions) -> tuple[np.ndarray, np.ndarray]:
    """The float32 boxes a UPT/PViC model would output for ``p``: their continuous 0-based frame
    is hoibench's with x2, y2 one larger (PViC's DataFactory: ``boxes[:, :2] -= 1`` on the
    hicodet toolkit's 1-based pixel indices)."""
    one = np.array([0, 0, 1, 1], np.float32)
    return p.boxes_h.astype(np.float32) + one, p.boxes_o.astype(np.float32) + one


def upt_cache_hico(p: HOIPredictions, gt: HOIDataset, folder) -> None:
    """``CustomisedDLE.cache_hico`` of UPT/PViC ``utils.py``, per image of ``gt``: rows
    ``[boxes_h, boxes_o, score]`` (float32 tensors) with ``boxes[:, 2:] -= 1``, grouped by HOI
    class with ``interactions.argsort()``, in ``all_results[600, n_images]``; ``None`` cells become
    ``np.zeros((0, 0))``; one ``detections_{object+1:02d}.mat`` per object holding its classes' rows."""
    import scipy.io as sio
    import torch

    v = p.vocab
    conversion = torch.full((v.n_objects, v.n_verbs), -1.0, dtype=torch.float64)
    conversion[v.hoi_verb_object[:, 1], v.hoi_verb_object[:, 0]] = torch.arange(v.n_hois, dtype=torch.float64)
    object2int = [np.flatnonzero(v.hoi_verb_object[:, 1] == o) for o in range(v.n_objects)]
    all_results = np.empty((600, gt.n_images), dtype=object)
    bh_all, bo_all = upt_model_boxes(p)
    column = {f: k for k, f in enumerate(gt.file_names)}
    for i, fn in enumerate(p.file_names):
        s = p.image_slice(i)
        if s.stop == s.start:
            continue
        image_idx = column[fn]
        boxes_h, boxes_o = torch.from_numpy(bh_all[s].copy()), torch.from_numpy(bo_all[s].copy())
        objects, verbs = torch.from_numpy(p.objects[s].copy()), torch.from_numpy(p.verbs[s].copy())
        scores = torch.from_numpy(p.scores[s].astype(np.float32))
        interactions = conversion[objects, verbs]
        boxes_h[:, 2:] -= 1
        boxes_o[:, 2:] -= 1
        permutation = interactions.argsort()
        boxes_h, boxes_o = boxes_h[permutation], boxes_o[permutation]
        interactions, scores = interactions[permutation], scores[permutation]
        unique_class, counts = interactions.unique(return_counts=True)
        n = 0
        for cls_id, cls_num in zip(unique_class, counts):
            all_results[cls_id.long(), image_idx] = torch.cat([
                boxes_h[n: n + cls_num], boxes_o[n: n + cls_num], scores[n: n + cls_num, None]], dim=1).numpy()
            n += cls_num
    for i in range(600):
        for j in range(gt.n_images):
            if all_results[i, j] is None:
                all_results[i, j] = np.zeros((0, 0))
    folder.mkdir()
    for object_idx in range(80):
        sio.savemat(folder / f"detections_{object_idx + 1:02d}.mat", dict(all_boxes=all_results[object2int[object_idx]]))


def evaluate_pocket(gt_file, pred_file, *extra: str) -> dict:
    return evaluate(gt_file, pred_file, "--protocol", "pocket", *extra)


@pytest.fixture(scope="module")
def upt_case(case):
    """UPT's folder for the valid detections of ``case``, and the same float32 detections in
    hoibench's format (the model's boxes after ``[:, 2:] -= 1``, computed here with numpy)."""
    gt, p, d = case
    q = only_valid(p)
    folder = d / "upt_matlab"
    upt_cache_hico(q, gt, folder)
    bh, bo = upt_model_boxes(q)
    bh[:, 2:] -= 1
    bo[:, 2:] -= 1
    same = HOIPredictions.from_arrays(q.vocab, q.file_names, np.diff(q.offsets), bh.astype(np.float64),
                                      bo.astype(np.float64), q.objects, q.verbs,
                                      q.scores.astype(np.float32).astype(np.float64))
    write_predictions(same, d / "own_upt.json")
    return gt, same, d, folder


@pytest.mark.parametrize("known_object", [False, True], ids=["default", "known-object"])
def test_upt_pvic_matlab_cache_folder_scores_like_hoibench_format(upt_case, known_object):
    _, _, d, folder = upt_case
    assert detect_prediction_format(folder) == "ho-rcnn"
    extra = ("--known-object",) if known_object else ()
    got = evaluate_pocket(d / "gt.json", folder, *extra)
    assert got["prediction_format"] == "ho-rcnn"
    want = evaluate_pocket(d / "gt.json", d / "own_upt.json", *extra)
    assert_same_aps(got, want)
    assert 0 < got["full"] == pytest.approx(want["full"], abs=1e-12)


def test_upt_folder_scipy_fallback_reads_the_same(upt_case, monkeypatch):
    import hoibench.formats.matlab_detections as md

    gt, same, _, folder = upt_case
    fast = load_predictions(folder, ground_truth=gt).predictions
    monkeypatch.setattr(md, "read_cells", lambda path, name: None)
    slow = load_predictions(folder, ground_truth=gt).predictions
    for key in ("boxes_h", "boxes_o", "scores", "objects", "verbs", "offsets"):
        np.testing.assert_array_equal(getattr(fast, key), getattr(slow, key))
    assert len(fast) == len(same)


@pytest.mark.parametrize("target", ["folder", "all.mat"])
def test_matlab_out_reads_back_unchanged(case, tmp_path, target):
    gt, p, d = case
    q = head(only_valid(p), 30)
    out = tmp_path / target
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", str(d / "gt.json"), "--pred", str(_own(q, tmp_path)),
                                 "--matlab-out", str(out)])
    assert r.exit_code == 0, r.output
    back = load_predictions(out, ground_truth=gt)
    assert back.format == "ho-rcnn"
    b = back.predictions
    sel = np.flatnonzero(np.isin(b.file_names, q.file_names))
    assert len(b) == len(q) and sel.size == q.n_images  # the other images are empty columns
    for i in range(q.n_images):
        j = b.file_names.index(q.file_names[i])
        s, t = q.image_slice(i), b.image_slice(j)
        key_q = np.lexsort((q.scores[s], q.hois[s]))
        key_b = np.lexsort((b.scores[t], b.hois[t]))
        for f in ("boxes_h", "boxes_o", "scores", "objects", "verbs"):
            np.testing.assert_array_equal(getattr(q, f)[s][key_q], getattr(b, f)[t][key_b])


def _own(p: HOIPredictions, folder) -> object:
    path = folder / "own.json"
    write_predictions(p, path)
    return path


def test_matlab_folder_errors_name_file_and_field(case, tmp_path, capsys):
    gt, p, d = case
    folder = tmp_path / "m"
    from hoibench.formats import write_matlab_detections

    write_matlab_detections(head(only_valid(p), 3), gt, folder)
    with pytest.raises(FormatError, match=r"all_boxes: 10 x 387 cells, expected 10 x 3 "):  # 10 airplane classes
        load_predictions(folder, ground_truth=gt.subset(np.arange(3)))
    (folder / "detections_07.mat").unlink()
    with pytest.raises(FormatError, match=r"missing detections_07\.mat"):
        load_predictions(folder, ground_truth=gt)
    line = one_line_error(["eval", "hico", "--gt", str(d / "gt.json"), "--pred", str(folder)], capsys)
    assert "m: missing detections_07.mat" in line


# ----------------------------------------------------------------------------- in memory (training loops)
def _tensors(outputs: list[dict[str, np.ndarray]]) -> list[dict]:
    import torch

    return [{k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in o.items()} for o in outputs]


def test_predictions_from_qpic_postprocess_hoi_equals_qpic_and_own_format(case, tmp_path):
    from hoibench.evaluation import hico_mean_ap
    from hoibench.formats import predictions_from_qpic

    gt, p, _ = case
    q = head(p, 40)
    got = predictions_from_qpic(_tensors(qpic_outputs(q)), list(q.file_names))
    # the same outputs saved as the qpic JSON layout read back identically
    rows = [{"file_name": fn, **{k: v.tolist() for k, v in o.items()}} for fn, o in zip(q.file_names, qpic_outputs(q))]
    (tmp_path / "q.json").write_text(json.dumps(rows))
    via_file = load_predictions(tmp_path / "q.json")
    assert via_file.format == "qpic"
    for f in ("boxes_h", "boxes_o", "objects", "verbs", "scores", "offsets"):
        np.testing.assert_array_equal(getattr(got, f), getattr(via_file.predictions, f), err_msg=f)
    a = hico_mean_ap(got, gt, protocol="qpic")
    b = hico_mean_ap(only_valid(q), gt, protocol="qpic")
    np.testing.assert_allclose(a.per_class_ap, b.per_class_ap, rtol=0, atol=1e-12, equal_nan=True)
    assert a.full > 0


def test_predictions_from_qpic_triplet_shape_equals_gen_vlkt_results_json(case, tmp_path):
    from hoibench.formats import predictions_from_qpic

    _, p, _ = case
    q = head(only_valid(p), 25)
    outputs = triplet_outputs(q)
    outputs[0]["hoi_scores"][1, 7] = outputs[0]["hoi_scores"][0].max()  # a tie: np.where finds the first
    outputs[0]["obj_scores"][2, 5] = 0.5  # adds 0.25 to every class of COCO object 5 of query 2
    got = predictions_from_qpic(_tensors(outputs), list(q.file_names))
    (tmp_path / "r.json").write_text(_gen_vlkt_json_of(outputs, q.file_names))
    want = load_predictions(tmp_path / "r.json", format="gen-vlkt").predictions
    for f in ("boxes_h", "boxes_o", "objects", "verbs", "scores", "offsets"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f), err_msg=f)
    first = got.image_slice(0)
    assert (np.diff(got.scores[first]) <= 0).all() and len(got.scores[first]) == MAX_HOIS


# ----------------------------------------------------------------------------- box frames
def _shifted(p: HOIPredictions, d: float) -> HOIPredictions:
    return HOIPredictions.from_arrays(p.vocab, p.file_names, np.diff(p.offsets), p.boxes_h + d, p.boxes_o + d,
                                      p.objects, p.verbs, p.scores)


def test_a_file_one_pixel_off_gets_a_warning_naming_box_shift(case, tmp_path):
    gt, p, d = case
    write_predictions(_shifted(p, 1.0), tmp_path / "off.json")
    write_predictions(_shifted(p, 0.5), tmp_path / "half.json")
    assert load_predictions(_own(p, tmp_path), ground_truth=gt).warnings == []
    assert load_predictions(tmp_path / "half.json", ground_truth=gt).warnings == []  # sub-pixel: no hint
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", str(d / "gt.json"), "--pred", str(tmp_path / "off.json"),
                                 "--protocol", "qpic", "--json", "-"])
    assert r.exit_code == 0, r.output
    assert "shifted by -1 pixel" in r.output and "--box-shift -1 sets it" in r.output
    fixed = evaluate(d / "gt.json", tmp_path / "off.json", "--box-shift", "-1")
    assert_same_aps(fixed, evaluate(d / "gt.json", _own(p, tmp_path)))
    assert load_predictions(tmp_path / "off.json", ground_truth=gt, box_shift=-1.0).warnings == []


# ----------------------------------------------------------------------------- the C scanner and the careful reader
def _read_both_ways(path, monkeypatch, **kw):
    """(native, careful): what load_predictions makes of ``path`` with the C scanner in front of
    the careful reader (where it is built) and with the careful reader alone; each the loaded file
    or the error line."""
    import hoibench.formats._scan as scan

    out = []
    for native in (scan._NATIVE, None):
        with monkeypatch.context() as m:
            m.setattr(scan, "_colscan", native)
            m.setattr(scan, "AVAILABLE", native is not None)
            try:
                out.append(load_predictions(path, **kw))
            except FormatError as exc:
                out.append(str(exc))
    return out


def _same_loaded(a, b) -> None:
    if isinstance(b, str):
        assert a == b
        return
    assert not isinstance(a, str), a
    assert a.format == b.format and a.warnings == b.warnings
    pa, pb = a.predictions, b.predictions
    assert list(pa.file_names) == list(pb.file_names)
    for k in ("offsets", "boxes_h", "boxes_o", "objects", "verbs", "scores"):
        np.testing.assert_array_equal(getattr(pa, k), getattr(pb, k))


REPR_VARIANTS = {  # name -> (edit of the CDN text built from the test set, the C scanner reads it by itself)
    "cdn numpy 2": (lambda t: t, True),
    "numpy 1 arrays and 2.": (lambda t: NUMPY1_REPR, True),
    "keys reordered in one record": (lambda t: t.replace("{'subject_id': np.int64(0), 'object_id': np.int64(",
                                                         "{'object_id': np.int64(0), 'subject_id': np.int64(", 1), True),
    "an extra key": (lambda t: t.replace("'score': ", "'extra': 1, 'score': ", 1), False),
    "a list where a number belongs": (lambda t: re.sub(r"'score': (np\.float32\([^)]*\))", r"'score': [\1]", t,
                                                       count=1), False),
    "a wrapper in a file name": (lambda t: t.replace("'filename': 'HICO_", "'filename': 'np.int64(1)HICO_", 1), True),
    "a parenthesis in a file name": (lambda t: t.replace("'filename': 'HICO_", "'filename': 'a)HICO_", 1), True),
    "an unknown call": (lambda t: t.replace("np.float32(", "np.float16(", 1), True),
    "a float id": (lambda t: t.replace("'subject_id': np.int64(0)", "'subject_id': 0.5", 1), False),
    "nan score": (lambda t: re.sub(r"'score': np\.float32\([^)]*\)", "'score': np.float32(nan)", t, count=1), False),
    "a quote in a file name": (lambda t: t.replace("'filename': 'HICO_", "\"filename\": \"it's", 1)
                               .replace(".jpg', 'predictions'", ".jpg\", 'predictions'", 1), False),
    "bbox of 3 numbers": (lambda t: re.sub(r"'bbox': array\(\[\s*[^,]+,", "'bbox': array([", t, count=1), False),
    "box index out of range": (lambda t: t.replace("'object_id': np.int64(", "'object_id': np.int64(9", 1), True),
    # errors in later images: the first image in file order names it, whichever check finds it
    "box index in image 1, label in image 2": (
        lambda t: _in_image(_in_image(t, 1, "'object_id': np.int64(", "'object_id': np.int64(9"),
                            2, "'category_id': np.int64(", "'category_id': np.int64(8"), True),
    "label in image 1, box index in image 2": (
        lambda t: _in_image(_in_image(t, 2, "'object_id': np.int64(", "'object_id': np.int64(9"),
                            1, "'category_id': np.int64(", "'category_id': np.int64(8"), True),
    "hoi id 600 in image 2": (lambda t: _in_image(t, 2, "'score'", "'score'", hoi_id=600), True),
}


def _in_image(text: str, k: int, old: str, new: str, hoi_id: int | None = None) -> str:
    """``text`` with the first ``old`` of image ``k``'s record replaced by ``new``; with ``hoi_id``,
    that image's first HOI record's category id set to it instead."""
    parts = text.split("{'filename': ")
    if hoi_id is not None:
        parts[k + 1] = re.sub(r"('subject_id': [^}]*'category_id': )np\.int64\(\d+\)",
                              rf"\1np.int64({hoi_id})", parts[k + 1], count=1)
    else:
        parts[k + 1] = parts[k + 1].replace(old, new, 1)
    return "{'filename': ".join(parts)


@pytest.mark.parametrize("variant", list(REPR_VARIANTS))
def test_repr_c_scanner_and_careful_parser_agree(case, tmp_path, monkeypatch, variant):
    import hoibench.formats._repr_results as repr_mod
    import hoibench.formats._scan as scan

    gt, p, _ = case
    edit, native_reads_it = REPR_VARIANTS[variant]
    text = edit(json.loads(cdn_results_json(head(p, 3), _embedded_gts(gt.subset(np.arange(2))))))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(text))
    native, careful = _read_both_ways(path, monkeypatch, ground_truth=gt)
    _same_loaded(native, careful)
    if scan._NATIVE is not None:
        calls = []
        careful_reader = repr_mod.repr_images_careful
        monkeypatch.setattr(repr_mod, "repr_images_careful", lambda *a: calls.append(1) or careful_reader(*a))
        with contextlib.suppress(FormatError):
            load_predictions(path, ground_truth=gt)
        assert (not calls) == native_reads_it, "read by the C scanner" if not native_reads_it else "fell through"
    want = REPR_ERRORS.get(variant)
    if want is None:
        assert not isinstance(careful, str), careful
    else:
        assert isinstance(careful, str) and f"results.json: {want}" in careful, careful


REPR_ERRORS = {  # variants that are refused -> the start of the one error line (record and field)
    "a list where a number belongs": "record 0: hoi_prediction[0].score: expected a number, got [",
    "a float id": "record 0: hoi_prediction[5].subject_id: expected a number, got 0.5",
    "nan score": "record 0: scores[0]: score is not a finite number",
    "bbox of 3 numbers": "record 0: predictions: malformed 'bbox' values",
    "box index out of range": "record 0: hoi_prediction.subject_id: box index outside",
    "box index in image 1, label in image 2": "record 1: hoi_prediction.subject_id: box index outside",
    "label in image 1, box index in image 2": "record 1: predictions.category_id: label outside COCO-80",
    "hoi id 600 in image 2": "record 2: hoi_prediction[0].category_id: hoi id outside 0..599",
}


@pytest.mark.parametrize("boxes", ["[np.float32(1.0), np.float32(2.0), np.float32(3.0)]",
                                   "array([1., 2., 3.], dtype=float32)", "[[1.0, 2.0], [3.0, 4.0]]"])
def test_a_lone_box_of_the_wrong_size_is_named(tmp_path, boxes):
    """One box of 3 numbers (or 2 x 2) in an image: one line naming the record and field, not
    numpy's reshape error."""
    text = ("{'preds': [{'filename': 'a.jpg', 'predictions': [{'bbox': " + boxes + "}], "
            "'hoi_prediction': []}], 'gts': []}")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(text))
    with pytest.raises(FormatError, match=r"results.json: record 0: predictions.bbox: expected boxes of 4 numbers"):
        load_predictions(path)


@pytest.mark.parametrize("variant", ["cdn numpy 2", "gen-vlkt", "numpy 1 arrays and 2.", "brace in a name",
                                     "several braces in names"])
def test_repr_layouts_read_alike_with_and_without_the_c_scanner(case, tmp_path, monkeypatch, variant):
    """numpy 1's "2." and braces in file names: the same result with the C scanner and without."""
    gt, p, _ = case
    q = only_valid(head(p, 4))
    gts = _embedded_gts(gt.subset(np.arange(2)))
    text = json.loads(gen_vlkt_results_json(q, gts) if variant == "gen-vlkt" else cdn_results_json(q, gts))
    if variant == "numpy 1 arrays and 2.":
        text = NUMPY1_REPR
    elif variant == "brace in a name":
        text = text.replace("'filename': 'HICO_", "'filename': 'a}, {b_HICO_", 1)
    elif variant == "several braces in names":
        text = text.replace("'filename': 'HICO_", "'filename': '{{HICO_")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(text))
    native, careful = _read_both_ways(path, monkeypatch, ground_truth=gt)
    _same_loaded(native, careful)
    assert not isinstance(careful, str), careful
    if "brace" in variant:
        assert any("}" in fn or "{" in fn for fn in native.predictions.file_names)


def test_repr_readers_read_gen_vlkt_and_its_embedded_ground_truth(case, tmp_path, monkeypatch):
    gt, p, _ = case
    q = only_valid(head(p, 4))
    path = tmp_path / "results.json"
    path.write_text(gen_vlkt_results_json(q, _embedded_gts(gt.subset(np.arange(3)))))
    native, careful = _read_both_ways(path, monkeypatch, ground_truth=gt)
    _same_loaded(native, careful)
    assert native.format == "gen-vlkt" and len(native.warnings) == 1 and "3 images" in native.warnings[0]


@pytest.fixture(autouse=True)
def _every_access(file_access) -> None:
    """Every test of this module with the file read and with it memory-mapped."""
