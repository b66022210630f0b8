"""V-COCO detection and ground-truth files, the bundled-data ground truth, and ``hoibench eval vcoco``."""

from __future__ import annotations

import csv
import json
import pickle

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench._exceptions import FormatError
from hoibench.data import VCOCODetections, vcoco_action_names, vcoco_role_classes
from hoibench.datasets import resolve_vcoco_ground_truth
from hoibench.evaluation import vcoco_role_ap
from hoibench.formats import (
    read_vcoco_detections,
    read_vcoco_ground_truth,
    vcoco_ground_truth_from_official,
    write_vcoco_detections,
    write_vcoco_ground_truth,
    write_vsrl_detections,
)
from tests.conftest import shared_file
from tests.test_eval_vcoco_oracle import make_synthetic

N_ACT, N_ROLE = len(vcoco_action_names()), len(vcoco_role_classes())


def _same(a: VCOCODetections, b: VCOCODetections) -> None:
    np.testing.assert_array_equal(a.image_ids, b.image_ids)
    for f in ("person_boxes", "agent_scores", "role_boxes", "role_scores"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def test_read_buffer_maps_large_plain_files_only(tmp_path, monkeypatch) -> None:
    import gzip
    import mmap

    import hoibench._io
    from hoibench._io import read_buffer

    (tmp_path / "a.json").write_bytes(b'{"images": []}')
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(b'{"images": []}'))
    (tmp_path / "empty.json").write_bytes(b"")
    assert isinstance(read_buffer(tmp_path / "a.json"), bytes)  # small: read
    monkeypatch.setattr(hoibench._io, "_MAP_AT", 0)
    got = read_buffer(tmp_path / "a.json")
    assert isinstance(got, mmap.mmap) and got[:] == b'{"images": []}'
    assert read_buffer(tmp_path / "a.json.gz") == b'{"images": []}'  # gzip: decompressed bytes
    assert read_buffer(tmp_path / "empty.json") == b""  # an empty file cannot be mapped
    with pytest.raises(FormatError, match=r"missing\.json"):
        read_buffer(tmp_path / "missing.json")


@pytest.fixture(scope="module")
def synthetic() -> tuple[dict, list[dict], VCOCODetections]:
    return make_synthetic(11, n_images=12)


@pytest.mark.parametrize("share", [True, False])
def test_hoibench_json_round_trip(tmp_path, synthetic, file_access, share: bool) -> None:
    _, _, det = synthetic
    det = det.subset(np.argsort(det.image_ids, kind="stable"))  # the writer groups by image
    write_vcoco_detections(det, tmp_path / "d.json", share_role_boxes=share)
    back = read_vcoco_detections(tmp_path / "d.json")
    assert back.layout == "hoibench json" and not back.dropped
    _same(det, back.detections)
    doc = json.loads((tmp_path / "d.json").read_text())
    assert ("role_objects" in doc["images"][0]) == share


def test_shared_role_boxes_bad_index(tmp_path) -> None:
    doc = {"agent_classes": [], "role_classes": ["hold_obj"],
           "images": [{"image_id": 3, "person_boxes": [[0, 0, 10, 10]], "agent_scores": [[]],
                       "object_boxes": [[1, 1, 4, 4]], "role_objects": [[1]], "role_scores": [[0.5]]}]}
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"record 0: role_objects: expected indices into object_boxes \(0..0\)"):
        read_vcoco_detections(path)
    doc["images"][0]["role_objects"] = [[None]]
    path.write_text(json.dumps(doc))
    assert np.isnan(read_vcoco_detections(path).detections.role_boxes).all()


def test_vsrl_pickle_and_json_round_trip(tmp_path, synthetic, file_access) -> None:
    _, _, det = synthetic
    write_vsrl_detections(det, tmp_path / "d.pkl")
    back = read_vcoco_detections(tmp_path / "d.pkl")
    assert back.layout == "vsrl pickle"
    _same(det, back.detections)
    # the same list of dicts as JSON (NaN written as Python's json does)
    rows = pickle.loads((tmp_path / "d.pkl").read_bytes())
    plain = [{k: (v.tolist() if isinstance(v, np.ndarray) else float(v) if isinstance(v, np.floating) else v)
              for k, v in r.items()} for r in rows]
    (tmp_path / "d.json").write_text(json.dumps(plain))
    _same(det, read_vcoco_detections(tmp_path / "d.json").detections)


def test_pickle_with_other_objects_is_refused(tmp_path) -> None:
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps([{"image_id": 1, "f": FormatError("x")}]))
    with pytest.raises(FormatError, match="refusing to load"):
        read_vcoco_detections(tmp_path / "evil.pkl")


def _vsrl_row(image_id: int = 1) -> dict:
    row: dict = {"image_id": image_id, "person_box": [0.0, 0.0, 10.0, 10.0]}
    for a in vcoco_action_names():
        row[f"{a}_agent"] = 0.5
    for c in vcoco_role_classes():
        row[c] = [0.0, 0.0, 0.0, 0.0, 0.5]
    return row


def test_vsrl_bad_records_are_named_or_dropped(tmp_path) -> None:
    rows = [_vsrl_row(), _vsrl_row(), _vsrl_row(), _vsrl_row()]
    del rows[1]["hold_agent"]
    rows[2]["person_box"] = [5.0, 5.0, 1.0, 1.0]
    rows[3]["fly_agent"] = 0.3
    path = tmp_path / "d.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(FormatError, match=r"d.json: record 1: hold_agent: missing score"):
        read_vcoco_detections(path)
    loaded = read_vcoco_detections(path, lenient=True)
    assert len(loaded.detections) == 1 and loaded.records.tolist() == [0]
    assert sum(loaded.dropped.values()) == 3


@pytest.mark.parametrize("layout", ["json", "pickle"])
def test_vsrl_records_read_one_way_booleans_refused(tmp_path, layout: str) -> None:
    """Every record goes through the same reader: plain records in three conversions, odd but
    valid ones (nested rows, integral float ids) key by key, to the same values; a boolean among
    the numbers (numpy would make it 1.0) is refused naming record and key."""
    rows = [_vsrl_row(7), _vsrl_row(8), _vsrl_row(9)]
    rows[0]["hold_agent"] = 0.25
    rows[1]["person_box"] = [[0.0, 0.0], [10.0, 10.0]]  # 4 numbers, another shape
    rows[1]["hold_obj"] = [[1.0, 2.0, 3.0, 4.0, 0.75]]
    rows[2]["image_id"] = 9.0
    path = tmp_path / "d.pkl"
    path.write_bytes(pickle.dumps(rows) if layout == "pickle" else json.dumps(rows).encode())
    det = read_vcoco_detections(path).detections
    assert det.image_ids.tolist() == [7, 8, 9] and det.agent_scores[0, 0] == np.float32(0.25)
    np.testing.assert_array_equal(det.person_boxes[1], [0, 0, 10, 10])
    np.testing.assert_array_equal(det.role_boxes[1, 0], [1, 2, 3, 4])
    assert det.role_scores[1, 0] == np.float32(0.75)
    rows = [_vsrl_row(7), _vsrl_row(8), _vsrl_row(9)]  # plain records, but for one boolean
    rows[2]["eat_obj"] = [0.0, 0.0, 1.0, 1.0, True]
    path.write_bytes(pickle.dumps(rows) if layout == "pickle" else json.dumps(rows).encode())
    with pytest.raises(FormatError, match=r"record 2: eat_obj: expected 5 numbers, got \[0.0, 0.0, 1.0, 1.0, True\]"):
        read_vcoco_detections(path)
    rows[2]["eat_obj"], rows[0]["stand_agent"] = [0.0, 0.0, 1.0, 1.0, 0.5], False
    path.write_bytes(pickle.dumps(rows) if layout == "pickle" else json.dumps(rows).encode())
    with pytest.raises(FormatError, match=r"record 0: stand_agent: expected a number, got False"):
        read_vcoco_detections(path)


def test_hoibench_json_partial_columns_nulls_and_errors(tmp_path) -> None:
    doc = {"agent_classes": ["hold"], "role_classes": ["hold_obj", "eat_instr"],
           "images": [{"image_id": 3, "person_boxes": [[0, 0, 10, 10], [1, 1, 5, 5]],
                       "agent_scores": [[0.9], [None]],
                       "role_boxes": [[[1, 2, 3, 4], None], [None, [0, 0, 0, 0]]],
                       "role_scores": [[0.8, None], [0.1, 0.2]]},
                      {"file_name": "COCO_val2014_000000000042.jpg", "person_boxes": [],
                       "agent_scores": [], "role_boxes": [], "role_scores": []}]}
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    det = read_vcoco_detections(path).detections
    assert det.image_ids.tolist() == [3, 3]
    hold, stand = vcoco_action_names().index("hold"), vcoco_action_names().index("stand")
    assert det.agent_scores[0, hold] == np.float32(0.9) and np.isnan(det.agent_scores[1, hold])
    assert np.isnan(det.agent_scores[:, stand]).all()  # not listed: not predicted
    c = vcoco_role_classes().index("hold_obj")
    assert det.role_boxes[0, c].tolist() == [1, 2, 3, 4] and np.isnan(det.role_boxes[1, c]).all()
    doc["images"][0]["agent_scores"] = [[0.9, 0.1], [0.2, 0.3]]
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"record 0: agent_scores: expected shape \(2, 1\)"):
        read_vcoco_detections(path)
    doc["agent_classes"] = ["fly"]
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="agent_classes: unknown class 'fly'"):
        read_vcoco_detections(path)


def test_unknown_images_are_named_or_dropped(tmp_path, synthetic) -> None:
    coco, vcoco, det = synthetic
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    write_vsrl_detections(det, tmp_path / "d.pkl")
    loaded = read_vcoco_detections(tmp_path / "d.pkl")
    sub = gt.select(gt.image_ids[1:])
    with pytest.raises(FormatError, match=r"record \d+: image_id: image 1000 is not in the ground truth"):
        loaded.restrict_to(sub)
    kept = loaded.restrict_to(sub, lenient=True)
    n_first = int((det.image_ids == gt.image_ids[0]).sum())
    assert kept.dropped == {"unknown image": n_first} and len(kept.detections) == len(det) - n_first


def test_ground_truth_round_trip_and_exclusive_boxes(tmp_path, synthetic) -> None:
    coco, vcoco, det = synthetic
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    write_vcoco_ground_truth(gt, tmp_path / "gt.json")
    back = read_vcoco_ground_truth(tmp_path / "gt.json")
    for f in ("image_ids", "person_offsets", "person_boxes", "person_actions", "role_boxes"):
        np.testing.assert_array_equal(getattr(gt, f), getattr(back, f), err_msg=f)
    a, b = vcoco_role_ap(det, gt), vcoco_role_ap(det, back)
    np.testing.assert_array_equal(a.role_ap[1], b.role_ap[1])
    ex = read_vcoco_ground_truth("x", data={"box_convention": "exclusive", "images": [
        {"image_id": 1, "persons": [{"box": [10.0, 10.0, 20.5, 30.0], "actions": {"hold": {"obj": [0, 0, 0.5, 4]}}}]}]})
    assert ex.person_boxes[0].tolist() == [10.0, 10.0, 19.5, 29.0]
    assert ex.role_boxes[0, vcoco_role_classes().index("hold_obj")].tolist() == [0.0, 0.0, 0.0, 3.0]


def test_official_vcoco_json_alone_asks_for_coco_instances(tmp_path, synthetic) -> None:
    _, vcoco, _ = synthetic
    (tmp_path / "vcoco_test.json").write_text(json.dumps(vcoco))
    with pytest.raises(FormatError, match="give the COCO instances file too"):
        resolve_vcoco_ground_truth(str(tmp_path / "vcoco_test.json"))


def test_official_converter_follows_vsrl_eval_rules(synthetic) -> None:
    coco, vcoco, _ = synthetic
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    # people: valid COCO person annotations (not ignore, area > 0, wider and taller than a point)
    valid_people = [a for a in coco["annotations"] if a["category_id"] == 1 and a.get("ignore") != 1
                    and a["area"] > 0]
    assert gt.n_persons == len(valid_people)
    assert gt.image_ids.tolist() == sorted({im["id"] for im in coco["images"]})
    assert (gt.person_boxes >= 0).all() and (gt.person_boxes[:, 2] <= 639).all()  # clipped
    assert int((~gt.ignored).sum()) == len(set(vcoco[0]["ann_id"]))
    broken = json.loads(json.dumps(vcoco))
    rec = broken[0]  # hold: point a role at an annotation that does not exist
    n = len(rec["ann_id"])
    k = rec["label"].index(1)
    rec["role_object_id"][n + k] = 999999
    with pytest.raises(FormatError, match="role object 999999"):
        vcoco_ground_truth_from_official(broken, coco)


# --------------------------------------------------------------------------- bundled / real data
@pytest.fixture(scope="module")
def bundled_gt():
    return resolve_vcoco_ground_truth("v-coco:test")


def test_bundled_ground_truth_is_incomplete_in_known_ways(bundled_gt) -> None:
    gt = bundled_gt
    ids = np.loadtxt(shared_file("v-coco/vcoco_test.ids"), dtype=np.int64)
    assert not gt.complete and gt.n_images == 4946
    np.testing.assert_array_equal(gt.image_ids, ids)  # the official split, in its order
    assert gt.n_persons == 6276 and not gt.ignored.any()
    assert int((~np.isnan(gt.role_boxes[..., 0])).sum()) == 12402  # one role box per pair
    pos = dict(zip(vcoco_action_names(), gt.n_positives().tolist()))
    assert pos["stand"] == pos["walk"] == pos["run"] == pos["smile"] == pos["point"] == 0
    assert pos["hold"] == 2733 and pos["eat"] == 387


def test_perfect_detections_on_bundled_test_set(bundled_gt) -> None:
    gt = bundled_gt
    n = gt.n_persons
    has = gt.person_actions == 1
    agent = np.where(has, 1.0, np.nan)
    role_action = np.array([vcoco_action_names().index(c.rsplit("_", 1)[0]) for c in vcoco_role_classes()])
    role_scores = np.where(has[:, role_action], 1.0, np.nan)
    role_boxes = np.nan_to_num(gt.role_boxes, nan=0.0)  # empty role: all-zero box
    det = VCOCODetections(np.repeat(gt.image_ids, np.diff(gt.person_offsets)), gt.person_boxes,
                          agent, role_boxes, role_scores)
    assert len(det) == n
    res = vcoco_role_ap(det, gt)
    ok = gt.n_positives() > 0
    assert (res.agent_ap[ok] == 1.0).all() and np.isnan(res.agent_ap[~ok]).all()
    assert res.role_map(1) == 1.0 and res.role_map(2) == 1.0
    # person boxes moved off the image: every detection is a false positive
    shifted = det.person_boxes + 10000.0
    res = vcoco_role_ap(VCOCODetections(det.image_ids, shifted, agent, role_boxes, role_scores), gt)
    assert res.agent_map == 0.0 and res.role_map(1) == 0.0


def test_pair_annotation_files_resolve_like_the_bundled_dataset(bundled_gt) -> None:
    path = shared_file("v-coco/instances_vcoco_test.json")
    gt = resolve_vcoco_ground_truth(str(path))
    np.testing.assert_array_equal(gt.person_boxes, bundled_gt.person_boxes)
    np.testing.assert_array_equal(gt.person_actions, bundled_gt.person_actions)


# --------------------------------------------------------------------------- CLI
def _cli(args: list[str]):
    from hoibench.cli import cli

    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_cli_scores_and_writes_json_and_csv(tmp_path, synthetic) -> None:
    coco, vcoco, det = synthetic
    (tmp_path / "coco.json").write_text(json.dumps(coco))
    (tmp_path / "vcoco.json").write_text(json.dumps(vcoco))
    write_vsrl_detections(det, tmp_path / "d.pkl")
    r = _cli(["eval", "vcoco", "--gt", str(tmp_path / "vcoco.json"), "--coco-instances", str(tmp_path / "coco.json"),
              "--save-gt", str(tmp_path / "gt.json"), "--pred", str(tmp_path / "d.pkl"),
              "--json", str(tmp_path / "res.json"), "--per-class", str(tmp_path / "pc.csv"),
              "--plot", str(tmp_path / "ap.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "ap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "role AP scenario 1 (24 pairs)" in r.output
    res = json.loads((tmp_path / "res.json").read_text())
    expected = vcoco_role_ap(det, vcoco_ground_truth_from_official(vcoco, coco))
    assert res["kind"] == "vcoco_role_ap" and res["complete_ground_truth"] is True
    assert res["scenario_2"]["role_map_24"] == pytest.approx(100 * expected.role_map(2))
    assert res["agent_map"] == pytest.approx(100 * expected.agent_map)
    rows = list(csv.DictReader((tmp_path / "pc.csv").open()))
    assert len(rows) == N_ACT + N_ROLE and rows[0]["class"] == "hold"
    # the saved ground truth gives the same numbers, scenario 1 only
    r = _cli(["eval", "vcoco", "--gt", str(tmp_path / "gt.json"), "--pred", str(tmp_path / "d.pkl"),
              "--scenario", "1", "--json", "-"])
    again = json.loads(r.output)
    assert "scenario_2" not in again
    assert again["scenario_1"] == res["scenario_1"]


def test_cli_bad_input_is_one_line(tmp_path, capsys) -> None:
    from hoibench.cli import main

    path = tmp_path / "d.json"
    row = _vsrl_row(image_id=123456789)
    path.write_text(json.dumps([row]))
    with pytest.raises(SystemExit) as exc:
        main(["eval", "vcoco", "--gt", "v-coco:test", "--pred", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "record 0: image_id: image 123456789 is not in the ground truth" in err[-1]


def _plain_scores(im: dict) -> None:
    """Null scores as 0.0 (the variants put in their own nulls)."""
    for key in ("agent_scores", "role_scores"):
        im[key] = [[0.0 if v is None else v for v in row] for row in im[key]]


@pytest.fixture(autouse=True)
def _careful_path(monkeypatch):
    """These tests pin the careful reader, so the C scanner in front of it is off;
    :func:`_every_reader` turns it on for the scanner's own comparison."""
    import hoibench.formats._scan as scan

    monkeypatch.setattr(scan, "_colscan", None)


def _every_reader(path, monkeypatch, **kw) -> dict[str, object]:
    """What the C scanner (in front of the careful reader) and the careful reader alone make of
    ``path``: (detections, records, dropped, layout), or the error line; and whether the
    scanner's word stood (a reading or an error line, not a hand-over to the careful reader)."""
    import hoibench.formats._scan as scan
    import hoibench.formats.vcoco_predictions as mod

    native = scan._NATIVE
    assert native is not None or not scan.BUILT, "the C scanner is built but cannot be imported"
    out: dict[str, object] = {}
    for label in ("native", "careful"):
        with monkeypatch.context() as m:
            declined: list[bool] = []

            def spy(*a, seen=declined, read=mod._native):
                got = read(*a)  # a reading, or its error line: the scanner's word stands
                seen.append(got is None)
                return got

            m.setattr(mod, "_native", spy)
            if label == "native":
                m.setattr(scan, "_colscan", native)
            try:
                got = read_vcoco_detections(path, **kw)
                out[label] = (got.detections, got.records.tolist(), got.dropped, got.layout)
            except FormatError as exc:
                out[label] = str(exc)
            if label == "native":
                out["scanned"] = native is not None and not any(declined)
    return out


def _same_reading(got: dict[str, object]) -> None:
    """The scanner's reading (or error line) is the careful reader's."""
    if isinstance(got["careful"], str):
        assert got["native"] == got["careful"]
        return
    assert not isinstance(got["native"], str), got["native"]
    _same(got["native"][0], got["careful"][0])
    assert got["native"][1:] == got["careful"][1:]


def _vcoco_variant(doc: dict, variant: str) -> str:
    """The shared-role-box file ``doc`` (plain numbers) changed as ``variant`` says, as text."""
    ims = doc["images"]
    if variant == "indented":
        return json.dumps(doc, indent=2)
    if variant == "class subsets":  # columns listed in another order, some left out
        names, roles = list(vcoco_action_names()), list(vcoco_role_classes())
        a_keep, r_keep = list(range(N_ACT - 1, 2, -2)), list(range(0, N_ROLE, 3))
        doc["agent_classes"] = [names[i] for i in a_keep]
        doc["role_classes"] = [roles[i] for i in r_keep]
        for im in ims:
            im["agent_scores"] = [[row[i] for i in a_keep] for row in im["agent_scores"]]
            im["role_scores"] = [[row[i] for i in r_keep] for row in im["role_scores"]]
            im["role_objects"] = [[row[i] for i in r_keep] for row in im["role_objects"]]
    elif variant == "empty image, ids from names":
        ims.insert(2, {**ims[0], "image_id": 77, "person_boxes": [], "agent_scores": [], "object_boxes": [],
                       "role_objects": [], "role_scores": []})
        for im in ims[3:]:
            im["file_name"] = f"COCO_val2014_{im.pop('image_id'):012d}.jpg"
        ims[1]["image_id"] = float(ims[1]["image_id"])  # 1007.0: an integer, as the careful reader takes it
    elif variant == "escaped class name":
        doc["agent_classes"] = list(vcoco_action_names())
        return json.dumps(doc).replace('"hold"', '"\\u0068old"', 1)
    elif variant == "null score":
        ims[1]["role_scores"][0][3] = None
    elif variant in ("dense role boxes in one image", "dense role boxes", "dense, a ragged row"):
        for im in ims[2:3] if variant == "dense role boxes in one image" else ims:
            objs = im.pop("object_boxes")
            im["role_boxes"] = [[objs[j] if j >= 0 else None for j in row] for row in im.pop("role_objects")]
        if variant == "dense, a ragged row":  # the right number of boxes in the image, not per row
            im = next(im for im in ims if len(im["role_boxes"]) >= 2)
            im["role_boxes"][1].append(im["role_boxes"][0].pop())
        elif variant == "dense role boxes":
            ims[1]["role_boxes"][0][2] = [1, None, 3, 4]  # a null coordinate: a bad role box
            ims[1]["object_boxes"] = [[1, 2, 3, 4]]  # ignored without role_objects
    elif variant == "true among numbers":  # numpy would make it 1.0
        ims[1]["agent_scores"][0][0] = True
    elif variant == "dense, every role box null":  # rows of nulls only: no role objects
        for im in ims:
            im.pop("object_boxes")
            im["role_boxes"] = [[None] * len(row) for row in im.pop("role_objects")]
    elif variant == "no role classes":
        doc["role_classes"] = []
        for im in ims:
            for key in ("role_scores", "role_objects"):
                im[key] = [[] for _ in im[key]]
    elif variant == "null role object":
        ims[3]["role_objects"][0][1] = None
    elif variant == "null person box":
        ims[1]["person_boxes"][0] = None
    elif variant == "index past the image's objects":
        ims[3]["role_objects"][0][1] = len(ims[3]["object_boxes"])
    elif variant == "index past 64 bits":
        ims[3]["role_objects"][0][1] = 2**70
    elif variant == "index as a fraction":
        ims[3]["role_objects"][0][1] = 0.5
    elif variant == "row of 3 and a row of 5":
        ims[1]["person_boxes"][0] = [1, 2, 3]
        ims[1]["person_boxes"][1] = [0, 1, 2, 3, 4]
    elif variant == "string image id":
        ims[0]["image_id"] = str(ims[0]["image_id"])
    elif variant == "unknown class":
        doc["agent_classes"] = ["fly", *vcoco_action_names()[1:]]
    elif variant == "inverted box":
        ims[2]["person_boxes"][0] = [50, 50, 10, 10]
    elif variant == "NaN literal":
        ims[2]["agent_scores"][0][0] = float("nan")
    elif variant == "images twice":
        return json.dumps(doc)[:-1] + ', "images": ' + json.dumps(ims[:2]) + "}"
    elif variant == "braces in strings":
        ims[0]["note"] = "},{"  # an image end and start to a reader that counted braces
        return json.dumps(doc, indent=2)
    elif variant == "objects around images":
        return json.dumps({"meta": {"a": {"b": [1]}}, **doc, "after": {"c": [{}]}}, indent=1)
    elif variant == "text after":
        return json.dumps(doc) + " x"
    return json.dumps(doc)


VCOCO_VARIANTS = {  # variant: whether the scanner's reading stands
    "plain": True, "indented": True, "class subsets": True, "empty image, ids from names": True,
    "escaped class name": True, "inverted box": True, "null score": True, "dense role boxes": True,
    "dense role boxes in one image": False, "dense, a ragged row": False, "null role object": True,
    "null person box": False, "no role classes": True,
    "index past the image's objects": False, "index past 64 bits": False, "index as a fraction": False,
    "row of 3 and a row of 5": False, "string image id": False, "unknown class": True, "NaN literal": False,
    "images twice": False, "text after": False, "dense, every role box null": True,
    "true among numbers": False, "braces in strings": True, "objects around images": True,
}


@pytest.mark.parametrize("lenient", [False, True])
@pytest.mark.parametrize("variant", list(VCOCO_VARIANTS))
def test_scanner_equals_the_careful_reader(tmp_path, synthetic, file_access, monkeypatch, variant: str,
                                           lenient: bool) -> None:
    """The C scanner reads the hoibench layout in one pass; on every file it gives what the
    careful reader gives (arrays, records, drops, or the same error line), and it stands aside
    (the careful reader decides) on what it does not prove."""
    _, _, det = synthetic
    write_vcoco_detections(det.subset(np.argsort(det.image_ids, kind="stable")), tmp_path / "d.json")
    doc = json.loads((tmp_path / "d.json").read_text())
    for im in doc["images"]:
        _plain_scores(im)
    (tmp_path / "v.json").write_text(_vcoco_variant(doc, variant))
    got = _every_reader(tmp_path / "v.json", monkeypatch, lenient=lenient)
    _same_reading(got)
    import hoibench.formats._scan as scan

    if scan._NATIVE is not None:
        assert got["scanned"] == VCOCO_VARIANTS[variant]
    if variant == "inverted box":  # named, or dropped and counted
        assert got["careful"][2] if lenient else "record 2: person_box" in got["careful"]
    if variant == "true among numbers":  # refused, not read as 1.0
        assert "record 1: agent_scores: expected numbers (or null), got True" in got["careful"]


@pytest.mark.parametrize(("change", "message"), [
    (lambda im: im["person_boxes"].__setitem__(0, [1, 2, 3]) or im["person_boxes"].__setitem__(1, [0, 1, 2, 3, 4]),
     r"record 0: person_boxes: expected numbers \(or null\) of the documented shape"),
    (lambda im: im["role_objects"][0].__setitem__(0, 2 ** 32), r"record 0: role_objects: expected indices"),
    (lambda im: im["role_objects"][0].__setitem__(0, 2 ** 70), r"record 0: role_objects: expected indices"),
    (lambda im: im["person_boxes"][0].__setitem__(1, [im["person_boxes"][0][1]]),
     r"record 0: person_boxes: expected numbers"),
    (lambda im: im["agent_scores"][1].__setitem__(1, [im["agent_scores"][1][1]]),
     r"record 0: agent_scores: expected numbers"),
])
def test_errors_name_record_and_field_with_and_without_the_scanner(tmp_path, synthetic, file_access, monkeypatch,
                                                                   change, message) -> None:
    """Jagged rows with the right total, an index past int32 or past 64 bits, a number nested
    in a row (``[x, [y], w, h]``): never read as numbers, by either tier."""
    _, _, det = synthetic
    write_vcoco_detections(det.subset(np.argsort(det.image_ids, kind="stable")), tmp_path / "d.json")
    doc = json.loads((tmp_path / "d.json").read_text())
    _plain_scores(doc["images"][0])
    change(doc["images"][0])
    (tmp_path / "d.json").write_text(json.dumps(doc))
    got = _every_reader(tmp_path / "d.json", monkeypatch)
    assert isinstance(got["careful"], str) and got["native"] == got["careful"]
    assert __import__("re").search(message, got["careful"])


def test_column_stacked_scores_score_like_row_major_ones(tmp_path, synthetic) -> None:
    """The careful reader stores the scores class by class; the detections keep that layout (no
    copy) and the metric's result is the same as on C-ordered copies of the same arrays."""
    from hoibench.data._vcoco import columns_contiguous

    coco, vcoco, det = synthetic
    write_vcoco_detections(det.subset(np.argsort(det.image_ids, kind="stable")), tmp_path / "d.json")
    back = read_vcoco_detections(tmp_path / "d.json").detections
    assert columns_contiguous(back.agent_scores) and columns_contiguous(back.role_scores)
    import hoibench.formats._scan as scan

    if scan._NATIVE is not None:  # the scanner's reading stores them so too
        with pytest.MonkeyPatch.context() as m:
            m.setattr(scan, "_colscan", scan._NATIVE)
            native = read_vcoco_detections(tmp_path / "d.json").detections
        assert columns_contiguous(native.agent_scores) and columns_contiguous(native.role_scores)
    assert not back.agent_scores.flags.c_contiguous
    rows = VCOCODetections(back.image_ids, back.person_boxes, np.ascontiguousarray(back.agent_scores),
                           back.role_boxes, np.ascontiguousarray(back.role_scores))
    assert rows.agent_scores.flags.c_contiguous
    g = vcoco_ground_truth_from_official(vcoco, coco)
    a, b = vcoco_role_ap(back, g), vcoco_role_ap(rows, g)
    assert np.isfinite(a.agent_ap).any()
    np.testing.assert_array_equal(a.agent_ap, b.agent_ap)
    for s in a.role_ap:
        np.testing.assert_array_equal(a.role_ap[s], b.role_ap[s])


def test_uneven_images_read_alike_with_and_without_the_scanner(tmp_path, synthetic, file_access,
                                                               monkeypatch) -> None:
    """A small first image then large ones: the careful reader's reading is the scanner's."""
    _, _, det = synthetic
    det = det.subset(np.argsort(det.image_ids, kind="stable"))
    write_vcoco_detections(det, tmp_path / "d.json")
    doc = json.loads((tmp_path / "d.json").read_text())
    big = dict(doc["images"][1])
    _plain_scores(big)
    for k in range(60):  # many more people on added images than on the first
        im = {key: (val * 40 if isinstance(val, list) and key != "object_boxes" else val) for key, val in big.items()}
        im["image_id"] = 10 ** 6 + k
        doc["images"].append(im)
    doc["images"][0] = {**doc["images"][0], **{key: doc["images"][0][key][:1] for key in
                                                 ("person_boxes", "agent_scores", "role_objects", "role_scores")}}
    (tmp_path / "u.json").write_text(json.dumps(doc))
    _same_reading(_every_reader(tmp_path / "u.json", monkeypatch))


def test_vsrl_pickle_is_streamed_and_loads_as_the_plain_list(tmp_path, synthetic) -> None:
    """Past the writer's memo clears (every 1,000 records): the file loads with plain
    ``pickle.load`` as vsrl_eval's list of dicts (numpy float32 values), every record exact, and
    reads back to the same detections."""
    from hoibench.data._vcoco import vcoco_schema

    _, _, det = synthetic
    reps = -(-2500 // len(det))
    big = VCOCODetections.concat([det] * reps)
    write_vsrl_detections(big, tmp_path / "d.pkl")
    rows = pickle.loads((tmp_path / "d.pkl").read_bytes())
    assert type(rows) is list and len(rows) == len(big) > 2000
    names, roles = vcoco_schema()
    for k in (0, 999, 1000, 1001, 2000, len(big) - 1):
        r = rows[k]
        assert r["image_id"] == int(big.image_ids[k])
        np.testing.assert_array_equal(r["person_box"], big.person_boxes[k])
        assert type(r[f"{names[3]}_agent"]) is np.float32
        np.testing.assert_array_equal(np.array([r[f"{a}_agent"] for a in names], dtype=np.float32),
                                      big.agent_scores[k].astype(np.float32))
        j = 0
        for a, rs in zip(names, roles):
            for role in rs[1:]:
                v = r[f"{a}_{role}"]
                assert v.dtype == np.float32 and v.shape == (5,)
                np.testing.assert_array_equal(v[:4], big.role_boxes[k, j].astype(np.float32))
                np.testing.assert_array_equal(v[4], np.float32(big.role_scores[k, j]))
                j += 1
    _same(big, read_vcoco_detections(tmp_path / "d.pkl").detections)


@pytest.mark.parametrize("share", [True, False])
def test_scanner_frees_each_column_once_converted(tmp_path, synthetic, monkeypatch, share: bool) -> None:
    """The scanner's float64 columns are twice the float32 arrays made of them: each must be gone
    (no reference left) by the time the detections are built, or the peak grows by them all."""
    import weakref

    import hoibench.formats._scan as scan
    import hoibench.formats.vcoco_predictions as mod

    if scan._NATIVE is None:
        pytest.skip("the C scanner is not built here")
    monkeypatch.setattr(scan, "_colscan", scan._NATIVE)
    _, _, det = synthetic
    write_vcoco_detections(det.subset(np.argsort(det.image_ids, kind="stable")), tmp_path / "d.json",
                           share_role_boxes=share)
    refs: dict[str, weakref.ref] = {}
    alive: list[list[str]] = []
    scan_document, detections = scan.scan_document, mod.VCOCODetections

    def spy(*a, **k):
        got = scan_document(*a, **k)
        refs.update({key: weakref.ref(col) for key, col in got.items() if col.values.size > 100})
        return got

    def built(*a):
        alive.append([key for key, ref in refs.items() if ref() is not None])
        return detections(*a)

    monkeypatch.setattr(scan, "scan_document", spy)
    monkeypatch.setattr(mod, "VCOCODetections", built)
    mod.read_vcoco_detections(tmp_path / "d.json")
    assert len(refs) == (5 if share else 4) and alive == [[]], (sorted(refs), alive)
