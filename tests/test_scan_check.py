"""``_scan.check``: the careful readers' check of a parsed value against the same field
description the C scanner reads (no extension needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hoibench.formats._scan as S
from hoibench._exceptions import FormatError
from hoibench.data import VCOCODetections

ROOT = S.field("", S.OBJECT, S.field("names", S.STRS),
               S.field("images", S.RECORDS, S.field("image_id", S.NUM), S.field("file_name", S.STR),
                       S.field("boxes", S.ROWS, nulls=True), S.field("labels", S.NUMS),
                       S.field("roles", S.ROWS3, null_row=4)))


def _error(doc: object, root: tuple = ROOT) -> str:
    with pytest.raises(FormatError) as exc:
        S.check(doc, root, file="f.json")
    return str(exc.value)


def _doc(**image: object) -> dict:
    good = {"image_id": 1, "file_name": "a.jpg", "boxes": [[0, 0, 1, 1], None, [1, None, 2, 3]],
            "labels": [1, 2.5], "roles": [[[0, 0, 1, 1], None]], "other": {"x": "y"}}
    return {"names": ["a"], "images": [good, {**good, **image}]}


def test_a_file_as_described_passes() -> None:
    S.check(_doc(), ROOT, file="f.json")  # nulls where allowed, shapes left to the reader, other keys skipped
    S.check(_doc(boxes=[[1, [2]], 3]), ROOT, file="f.json")


@pytest.mark.parametrize(("image", "line"), [
    ({"boxes": [[0, 0, "1", 1]]}, "record 1: boxes: expected numbers (or null), got '1'"),
    ({"boxes": [[0, 0, True, 1]]}, "record 1: boxes: expected numbers (or null), got True"),
    ({"labels": [1, None]}, "record 1: labels: expected numbers, got None"),
    ({"roles": [[{"x": 1}]]}, "record 1: roles: expected numbers (or null), got {'x': 1}"),
    ({"image_id": "7"}, "record 1: image_id: expected a number, got '7'"),
    ({"image_id": False}, "record 1: image_id: expected a number, got False"),
    ({"file_name": 7}, "record 1: file_name: expected a string, got 7"),
])
def test_each_kind_names_file_record_and_field(image: dict, line: str) -> None:
    assert _error(_doc(**image)) == f"f.json: {line}"


def test_records_objects_and_strict_keys() -> None:
    assert _error({"images": [{}, [1]]}) == "f.json: record 1: expected an object, got list"
    assert _error({"images": {}}) == "f.json: images: expected a list, got dict"
    assert _error({"names": ["a", 1], "images": []}) == "f.json: names: expected a list of strings"
    strict = S.field("", S.OBJECT, S.field("images", S.RECORDS, S.field("a", S.NUM), strict=True))
    assert _error({"images": [{"a": 1}, {"a": 2, "b": 3}]}, strict) == "f.json: record 1: b: unknown key"


def test_first_fault_in_the_descriptions_order() -> None:
    doc = _doc(labels=["x"], boxes=[["y"]])
    assert _error(doc) == "f.json: record 1: boxes: expected numbers (or null), got 'y'"


def test_not_a_number_looks_inside_arrays_and_tuples() -> None:
    assert S.not_a_number(np.zeros((2, 3))) == ()
    assert S.not_a_number([(1, 2), np.array([3.0]), None]) == ()
    assert S.not_a_number([1, None], nulls=False) == (None,)
    assert S.not_a_number([[1], [np.bool_(True)]]) == (np.bool_(True),)
    assert S.not_a_number([2**80, 1.5]) == ()  # a huge integer is a number (its range is the reader's)


def test_vcoco_layout_is_one_description_for_both_tiers(tmp_path) -> None:
    """The V-COCO reader's scanner schema is what its careful reader checks a file against."""
    import hoibench.formats.vcoco_predictions as mod

    rng = np.random.default_rng(0)
    det = VCOCODetections(np.array([3, 3, 5]), rng.random((3, 4)) + np.array([0, 0, 1, 1]), rng.random((3, 26)),
                          np.full((3, 25, 4), np.nan), rng.random((3, 25)))
    for share in (True, False):
        mod.write_vcoco_detections(det, tmp_path / "d.json", share_role_boxes=share)
        doc = json.loads((tmp_path / "d.json").read_text())
        S.check(doc, mod._LAYOUT, file="d.json")
    assert set(mod._IMAGE_FIELD) == {"image_id", "file_name", "person_boxes", "agent_scores", "object_boxes",
                                     "role_objects", "role_scores", "role_boxes"}
    doc["images"][1]["role_scores"][0][2] = "0.5"
    (tmp_path / "d.json").write_text(json.dumps(doc))
    line = "record 1: role_scores: expected numbers (or null), got '0.5'"
    assert _error(doc, mod._LAYOUT).endswith(line)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(S, "_colscan", None)  # the careful reader alone
        with pytest.raises(FormatError, match=line.replace("(", r"\(").replace(")", r"\)")):
            mod.read_vcoco_detections(tmp_path / "d.json")
