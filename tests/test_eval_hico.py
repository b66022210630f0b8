"""HICO-DET mAP on hand-made cases where the official, QPIC and pocket protocols part ways.

Each case has an answer worked out by hand from the reference source (ho-rcnn
``VOCevaldet_bboxpair.m`` / ``eval_one.m``, QPIC ``datasets/hico_eval.py``, pocket
``BoxPairAssociation`` + ``DetectionAPMeter``), and the plain loop evaluator must agree too.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench._exceptions import ConfigError, FormatError, ValidationError
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIImage, HOIPredictions
from hoibench.datasets import hico_class_subsets
from hoibench.evaluation import (
    HICOMeanAP,
    HICOProtocol,
    box_iou,
    hico_mean_ap,
    match_hico_detections,
    voc11_ap,
)
from hoibench.formats import write_predictions
from hoibench.testing import hico_average_precision_loop
from hoibench.vocab import hico_det

V = hico_det()
PERSON = V.person
RIDE_HORSE = int(V.hoi_index(V.verb_index("ride"), V.object_index("horse")))
FEED_HORSE = int(V.hoi_index(V.verb_index("feed"), V.object_index("horse")))
HORSE = V.object_index("horse")
RIDE = V.verb_index("ride")
FEED = V.verb_index("feed")


def image(name: str, pairs: list[tuple[list[float], list[float], int, int]]) -> HOIImage:
    """An image whose pairs are (human box, object box, object, verb)."""
    boxes, labels, idx = [], [], []
    for h, o, obj, verb in pairs:
        boxes += [h, o]
        labels += [PERSON, obj]
        idx.append([len(boxes) - 2, len(boxes) - 1, verb])
    return HOIImage.from_lists(name, boxes, labels, idx, width=640, height=480)


def dataset(*images: HOIImage) -> HOIDataset:
    return HOIDataset.from_images(V, images, name="handmade")


def preds(rows: list[tuple[str, list[float], list[float], int, int, float]]) -> HOIPredictions:
    """Rows of (file, human box, object box, object, verb, score), grouped by file in order."""
    files: list[str] = []
    for r in rows:
        if r[0] not in files:
            files.append(r[0])
    rows = sorted(rows, key=lambda r: files.index(r[0]))
    counts = [sum(r[0] == f for r in rows) for f in files]
    return HOIPredictions.from_arrays(V, files, counts, np.array([r[1] for r in rows]).reshape(-1, 4),
                                      np.array([r[2] for r in rows]).reshape(-1, 4), [r[3] for r in rows],
                                      [r[4] for r in rows], [r[5] for r in rows])


H = [10.0, 10.0, 109.0, 209.0]  # a person
OB = [150.0, 50.0, 249.0, 149.0]  # a horse
H2 = [300.0, 10.0, 399.0, 209.0]
O2 = [420.0, 50.0, 519.0, 149.0]
PROTOCOLS = ("official", "qpic", "pocket")


def ap_of(result_or_preds, gt=None, protocol="official", cls=RIDE_HORSE) -> float:
    if gt is not None:
        result_or_preds = hico_mean_ap(result_or_preds, gt, protocol=protocol)
    return float(result_or_preds.per_class_ap[cls])


def check_loop(p: HOIPredictions, gt: HOIDataset, protocol: str) -> None:
    fast = hico_mean_ap(p, gt, protocol=protocol).per_class_ap
    slow = hico_average_precision_loop(p, gt, protocol=protocol)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
    np.testing.assert_allclose(fast[~np.isnan(fast)], slow[~np.isnan(slow)], rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- AP primitives
def test_recall_threshold_flavours_differ_exactly_where_the_references_do():
    # 3 of 10 found: recall 0.3 is below MATLAB's/torch's/numpy's 0.30000000000000004
    rec = np.array([0.1, 0.2, 0.3])
    prec = np.ones(3)
    assert voc11_ap(rec, prec, thresholds="matlab") == pytest.approx(3 / 11)
    assert voc11_ap(rec, prec, thresholds="arange") == pytest.approx(3 / 11)
    assert voc11_ap(rec, prec, thresholds="decimal") == pytest.approx(4 / 11)
    # 6 and 7 of 10: exact in MATLAB/torch, one ulp too high in np.arange
    for k in (6, 7):
        rec = np.arange(1, k + 1) / 10
        prec = np.ones(k)
        assert voc11_ap(rec, prec, thresholds="matlab") == pytest.approx((k + 1) / 11)
        assert voc11_ap(rec, prec, thresholds="linspace") == pytest.approx((k + 1) / 11)
        assert voc11_ap(rec, prec, thresholds="arange") == pytest.approx(k / 11)


def test_threshold_tables():
    from hoibench.evaluation import RECALL_THRESHOLDS

    # torch.linspace(0, 1, 11, dtype=torch.float64).tolist() with torch 2.13
    torch_values = [0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert RECALL_THRESHOLDS["linspace"].tolist() == torch_values
    assert RECALL_THRESHOLDS["matlab"].tolist() == torch_values
    np.testing.assert_array_equal(np.arange(0.0, 1.1, 0.1), RECALL_THRESHOLDS["arange"])
    assert RECALL_THRESHOLDS["decimal"].tolist() == [k / 10 for k in range(11)]


@pytest.mark.slow
def test_torch_linspace_thresholds_match_our_table():
    torch = pytest.importorskip("torch")
    from hoibench.evaluation import RECALL_THRESHOLDS

    t = torch.linspace(0, 1, 11, dtype=torch.float64).numpy()
    np.testing.assert_array_equal(t, RECALL_THRESHOLDS["linspace"])


def test_iou_conventions():
    a = [[0, 0, 9, 9]]
    b = [[0, 0, 9, 4]]
    assert box_iou(a, b, convention="pixel")[0, 0] == 0.5  # 50 / 100 with +1 areas
    assert box_iou(a, b, convention="continuous")[0, 0] == pytest.approx(36 / 81)
    # overlap of half a pixel: +1 rule gives a positive IoU, QPIC's test says "no intersection"
    c = [[9.5, 0, 20, 9]]
    assert box_iou(a, c, convention="pixel")[0, 0] > 0
    assert box_iou(a, c, convention="qpic")[0, 0] == 0
    assert box_iou(a, [[20, 20, 30, 30]], convention="continuous")[0, 0] == 0
    with pytest.raises(ConfigError, match="IoU convention must be one of"):
        box_iou(a, b, convention="bad")


# ----------------------------------------------------------------------------- matching rules
def test_best_pair_already_matched_gives_fp_even_if_another_pair_matches():
    # two people riding horses; the second detection overlaps pair A best but pair B enough
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE), ([12, 12, 111, 211], [152, 52, 251, 151], HORSE, RIDE)]))
    p = preds([("a.jpg", H, OB, HORSE, RIDE, 0.9), ("a.jpg", [11, 11, 110, 210], OB, HORSE, RIDE, 0.8)])
    for proto in PROTOCOLS:
        m = match_hico_detections(p, gt, protocol=proto)
        _, tp = m.for_class(RIDE_HORSE)
        assert tp.tolist() == [True, False], proto
        assert ap_of(p, gt, proto) == pytest.approx(6 / 11)  # rec .5 with precision 1, then FP
        check_loop(p, gt, proto)


def test_first_pair_wins_ties_and_matched_pair_is_recorded():
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE), (H, OB, HORSE, RIDE)]))  # duplicated pair
    p = preds([("a.jpg", H, OB, HORSE, RIDE, 0.9), ("a.jpg", H, OB, HORSE, RIDE, 0.8)])
    m = match_hico_detections(p, gt)
    _, tp = m.for_class(RIDE_HORSE)
    # the second detection's best (first) pair is taken: FP although an identical pair is free
    assert tp.tolist() == [True, False]
    assert m.gt_pair.tolist() == [0, -1]


def test_pixel_rule_and_strict_threshold():
    gt = dataset(image("a.jpg", [([0, 0, 9, 9], [20, 20, 29, 29], HORSE, RIDE)]))
    # pixel IoU exactly 0.5 (official/qpic: >= 0.5 -> TP); continuous 36/81 (pocket: FP)
    p = preds([("a.jpg", [0, 0, 9, 4], [20, 20, 29, 29], HORSE, RIDE, 0.9)])
    assert ap_of(p, gt, "official") == pytest.approx(1.0)
    assert ap_of(p, gt, "qpic") == pytest.approx(1.0)
    assert ap_of(p, gt, "pocket") == 0.0
    # continuous IoU exactly 0.5: pocket's strict "> 0.5" rejects it; pixel IoU 66/121 accepts
    gt = dataset(image("a.jpg", [([0, 0, 10, 10], [20, 20, 30, 30], HORSE, RIDE)]))
    p = preds([("a.jpg", [0, 0, 10, 5], [20, 20, 30, 30], HORSE, RIDE, 0.9)])
    assert ap_of(p, gt, "pocket") == 0.0
    assert ap_of(p, gt, "official") == pytest.approx(1.0)
    relaxed = HICOProtocol.preset("pocket").replace(strict=False)
    assert relaxed.name == "pocket+custom"
    assert ap_of(p, gt, relaxed) == pytest.approx(1.0)
    for proto in PROTOCOLS:
        check_loop(p, gt, proto)


@pytest.mark.parametrize(("k", "official", "qpic"), [(3, 3 / 11, 3 / 11), (6, 7 / 11, 6 / 11), (7, 8 / 11, 7 / 11)])
def test_recall_exactly_on_a_threshold(k, official, qpic):
    # ten pairs of one class in ten images; k of them found (precision 1)
    gt = dataset(*(image(f"{i}.jpg", [(H, OB, HORSE, RIDE)]) for i in range(10)))
    p = preds([(f"{i}.jpg", H, OB, HORSE, RIDE, 1.0 - i / 100) for i in range(k)])
    assert ap_of(p, gt, "official") == pytest.approx(official, abs=1e-15)
    assert ap_of(p, gt, "qpic") == pytest.approx(qpic, abs=1e-15)
    assert ap_of(p, gt, "pocket") == pytest.approx(official, abs=1e-15)  # linspace == MATLAB here
    for proto in PROTOCOLS:
        check_loop(p, gt, proto)


def test_images_without_pairs_count_only_in_official():
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE)]), HOIImage.from_lists("empty.jpg", [], [], []))
    p = preds([("a.jpg", H, OB, HORSE, RIDE, 0.5), ("empty.jpg", H, OB, HORSE, RIDE, 0.9)])
    assert ap_of(p, gt, "official") == pytest.approx(0.5)  # FP first: precision 0.5 at recall 1
    assert ap_of(p, gt, "qpic") == pytest.approx(1.0)  # QPIC's bug: never counted
    assert ap_of(p, gt, "pocket") == pytest.approx(1.0)  # UPT drops such images
    res = hico_mean_ap(p, gt, protocol="qpic")
    assert res.n_dropped["image without ground-truth pairs (not counted by this protocol)"] == 1
    for proto in PROTOCOLS:
        check_loop(p, gt, proto)


def test_qpic_keeps_the_top_100_per_image():
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE)]))
    rows = [("a.jpg", H2, O2, HORSE, FEED, 0.9 - i * 1e-3) for i in range(100)]
    rows.append(("a.jpg", H, OB, HORSE, RIDE, 0.5))  # the 101st best
    p = preds(rows)
    assert ap_of(p, gt, "official") == pytest.approx(1.0)
    assert ap_of(p, gt, "qpic") == 0.0
    res = hico_mean_ap(p, gt, protocol="qpic")
    assert res.n_dropped["beyond the top 100 of its image"] == 1
    # invalid (verb, object) combinations do not take a slot (QPIC masks them to score 0)
    assert V.hoi_index(V.verb_index("eat"), V.object_index("airplane")) < 0
    rows[0] = ("a.jpg", H2, O2, V.object_index("airplane"), V.verb_index("eat"), 0.99)
    rows = [*rows[:100], ("a.jpg", H, OB, HORSE, RIDE, 0.5)]
    p = preds(rows)
    assert ap_of(p, gt, "qpic") == pytest.approx(1.0)
    check_loop(p, gt, "qpic")


def test_cdn_pair_nms_suppresses_overlapping_duplicates_per_class():
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE), (H2, O2, HORSE, RIDE)]))
    near = [11, 11, 110, 210]
    p = preds([("a.jpg", H, OB, HORSE, RIDE, 0.9),
               ("a.jpg", near, OB, HORSE, RIDE, 0.8),  # same class, overlap > 0.7: suppressed
               ("a.jpg", near, OB, HORSE, FEED, 0.85),  # another class: kept
               ("a.jpg", H2, O2, HORSE, RIDE, 0.7)])   # far away: kept
    res = hico_mean_ap(p, gt, protocol="cdn")
    assert res.n_dropped["suppressed by pair-NMS (0.7)"] == 1
    assert res.per_class_ap[RIDE_HORSE] == pytest.approx(1.0)  # qpic: TP, FP, TP
    assert hico_mean_ap(p, gt, protocol="qpic").per_class_ap[RIDE_HORSE] == pytest.approx(1 / 11 * 6 + 2 / 3 / 11 * 5)
    loose = HICOProtocol.preset("cdn").replace(pair_nms=0.99)
    assert hico_mean_ap(p, gt, protocol=loose).n_dropped.get("suppressed by pair-NMS (0.99)") is None
    check_loop(p, gt, "cdn")


def test_means_all_classes_versus_classes_with_ground_truth():
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE)]))
    p = preds([("a.jpg", H, OB, HORSE, RIDE, 0.9)])
    off = hico_mean_ap(p, gt, protocol="official")
    q = hico_mean_ap(p, gt, protocol="qpic")
    assert off.full == pytest.approx(1 / 600)  # fractions in Python
    assert q.full == pytest.approx(1.0)
    assert np.isnan(q.rare) and np.isnan(off.per_class_ap[FEED_HORSE])
    js = off.to_json(model="m", benchmark="b")
    # percent in the JSON; no rare class has ground truth: Rare is undefined (null), not 0
    assert js["full"] == pytest.approx(100 / 600) and js["rare"] is None
    # 11 * (1 / 11) summed in threshold order, as every reference does, is 1 + 2.2e-16
    assert js["per_class_ap"][FEED_HORSE] is None and js["per_class_ap"][RIDE_HORSE] == pytest.approx(1.0)
    assert js["kind"] == "hico_map" and js["n_gt"][RIDE_HORSE] == 1


def test_known_object_uses_image_labels_or_annotated_objects():
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE)]), image("b.jpg", [(H, OB, HORSE, RIDE)]))
    cow = V.object_index("cow")
    ride_cow = int(V.hoi_index(RIDE, cow))
    # a cow detection in image "a" (horse only) and a true one in "b" (which we label with a cow)
    gt_cow = dataset(image("a.jpg", [(H, OB, HORSE, RIDE)]), image("b.jpg", [(H, OB, cow, RIDE)]))
    p = preds([("a.jpg", H, OB, cow, RIDE, 0.9), ("b.jpg", H, OB, cow, RIDE, 0.5)])
    default = hico_mean_ap(p, gt_cow)
    ko = hico_mean_ap(p, gt_cow, known_object=True)
    assert default.per_class_ap[ride_cow] == pytest.approx(0.5)
    assert ko.per_class_ap[ride_cow] == pytest.approx(1.0)
    assert ko.known_object_source == "objects of the annotated pairs"
    labels = {"a.jpg": [HORSE, cow], "b.jpg": [cow]}
    ko2 = hico_mean_ap(p, gt_cow, known_object=True, image_labels=labels)
    assert ko2.per_class_ap[ride_cow] == pytest.approx(0.5)
    assert ko2.known_object_source == "image-level labels"
    with pytest.raises(ValidationError, match="have no labels"):
        hico_mean_ap(p, gt, known_object=True, image_labels={"a.jpg": []})
    with pytest.raises(ConfigError, match="known_object"):
        HICOMeanAP(image_labels=labels)


def test_metric_object_accumulates_caches_and_resets():
    imgs = [image(f"{i}.jpg", [(H, OB, HORSE, RIDE)]) for i in range(4)]
    p = preds([(f"{i}.jpg", H, OB, HORSE, RIDE, 0.9 - i / 10) for i in range(3)]
              + [("0.jpg", H2, O2, HORSE, RIDE, 0.95)])
    whole = hico_mean_ap(p, dataset(*imgs))
    m = HICOMeanAP()
    m.update(p.select(np.isin(p.image_index, [p.index_of("0.jpg"), p.index_of("1.jpg")])), dataset(*imgs[:2]))
    m.update(p.select(np.isin(p.image_index, [p.index_of("2.jpg")])), dataset(*imgs[2:]))
    r = m.compute()
    assert r is m.compute()  # cached
    np.testing.assert_array_equal(np.nan_to_num(r.per_class_ap, nan=-1), np.nan_to_num(whole.per_class_ap, nan=-1))
    with pytest.raises(ValidationError, match="already added"):
        m.update(p, dataset(imgs[0]))
    m.reset()
    with pytest.raises(ValidationError, match="before any update"):
        m.compute()


def test_unknown_images_error_or_lenient_drop():
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE)]))
    p = preds([("a.jpg", H, OB, HORSE, RIDE, 0.9), ("zzz.jpg", H, OB, HORSE, RIDE, 0.8)])
    with pytest.raises(ValidationError, match=r"record 1: file_name: image 'zzz.jpg' is not in the ground truth"):
        hico_mean_ap(p, gt)
    r = hico_mean_ap(p, gt, lenient=True)
    assert r.n_dropped["image not in the ground truth"] == 1
    assert r.per_class_ap[RIDE_HORSE] == pytest.approx(1.0)


def test_protocol_validation():
    with pytest.raises(ConfigError, match=r"protocol must be one of \['cdn', 'official', 'pocket', 'qpic'\]"):
        hico_mean_ap(preds([]), dataset(image("a.jpg", [])), protocol="matlab")
    with pytest.raises(ConfigError, match="recall thresholds"):
        HICOProtocol(recall_thresholds="coco")
    with pytest.raises(ConfigError, match="max_per_image"):
        HICOProtocol(max_per_image=0)


def test_class_subsets(tmp_path):
    subsets, sel = hico_class_subsets("rf-uc")
    assert len(subsets["unseen"]) == 120 and len(subsets["seen"]) == 480
    np.testing.assert_array_equal(sel, V.zero_shot_unseen("rare_first"))
    f = tmp_path / "brights.txt"
    f.write_text("3\n1 # comment\n\n2\n")
    assert hico_class_subsets(str(f))[1].tolist() == [1, 2, 3]
    (tmp_path / "l.json").write_text("[5, 4]")
    assert hico_class_subsets(str(tmp_path / "l.json"))[0]["selected"].tolist() == [4, 5]
    (tmp_path / "bad.txt").write_text("1\n700\n")
    with pytest.raises(FormatError, match=r"bad.txt: record 1: expected a 0-based HOI class id"):
        hico_class_subsets(str(tmp_path / "bad.txt"))
    with pytest.raises(ConfigError, match="--classes must be"):
        hico_class_subsets("nonsense")
    # an SG split directory with a test_combinations.json (the SG engineer's layout)
    split = tmp_path / "split"
    split.mkdir()
    (split / "test_combinations.json").write_text(json.dumps({
        "label_space": "hico-det",
        "combinations": [{"verb_index": RIDE, "object_index": HORSE}, {"verb_index": FEED, "object_index": HORSE}]}))
    subsets, sel = hico_class_subsets(f"unseen:{split}")
    assert sel.tolist() == sorted([RIDE_HORSE, FEED_HORSE])
    assert len(subsets["seen"]) == 598


def test_cli_eval_hico(tmp_path):
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE)]), image("b.jpg", [(H, OB, HORSE, FEED)]))
    from hoibench.formats import write_hicodet

    write_hicodet(gt, tmp_path / "gt.json")
    p = preds([("a.jpg", H, OB, HORSE, RIDE, 0.9), ("b.jpg", H, OB, HORSE, RIDE, 0.8)])
    write_predictions(p, tmp_path / "p.json")
    runner = CliRunner()
    args = ["eval", "hico", "--gt", str(tmp_path / "gt.json"), "--pred", str(tmp_path / "p.json")]
    r = runner.invoke(cli, [*args, "--json", str(tmp_path / "r.json"), "--per-class", str(tmp_path / "c.csv"),
                            "--classes", "rare", "--model", "m", "--matlab-out", str(tmp_path / "d.mat")])
    assert r.exit_code == 0, r.output
    assert "Full" in r.output and "read" in r.output
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["protocol"] == "official" and out["model"] == "m"
    assert out["full"] == pytest.approx(100 * (1.0 + 0.0) / 600)
    assert out["per_class_ap"][RIDE_HORSE] == pytest.approx(1.0) and out["per_class_ap"][FEED_HORSE] == 0.0
    assert "rare" in out["subsets"]
    assert (tmp_path / "d.mat").stat().st_size > 0
    lines = (tmp_path / "c.csv").read_text().splitlines()
    assert lines[0].startswith("hoi,name,n_gt") and len(lines) == 601
    r = runner.invoke(cli, [*args, "--protocol", "qpic", "--pair-nms", "0.7", "--json", "-"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["protocol"] == "qpic+pair-nms"
    r = runner.invoke(cli, [*args, "--protocol", "qpic", "--known-object", "--json", "-"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["full"] == pytest.approx(50.0)
    r = runner.invoke(cli, [*args, "--image-labels", str(tmp_path / "p.json")])
    assert r.exit_code != 0 and "--known-object" in str(r.exception)


def test_read_image_labels_from_anno_mat_and_json(tmp_path):
    from scipy.io import savemat

    from hoibench.formats import read_image_labels

    names = np.array(["a.jpg", "b.jpg"], dtype=object).reshape(-1, 1)
    anno = np.full((600, 2), np.nan)
    anno[RIDE_HORSE, 0] = 1  # positive: the image has a horse
    anno[V.hoi_index(RIDE, V.object_index("cow")), 1] = 0  # ambiguous: no object from it
    anno[V.hoi_index(RIDE, V.object_index("bicycle")), 1] = -1  # negative
    savemat(tmp_path / "anno.mat", {"list_test": names, "anno_test": anno})
    labels = read_image_labels(tmp_path / "anno.mat")
    assert labels == {"a.jpg": frozenset({HORSE}), "b.jpg": frozenset()}
    with pytest.raises(FormatError, match="missing variable 'list_train'"):
        read_image_labels(tmp_path / "anno.mat", split="train")
    (tmp_path / "l.json").write_text(json.dumps({"a.jpg": ["horse", 3], "b.jpg": []}))
    assert read_image_labels(tmp_path / "l.json")["a.jpg"] == frozenset({HORSE, 3})
    (tmp_path / "bad.json").write_text(json.dumps({"a.jpg": ["unicorn"]}))
    with pytest.raises(FormatError, match=r"bad.json: record a.jpg: \[0\]: unknown object 'unicorn'"):
        read_image_labels(tmp_path / "bad.json")


def test_tied_scores_rank_by_ground_truth_image_then_file_order():
    # MATLAB's stable sort over per-image lists: ties go to the earlier ground-truth image, even
    # when the prediction file lists images in another order and has filtered detections
    gt = dataset(image("a.jpg", [(H, OB, HORSE, RIDE)]), image("b.jpg", [(H, OB, HORSE, RIDE)]))
    eat = V.verb_index("eat")
    airplane = V.object_index("airplane")
    rows = [("b.jpg", H2, O2, HORSE, RIDE, 0.5)] + [("b.jpg", H2, O2, airplane, eat, 0.5)] * 5
    rows += [("a.jpg", H, OB, HORSE, RIDE, 0.5)]
    p = preds(rows)
    m = match_hico_detections(p, gt)
    _, tp = m.for_class(RIDE_HORSE)
    assert tp.tolist() == [True, False]  # a.jpg's TP ranks first although b.jpg comes first in the file
    assert m.image_index.tolist() == [0, 1]
    check_loop(p, gt, "official")


def test_fast_orderings_equal_the_argsorts_they_replace() -> None:
    """The metric's orderings (a radix sort of the scores' bits, runs of one image sorted as runs,
    a 16-bit radix sort by class over a given order) are the argsorts they replace, exactly:
    ties, NaN, -0.0, repeated images, positions out of order, groups past 16 bits."""
    from hoibench.evaluation._hico_map import _order_by_image, _stable_argsort_descending, _then_by

    rng = np.random.default_rng(0)
    for trial in range(400):
        n = int(rng.integers(0, 300))
        v = rng.integers(0, 5, n).astype(float) / 4
        if trial % 3 == 0:
            v[rng.random(n) < 0.2] = np.nan
        if trial % 5 == 0:
            v[rng.random(n) < 0.2] = -0.0
        if trial % 7 == 0:
            v = rng.random(n)
        if trial % 11 == 0:  # float32 values of either sign and every magnitude: the 32-bit key
            v = (rng.standard_normal(n) * 10.0 ** rng.integers(-40, 39, n)).astype(np.float32).astype(float)
        if trial % 13 == 0:  # doubles of every magnitude, infinities, a float32 tie among them: the 64-bit key
            v = rng.standard_normal(n) * 10.0 ** rng.integers(-310, 300, n)
            v[rng.random(n) < 0.1] = np.inf
            v[rng.random(n) < 0.1] = -np.inf
            v[rng.random(n) < 0.1] = 0.5
        if trial % 17 == 0:
            v[rng.random(n) < 0.3] = np.float64(np.float32(0.1))
            v[rng.random(n) < 0.1] = np.nan
        np.testing.assert_array_equal(_stable_argsort_descending(v), np.argsort(-v, kind="stable"))
        image = rng.integers(0, 6, n)
        if trial % 2:
            image = np.sort(image)  # runs of one image, as files list them
        pos = np.cumsum(rng.integers(1, 3, n)) if trial % 4 else rng.permutation(n)
        np.testing.assert_array_equal(_order_by_image(image, pos),
                                      np.argsort(image * (int(pos.max(initial=0)) + 1) + pos))
        order = rng.permutation(n)
        group = rng.integers(0, 70_000 if trial % 2 else 50, n)
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        np.testing.assert_array_equal(_then_by(order, group, 70_000 if trial % 2 else 50),
                                      np.argsort(group * max(n, 1) + rank))
