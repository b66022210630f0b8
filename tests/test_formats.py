"""Annotation formats: real-file counts, lossless round trips, detection, the .mat reader, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoibench import ConfigError, FormatError
from hoibench.data import HOIDataset, HOIImage
from hoibench.formats import (
    detect_format,
    read_dataset,
    read_hake,
    read_hico_mat,
    read_hicodet,
    read_ppdm,
    write_dataset,
    write_hicodet,
    write_ppdm,
)
from hoibench.vocab import hico_det, vcoco
from tests.conftest import shared_file


def _round_trip(ds: HOIDataset, tmp_path, fmt: str) -> HOIDataset:
    out = tmp_path / f"rt_{fmt}.json"
    write_dataset(ds, out, format=fmt)
    back = read_dataset(out)
    assert detect_format(out) == fmt
    return back


# ---------------------------------------------------------------- real files
def test_hicodet_test_file_counts_and_round_trip(tmp_path):
    path = shared_file("hico-det/instances_test2015.json")
    ds = read_dataset(path)
    assert detect_format(path) == "hicodet"
    s = ds.summary()
    assert (s["images"], s["empty_images"], s["pairs"], s["combinations"]) == (9658, 112, 33405, 600)
    # 1-based toolkit boxes become 0-based: first pair of image 0 is [320, 306, 359, 349] there
    assert ds.image(0).boxes[0].tolist() == [319.0, 305.0, 358.0, 348.0]
    assert ds.image(0).width == 640 and ds.image(0).height == 427
    back = _round_trip(ds, tmp_path, "hicodet")
    assert back.differences(ds) == []
    # the written file equals the original in every field the toolkit defines
    orig = json.loads(path.read_text())
    ours = json.loads((tmp_path / "rt_hicodet.json").read_text())
    for key in ("filenames", "size", "empty", "objects", "verbs", "correspondence", "rare", "non_rare"):
        assert ours[key] == orig[key], key
    assert ours["annotation"] == orig["annotation"]


def test_hicodet_to_ppdm_and_back_keeps_pairs(tmp_path):
    ds = read_dataset(shared_file("hico-det/instances_test2015.json"))
    via = _round_trip(ds, tmp_path, "ppdm")
    assert via.differences(ds) == []  # sizes are written as extra keys, so nothing is lost


def test_ppdm_sg_file_counts_and_round_trip(tmp_path):
    path = shared_file("hoi-sg/test_hico_sg1.json")
    ds = read_dataset(path)
    assert detect_format(path) == "ppdm" and ds.vocab.name == "hico-det"
    s = ds.summary()
    assert (s["images"], s["pairs"], s["combinations"]) == (8515, 14475, 60)
    assert ds.image_ids[0] == 5
    back = _round_trip(ds, tmp_path, "ppdm")
    assert back.differences(ds) == []
    # entries are written as released (same ids, integral boxes as ints); the released file has
    # hoi_category_id only on entries from the original train set, we write it everywhere
    orig = json.loads(path.read_text())
    ours = json.loads((tmp_path / "rt_ppdm.json").read_text())
    for entries in (orig, ours):
        for e in entries:
            for h in e["hoi_annotation"]:
                h.pop("hoi_category_id", None)
    assert ours == orig


def test_ppdm_vcoco_variant_round_trip(tmp_path):
    path = shared_file("hoi-sg/test_vcoco_sg1.json")
    ds = read_dataset(path)
    assert ds.vocab.name == "v-coco"
    assert ds.n_images == 2850 and ds.n_pairs == 3872
    assert ds.summary()["pairs_without_object"] > 0
    back = _round_trip(ds, tmp_path, "ppdm")
    assert back.differences(ds) == []
    orig = json.loads(path.read_text())
    ours = json.loads((tmp_path / "rt_ppdm.json").read_text())
    assert [{k: e[k] for k in ("file_name", "hoi_annotation")} for e in ours] == \
        [{k: e[k] for k in ("file_name", "hoi_annotation")} for e in orig]
    assert [[a["category_id"] for a in e["annotations"]] for e in ours] == \
        [[a["category_id"] for a in e["annotations"]] for e in orig]


def test_hake_train_file_counts_and_one_based_boxes():
    path = shared_file("hico-det/hake/hico-det-instance-level.tar.gz")
    ds = read_dataset(path)
    assert detect_format(path) == "hake"
    s = ds.summary()
    assert (s["images"], s["empty_images"], s["pairs"]) == (38118, 485, 117654)
    # HAKE's 1-based [82, 154, 203, 272] is PPDM's 0-based [81, 153, 202, 271] for train image 5
    sg = read_ppdm(shared_file("hoi-sg/test_hico_sg1.json"))
    i = ds.index_of("HICO_train2015_00000005.jpg")
    j = sg.index_of("HICO_train2015_00000005.jpg")
    assert ds.image(i).boxes[0].tolist() == sg.image(j).boxes[sg.image(j).pairs[0, 0]].tolist()
    # HAKE lacks exactly 217 official pairs, all no_interaction
    official = hico_det().train_counts_official()
    diff = official - ds.hoi_counts()
    assert diff.sum() == 217 and (diff >= 0).all()
    assert all(hico_det().verbs[hico_det().hoi_verb_object[h, 0]] == "no_interaction"
               for h in np.flatnonzero(diff))


def test_vcoco_instances_files():
    for split, (n_img, n_pairs) in {"test": (4946, 12402), "trainval": (5400, 13817)}.items():
        path = shared_file(f"v-coco/instances_vcoco_{split}.json")
        ds = read_dataset(path)
        assert detect_format(path) == "vcoco"
        assert (ds.n_images, ds.n_pairs) == (n_img, n_pairs)
        assert ds.vocab.name == "v-coco"
        data = json.loads(path.read_text())
        assert ds.image_ids.tolist() == data["images"]
        # action-role names map onto the 29 verbs
        first = next(a for a in data["annotations"] if a["actions"])
        i = [a["file_name"] for a in data["annotations"]].index(first["file_name"])
        names = [vcoco().verbs[v] for v in ds.image(i).pairs[:, 2]]
        assert names == [data["classes"][a].replace(" ", "_") for a in first["actions"]]


# ---------------------------------------------------------------- the original .mat
def _write_anno_bbox_mat(path) -> None:
    from scipy.io import savemat

    def box(x1, y1, x2, y2):
        return {"x1": x1, "x2": x2, "y1": y1, "y2": y2}

    def struct_array(items):
        arr = np.empty((1, len(items)), dtype=object)
        for k, it in enumerate(items):
            arr[0, k] = it
        return arr

    h = hico_det()
    ride_horse = int(h.hoi_index(h.verb_index("ride"), h.object_index("horse")))
    feed_horse = int(h.hoi_index(h.verb_index("feed"), h.object_index("horse")))
    img1 = {
        "filename": "HICO_train2015_00000001.jpg",
        "size": {"width": 640, "height": 480, "depth": 3},
        "hoi": struct_array([
            {"id": ride_horse + 1, "bboxhuman": struct_array([box(10, 20, 110, 220), box(300, 20, 400, 220)]),
             "bboxobject": struct_array([box(5, 100, 200, 300)]),
             "connection": np.array([[1, 1], [2, 1]], dtype=float), "invis": 0},
            {"id": feed_horse + 1, "bboxhuman": np.zeros((0, 0)), "bboxobject": np.zeros((0, 0)),
             "connection": np.zeros((0, 0)), "invis": 1},
        ]),
    }
    img2 = {
        "filename": "HICO_train2015_00000002.jpg",
        "size": {"width": 320, "height": 240, "depth": 3},
        "hoi": struct_array([
            {"id": feed_horse + 1, "bboxhuman": struct_array([box(1, 1, 50, 60)]),
             "bboxobject": struct_array([box(40, 40, 100, 100)]),
             "connection": np.array([[1, 1]], dtype=float), "invis": 0},
        ]),
    }
    savemat(path, {"bbox_train": struct_array([img1, img2]), "bbox_test": struct_array([img2])})


def test_anno_bbox_mat_reader(tmp_path):
    path = tmp_path / "anno_bbox.mat"
    _write_anno_bbox_mat(path)
    assert detect_format(path) == "hico-mat"
    ds = read_hico_mat(path, split="train")
    h = hico_det()
    assert ds.file_names == ("HICO_train2015_00000001.jpg", "HICO_train2015_00000002.jpg")
    assert (ds.n_pairs, ds.widths.tolist(), ds.heights.tolist()) == (3, [640, 320], [480, 240])
    im = ds.image(0)
    # the invisible hoi entry adds nothing; both people ride the same horse
    assert [h.verbs[v] for v in im.pairs[:, 2]] == ["ride", "ride"]
    assert im.boxes[im.pairs[1, 0]].tolist() == [299.0, 19.0, 399.0, 219.0]  # 1-based → 0-based
    assert im.pairs[0, 1] == im.pairs[1, 1]
    assert read_dataset(path, split="test").n_images == 1
    # .mat → hicodet toolkit layout gives the toolkit's 1-based boxes back
    write_hicodet(ds, tmp_path / "inst.json")
    inst = json.loads((tmp_path / "inst.json").read_text())
    assert inst["annotation"][0]["boxes_h"] == [[10.0, 20.0, 110.0, 220.0], [300.0, 20.0, 400.0, 220.0]]
    # the toolkit layout stores two boxes per pair (shared boxes are repeated); pairs are equal
    back = read_hicodet(tmp_path / "inst.json")
    assert back.pair_subject_boxes.tolist() == ds.pair_subject_boxes.tolist()
    assert back.pair_object_boxes.tolist() == ds.pair_object_boxes.tolist()
    assert back.pair_verb.tolist() == ds.pair_verb.tolist()
    with pytest.raises(ConfigError):
        read_hico_mat(path, split="val")


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not valid JSON"),
    ('{"a": 1}', "unknown annotation format"),
    ('[{"file_name": "x.jpg", "annotations": [{"bbox": [0, 0, 1], "category_id": 1}], "hoi_annotation": []}]',
     "record 0: annotations[0].bbox: expected a box of 4 numbers"),
    ('[{"file_name": "x.jpg", "annotations": [{"bbox": [0, 0, 1, 1], "category_id": 12}], "hoi_annotation": []}]',
     "record 0: annotations[0].category_id: 12 is not a COCO category id"),
    ('[{"file_name": "HICO_x.jpg", "annotations": [{"bbox": [0, 0, 1, 1], "category_id": 1}], '
     '"hoi_annotation": [{"subject_id": 0, "object_id": 3, "category_id": 1}]}]',
     "record 0: hoi_annotation[0].object_id: 3 refers to no box"),
    ('[{"file_name": "HICO_x.jpg", "annotations": [{"bbox": [5, 0, 1, 1], "category_id": 1}], "hoi_annotation": []}]',
     "record 0: boxes[0]: inverted box"),
    ('[{"file_name": "HICO_x.jpg", "annotations": [{"bbox": [0, 0, NaN, 1], "category_id": 1}], "hoi_annotation": []}]',
     "record 0: boxes[0]: non-finite coordinate"),
    ('{"annotation": [{"boxes_h": [[1, 1, 2, 2]], "boxes_o": [[1, 1, 2, 2]], "object": [3], "verb": [900]}], '
     '"filenames": ["a.jpg"], "size": [[5, 5]]}', "record 0: annotation.verb[0]: 900 outside 0..116"),
    ('{"annotation": [{"boxes_h": [[1, 1, 2, 2]], "object": [3], "verb": [9]}], '
     '"filenames": ["a.jpg"], "size": [[5, 5]]}', "record 0: annotation.boxes_o: missing"),
])
def test_bad_files_raise_one_line_errors_naming_file_record_field(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(FormatError) as info:
        read_dataset(path)
    msg = str(info.value)
    assert message in msg and str(path) in msg and "\n" not in msg


def test_missing_file_and_unknown_format_name(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        read_dataset(tmp_path / "nope.json")
    ds = HOIDataset.from_images(hico_det(), [HOIImage.from_lists("a.jpg", [], [], [])])
    with pytest.raises(ConfigError, match="Did you mean 'ppdm'"):
        write_dataset(ds, tmp_path / "x.json", format="ppmd")
    with pytest.raises(ConfigError, match="read-only"):
        write_dataset(ds, tmp_path / "x.json", format="hake")


def test_writers_refuse_what_the_format_cannot_hold(tmp_path):
    v = vcoco()
    ds = HOIDataset.from_images(v, [HOIImage.from_lists("a.jpg", [[0, 0, 1, 1]], [v.person],
                                                        [[0, -1, v.verb_index("walk")]])])
    with pytest.raises(FormatError, match="HICO-DET data only"):
        write_hicodet(ds, tmp_path / "x.json")
    write_ppdm(ds, tmp_path / "v.json")  # the V-COCO PPDM variant holds agent-only pairs
    assert read_ppdm(tmp_path / "v.json", vocab=v).differences(ds) == []


def test_gzip_input_and_atomic_output(tmp_path):
    import gzip

    ds = HOIDataset.from_images(hico_det(), [HOIImage.from_lists(
        "HICO_a.jpg", [[0, 0, 4, 4], [1, 1, 3, 3]], [hico_det().person, 3], [[0, 1, 0]])])
    write_ppdm(ds, tmp_path / "a.json.gz")
    assert gzip.decompress((tmp_path / "a.json.gz").read_bytes()).startswith(b"[")
    assert read_dataset(tmp_path / "a.json.gz").differences(ds) == []
    assert not list(tmp_path.glob(".*tmp"))


def test_hake_json_without_archive(tmp_path):
    data = {"HICO_train2015_00000001.jpg": {"labels": [
        {"hoi_id": 1, "human_bbox": [1, 1, 10, 10], "object_bbox": [5, 5, 20, 20], "width": 30, "height": 40}]},
        "HICO_train2015_00000002.jpg": {"labels": []}}
    path = tmp_path / "hake.json"
    path.write_text(json.dumps(data))
    ds = read_hake(path)
    assert ds.n_pairs == 1 and ds.widths.tolist() == [30, 0]
    assert ds.image(0).boxes.tolist() == [[0, 0, 9, 9], [4, 4, 19, 19]]
    assert ds.pair_hoi.tolist() == [0]


def _hicodet_variant(doc: dict, variant: str) -> str:
    anns = doc["annotation"]
    if variant == "extra keys and spaces":
        doc["note"] = {"x": [1, {"y": None}]}
        anns[0]["score"] = [0.5]
        return json.dumps(doc, indent=1)
    if variant == "no hoi lists":
        for a in anns:
            a.pop("hoi", None)
    elif variant == "hoi in some images only":
        anns[1].pop("hoi")
    elif variant == "hoi disagreeing":
        anns[0]["hoi"][0] = (anns[0]["hoi"][0] + 1) % 600
    elif variant == "ids written as 8.0":
        anns[0]["object"] = [float(v) for v in anns[0]["object"]]
    elif variant == "no size":
        doc.pop("size")
    elif variant == "sizes of 3":
        doc["size"] = [[w, h, 3] for w, h in doc["size"]]
    elif variant == "escaped file name":
        return json.dumps(doc).replace('"HICO_', '"\\u0048ICO_', 1)
    elif variant == "a verb list missing":
        anns[2].pop("verb")
    elif variant == "objects differ":
        doc["objects"] = list(reversed(doc["objects"]))
    elif variant == "a box of 3":
        anns[0]["boxes_h"][0] = anns[0]["boxes_h"][0][:3]
    elif variant == "one file name too many":
        doc["filenames"].append("extra.jpg")
    elif variant == "a size of 1e400":  # inf: named, not an OverflowError
        doc["size"][0][0] = "WIDTH"
        return json.dumps(doc).replace('"WIDTH"', "1e400")
    return json.dumps(doc)


@pytest.mark.parametrize("variant", ["plain", "extra keys and spaces", "no hoi lists", "hoi in some images only",
                                     "hoi disagreeing", "ids written as 8.0", "no size", "sizes of 3",
                                     "escaped file name", "a verb list missing", "objects differ", "a box of 3",
                                     "one file name too many", "a size of 1e400"])
def test_hicodet_scanner_equals_the_json_reader(tmp_path, variant):
    """The C scanner reads an instances file straight into the dataset; on every variant it
    gives what the JSON readers give (the same arrays, or the same error line)."""
    import hoibench.formats._scan as scan
    from hoibench.datasets._bundled import bundled_path
    from hoibench.formats.hicodet import _read_native

    doc = json.loads(gzip_text(bundled_path("hico-det", "test")))
    doc["annotation"], doc["filenames"], doc["size"] = (doc["annotation"][:40], doc["filenames"][:40],
                                                        doc["size"][:40])
    path = tmp_path / "inst.json"
    path.write_text(_hicodet_variant(doc, variant))

    def read(native: bool):
        with pytest.MonkeyPatch.context() as m:
            if not native:
                m.setattr(scan, "_colscan", None)
            try:
                return read_hicodet(path)
            except FormatError as exc:
                return str(exc)

    got, want = read(True), read(False)
    if variant == "a size of 1e400":
        assert isinstance(want, str) and "record 0: size: expected an integer, got inf" in want
    if isinstance(want, str):
        assert got == want
    else:
        for key in ("widths", "heights", "image_ids", "box_offsets", "boxes", "box_labels", "pair_offsets",
                    "pair_subject", "pair_object", "pair_verb"):
            np.testing.assert_array_equal(getattr(got, key), getattr(want, key), err_msg=key)
        assert got.file_names == want.file_names and got.name == want.name
    if scan._NATIVE is not None:
        taken = _read_native(path.read_bytes(), hico_det(), str(path)) is not None
        assert taken == (variant in ("plain", "extra keys and spaces", "no hoi lists", "ids written as 8.0",
                                     "no size", "sizes of 3", "escaped file name"))


def gzip_text(path) -> str:
    import gzip

    return gzip.decompress(path.read_bytes()).decode()


@pytest.mark.parametrize("split", ["test", "train"])
def test_bundled_hicodet_read_by_the_scanner_equals_the_json_reader(split):
    import hoibench.formats._scan as scan
    from hoibench._io import read_bytes, read_json
    from hoibench.datasets._bundled import bundled_path
    from hoibench.formats.hicodet import _read_native

    path = bundled_path("hico-det", split)
    if scan._NATIVE is None:
        pytest.skip("the C scanner is not built here")
    got = _read_native(read_bytes(path), hico_det(), str(path))
    want = read_hicodet(path, data=read_json(path))
    assert got is not None
    for key in ("widths", "heights", "box_offsets", "boxes", "box_labels", "pair_offsets", "pair_subject",
                "pair_object", "pair_verb"):
        np.testing.assert_array_equal(getattr(got, key), getattr(want, key), err_msg=key)
    assert got.file_names == want.file_names
