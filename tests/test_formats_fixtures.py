"""Format round trips on the vendored excerpts: these always run, also without ../shared/data."""

from __future__ import annotations

import json

import pytest

from hoibench.formats import detect_format, read_dataset, write_dataset
from tests.conftest import FIXTURES

CASES = [
    ("mini_instances_test2015.json", "hicodet", "hico-det", ["hicodet", "ppdm"]),
    ("mini_test_hico_sg1.json", "ppdm", "hico-det", ["ppdm", "hicodet"]),
    ("mini_test_vcoco_sg1.json", "ppdm", "v-coco", ["ppdm"]),
    ("mini_hake_train.json", "hake", "hico-det", ["hicodet", "ppdm"]),
    ("mini_instances_vcoco_test.json", "vcoco", "v-coco", ["ppdm"]),
]


def _pair_view(ds):
    return (ds.file_names, ds.pair_offsets.tolist(), ds.pair_subject_boxes.tolist(),
            ds.pair_object_boxes.tolist(), ds.pair_verb.tolist(), ds.pair_object_label.tolist())


@pytest.mark.parametrize(("name", "fmt", "space", "targets"), CASES)
def test_fixture_reads_and_round_trips(tmp_path, name, fmt, space, targets):
    path = FIXTURES / name
    assert detect_format(path) == fmt
    ds = read_dataset(path)
    assert ds.vocab.name == space and ds.n_pairs > 0
    for target in targets:
        out = tmp_path / f"out_{target}.json"
        write_dataset(ds, out, format=target)
        back = read_dataset(out, vocab=ds.vocab) if target == "ppdm" else read_dataset(out)
        if target == "hicodet" and fmt != "hicodet" and fmt != "hake":
            # the toolkit layout stores one box pair per interaction: compare pair by pair
            assert _pair_view(back) == _pair_view(ds)
        else:
            assert back.differences(ds) == [], target
        again = tmp_path / f"again_{target}.json"
        write_dataset(back, again, format=target)
        assert again.read_bytes() == out.read_bytes()  # writing is deterministic


def test_hicodet_fixture_written_back_equals_original(tmp_path):
    path = FIXTURES / "mini_instances_test2015.json"
    write_dataset(read_dataset(path), tmp_path / "x.json", format="hicodet")
    orig = json.loads(path.read_text())
    ours = json.loads((tmp_path / "x.json").read_text())
    for key in ("annotation", "filenames", "size", "empty", "objects", "verbs", "correspondence"):
        assert ours[key] == orig[key], key
    assert orig["empty"], "the excerpt includes an image without pairs"


def test_hake_and_ppdm_agree_on_the_same_train_image():
    hake = read_dataset(FIXTURES / "mini_hake_train.json")
    sg = read_dataset(FIXTURES / "mini_test_hico_sg1.json")
    name = "HICO_train2015_00000005.jpg"
    a, b = hake.image(hake.index_of(name)), sg.image(sg.index_of(name))
    # 1-based HAKE boxes and 0-based PPDM boxes coincide after conversion
    assert a.boxes[a.pairs[0, 0]].tolist() == b.boxes[b.pairs[0, 0]].tolist()
    assert a.boxes[a.pairs[0, 1]].tolist() == b.boxes[b.pairs[0, 1]].tolist()


VCOCO = FIXTURES / "mini_instances_vcoco_test.json"
_DATASET_ARRAYS = ("widths", "heights", "image_ids", "box_offsets", "boxes", "box_labels", "pair_offsets",
                   "pair_subject", "pair_object", "pair_verb")


def _careful_vcoco(path, monkeypatch):
    import hoibench.formats.vcoco as mod

    with monkeypatch.context() as m:
        m.setattr(mod, "_read_fast", lambda *a: None)
        return mod.read_vcoco(path)


@pytest.mark.parametrize("source", ["fixture", "bundled"])
def test_vcoco_instances_fast_reader_equals_the_careful_one(source, monkeypatch):
    import numpy as np

    import hoibench.formats.vcoco as mod

    if source == "bundled":
        from hoibench.datasets._bundled import bundled_path

        path = bundled_path("v-coco", "test")
    else:
        path = VCOCO
    seen = []
    fast = mod._read_fast
    monkeypatch.setattr(mod, "_read_fast", lambda *a: seen.append(1) or fast(*a))
    got = mod.read_vcoco(path)
    assert seen and got.n_pairs > 0
    want = _careful_vcoco(path, monkeypatch)
    assert got.file_names == want.file_names
    for f in _DATASET_ARRAYS:
        a, b = getattr(got, f), getattr(want, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f


@pytest.mark.parametrize(("change", "message"), [
    (lambda a: a["boxes_h"][0].__setitem__(1, True), r"record 0: annotations.boxes_h\[0\]: expected a box"),
    (lambda a: a["boxes_o"].__setitem__(0, [1, 2, 3]), r"record 0: annotations.boxes_o\[0\]: expected a box"),
    (lambda a: a["actions"].__setitem__(0, 1.5), r"record 0: annotations.actions\[0\]: expected an integer"),
    (lambda a: a["objects"].__setitem__(0, 10_000), r"record 0: annotations.objects\[0\]: 10000 is not an object"),
    (lambda a: a["actions"].append(0), "record 0: annotations: boxes_h, boxes_o, actions and objects differ"),
])
def test_vcoco_instances_errors_name_record_and_field(tmp_path, change, message):
    """What the fast reader declines, the careful one names (never a silent conversion: a
    ``true`` coordinate would be 1.0 to numpy)."""
    from hoibench._exceptions import FormatError
    from hoibench.formats.vcoco import read_vcoco

    data = json.loads(VCOCO.read_text())
    first = next(k for k, a in enumerate(data["annotations"]) if a["boxes_h"])
    data["annotations"].insert(0, data["annotations"].pop(first))
    data["images"].insert(0, data["images"].pop(first))
    change(data["annotations"][0])
    (tmp_path / "v.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match=message):
        read_vcoco(tmp_path / "v.json")
