"""The one results model (hoibench.results): every kind's JSON round trip through a file, files
written before the refactor still read, one-line errors naming the field, the unit rule
(fractions in Python, percent where the JSON says so), and the assembly the CLI and demo share."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from hoibench import ConfigError, FormatError
from hoibench.analysis import hico_map_bootstrap
from hoibench.datasets import load_dataset
from hoibench.evaluation import (
    MCQ_METRIC_NAMES,
    SCHEMA_VERSION,
    ClassRecall,
    HICOMapResult,
    HICOMatches,
    MCQResult,
    VCOCOResult,
    hico_mean_ap,
    match_hico_detections,
    mcq_class_recall,
    mcq_metrics,
    vcoco_role_ap,
)
from hoibench.evaluation._fields import from_percent, to_percent
from hoibench.results import (
    KINDS,
    BenchmarkStats,
    ResultRecord,
    hico_headline,
    hico_map_record,
    mcq_record,
    read_result,
    read_results,
    result_from_json,
    write_record,
    write_result,
)
from hoibench.testing import noisy_predictions
from tests.test_eval_vcoco import CUP, P0, P1, dets_of, gt_of

OLD = Path(__file__).resolve().parent / "fixtures" / "results_v0"


# ----------------------------------------------------------------------------- results to round-trip
@pytest.fixture(scope="module")
def hico() -> tuple[object, object]:
    gt = load_dataset("hico-det:test").subset(np.arange(120))
    return gt, noisy_predictions(gt, seed=2, per_image=(10, 30))


@pytest.fixture(scope="module")
def mcq() -> tuple[list, list]:
    from hoibench.benchmarks.mcq import build_mcq_benchmark
    from hoibench.runners import RandomAnswerer

    qs = list(build_mcq_benchmark(load_dataset("hico-det:test").subset(np.arange(150)), random_state=0).questions)
    return qs, RandomAnswerer(random_state=0).answer(qs)


def _hico_map(hico) -> HICOMapResult:
    gt, preds = hico
    subsets = {"rare": gt.vocab.rare_classes(), "odd": np.arange(1, 600, 2)}
    res = hico_mean_ap(preds, gt, class_subsets=subsets, classes=subsets["odd"])
    boot = hico_map_bootstrap(preds, gt, class_subsets=subsets, n_resamples=20, random_state=1, method="basic")
    return dataclasses.replace(res, headline="odd", ci=boot.to_ci())


def _vcoco() -> VCOCOResult:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {"obj": CUP}, "stand": {}}}]),
               (2, [{"box": P0, "actions": {"hold": {"obj": CUP}}}]))
    det = dets_of({"box": P0, "agent": {"hold": 0.9, "stand": 0.4}, "roles": {"hold_obj": (CUP, 0.9)}},
                  {"image": 2, "box": P1, "agent": {"hold": 0.8}, "roles": {"hold_obj": (CUP, 0.7)}})
    return vcoco_role_ap(det, gt)


def _results(hico, mcq) -> dict[str, object]:
    qs, answers = mcq
    gt, preds = hico
    return {
        "hico_map": _hico_map(hico),
        "vcoco_role_ap": _vcoco(),
        "mcq_metrics": mcq_metrics(answers, qs, n_bootstrap=30, random_state=0),
        "class_recall": mcq_class_recall(answers, qs, train_counts=gt.vocab.train_counts_official(),
                                         class_names=[gt.vocab.hoi_name(h) for h in range(600)]),
        "hoi_matches": match_hico_detections(preds, gt, protocol="qpic"),
        "benchmark_stats": BenchmarkStats("toy", ({"split": "train", "images": 3}, {"split": "test", "images": 1})),
    }


def test_every_kind_has_a_type_and_the_registry_is_the_only_list():
    written = {t.kind for t in set(KINDS.values())}
    assert written == {"hico_map", "vcoco_role_ap", "mcq_metrics", "class_recall", "hoi_matches",
                       "benchmark_stats"}
    assert all(KINDS[k] is t for t in set(KINDS.values()) for k in [t.kind])
    assert set(KINDS) - written == {"sg_stats", "balanced_stats"}  # read only, as benchmark_stats


@pytest.mark.parametrize("kind", ["hico_map", "vcoco_role_ap", "mcq_metrics", "class_recall", "hoi_matches",
                                  "benchmark_stats"])
def test_round_trip_through_a_file(kind, hico, mcq, tmp_path):
    result = _results(hico, mcq)[kind]
    rec = write_result(result, tmp_path / f"{kind}.json", model="m", benchmark="b", note={"by": "test"})
    assert rec.source == str(tmp_path / f"{kind}.json")
    d = json.loads((tmp_path / f"{kind}.json").read_text())
    assert d["kind"] == kind and d["version"] == SCHEMA_VERSION and d["model"] == "m" and d["note"] == {"by": "test"}
    back = read_result(tmp_path / f"{kind}.json")
    assert type(back.result) is type(result) and back.kind == kind
    assert (back.model, back.benchmark, dict(back.extra)) == ("m", "b", {"note": {"by": "test"}})
    assert back.to_json() == rec.to_json()  # every key and every digit of the file
    again = write_record(back, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / f"{kind}.json").read_bytes()
    assert again.source == str(tmp_path / "again.json")


def test_round_trip_keeps_the_typed_values(hico, mcq, tmp_path):
    res = _results(hico, mcq)
    h = result_from_json(json.loads(json.dumps(res["hico_map"].to_json())))
    ref = res["hico_map"]
    # through percent the fractions may move by an ulp; the percent of the file never does
    assert h.full == pytest.approx(ref.full, rel=1e-15) and to_percent(h.full) == to_percent(ref.full)
    assert h.subsets == pytest.approx(ref.subsets, rel=1e-15) and h.headline == "odd"
    assert h.protocol == ref.protocol and h.headline_map == pytest.approx(ref.subsets["odd"], rel=1e-15)
    np.testing.assert_array_equal(h.per_class_ap, ref.per_class_ap)
    np.testing.assert_array_equal(h.classes, ref.classes)
    assert h.ci.intervals["full"] == pytest.approx(ref.ci.intervals["full"], rel=1e-15)
    assert h.ci.n_resamples == 20 and h.ci.seed == 1 and h.ci.method == "basic"
    m = result_from_json(json.loads(json.dumps(res["hoi_matches"].to_json())))
    for f in ("class_offsets", "scores", "tp", "det_index", "image_index", "gt_pair", "n_gt"):
        np.testing.assert_array_equal(getattr(m, f), getattr(res["hoi_matches"], f), err_msg=f)
    assert m.protocol.name == "qpic" and m.protocol.recall_thresholds == "arange"
    np.testing.assert_array_equal(m.average_precision(), res["hoi_matches"].average_precision())
    v = result_from_json(json.loads(json.dumps(res["vcoco_role_ap"].to_json())))
    assert v.role_map(1) == res["vcoco_role_ap"].role_map(1) and v.scenarios == (1, 2)
    q = result_from_json(json.loads(json.dumps(res["mcq_metrics"].to_json())))
    assert q.metrics() == res["mcq_metrics"].metrics() and q.ci == res["mcq_metrics"].ci
    assert list(q.per_class) == list(res["mcq_metrics"].per_class) and len(q.per_class) > 100
    for name, row in res["mcq_metrics"].per_class.items():
        assert q.per_class[name] == pytest.approx(dict(row), nan_ok=True), name


# ----------------------------------------------------------------------------- units
def test_fractions_in_python_percent_in_the_json(hico):
    gt, preds = hico
    res = hico_mean_ap(preds, gt, class_subsets={"rare": gt.vocab.rare_classes()})
    ap = np.nan_to_num(res.per_class_ap, nan=0.0)
    assert 0 < res.full < 1 and res.full == pytest.approx(ap.mean())  # official: mean over all 600
    assert res.rare == pytest.approx(ap[gt.vocab.rare_classes()].mean())
    d = res.to_json()
    assert d["full"] == res.full * 100 and d["rare"] == res.rare * 100 and d["subsets"]["rare"] == d["rare"]
    assert max(x for x in d["per_class_ap"] if x is not None) <= 1 + 1e-9  # per-class AP stays a fraction
    v = _vcoco().to_json()
    assert v["agent_map"] == 100 * _vcoco().agent_map and v["scenario_1"]["role_map_24"] == 100 * _vcoco().role_map(1)
    assert all(x is None or x <= 1 for x in v["agent_ap"])


@pytest.mark.parametrize("p", [30.0, 0.1, 19.627047504048374, 100.0, 0.0, 1e-300, 12.137060786248997])
def test_percent_conversion_keeps_every_digit(p):
    assert to_percent(from_percent(p)) == p


def test_bootstrap_intervals_are_fractions_until_the_json(hico):
    gt, preds = hico
    boot = hico_map_bootstrap(preds, gt, n_resamples=20, random_state=0, method="percentile")
    ref = hico_mean_ap(preds, gt)
    assert boot.estimate[0] == pytest.approx(ref.full, abs=1e-15)
    ci = boot.to_ci()
    lo, hi = ci.intervals["full"]
    assert 0 < lo < hi < 1
    assert ci.to_json()["full"] == [100 * lo, 100 * hi]
    se = hico_map_bootstrap(preds, gt, n_resamples=20, random_state=0).to_ci()  # the default: SE only
    assert se.intervals == {} and 0 < se.se["full"] < 1 and se.to_json()["se"]["full"] == 100 * se.se["full"]


# ----------------------------------------------------------------------------- old files
def test_files_written_before_the_refactor_still_read():
    recs = {p.name.split(".")[0]: read_result(p) for p in sorted(OLD.iterdir()) if "without_kind" not in p.name}
    h = recs["hico_map_eval_bootstrap"]
    assert h.kind == "hico_map" and h.benchmark == "hico-det:test" and h.extra == {"prediction_format": "hoibench"}
    assert h.result.protocol.name == "qpic" and h.result.protocol.max_per_image == 100
    assert h.result.full == pytest.approx(0.19144902897085476) and h.result.ci.n_resamples == 50
    assert h.result.ci.intervals["full"] == pytest.approx((0.17143077113997805, 0.1796318736073745))
    assert h.model == "hico_map_eval_bootstrap"  # written with --model "": named after its file
    sg = recs["hico_map_demo_sg"]
    assert sg.result.headline == "unseen" and sg.result.headline_map == 0.0
    assert sg.model == "object-prior" and set(sg.extra) == {"evaluate_by_hand"}
    v = recs["vcoco_role_ap"].result
    assert v.n_detections_agent is None and v.role_map(1) == pytest.approx(0.08396910647085559)
    m = recs["mcq_metrics_demo"]
    assert m.result.macro_f1 == pytest.approx(0.46679471478814627) and m.result.ci["macro_f1"][0] < 0.4668
    c = recs["class_recall_demo"].result
    assert c.classes is None and len(c.recall) == len(c.train_counts) == len(c.class_names) == 587
    assert recs["sg_stats"].result.rows[1] == {"data split": "hico-det-sg1", "part": "test", "images": 8508,
                                               "triplets": 14454, "combinations": 60}
    assert recs["balanced_stats"].result.name == "B-RIGHT (top 351, seed 1)"


def test_old_files_keep_their_numbers_when_written_again(tmp_path):
    for p in sorted(OLD.iterdir()):
        if "without_kind" in p.name or "stats" in p.name:
            continue
        old = read_result(p)
        new = json.loads(json.dumps(old.to_json()))
        raw = json.loads(gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_text())
        for key in set(raw) - {"model", "ci"}:
            assert new[key] == raw[key], (p.name, key)  # percent stays percent, digit for digit


def test_a_file_without_kind_is_a_clear_error_and_its_type_still_reads_it(tmp_path):
    p = OLD / "mcq_score_without_kind.json"
    with pytest.raises(FormatError) as exc:
        read_results([p])
    msg = str(exc.value)
    assert msg.startswith(f"{p}: kind: missing") and '"kind": "mcq_metrics"' in msg and "\n" not in msg
    r = MCQResult.from_json(json.loads(p.read_text()), file=p)  # the caller knows the type
    assert r.n_questions == 2112 and r.macro_f1 == pytest.approx(0.1597002650090963)


# ----------------------------------------------------------------------------- bad fields
HICO_OK = {"kind": "hico_map", "model": "m", "benchmark": "b", "full": 20.0, "rare": 10.0,
           "non_rare": 22.0, "subsets": {"unseen": 5.0}, "per_class_ap": [None, 0.5, 0.25],
           "n_gt": [0, 2, 1], "class_names": ["a", "b", "c"], "classes": [1, 2]}
VCOCO_OK = _vcoco().to_json()
MCQ_OK = {"kind": "mcq_metrics", **{k: 0.5 for k in MCQ_METRIC_NAMES}, "ci": {"macro_f1": [0.4, 0.6]}}
RECALL_OK = {"kind": "class_recall", "train_counts": [10, 5], "recall": [0.5, None], "class_names": ["a", "b"]}
MATCHES_OK = {"kind": "hoi_matches", "n_gt": [1, 2], "hoi": [0, 1], "score": [0.5, 0.4], "tp": [True, False]}


@pytest.mark.parametrize(("base", "patch", "field"), [
    (HICO_OK, {"full": "high"}, "full"),
    (HICO_OK, {"full": 120.0}, "full"),
    (HICO_OK, {"full": None}, "full"),
    (HICO_OK, {"rare": [1]}, "rare"),
    (HICO_OK, {"subsets": {"unseen": "x"}}, "subsets.unseen"),
    (HICO_OK, {"per_class_ap": [0.5, 1.5, None]}, "per_class_ap"),
    (HICO_OK, {"n_gt": [1, 2]}, "n_gt"),
    (HICO_OK, {"n_gt": [1, -2, 0]}, "n_gt"),
    (HICO_OK, {"class_names": ["a", 1, "c"]}, "class_names"),
    (HICO_OK, {"classes": [5]}, "classes"),
    (HICO_OK, {"headline": "seen"}, "headline"),
    (HICO_OK, {"protocol": "matlab"}, "protocol"),
    (HICO_OK, {"protocol_options": {"iou": "square"}}, "protocol_options"),
    (HICO_OK, {"dropped": {"x": -1}}, "dropped.x"),
    (HICO_OK, {"ci": {"full": [30.0, 10.0]}}, "ci.full"),
    (HICO_OK, {"ci": {"full": [10.0, 30.0], "bias": {"full": "x"}}}, "ci.bias.full"),
    (HICO_OK, {"model": 3}, "model"),
    (HICO_OK, {"version": 99}, "version"),
    (HICO_OK, {"kind": "hico-map"}, "kind"),
    (VCOCO_OK, {"agent_ap": [0.5]}, "agent_ap"),
    (VCOCO_OK, {"role_ap": {"scenario_3": []}}, "role_ap.scenario_3"),
    (VCOCO_OK, {"n_images": -1}, "n_images"),
    (VCOCO_OK, {"iou_threshold": None}, "iou_threshold"),
    (MCQ_OK, {"macro_f1": 40.0}, "macro_f1"),
    (MCQ_OK, {"ci": {"macro_f1": [0.6, 0.4]}}, "ci.macro_f1"),
    (MCQ_OK, {"ci": {"f2": [0.4, 0.6]}}, "ci.f2"),
    (MCQ_OK, {"n_questions": 1.5}, "n_questions"),
    (MCQ_OK, {"protocol": "exam"}, "protocol"),
    (RECALL_OK, {"recall": [0.5]}, "recall"),
    (RECALL_OK, {"recall": [1.5, None]}, "recall"),
    (RECALL_OK, {"train_counts": None}, "train_counts"),
    (MATCHES_OK, {"hoi": [0, 5]}, "hoi"),
    (MATCHES_OK, {"score": [0.1]}, "score"),
    (MATCHES_OK, {"tp": [True, "yes"]}, "tp"),
    (MATCHES_OK, {"tp": [True, True], "n_gt": [1, 0]}, "tp"),
    (MATCHES_OK, {"det_index": [0]}, "det_index"),
    ({"kind": "sg_stats", "table1": {"images": {"train": "1"}}}, {}, "table1.images"),
    ({"kind": "balanced_stats", "sets": {"train": 3}}, {}, "sets.train"),
    ({"kind": "benchmark_stats", "rows": [1]}, {}, "rows"),
])
def test_each_bad_field_is_one_line_naming_file_record_and_field(tmp_path, base, patch, field):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(base))
    if base is not VCOCO_OK and "stats" not in base["kind"]:
        read_results([good])  # the unpatched object reads
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(MCQ_OK) + "\n" + json.dumps({**base, **patch}) + "\n")
    with pytest.raises(FormatError) as exc:
        read_results([p])
    msg = str(exc.value)
    assert msg.startswith(f"{p}: record 1: {field}: "), msg
    assert "\n" not in msg and exc.value.field == field and exc.value.record == 1


def test_files_hold_an_object_a_list_or_json_lines(tmp_path):
    a = tmp_path / "many.json"
    a.write_text(json.dumps([HICO_OK, MCQ_OK]))
    b = tmp_path / "lines.jsonl"
    b.write_text(json.dumps(RECALL_OK) + "\n\n" + "{broken\n")
    with pytest.raises(FormatError, match=r"lines.jsonl: record 2: not valid JSON"):
        read_results([a, b])
    b.write_text(json.dumps(RECALL_OK) + "\n")
    assert [r.kind for r in read_results([a, b])] == ["hico_map", "mcq_metrics", "class_recall"]
    assert read_results(b)[0].model == "lines"  # no model in the file: its name
    with pytest.raises(FormatError, match="expected one result, found 2"):
        read_result(a)
    c = tmp_path / "scalar.json"
    c.write_text("3")
    with pytest.raises(FormatError, match=r"scalar\.json: expected a JSON object, got int"):
        read_results([c])


def test_records_keep_extra_keys_and_refuse_clashes():
    r = ResultRecord.from_json({**MCQ_OK, "answers_file": "a.jsonl", "model": "x"})
    assert r.extra == {"answers_file": "a.jsonl"} and r.model == "x" and r.benchmark == "benchmark"
    with pytest.raises(ConfigError, match="extra keys"):
        ResultRecord(r.result, "x", "y", {"macro_f1": 1})
    with pytest.raises(ConfigError, match="not a result type"):
        ResultRecord({"macro_f1": 0.5}, "x", "y")


def test_published_numbers_need_only_the_headline():
    h = result_from_json({"kind": "hico_map", "full": 36.56})
    assert h.full == pytest.approx(0.3656) and math.isnan(h.rare) and h.per_class_ap is None
    assert h.protocol.name == "official" and len(h.class_ap()) == 0
    q = result_from_json({"kind": "mcq_metrics", "macro_f1": 0.4})
    assert q.macro_f1 == 0.4 and math.isnan(q.exact_match) and q.n_questions is None
    with pytest.raises(FormatError, match="no metric among"):
        result_from_json({"kind": "mcq_metrics"}, file="x.json")


# ----------------------------------------------------------------------------- assembly
def test_hico_headline_follows_the_classes_spec():
    assert hico_headline(None, {}) == "full"
    assert hico_headline("unseen:/some/split", {"unseen": 1, "seen": 2}) == "unseen"
    assert hico_headline("ids.json", {"selected": 1}) == "selected"
    assert hico_headline("rare", {"rare": 1}) == "full"
    assert hico_headline("rf-uc", {"unseen": 1, "seen": 2}) == "full"


def test_hico_map_record_adds_every_dropped_detection_and_the_interval(hico):
    gt, preds = hico
    res = dataclasses.replace(hico_mean_ap(preds, gt, protocol="qpic"), n_dropped={"unknown image": 3})
    boot = hico_map_bootstrap(preds, gt, protocol="qpic", n_resamples=10, random_state=0, method="basic")
    rec = hico_map_record(res, model="m", benchmark="b", dropped={"NaN box": 2, "unknown image": 1},
                          ci=boot.to_ci(), prediction_format="hoibench")
    assert list(rec.result.n_dropped.items()) == [("NaN box", 2), ("unknown image", 4)]  # reader's first
    assert rec.result.headline_ci == boot.to_ci().intervals["full"]
    assert rec.to_json()["prediction_format"] == "hoibench" and res.ci is None  # the input is untouched


def test_mcq_record_with_several_orders_has_their_spread(mcq):
    qs, answers = mcq
    from hoibench.runners import RandomAnswerer

    other = RandomAnswerer(random_state=7).answer(qs)
    a, b = mcq_metrics(answers, qs), mcq_metrics(other, qs)
    rec = mcq_record([("order 0", a), ("order 1", b)], model="r", benchmark="q", answers_file="x")
    d = rec.to_json()
    assert list(d)[-3:] == ["permutations", "position_sensitivity", "answers_file"]
    assert d["permutations"]["order 1"] == b.metrics()
    assert d["position_sensitivity"]["macro_f1"] == pytest.approx(abs(a.macro_f1 - b.macro_f1) / 2)
    assert "per_class" not in d and rec.result.macro_f1 == a.macro_f1
    assert "per_class" in mcq_record([("o", a)], per_class=True).to_json()
    with pytest.raises(ConfigError):
        mcq_record([])


def test_class_recall_counts_correct_choices(mcq):
    qs, answers = mcq
    counts = np.arange(600, dtype=float)
    r = mcq_class_recall(answers, qs, train_counts=counts)
    by_id = {a.question_id: a for a in answers}
    h = int(r.classes[0])
    gt = sum(1 for q in qs for i in q.correct if q.choices[i].hoi == h)
    tp = sum(1 for q in qs for i in q.correct if q.choices[i].hoi == h and q.choices[i].text in by_id[q.id].selected)
    assert (r.n_gt[0], r.n_tp[0], r.recall[0], r.train_counts[0]) == (gt, tp, tp / gt, float(h))
    assert isinstance(r, ClassRecall) and np.all(np.diff(r.classes) > 0)
    with pytest.raises(ConfigError, match="outside the train counts"):
        mcq_class_recall(answers, qs, train_counts=counts[:3])


def test_hoi_matches_of_another_tool_are_ranked_per_class_by_score():
    m = HICOMatches.from_json({"kind": "hoi_matches", "n_gt": [2, 1], "hoi": [1, 0, 0], "score": [0.3, 0.2, 0.9],
                               "tp": [True, False, True]})
    assert m.class_offsets.tolist() == [0, 2, 3] and m.scores.tolist() == [0.9, 0.2, 0.3]
    assert m.tp.tolist() == [True, False, True] and m.det_index.tolist() == [-1, -1, -1]
    assert m.protocol.name == "official"


def test_reprs_name_the_numbers_not_the_arrays(hico, mcq):
    res = _results(hico, mcq)
    text = repr(res["hico_map"])
    assert text.startswith(f"HICOMapResult(full={res['hico_map'].full:.4f}, ") and "600 classes, with ci" in text
    assert repr(res["class_recall"]) == (f"ClassRecall(n_classes={len(res['class_recall'].recall)}, "
                                         f"mean_recall={np.nanmean(res['class_recall'].recall):.4f})")


def test_ground_truth_id_names_files_by_content_and_refuses_what_is_neither(tmp_path):
    from hoibench.datasets import ground_truth_id

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    assert ground_truth_id(a) == ground_truth_id(b)  # by content, not by name
    assert ground_truth_id(a).startswith("sha256:")
    b.write_text("[]")
    assert ground_truth_id(a) != ground_truth_id(b)
    assert ground_truth_id(a, b) != ground_truth_id(b, a)  # several files: in order
    # aliases and case resolved, so one dataset has one id
    assert ground_truth_id("HICO:test") == ground_truth_id("hico-det:test") == "dataset:hico-det:test"
    for bad in (tmp_path / "missing.json", tmp_path, "hico-det:val"):
        with pytest.raises((FormatError, ConfigError)):
            ground_truth_id(bad)
