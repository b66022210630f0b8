"""``eval vcoco`` on V-COCO-SG files in the PPDM V-COCO layout: entries without ``img_id`` take
the COCO id from the file name, and pairs whose ``object_id`` is -1 (role object absent) count
as vsrl_eval counts them (scenario 1 needs an empty role box, scenario 2 accepts any)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench.cli import cli
from hoibench.data import VCOCODetections, vcoco_action_names, vcoco_role_classes
from hoibench.datasets import resolve_vcoco_ground_truth
from hoibench.formats import write_vcoco_detections
from hoibench.formats.ppdm import image_id_from_name
from hoibench.vocab import vcoco
from tests.conftest import shared_file

ACTIONS = vcoco_action_names()
ROLE_ACTION = np.array([ACTIONS.index(c.rsplit("_", 1)[0]) for c in vcoco_role_classes()])


def perfect_detections(gt) -> VCOCODetections:
    """Every ground-truth person with its actions (0.9, others 0.1) and role boxes (absent: no box)."""
    acts = gt.person_actions.astype(bool)
    image_ids = np.repeat(gt.image_ids, np.diff(gt.person_offsets))
    agent = np.where(acts, 0.9, 0.1)
    role_scores = agent[:, ROLE_ACTION]
    return VCOCODetections(image_ids, gt.person_boxes.copy(), agent, gt.role_boxes.copy(), role_scores)


def run_eval(gt_path, det_path) -> dict:
    r = CliRunner().invoke(cli, ["eval", "vcoco", "--gt", str(gt_path), "--pred", str(det_path), "--json", "-"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def check_perfect(out: dict) -> None:
    """Perfect detections: 100 (percent, as the results object holds them) everywhere."""
    assert out["agent_map"] == pytest.approx(100.0)
    for sc in ("scenario_1", "scenario_2"):
        assert out[sc]["role_map_24"] == pytest.approx(100.0), sc


def test_image_id_from_name():
    assert image_id_from_name("COCO_train2014_000000226162.jpg") == 226162
    assert image_id_from_name("dir/COCO_val2014_000000000042.png") == 42
    assert image_id_from_name("no_digits.jpg") == -1


def test_synthetic_sg_file_without_img_id(tmp_path):
    v = vcoco()
    person, cup = v.object_to_coco91(np.array([v.person, v.object_index("cup")])).tolist()
    hold_obj = v.verb_index("hold_obj")
    entries = [
        {"file_name": "COCO_train2014_000000000007.jpg",
         "annotations": [{"bbox": [0, 0, 99, 99], "category_id": person}, {"bbox": [300, 300, 349, 349], "category_id": cup},
                         {"bbox": [200, 0, 299, 99], "category_id": person}],
         "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": hold_obj},
                            {"subject_id": 2, "object_id": -1, "category_id": hold_obj}]},  # cup not visible
        {"file_name": "COCO_val2014_000000000009.jpg",
         "annotations": [{"bbox": [10, 10, 50, 80], "category_id": person}],
         "hoi_annotation": [{"subject_id": 0, "object_id": -1, "category_id": hold_obj}]},
    ]
    (tmp_path / "sg.json").write_text(json.dumps(entries))
    gt = resolve_vcoco_ground_truth(tmp_path / "sg.json")
    assert gt.image_ids.tolist() == [7, 9]
    hold = ACTIONS.index("hold")
    role = vcoco_role_classes().index("hold_obj")
    assert gt.person_actions[:, hold].tolist() == [1, 1, 1]  # the -1 pairs are positives too
    assert np.isnan(gt.role_boxes[1:, role]).all() and not np.isnan(gt.role_boxes[0, role]).any()
    det = perfect_detections(gt)
    write_vcoco_detections(det, tmp_path / "det.json")
    check_perfect(run_eval(tmp_path / "sg.json", tmp_path / "det.json"))
    # a role box for a person whose role object is absent: wrong in scenario 1 only
    det.role_boxes[2, role] = [10, 10, 50, 80]
    write_vcoco_detections(det, tmp_path / "det2.json")
    out = run_eval(tmp_path / "sg.json", tmp_path / "det2.json")
    assert out["scenario_2"]["role_map_24"] == pytest.approx(100.0)
    assert out["scenario_1"]["role_map_24"] < 100.0


@pytest.mark.shared_data
def test_released_vcoco_sg_test_file(tmp_path):
    path = shared_file("hoi-sg/test_vcoco_sg1.json")
    gt = resolve_vcoco_ground_truth(path)
    assert gt.n_images == 2850 and len(np.unique(gt.image_ids)) == gt.n_images
    write_vcoco_detections(perfect_detections(gt), tmp_path / "det.json")
    check_perfect(run_eval(path, tmp_path / "det.json"))
