"""Box conventions of SG split files: ``split sg`` says when a file it writes mixes 1-based and
0-based boxes (the released HICO-DET-SG files' quirk) and records what each file holds;
``data convert`` never carries a mixture into another file silently."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

import hoibench.benchmarks.sg as sg
from hoibench.benchmarks.sg import build_sg_split
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIImage
from hoibench.datasets import load_dataset
from hoibench.formats import read_hicodet, read_ppdm, shift_image_boxes, write_ppdm
from hoibench.vocab import hico_det, vcoco
from tests.conftest import one_line_error

H = hico_det()
#: 16 HICO-DET classes: the first four verbs of each of four objects (hicodet holds classes only)
_COMBOS = [(int(v), int(o)) for obj in ("cup", "bottle", "knife", "fork")
           for v, o in H.hoi_verb_object[H.hoi_verb_object[:, 1] == H.object_index(obj)][:4]]


def _union(corner: float = 0.0, vocab=H, combos=None, prefixes=("HICO_train2015", "HICO_test2015"),
           n: int = 120) -> tuple[HOIDataset, np.ndarray]:
    """A 0-based union of an original train part (first 3/4) and test part, as ``load_union``
    returns it; every image's first box starts at ``corner`` (0: the 0-based corner)."""
    combos = combos or _COMBOS
    rng = np.random.default_rng(0)
    images = []
    for i in range(n):
        picks = [combos[j] for j in rng.choice(len(combos), size=int(rng.integers(1, 4)), replace=False)]
        boxes, labels, pairs = [], [], []
        for k, (v, o) in enumerate(picks):
            boxes += [[corner + k, corner, corner + 50 + k, corner + 90],
                      [corner + 5, corner + 40 + k, corner + 80, corner + 95 + k]]
            labels += [vocab.person, o]
            pairs.append([2 * k, 2 * k + 1, v])
        prefix = prefixes[0] if i < n * 3 // 4 else prefixes[1]
        images.append(HOIImage.from_lists(f"{prefix}_{i:08d}.jpg", boxes, labels, pairs, width=200, height=200))
    ds = HOIDataset.from_images(vocab, images, name="synthetic")
    return ds, np.array([f.startswith(prefixes[1]) for f in ds.file_names])


def _cli(*argv: str):
    return CliRunner().invoke(cli, list(argv))


def _mixed_file(tmp_path, corner: float = 0.0) -> tuple[str, HOIDataset]:
    """A PPDM file in the released files' conventions: HICO_test2015 entries 1-based, the others
    0-based; and the true (0-based) dataset."""
    ds, origin = _union(corner)
    path = tmp_path / "released_like.json"
    write_ppdm(shift_image_boxes(ds, origin, 1.0), path)
    return str(path), ds


# ----------------------------------------------------------------------------- split sg
def test_split_sg_warns_in_one_line_and_records_conventions_per_file(tmp_path, monkeypatch):
    """The released policy on data with known origins writes two conventions: one warning line
    with the counts and the option; stats.json records them per file and prefix."""
    union = _union(corner=10.0)
    monkeypatch.setattr(sg, "load_union", lambda name: union)
    r = _cli("split", "sg", "--dataset", "hico-det", "--seed", "3", "--ratio", "0.75", "--policy", "released",
             "--out", str(tmp_path / "rel"))
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1, r.stderr
    split = build_sg_split(union[0], random_state=3, ratio=0.75, policy="released", origin_test=union[1])
    n1 = int(split.test_origin_test.sum())
    assert f"test_hico.json: {n1:,} HICO_test2015 entries 1-based, {split.test.n_images - n1:,} HICO_train2015 " \
           "entries 0-based" in warning[0]
    assert warning[0].endswith("--boxes 0-based writes every box 0-based")
    stats = json.loads((tmp_path / "rel" / "stats.json").read_text())
    assert stats["box_conventions"]["how"] == "written"
    assert stats["box_conventions"]["files"]["test_hico.json"] == {
        "HICO_test2015": {"entries": n1, "convention": "1-based"},
        "HICO_train2015": {"entries": split.test.n_images - n1, "convention": "0-based"}}
    # the option named in the warning writes one convention, without a warning
    r = _cli("split", "sg", "--dataset", "hico-det", "--seed", "3", "--ratio", "0.75", "--policy", "released",
             "--boxes", "0-based", "--out", str(tmp_path / "zero"))
    assert r.exit_code == 0 and "warning" not in r.stderr, r.output
    stats = json.loads((tmp_path / "zero" / "stats.json").read_text())
    assert {g["convention"] for f in stats["box_conventions"]["files"].values() for g in f.values()} == {"0-based"}
    assert np.array_equal(read_ppdm(tmp_path / "zero" / "test_hico.json").boxes, split.test.boxes)


def test_split_sg_warns_when_given_files_mix_conventions(tmp_path):
    """Files given with --dataset are written as read; a mixture detected in them is warned about."""
    mixed, _ = _mixed_file(tmp_path)
    r = _cli("split", "sg", "--dataset", mixed, "--seed", "3", "--ratio", "0.75", "--policy", "released",
             "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1 and "given files mix box conventions" in warning[0], r.stderr
    assert "--mixed-boxes unify" in warning[0]
    stats = json.loads((tmp_path / "o" / "stats.json").read_text())
    assert stats["box_conventions"]["how"] == "as read"
    assert stats["box_conventions"]["files"]["test_hico.json"]["HICO_test2015"]["convention"] == "1-based"


def test_vcoco_released_policy_writes_one_convention(tmp_path):
    """The released V-COCO-SG files are 0-based throughout: known origins never shift V-COCO boxes."""
    vc = vcoco()
    combos = [(vc.verb_index(v), vc.object_index(o)) for v in ("hold_obj", "carry_obj", "look_obj", "eat_obj")
              for o in ("cup", "bottle", "knife", "fork")]
    ds, origin = _union(corner=10.0, vocab=vc, combos=combos, prefixes=("COCO_train2014", "COCO_val2014"))
    split = build_sg_split(ds, random_state=1, ratio=0.7, policy="released", origin_test=origin)
    assert split.boxes == "as-released" and split.test_origin_test.any()
    paths = split.write(tmp_path / "v")
    assert np.array_equal(read_ppdm(paths["test"]).boxes, split.test.boxes)
    assert np.array_equal(read_ppdm(paths["train"]).boxes, split.train.boxes)
    assert split.box_convention_warning() is None


# ----------------------------------------------------------------------------- data convert
def test_convert_refuses_a_detected_mixture_in_one_line(tmp_path, capsys):
    mixed, truth = _mixed_file(tmp_path)
    out = tmp_path / "x.json"
    line = one_line_error(["data", "convert", mixed, str(out), "--to", "hicodet"], capsys)
    assert line.startswith(f"error: {mixed}: boxes are in two conventions: ")
    assert "HICO_test2015 entries 1-based" in line and "detected per file-name prefix" in line
    assert "--mixed-boxes unify" in line and not out.exists()
    # unify: every entry in the target's convention (hicodet: 1-based, read back 0-based)
    r = _cli("data", "convert", mixed, str(out), "--to", "hicodet", "--mixed-boxes", "unify")
    assert r.exit_code == 0 and "unified to 0-based" in r.output, r.output
    assert np.array_equal(read_hicodet(out).boxes[0::2], truth.pair_subject_boxes)
    # keep: as read, said so
    r = _cli("data", "convert", mixed, str(tmp_path / "k.json"), "--to", "ppdm", "--mixed-boxes", "keep")
    assert r.exit_code == 0 and "kept as read, in two conventions" in r.output, r.output
    assert (tmp_path / "k.json").read_bytes() == Path(mixed).read_bytes()


def test_convert_uses_what_split_sg_recorded(tmp_path, monkeypatch, capsys):
    """Boxes that never touch pixel 0 or 1 defeat detection; the split folder's record does not."""
    union = _union(corner=10.0)
    monkeypatch.setattr(sg, "load_union", lambda name: union)
    folder = tmp_path / "rel"
    r = _cli("split", "sg", "--dataset", "hico-det", "--seed", "3", "--ratio", "0.75", "--policy", "released",
             "--out", str(folder))
    assert r.exit_code == 0, r.output
    test = str(folder / "test_hico.json")
    line = one_line_error(["data", "convert", test, str(tmp_path / "x.json"), "--to", "hicodet"], capsys)
    assert "recorded by split sg in its folder's stats.json" in line and "--mixed-boxes" in line
    r = _cli("data", "convert", test, str(tmp_path / "x.json"), "--to", "hicodet", "--mixed-boxes", "unify")
    assert r.exit_code == 0, r.output
    split = build_sg_split(union[0], random_state=3, ratio=0.75, policy="released", origin_test=union[1])
    assert np.array_equal(read_hicodet(tmp_path / "x.json").boxes[0::2], split.test.pair_subject_boxes)
    # a file changed since split sg wrote it is not what was recorded: the record no longer applies
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in folder.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    data = json.loads((copy / "test_hico.json").read_text())
    data[0]["annotations"][0]["bbox"][2] += 1
    (copy / "test_hico.json").write_text(json.dumps(data))
    r = _cli("data", "convert", str(copy / "test_hico.json"), str(tmp_path / "y.json"), "--to", "hicodet")
    assert r.exit_code == 0, r.output


def test_unify_refuses_entries_of_unknown_convention(tmp_path, capsys):
    """In a mixed file, a prefix whose convention cannot be told is not moved by guess."""
    ds, origin = _union(corner=0.0, n=160)
    names = list(ds.file_names)
    other = np.array([i % 4 == 0 and not origin[i] for i in range(ds.n_images)])  # a third prefix, at pixel 10
    images = []
    for i in range(ds.n_images):
        im = ds.image(i)
        boxes = im.boxes + (1.0 if origin[i] else 10.0 if other[i] else 0.0)
        name = names[i].replace("HICO_train2015", "HICO_extra2015") if other[i] else names[i]
        images.append(HOIImage.from_lists(name, boxes.tolist(), im.labels.tolist(), im.pairs.tolist(),
                                          width=200, height=200))
    path = tmp_path / "three.json"
    write_ppdm(HOIDataset.from_images(H, images), path)
    line = one_line_error(["data", "convert", str(path), str(tmp_path / "x.json"), "--to", "hicodet",
                           "--mixed-boxes", "unify"], capsys)
    assert "HICO_extra2015 entries is unknown" in line and "cannot be moved to 0-based" in line


# ----------------------------------------------------------------------------- the released preset
def test_preset_sg2_warns_and_converts_to_the_hicodet_toolkits_boxes(tmp_path, capsys):
    """``split sg --preset hico-det-sg2`` (bundled data): the warning, then ``data convert --to
    hicodet`` refuses, and with ``--mixed-boxes unify`` gives the original test set's entries
    exactly the boxes of the hicodet toolkit's (1-based) test file."""
    out = tmp_path / "sg2"
    r = _cli("split", "sg", "--preset", "hico-det-sg2", "--out", str(out))
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1 and warning[0].startswith("warning: hico-det-sg2 writes boxes in two conventions")
    assert "test_hico.json: 1,732 HICO_test2015 entries 1-based, 5,911 HICO_train2015 entries 0-based" in warning[0]
    test = str(out / "test_hico.json")
    line = one_line_error(["data", "convert", test, str(tmp_path / "x.json"), "--to", "hicodet"], capsys)
    assert "--mixed-boxes" in line
    r = _cli("data", "convert", test, str(tmp_path / "x.json"), "--to", "hicodet", "--mixed-boxes", "unify")
    assert r.exit_code == 0, r.output
    converted = read_hicodet(tmp_path / "x.json")
    original = load_dataset("hico-det:test")
    row = {f: i for i, f in enumerate(original.file_names)}
    for i in np.flatnonzero([f.startswith("HICO_test2015") for f in converted.file_names])[::50]:
        ours = {tuple(b) for b in converted.image(int(i)).boxes.tolist()}
        theirs = {tuple(b) for b in original.image(row[converted.file_names[i]]).boxes.tolist()}
        assert ours <= theirs, converted.file_names[i]


def test_split_zero_shot_warns_about_a_mixed_split_folder(tmp_path, monkeypatch):
    """A split folder written as released is a zero-shot source; its mixture is said, per file."""
    union = _union(corner=10.0)
    monkeypatch.setattr(sg, "load_union", lambda name: union)
    folder = tmp_path / "rel"
    assert _cli("split", "sg", "--dataset", "hico-det", "--seed", "3", "--ratio", "0.75", "--policy", "released",
                "--out", str(folder)).exit_code == 0
    r = _cli("split", "zero-shot", "--protocol", str(folder), "--dataset", str(folder), "--out", str(tmp_path / "z"))
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
    assert [w.split(":")[1].strip() for w in warning] == [str(folder / "trainval_hico.json"),
                                                          str(folder / "test_hico.json")], r.stderr
    assert all("two conventions" in w and "--boxes 0-based" in w for w in warning)
    zero = tmp_path / "zero"
    assert _cli("split", "sg", "--dataset", "hico-det", "--seed", "3", "--ratio", "0.75", "--policy", "released",
                "--boxes", "0-based", "--out", str(zero)).exit_code == 0
    r = _cli("split", "zero-shot", "--protocol", str(zero), "--dataset", str(zero), "--out", str(tmp_path / "z0"))
    assert r.exit_code == 0 and "warning" not in r.stderr, r.output
