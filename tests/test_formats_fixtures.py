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
