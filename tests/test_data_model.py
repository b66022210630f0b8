"""The columnar data model: construction, per-image views, derivation, validation."""

from __future__ import annotations

import numpy as np
import pytest

from hoibench import ValidationError
from hoibench.data import HOIDataset, HOIImage, validate_dataset
from hoibench.vocab import hico_det, vcoco

H = hico_det()
P = H.person
BED = H.object_index("bed")
SIT_ON = H.verb_index("sit_on")
LIE_ON = H.verb_index("lie_on")


def _toy() -> HOIDataset:
    return HOIDataset.from_images(H, [
        HOIImage.from_lists("a.jpg", [[0, 0, 10, 10], [5, 5, 20, 20]], [P, BED],
                            [[0, 1, SIT_ON], [0, 1, LIE_ON]], width=30, height=40),
        HOIImage.from_lists("b.jpg", [], [], [], width=8, height=9),
        HOIImage.from_lists("c.jpg", [[1, 1, 2, 2], [3, 3, 4, 4], [0, 0, 9, 9]], [P, P, BED],
                            [[1, 2, SIT_ON]], image_id=7),
    ], name="toy")


def test_from_images_and_image_view_round_trip():
    ds = _toy()
    assert (ds.n_images, ds.n_boxes, ds.n_pairs) == (3, 5, 3)
    c = ds.image(2)
    assert c.file_name == "c.jpg" and c.image_id == 7
    assert c.pairs.tolist() == [[1, 2, SIT_ON]]
    assert ds.pair_subject.tolist() == [0, 0, 3]  # global indices
    assert ds.pair_image.tolist() == [0, 0, 2]
    rebuilt = HOIDataset.from_images(H, list(ds))
    assert rebuilt.equals(ds)


def test_columnar_views_and_summary():
    ds = _toy()
    assert ds.pair_object_label.tolist() == [BED, BED, BED]
    assert ds.pair_hoi.tolist() == H.hoi_index([SIT_ON, LIE_ON, SIT_ON], [BED] * 3).tolist()
    s = ds.summary()
    assert s == {"images": 3, "empty_images": 1, "pairs": 3, "boxes": 5, "combinations": 2,
                 "objects": 1, "verbs": 2, "pairs_without_object": 0}
    assert ds.hoi_counts().sum() == 3
    with pytest.raises(ValueError):
        ds.boxes[0, 0] = 1.0  # read-only


def test_subset_keeps_order_and_remaps_boxes():
    ds = _toy()
    sub = ds.subset([2, 0])
    assert sub.file_names == ("c.jpg", "a.jpg")
    assert sub.image(0).pairs.tolist() == [[1, 2, SIT_ON]]
    assert np.array_equal(sub.image(0).boxes, ds.image(2).boxes)
    assert sub.image(1).pairs.tolist() == ds.image(0).pairs.tolist()
    assert ds.subset(np.array([False, True, False])).file_names == ("b.jpg",)
    with pytest.raises(ValidationError):
        ds.subset(np.array([True]))


def test_filter_pairs_with_and_without_pruning():
    ds = _toy()
    keep = ds.pair_verb == SIT_ON
    f = ds.filter_pairs(keep)
    assert f.n_pairs == 2 and f.n_boxes == ds.n_boxes
    assert f.image(0).pairs.tolist() == [[0, 1, SIT_ON]]
    g = ds.filter_pairs(np.array([False, False, True]), prune_boxes=True)
    assert g.n_boxes == 2 and g.image(2).pairs.tolist() == [[0, 1, SIT_ON]]
    assert np.array_equal(g.image(2).boxes, ds.image(2).boxes[[1, 2]])


def test_concat_shifts_indices():
    ds = _toy()
    both = HOIDataset.concat([ds, ds.subset([2])])
    assert both.n_images == 4
    assert both.image(3).pairs.tolist() == ds.image(2).pairs.tolist()
    assert np.array_equal(both.image(3).boxes, ds.image(2).boxes)
    with pytest.raises(ValidationError, match="cannot concatenate"):
        HOIDataset.concat([ds, HOIDataset.from_images(vcoco(), [])])


def test_pairs_without_object():
    v = vcoco()
    ds = HOIDataset.from_images(v, [HOIImage.from_lists("x.jpg", [[0, 0, 5, 5]], [v.person],
                                                        [[0, -1, v.verb_index("walk")]])])
    assert ds.pair_object.tolist() == [-1]
    assert ds.pair_object_label.tolist() == [-1]
    assert np.isnan(ds.pair_object_boxes).all()
    assert ds.summary()["pairs_without_object"] == 1
    assert validate_dataset(ds) == []


def test_validate_reports_every_problem_with_record_and_field():
    ds = HOIDataset.from_images(H, [
        HOIImage.from_lists("a.jpg", [[0, 0, 10, 10], [5, 5, np.nan, 20]], [P, BED], [[0, 1, 500]]),
        HOIImage.from_lists("b.jpg", [[10, 10, 0, 0], [0, 0, 1, 1]], [P, 99], [[1, 0, 0]]),
        HOIImage.from_lists("a.jpg", [], [], []),
    ])
    msgs = [p.format("f.json") for p in validate_dataset(ds)]
    assert "f.json: record 0: boxes[1]: non-finite coordinate [5.0, 5.0, nan, 20.0]" in msgs
    assert any(m.startswith("f.json: record 0: pairs[0].verb: verb id 500") for m in msgs)
    assert any(m.startswith("f.json: record 1: boxes[0]: inverted box") for m in msgs)
    assert any(m.startswith("f.json: record 1: boxes[1].category: object id 99") for m in msgs)
    assert any("record 1: pairs[0].subject: subject box is not labelled person" in m for m in msgs)
    assert any("record 0: file_name: duplicate image 'a.jpg'" in m for m in msgs)
    # dangling reference: a pair pointing at another image's box
    bad = HOIDataset(vocab=H, file_names=["a", "b"], widths=[0, 0], heights=[0, 0], image_ids=[-1, -1],
                     box_offsets=[0, 1, 2], boxes=[[0, 0, 1, 1], [0, 0, 1, 1]], box_labels=[P, BED],
                     pair_offsets=[0, 1, 1], pair_subject=[0], pair_object=[1], pair_verb=[0])
    assert [p.field for p in validate_dataset(bad)] == ["pairs[0].object"]


def test_subset_with_an_image_twice_gives_each_copy_its_own_boxes():
    from hoibench.datasets import load_dataset

    ds = load_dataset("hico-det:test")
    rows = [3, 0, 3, 7, 3]
    sub = ds.subset(rows)
    # every pair points at boxes of its own image row (not at the last copy's)
    assert np.array_equal(sub.box_image[sub.pair_subject], sub.pair_image)
    has_obj = sub.pair_object >= 0
    assert np.array_equal(sub.box_image[sub.pair_object[has_obj]], sub.pair_image[has_obj])
    for k, i in enumerate(rows):
        src = slice(ds.pair_offsets[i], ds.pair_offsets[i + 1])
        dst = slice(sub.pair_offsets[k], sub.pair_offsets[k + 1])
        assert np.array_equal(sub.boxes[sub.pair_subject[dst]], ds.boxes[ds.pair_subject[src]])
        assert np.array_equal(sub.pair_verb[dst], ds.pair_verb[src])
