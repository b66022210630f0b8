"""Each report section says in one sentence why a striking value is what it is, from what the
result files record: a model without a detection of the classes an mAP averages (an SG split's
unseen combinations), an undefined mean (n/a), classes without ground truth counted as AP 0, a
tied ranking, V-COCO actions without positives — built data, read back from JSON."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from hoibench.data import (
    HOIDataset,
    HOIImage,
    HOIPredictions,
    vcoco_action_names,
    vcoco_role_classes,
)
from hoibench.datasets import hico_class_subsets
from hoibench.evaluation import ClassesWithoutGroundTruthWarning, hico_mean_ap
from hoibench.reports import build_report
from hoibench.results import ResultRecord, hico_map_record
from hoibench.vocab import hico_det

V = hico_det()
HORSE, BICYCLE = V.object_index("horse"), V.object_index("bicycle")
RIDE, FEED = V.verb_index("ride"), V.verb_index("feed")
UNSEEN = [(RIDE, HORSE), (FEED, HORSE)]
H, OB, FAR = [10.0, 10.0, 109.0, 209.0], [150.0, 50.0, 249.0, 149.0], [400.0, 300.0, 480.0, 380.0]


def _gt(combos: list[tuple[int, int]]) -> HOIDataset:
    images = [HOIImage.from_lists(f"{i}.jpg", [H, OB], [V.person, o], [[0, 1, v]], width=640, height=480)
              for i, (v, o) in enumerate(combos * 2)]
    return HOIDataset.from_images(V, images, name="test")


def _preds(gt: HOIDataset, kind: str) -> HOIPredictions:
    """``hit``: each pair found; ``seen-only``: only ride bicycle (a combination seen in training);
    ``miss``: the right classes in the wrong place."""
    files, bh, bo, obj, verb = [], [], [], [], []
    for i, f in enumerate(gt.file_names):
        p = int(gt.pair_offsets[i])
        files.append(f)
        v, o = int(gt.pair_verb[p]), int(gt.box_labels[gt.pair_object[p]])
        if kind == "seen-only":
            v, o = RIDE, BICYCLE
        bh.append(FAR if kind == "miss" else H)
        bo.append(FAR if kind == "miss" else OB)
        obj.append(o)
        verb.append(v)
    return HOIPredictions.from_arrays(V, files, [1] * len(files), np.array(bh), np.array(bo), obj, verb,
                                      np.linspace(0.9, 0.5, len(files)))


def _result(gt: HOIDataset, kind: str, model: str, bench: str, spec: str | None = None,
            protocol: str = "official") -> ResultRecord:
    """What `hoibench eval hico --json` writes, read back from its JSON (the report sees files)."""
    subsets, classes = hico_class_subsets(spec) if spec else ({}, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassesWithoutGroundTruthWarning)
        res = hico_mean_ap(_preds(gt, kind), gt, protocol=protocol, class_subsets=subsets, classes=classes)
    rec = hico_map_record(res, model=model, benchmark=bench, classes_spec=spec, class_subsets=subsets)
    return ResultRecord.from_json(json.loads(json.dumps(rec.to_json())))


@pytest.fixture()
def sg_dir(tmp_path):
    d = tmp_path / "sg"
    d.mkdir()
    (d / "test_combinations.json").write_text(json.dumps({
        "label_space": "hico-det", "combinations": [{"verb_index": v, "object_index": o} for v, o in UNSEEN]}))
    return f"unseen:{d}"


def _section(report, title: str) -> str:
    return next(s.text for s in report.sections if s.title == title)


def test_map_section_says_why_sg_rows_are_zero_and_seen_is_na(sg_dir):
    sg = _gt(UNSEEN)
    recs = [_result(sg, "seen-only", m, "my-sg", sg_dir) for m in ("prior-a", "prior-b")]
    recs.append(_result(sg, "miss", "misplaced", "my-sg", sg_dir))
    recs.append(_result(sg, "hit", "oracle", "my-sg", sg_dir))
    text = _section(build_report(recs), "HOI detection mAP")
    assert ("On my-sg, prior-a and prior-b score 0.00 on full, non-rare and unseen because they make no "
            "detection of any of their classes with ground truth: an SG split's unseen combinations have no "
            "train instance by design") in text
    assert ("On my-sg, misplaced scores 0.00 on full, non-rare and unseen because none of its detections of "
            "their classes matches a ground-truth pair") in text
    assert "oracle" not in text  # nothing striking about it
    assert "On my-sg, rare and seen are n/a because none of their classes has ground truth" in text
    assert ("On my-sg, full counts the 598 of 600 classes without ground truth in the test set as AP 0 "
            "(official protocol") in text


def test_no_reason_where_nothing_is_striking_and_qpic_counts_no_zeros(sg_dir):
    sg = _gt(UNSEEN)
    text = _section(build_report([_result(sg, "hit", "oracle", "my-sg", sg_dir, protocol="qpic")]),
                    "HOI detection mAP")
    assert "counts the" not in text and "0.00" not in text
    assert "rare and seen are n/a because none of their classes has ground truth" in text  # under qpic too


def test_a_zero_that_is_not_an_unseen_headline_is_not_blamed_on_a_split():
    gt = _gt([(FEED, HORSE)])
    text = _section(build_report([_result(gt, "seen-only", "prior", "plain")]), "HOI detection mAP")
    assert ("On plain, prior scores 0.00 on full and non-rare because it makes no detection of any of their "
            "classes with ground truth.") in text
    assert "by design" not in text


def test_tied_rankings_and_vcoco_actions_without_positives_are_explained(sg_dir):
    sg, full = _gt(UNSEEN), _gt([(RIDE, BICYCLE), (FEED, HORSE)])
    recs = [_result(sg, "seen-only", m, "my-sg", sg_dir) for m in ("prior-a", "prior-b")]
    recs += [_result(full, "hit", "prior-a", "orig"), _result(full, "miss", "prior-b", "orig")]
    report = build_report(recs, reference_benchmark="orig")
    text = _section(report, "Class-AP distribution and ranking shifts")
    assert "On my-sg all 2 models score 0.00, so they share one rank" in text
    roles = list(vcoco_role_classes())
    n_pos = [3] * 26
    n_pos[0] = 0
    vc = {"kind": "vcoco_role_ap", "model": "m", "benchmark": "v-coco-part", "iou_threshold": 0.5,
          "complete_ground_truth": True, "n_images": 10, "action_names": list(vcoco_action_names()),
          "agent_ap": [None] + [0.5] * 25, "n_pos": n_pos, "role_class_names": roles,
          "role_ap": {"scenario_1": [0.5] * len(roles)}}
    text = _section(build_report([ResultRecord.from_json(vc)]), "V-COCO role AP")
    assert (f"On v-coco-part, 1 of 26 actions ({vcoco_action_names()[0]}) have no positives in the ground "
            "truth: their AP is n/a and every mean leaves them out") in text


def test_demo_console_summary_says_why_a_headline_is_zero(sg_dir, capsys):
    """The demo's console table names each benchmark's headline and prints the report's reasons."""
    from hoibench.cli.demo import _summary

    sg = _gt(UNSEEN)
    _summary([_result(sg, "seen-only", "prior", "my-sg", sg_dir)])
    err = capsys.readouterr().err
    assert "my-sg (unseen)" in err
    assert "On my-sg, prior scores 0.00" in err and "unseen combinations have no train instance" in err


def _mcq_record(model: str, n_empty: int, *, se: float | None = None) -> ResultRecord:
    from hoibench.evaluation import MCQ_METRIC_NAMES, MCQResult

    res = MCQResult(*(0.0 if n_empty == 100 else 0.5 for _ in MCQ_METRIC_NAMES), protocol="paper",
                    zero_division=1.0, n_questions=100, n_images=50, n_classes=3, n_answered=100,
                    n_missing=0, n_empty=n_empty, n_out_of_choice=0, n_unknown_answers=0,
                    se=None if se is None else {"macro_f1": se}, ci_method=None if se is None else {"macro_f1": "se"})
    return ResultRecord(res, model, "q.jsonl", {"setting": 3})


def test_mcq_section_says_why_a_model_scores_zero_and_shows_the_se():
    recs = [_mcq_record("lost", 100, se=0.0), _mcq_record("fine", 2, se=0.012)]
    report = build_report(recs)
    text = _section(report, "Multiple-choice HOI recognition")
    assert "lost selected no choice in 100 of 100 questions" in text and "setting 3" in text
    assert "fine selected" not in text  # 2% empty: nothing striking
    summary = next(t for s in report.sections for t in s.tables if t.name == "mcq-summary")
    row = next(r for r in summary.rows if r[0] == "fine")
    assert row[2] == "50.0 ± 1.2 SE"  # macro-F1 carries its SE where it has no interval
