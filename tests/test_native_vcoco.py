"""UPT's / PViC's ``--cache`` output for V-COCO (``vcoco_cache/cache.pkl``), read by ``eval vcoco``.

The pickle is built here as their ``utils.py`` builds it (``CacheTemplate``, one record per
detected pair and action, protocol 2), with a ``utils`` module defining ``CacheTemplate`` as
theirs does, and must score like the same detections written in hoibench's layout, with
``CacheTemplate``'s defaults for the keys a record lacks.
"""

from __future__ import annotations

import json
import pickle
import sys
import types
from collections import defaultdict

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench._exceptions import FormatError
from hoibench.cli import cli
from hoibench.data import VCOCODetections, vcoco_role_classes
from hoibench.data._vcoco import vcoco_role_table
from hoibench.evaluation import vcoco_role_ap
from hoibench.formats import (
    read_vcoco_detections,
    vcoco_ground_truth_from_official,
    write_vcoco_detections,
)
from tests.test_eval_vcoco_oracle import make_synthetic


def _utils_module() -> types.ModuleType:
    """A ``utils`` module with UPT's ``CacheTemplate`` (a defaultdict subclass)."""
    mod = types.ModuleType("utils")

    class CacheTemplate(defaultdict):
        def __init__(self, **kwargs):
            super().__init__()
            for k, v in kwargs.items():
                self[k] = v

        def __missing__(self, k):
            return 0.0 if k.split("_")[-1] == "agent" else [0.0, 0.0, 0.1, 0.1, 0.0]

    CacheTemplate.__module__ = "utils"
    CacheTemplate.__qualname__ = "CacheTemplate"
    mod.CacheTemplate = CacheTemplate
    return mod


def _pairs(det: VCOCODetections) -> list[tuple[int, list[float], list[float], float, int]]:
    """(image id, person box, object box, score, role class) for every finite role score of
    ``det``: what UPT's head outputs as (pair, action) with its 24 action-role classes."""
    out = []
    for k in range(len(det.image_ids)):
        for j in np.flatnonzero(np.isfinite(det.role_scores[k]) & np.isfinite(det.role_boxes[k]).all(axis=1)):
            out.append((int(det.image_ids[k]), det.person_boxes[k].tolist(), det.role_boxes[k, j].tolist(),
                        float(det.role_scores[k, j]), int(j)))
    return out


def upt_cache_vcoco(pairs, utils: types.ModuleType, path) -> None:
    """``cache_vcoco``: per (pair, action) ``CacheTemplate(image_id=..., person_box=bh.tolist())``
    with ``<action>_agent`` = score and ``<action>_<role>`` = ``bo.tolist() + [score]``;
    ``pickle.dump(all_results, f, 2)``."""
    names = vcoco_role_classes()  # UPT's dataset.actions: "hold obj", "talk_on_phone instr", ...
    all_results = []
    for image_id, bh, bo, s, a in pairs:
        a_name = " ".join(names[a].rsplit("_", 1)).split()
        result = utils.CacheTemplate(image_id=image_id, person_box=bh)
        result[a_name[0] + "_agent"] = s
        result["_".join(a_name)] = [*bo, s]  # bo.tolist() + [s.item()]
        all_results.append(result)
    with open(path, "wb") as f:
        pickle.dump(all_results, f, 2)


@pytest.fixture()
def built(tmp_path, monkeypatch):
    coco, vcoco, det = make_synthetic(5, n_images=15)
    utils = _utils_module()
    monkeypatch.setitem(sys.modules, "utils", utils)
    pairs = _pairs(det)
    upt_cache_vcoco(pairs, utils, tmp_path / "cache.pkl")
    monkeypatch.delitem(sys.modules, "utils")  # reading must not need their module
    return coco, vcoco, pairs, tmp_path


def _same_in_hoibench_layout(pairs) -> VCOCODetections:
    """One detected person per record: score ``s`` for its action (0 for the others), its role
    box and score (``[0, 0, .1, .1]`` and 0 for the other roles), as CacheTemplate answers."""
    from hoibench.data import vcoco_action_names

    acts = list(vcoco_action_names())
    names, role_action = vcoco_role_classes(), vcoco_role_table()[1]
    n = len(pairs)
    agent = np.zeros((n, len(acts)), np.float32)
    rbox = np.tile(np.array([0, 0, 0.1, 0.1], np.float32), (n, len(names), 1))
    rsc = np.zeros((n, len(names)), np.float32)
    for k, (_, _, bo, s, j) in enumerate(pairs):
        agent[k, int(role_action[j])] = s
        rbox[k, j], rsc[k, j] = bo, s
    # agent-only actions are also "<action>_agent" keys with CacheTemplate's 0
    return VCOCODetections(np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.float32),
                           agent, rbox, rsc)


def test_upt_cache_pkl_scores_like_hoibench_layout(built):
    coco, vcoco, pairs, d = built
    loaded = read_vcoco_detections(d / "cache.pkl")
    assert loaded.layout == "upt cache.pkl" and len(loaded.detections.image_ids) == len(pairs)
    same = _same_in_hoibench_layout(pairs)
    write_vcoco_detections(same, d / "own.json")
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    got = vcoco_role_ap(loaded.detections, gt)
    want = vcoco_role_ap(read_vcoco_detections(d / "own.json").detections, gt)
    assert got.per_class_rows() == want.per_class_rows()
    assert 0 < got.role_map(1) < 1
    (d / "coco.json").write_text(json.dumps(coco))
    (d / "vcoco.json").write_text(json.dumps(vcoco))
    r = CliRunner().invoke(cli, ["eval", "vcoco", "--gt", str(d / "vcoco.json"), "--coco-instances",
                                 str(d / "coco.json"), "--pred", str(d / "cache.pkl"), "--json", "-"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    assert res["layout"] == "upt cache.pkl" and res["prediction_format"] == "upt cache.pkl"
    assert res["scenario_1"]["role_map_24"] == pytest.approx(100 * want.role_map(1), abs=1e-12)


def test_other_classes_are_still_refused(tmp_path, monkeypatch):
    utils = _utils_module()

    class Evil(dict):
        def __reduce__(self):
            return (print, ("pwned",))

    Evil.__module__ = "utils"
    Evil.__qualname__ = "Evil"
    utils.Evil = Evil
    monkeypatch.setitem(sys.modules, "utils", utils)
    for obj in ([Evil()], [defaultdict(list)], [utils.CacheTemplate(image_id=1, f=Evil())]):
        (tmp_path / "x.pkl").write_bytes(pickle.dumps(obj, 2))
        with pytest.raises(FormatError, match=r"refusing to load (__builtin__\.print|collections\.defaultdict)"):
            read_vcoco_detections(tmp_path / "x.pkl")
