"""``_scan.not_a_number`` (the careful readers' check of the numbers inside a parsed list), and
the V-COCO layout described once for the C scanner and the careful reader (no extension needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hoibench.formats._scan as S
from hoibench._exceptions import FormatError
from hoibench.data import VCOCODetections


def test_not_a_number_looks_inside_arrays_and_tuples() -> None:
    assert S.not_a_number(np.zeros((2, 3))) == ()
    assert S.not_a_number([(1, 2), np.array([3.0]), None]) == ()
    assert S.not_a_number([1, None], nulls=False) == (None,)
    assert S.not_a_number([[1], [np.bool_(True)]]) == (np.bool_(True),)
    assert S.not_a_number([2**80, 1.5]) == ()  # a huge integer is a number (its range is the reader's)
    assert S.not_a_number([[0.5, True], [1.0, 2.0]]) == (True,)  # numpy would make it 1.0
    assert S.not_a_number([[0, "1"]]) == ("1",)
    assert S.not_a_number(True) == (True,)


def test_vcoco_layout_is_one_description_for_both_tiers(tmp_path) -> None:
    """The V-COCO reader's scanner schema is what its careful reader checks a file against."""
    import hoibench.formats.vcoco_predictions as mod

    rng = np.random.default_rng(0)
    det = VCOCODetections(np.array([3, 3, 5]), rng.random((3, 4)) + np.array([0, 0, 1, 1]), rng.random((3, 26)),
                          np.full((3, 25, 4), np.nan), rng.random((3, 25)))
    for share in (True, False):
        mod.write_vcoco_detections(det, tmp_path / "d.json", share_role_boxes=share)
        doc = json.loads((tmp_path / "d.json").read_text())
        for i, im in enumerate(doc["images"]):
            S.conform(im, mod._IMAGES, file="d.json", record=i)
    assert mod._LAYOUT[2][1][-1] is mod._IMAGES
    with pytest.MonkeyPatch.context() as m:
        m.setattr(S, "_colscan", None)  # the careful reader alone
        for value, line in ((7, "record 1: role_scores: expected a list, got int"),
                            ([["0.5"]], "record 1: role_scores: expected numbers (or null), got '0.5'"),
                            (None, "record 1: role_scores: missing")):
            doc["images"][1]["role_scores"] = value
            (tmp_path / "d.json").write_text(json.dumps(doc))
            with pytest.raises(FormatError) as exc:
                mod.read_vcoco_detections(tmp_path / "d.json")
            assert str(exc.value).endswith(line)
