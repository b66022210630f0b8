"""V-COCO agent/role AP on hand-made cases with answers worked out by hand.

Each case isolates one rule of ``vsrl_eval.py`` (see the docstring of
``hoibench.evaluation._vcoco``): empty roles under scenarios 1 and 2, people outside V-COCO,
the first-arg-max person even at IoU 0, duplicates, positives without role objects, NaN scores
and role boxes, classes without positives or detections, ties, batching and bad input.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.data import VCOCODetections, vcoco_action_names, vcoco_role_classes
from hoibench.evaluation import VCOCORoleAP, vcoco_role_ap
from hoibench.evaluation._vcoco import _class_voc_ap, _voc_ap_f32
from hoibench.formats import read_vcoco_ground_truth

ACT = {a: i for i, a in enumerate(vcoco_action_names())}
ROLE = {c: i for i, c in enumerate(vcoco_role_classes())}
P0 = [0.0, 0.0, 99.0, 99.0]
P1 = [200.0, 0.0, 299.0, 99.0]
P2 = [0.0, 200.0, 99.0, 299.0]
CUP = [300.0, 300.0, 349.0, 349.0]


def gt_of(*images: tuple[int, list[dict]]) -> object:
    return read_vcoco_ground_truth("hand-made", data={
        "images": [{"image_id": i, "persons": persons} for i, persons in images]})


def dets_of(*rows: dict) -> VCOCODetections:
    """rows: {"image", "box", "agent": {action: score}, "roles": {class: (box or None, score)}}."""
    n = len(rows)
    agent = np.full((n, len(ACT)), np.nan)
    rbox = np.full((n, len(ROLE), 4), np.nan)
    rsc = np.full((n, len(ROLE)), np.nan)
    for k, r in enumerate(rows):
        for a, s in r.get("agent", {}).items():
            agent[k, ACT[a]] = s
        for c, (box, s) in r.get("roles", {}).items():
            rbox[k, ROLE[c]] = np.nan if box is None else box
            rsc[k, ROLE[c]] = s
    return VCOCODetections(np.array([r.get("image", 1) for r in rows]),
                           np.array([r["box"] for r in rows], dtype=float).reshape(n, 4), agent, rbox, rsc)


def test_empty_role_scenario_1_needs_an_empty_box_scenario_2_always_matches() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {"obj": None}}}]))
    det = dets_of({"box": P0, "agent": {"hold": 0.9}, "roles": {"hold_obj": ([10, 10, 50, 50], 0.9)}},
                  {"box": P0, "agent": {"hold": 0.8}, "roles": {"hold_obj": ([0, 0, 0, 0], 0.8)}})
    res = vcoco_role_ap(det, gt)
    # scenario 1: FP (a box where there is no object), then TP: precision 1/2 at recall 1
    assert res.role_ap[1][ROLE["hold_obj"]] == pytest.approx(0.5)
    # scenario 2: the first is TP, the second covers the same person: FP
    assert res.role_ap[2][ROLE["hold_obj"]] == pytest.approx(1.0)
    assert res.agent_ap[ACT["hold"]] == pytest.approx(1.0)
    # an all-NaN role box also means "no object" in scenario 1
    det_nan = dets_of({"box": P0, "roles": {"hold_obj": (None, 0.9)}})
    assert vcoco_role_ap(det_nan, gt).role_ap[1][ROLE["hold_obj"]] == pytest.approx(1.0)


def test_role_box_must_overlap_the_role_object() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {"obj": CUP}}}]))
    near = [302.0, 302.0, 351.0, 351.0]  # IoU 0.85
    far = [320.0, 320.0, 369.0, 369.0]  # IoU 0.166
    for box, ap in ((near, 1.0), (far, 0.0), ([0, 0, 0, 0], 0.0), (None, 0.0)):
        det = dets_of({"box": P0, "roles": {"hold_obj": (box, 0.7)}})
        res = vcoco_role_ap(det, gt)
        assert res.role_ap[1][ROLE["hold_obj"]] == pytest.approx(ap), box
        assert res.role_ap[2][ROLE["hold_obj"]] == pytest.approx(ap), box  # scenarios agree here


def test_people_outside_vcoco_are_ignored() -> None:
    persons = [{"box": P1, "ignore": True}, {"box": P0, "actions": {"hold": {}}}]
    det = dets_of({"box": P1, "agent": {"hold": 0.95}}, {"box": P0, "agent": {"hold": 0.5}})
    res = vcoco_role_ap(det, gt_of((1, persons)))
    assert res.agent_ap[ACT["hold"]] == pytest.approx(1.0)
    assert res.n_detections_agent[ACT["hold"]] == 1  # dropped, not counted as FP
    # the same person in V-COCO without the action: the detection is an FP ranked first
    persons[0] = {"box": P1}
    res = vcoco_role_ap(det, gt_of((1, persons)))
    assert res.agent_ap[ACT["hold"]] == pytest.approx(0.5)


def test_detection_overlapping_nobody_goes_to_the_first_person() -> None:
    nowhere = [400.0, 400.0, 450.0, 450.0]
    det = dets_of({"box": nowhere, "agent": {"hold": 0.9}}, {"box": P0, "agent": {"hold": 0.5}})
    first_ignored = gt_of((1, [{"box": P1, "ignore": True}, {"box": P0, "actions": {"hold": {}}}]))
    first_annotated = gt_of((1, [{"box": P0, "actions": {"hold": {}}}, {"box": P1, "ignore": True}]))
    # arg-max of all-zero IoUs is person 0: ignored there (dropped), an FP here
    assert vcoco_role_ap(det, first_ignored).agent_ap[ACT["hold"]] == pytest.approx(1.0)
    assert vcoco_role_ap(det, first_annotated).agent_ap[ACT["hold"]] == pytest.approx(0.5)


def test_duplicates_are_false_positives() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {}}}, {"box": P1, "actions": {"hold": {}}}]))
    det = dets_of({"box": P0, "agent": {"hold": 0.9}}, {"box": P0, "agent": {"hold": 0.8}},
                  {"box": P1, "agent": {"hold": 0.7}})
    # TP, FP, TP: recall 0.5, 0.5, 1; precision 1, 0.5, 2/3 -> 0.5 * 1 + 0.5 * 2/3
    assert vcoco_role_ap(det, gt).agent_ap[ACT["hold"]] == pytest.approx(0.5 + 1 / 3, abs=1e-7)


def test_iou_threshold_is_inclusive_with_plus_one_pixels() -> None:
    gt = gt_of((1, [{"box": [0.0, 0.0, 99.0, 99.0], "actions": {"stand": {}}}]))
    half = dets_of({"box": [0.0, 0.0, 49.0, 99.0], "agent": {"stand": 0.5}})  # (50*100)/(100*100) = 0.5
    under = dets_of({"box": [0.0, 0.0, 48.5, 99.0], "agent": {"stand": 0.5}})
    assert vcoco_role_ap(half, gt).agent_ap[ACT["stand"]] == 1.0
    assert vcoco_role_ap(under, gt).agent_ap[ACT["stand"]] == 0.0
    assert vcoco_role_ap(under, gt, iou_threshold=0.4).agent_ap[ACT["stand"]] == 1.0


def test_positives_include_people_without_a_role_object() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"eat": {"obj": CUP}}},        # eat_instr empty
                    {"box": P1, "actions": {"eat": {"obj": None, "instr": None}}},
                    {"box": P2, "actions": {"stand": {}}}]))
    res = vcoco_role_ap(dets_of(), gt)
    assert res.n_positives[ACT["eat"]] == 2 and res.n_positives[ACT["stand"]] == 1
    rows = {r["class"]: r for r in res.per_class_rows() if r["kind"] == "role"}
    assert rows["eat_obj"]["n_pos"] == 2 and rows["eat_instr"]["n_pos"] == 2
    # one correct eat_obj detection finds half of the positives
    det = dets_of({"box": P0, "roles": {"eat_obj": (CUP, 0.9)}})
    assert vcoco_role_ap(det, gt).role_ap[1][ROLE["eat_obj"]] == pytest.approx(0.5)


def test_nan_scores_do_not_take_part() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {}}}]))
    det = dets_of({"box": P0, "agent": {"hold": float("nan")}}, {"box": P0, "agent": {"hold": 0.3}})
    res = vcoco_role_ap(det, gt)
    assert res.agent_ap[ACT["hold"]] == 1.0 and res.n_detections_agent[ACT["hold"]] == 1


def test_classes_without_positives_are_nan_and_skipped_in_means() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {"obj": CUP}}}]))
    res = vcoco_role_ap(dets_of({"box": P0, "agent": {"hold": 0.9}, "roles": {"hold_obj": (CUP, 0.9)}}), gt)
    assert np.isnan(res.agent_ap[ACT["stand"]])
    assert res.agent_map == 1.0 and res.role_map(1) == 1.0 and res.role_map(2, pairs=25) == 1.0
    # positives without detections: AP 0
    assert vcoco_role_ap(dets_of(), gt).agent_ap[ACT["hold"]] == 0.0


def test_24_pair_mean_leaves_out_point_instr() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {"obj": CUP}, "point": {"instr": CUP}}}]))
    det = dets_of({"box": P0, "roles": {"hold_obj": (CUP, 0.9), "point_instr": ([0, 0, 5, 5], 0.9)}})
    res = vcoco_role_ap(det, gt)
    assert res.role_map(1) == 1.0  # hold_obj only
    assert res.role_map(1, pairs=25) == pytest.approx(0.5)  # with point_instr (AP 0)
    d = res.to_json()
    assert d["scenario_1"] == {"role_map_24": 100.0, "role_map_25": 50.0}
    assert d["role_class_names"][ROLE["point_instr"]] == "point_instr"


def test_ties_rank_by_image_then_detection_order() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {}}}]), (2, [{"box": P0, "actions": {"hold": {}}}]))
    tp_first = dets_of({"image": 1, "box": P0, "agent": {"hold": 0.5}},
                       {"image": 2, "box": P1, "agent": {"hold": 0.5}},
                       {"image": 2, "box": P0, "agent": {"hold": 0.4}})
    # image 1's TP ranks before image 2's FP at the same score: precision 1, 1/2, 2/3
    assert vcoco_role_ap(tp_first, gt).agent_ap[ACT["hold"]] == pytest.approx(0.5 + 0.5 * 2 / 3, abs=1e-7)
    fp_first = dets_of({"image": 1, "box": P1, "agent": {"hold": 0.5}},
                       {"image": 2, "box": P0, "agent": {"hold": 0.5}},
                       {"image": 1, "box": P0, "agent": {"hold": 0.4}})
    # image 1's FP now ranks first: precision 0, 1/2, 2/3; the envelope gives 2/3 at both recalls
    assert vcoco_role_ap(fp_first, gt).agent_ap[ACT["hold"]] == pytest.approx(2 / 3, abs=1e-7)


def test_image_without_people_makes_false_positives() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {}}}]), (2, []))
    det = dets_of({"image": 2, "box": P0, "agent": {"hold": 0.9}}, {"image": 1, "box": P0, "agent": {"hold": 0.5}})
    assert vcoco_role_ap(det, gt).agent_ap[ACT["hold"]] == pytest.approx(0.5)


def test_metric_object_accumulates_resets_and_caches() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {}}}]), (2, [{"box": P0, "actions": {"hold": {}}}]))
    det = dets_of({"image": 1, "box": P0, "agent": {"hold": 0.9}}, {"image": 2, "box": P1, "agent": {"hold": 0.8}})
    metric = VCOCORoleAP(scenarios=[2])
    metric.update(det.subset(np.array([0])), gt.select([1]))
    metric.update(det.subset(np.array([1])), gt.select([2]))
    res = metric.compute()
    assert res is metric.compute() and res.scenarios == (2,)
    assert res.agent_ap[ACT["hold"]] == pytest.approx(0.5) and res.n_images == 2
    with pytest.raises(ValidationError, match="already scored"):
        metric.update(VCOCODetections.empty(), gt.select([1]))
    metric.reset()
    metric.update(det, gt)
    assert metric.compute().agent_ap[ACT["hold"]] == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="scenario"):
        res.role_map(1)


@pytest.mark.parametrize("kwargs, match", [
    ({"iou_threshold": 0.0}, "iou_threshold"), ({"iou_threshold": "x"}, "iou_threshold"),
    ({"scenarios": [3]}, "scenarios"), ({"scenarios": []}, "scenarios")])
def test_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        VCOCORoleAP(**kwargs)


def test_bad_detections_name_the_detection() -> None:
    gt = gt_of((1, [{"box": P0, "actions": {"hold": {}}}]))
    with pytest.raises(ValidationError, match="detection 1: image id 7 is not in the ground truth"):
        vcoco_role_ap(dets_of({"box": P0}, {"image": 7, "box": P0}), gt)
    with pytest.raises(ValidationError, match=r"detection 1 .*inverted"):
        vcoco_role_ap(dets_of({"box": P0}, {"box": [50, 0, 10, 10]}), gt)
    with pytest.raises(ValidationError, match=r"detection 0 .*not finite"):
        vcoco_role_ap(dets_of({"box": [0, 0, float("nan"), 5]}), gt)
    with pytest.raises(ValidationError, match="partly NaN"):
        vcoco_role_ap(dets_of({"box": P0, "roles": {"hold_obj": ([0, 0, float("nan"), 1], 0.5)}}), gt)


@pytest.mark.parametrize(("problem", "code"), [
    (lambda d, i: d.person_boxes.__setitem__((i, 2), np.nan), 1),
    (lambda d, i: d.person_boxes.__setitem__((i, 0), 1e4), 2),
    (lambda d, i: d.role_scores.__setitem__((i, 3), np.inf), 3),
    (lambda d, i: d.role_boxes.__setitem__((i, 4, 1), np.nan), 4),
    (lambda d, i: d.role_boxes.__setitem__((i, 24, 0), 1e4), 5),
])
def test_row_checks_reach_every_slice(problem, code: int) -> None:
    """The whole-array check runs 16,384 rows at a time: a problem in the last, partial slice
    is found and named like one in the first."""
    from hoibench.data._vcoco import DETECTION_PROBLEMS

    n_act, n_role = len(vcoco_action_names()), len(vcoco_role_classes())
    n = 40_000
    rng = np.random.default_rng(code)
    xy = rng.random((n, 2), dtype=np.float32) * 100
    boxes = np.concatenate([xy, xy + 10], axis=1)
    rbox = np.repeat(boxes[:, None], n_role, axis=1)
    rbox[::3, 2] = np.nan  # roles without a box
    det = VCOCODetections(np.arange(n) // 100, boxes, rng.random((n, n_act), dtype=np.float32), rbox,
                          rng.random((n, n_role), dtype=np.float32))
    assert not det.problems().any()
    for i in (3, n - 7):
        bad = det.subset(np.arange(n))
        problem(bad, i)
        assert np.flatnonzero(bad.problems()).tolist() == [i] and bad.problems()[i] == code
        with pytest.raises(ValidationError, match=rf"detection {i} .*{re.escape(DETECTION_PROBLEMS[code])}"):
            bad.check()


def test_ground_truth_layout_errors_name_the_record() -> None:
    from hoibench._exceptions import FormatError

    with pytest.raises(FormatError, match=r"hand-made: record 0: persons\[0\].actions: unknown action 'fly'"):
        gt_of((1, [{"box": P0, "actions": {"fly": {}}}]))
    with pytest.raises(FormatError, match="action 'stand' has no role 'obj'"):
        gt_of((1, [{"box": P0, "actions": {"stand": {"obj": CUP}}}]))
    with pytest.raises(FormatError, match=r"persons\[0\].box"):
        gt_of((1, [{"box": [5, 5, 1, 1]}]))
    with pytest.raises(FormatError, match="image_ids must be unique"):
        gt_of((1, []), (1, []))


@pytest.mark.parametrize("levels", [0, 1, 3, 8])
def test_ap_from_tp_ranks_equals_the_fully_ranked_sequence(levels: int) -> None:
    """The per-class AP counts each TP's rank instead of sorting every entry; ties between a TP and
    other entries (or other TPs) are ranked by entry order, exactly as the full stable sort does."""
    rng = np.random.default_rng(levels)
    for _ in range(400):
        n = int(rng.integers(0, 50))
        score = ((rng.integers(0, levels, n) / levels) if levels else rng.random(n)).astype(np.float32)
        tp = rng.random(n) < rng.random()
        npos = int(tp.sum() + rng.integers(0, 4))
        fast = _class_voc_ap(score, tp, npos)
        full = _voc_ap_f32(tp[np.argsort(-score, kind="stable")], npos)
        assert fast == full or (np.isnan(fast) and np.isnan(full)), (score, tp, npos)
