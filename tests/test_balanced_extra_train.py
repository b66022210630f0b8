"""B-RIGHT with extra (generated or crawled) train images: the test and zero-shot sets and the real
train images do not move, extra images only fill the deficits, the per-class cap trims extra
annotations only, the split folder records what it used, and Tables S2/S3 count after trimming."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hoibench.analysis import augmentation_counts
from hoibench.benchmarks import build_balanced_split
from hoibench.cli import main
from hoibench.data import DatasetBuilder, HOIDataset
from hoibench.datasets import load_dataset
from hoibench.formats import read_ppdm, write_ppdm
from hoibench.vocab import hico_det
from tests.conftest import one_line_error

VOCAB = hico_det()
# twelve classes to balance and four zero-shot candidates (their verbs and objects are among the twelve)
TOP = ["ride horse", "hold horse", "ride bicycle", "hold bicycle", "feed horse", "walk horse",
       "ride elephant", "hold elephant", "walk bicycle", "carry bicycle", "hug horse", "pet horse"]
ZERO_SHOT = ["feed elephant", "walk elephant", "hug elephant", "pet elephant"]
KW = {"top_k": 12, "l_train": 30, "l_test": 5, "epochs": 4, "zero_shot": True, "l_zero_shot": 3}


def hoi(name: str) -> int:
    verb, obj = name.split()
    return VOCAB.hoi_index(VOCAB.verb_index(verb), VOCAB.object_index(obj))


def _add(b: DatasetBuilder, name: str, classes: list[int]) -> None:
    boxes, labels, subj, obj, verbs = [[0.0, 0.0, 10.0, 10.0]], [VOCAB.person], [], [], []
    for h in classes:
        v, o = VOCAB.hoi_verb_object[h]
        boxes.append([1.0 + len(boxes), 1.0, 20.0 + len(boxes), 30.0])
        labels.append(int(o))
        subj.append(0)
        obj.append(len(boxes) - 1)
        verbs.append(int(v))
    b.add_image(name, boxes, labels, subj, obj, verbs, width=64, height=48)


def real_dataset(n_images: int = 420, seed: int = 0) -> HOIDataset:
    """Images with 1-3 pairs, head classes far more frequent than the tail of the twelve."""
    rng = np.random.default_rng(seed)
    classes = [hoi(n) for n in TOP + ZERO_SHOT]
    weights = np.r_[1.0 / np.arange(1, len(TOP) + 1) ** 1.3, np.full(len(ZERO_SHOT), 0.02)]
    weights /= weights.sum()
    b = DatasetBuilder(VOCAB)
    for i in range(n_images):
        _add(b, f"real_{i:05d}.jpg", rng.choice(classes, size=int(rng.integers(1, 4)), p=weights).tolist())
    return b.build(name="real")


def extra_dataset(deficits: dict[int, int]) -> HOIDataset:
    """Generated images as the augmentation pipeline's pseudo-labels give them: each holds a pair
    of a class in deficit and a pair of the head class (already at L); plus images of classes in
    no deficit, which must never be used."""
    head = hoi(TOP[0])
    b = DatasetBuilder(VOCAB)
    for h, missing in sorted(deficits.items()):
        for j in range(missing + 2):
            _add(b, f"aug_h{h}_a{j}.png", [h, head])
    for j in range(6):
        _add(b, f"aug_head_a{j}.png", [head, hoi(TOP[1])])
    return b.build(name="generated")


@pytest.fixture(scope="module")
def built() -> dict[str, object]:
    real = real_dataset()
    plain = build_balanced_split(real, random_state=3, **KW)
    deficits = {d.hoi: d.deficit for d in plain.deficits() if d.split == "train"}
    assert deficits and len(plain.zero_shot.classes) >= 2, "the fixture must have deficits and a zero-shot set"
    extra = extra_dataset(deficits)
    filled = build_balanced_split(real, random_state=3, extra_train=extra, **KW)
    return {"real": real, "plain": plain, "extra": extra, "filled": filled, "deficits": deficits}


def _real_part(ds: HOIDataset, extra: HOIDataset) -> HOIDataset:
    names = set(extra.file_names)
    return ds.subset([i for i, f in enumerate(ds.file_names) if f not in names], name=ds.name)


def test_test_and_zero_shot_sets_do_not_depend_on_extra_train(built) -> None:
    plain, filled = built["plain"], built["filled"]
    assert filled.test.dataset.equals(plain.test.dataset)
    assert filled.zero_shot.classes.tolist() == plain.zero_shot.classes.tolist()
    assert filled.zero_shot.dataset.equals(plain.zero_shot.dataset)
    assert filled.zero_shot.dataset.file_names == plain.zero_shot.dataset.file_names


def test_real_train_images_and_annotations_unchanged(built) -> None:
    plain, filled, extra = built["plain"], built["filled"], built["extra"]
    assert _real_part(filled.train.dataset, extra).equals(plain.train.dataset)
    record = filled.extra_train
    assert record["real_train"] == {"images": plain.train.dataset.n_images,
                                    "instances": int(plain.train.counts.sum()), "changed_images": []}


def test_extra_images_only_fill_classes_in_deficit(built) -> None:
    plain, filled, extra, deficits = built["plain"], built["filled"], built["extra"], built["deficits"]
    names = set(extra.file_names)
    train = filled.train.dataset
    used = [i for i, f in enumerate(train.file_names) if f in names]
    assert used and not any(train.file_names[i].startswith("aug_head") for i in used)
    extra_pairs = np.isin(train.pair_image, used)
    # only pairs of classes in deficit survive on extra images; no class goes above L
    assert set(train.pair_hoi[extra_pairs].tolist()) <= set(deficits)
    counts = train.hoi_counts()[filled.classes]
    assert (counts <= KW["l_train"]).all()
    for h, missing in deficits.items():
        assert counts[filled.classes.tolist().index(h)] == KW["l_train"]
        assert int((train.pair_hoi[extra_pairs] == h).sum()) == missing
    assert filled.deficits() == [d for d in filled.deficits() if d.split != "train"]
    # the record: the deficits it filled, and every annotation the cap removed from an extra image
    record = filled.extra_train
    assert {c["hoi"]: c["need"] - c["real"] for c in record["classes"]} == deficits
    assert all(c["extra"] == c["need"] - c["real"] for c in record["classes"])
    removed = sum(n for im in record["images"] for _, n in im["removed"])
    kept = sum(im["instances"] for im in record["images"])
    assert kept == int(extra_pairs.sum()) == sum(deficits.values())
    chosen = extra.subset([extra.index_of(im["image"]) for im in record["images"]])
    assert kept + removed == chosen.n_pairs
    assert record["images_unused"] == extra.n_images - len(record["images"])
    assert filled.train.stats()["extra_images"] == len(used)
    assert plain.extra_train is None
    # the extra images are drawn from a stream of their own: the zero-shot set does not move them
    no_zs = {k: v for k, v in KW.items() if k not in ("zero_shot", "l_zero_shot")}
    alone = build_balanced_split(built["real"], random_state=3, extra_train=extra, **no_zs)
    assert alone.train.dataset.equals(train)


def test_cli_files_identical_and_extra_file_recorded(built, tmp_path: Path, capsys) -> None:
    write_ppdm(built["real"], tmp_path / "real.json")
    write_ppdm(built["extra"], tmp_path / "extra.json")
    args = ["split", "balanced", "--dataset", str(tmp_path / "real.json"), "--seed", "3",
            "--top-k", "12", "--l-train", "30", "--l-test", "5", "--epochs", "4", "--zero-shot",
            "--l-zero-shot", "3"]
    main([*args, "--out", str(tmp_path / "plain")])
    main([*args, "--extra-train", str(tmp_path / "extra.json"), "--out", str(tmp_path / "filled")])
    out = capsys.readouterr().out
    assert "real train images unchanged" in out
    for f in ("test_hico.json", "instances_test.json", "test_zero_shot_hico.json", "instances_zero_shot.json"):
        assert (tmp_path / "plain" / f).read_bytes() == (tmp_path / "filled" / f).read_bytes(), f
    extra = built["extra"]
    real_train = _real_part(read_ppdm(tmp_path / "filled" / "trainval_hico.json"), extra)
    assert real_train.equals(read_ppdm(tmp_path / "plain" / "trainval_hico.json"))
    record = json.loads((tmp_path / "filled" / "extra_train.json").read_text())
    import hashlib

    sha = hashlib.sha256((tmp_path / "extra.json").read_bytes()).hexdigest()
    assert record["kind"] == "balanced_extra_train"
    assert record["extra_train"]["file_sha256"] == f"sha256:{sha}"
    assert record["extra_train"]["content_sha256"] == extra.content_hash()
    stats = json.loads((tmp_path / "filled" / "stats.json").read_text())
    assert stats["params"]["extra_train_sha256"] == extra.content_hash()
    assert not (tmp_path / "plain" / "extra_train.json").exists()


def _augment_folder(folder: Path, extra: HOIDataset) -> None:
    """An ``augment run`` output folder: its annotation file and one kept attempt per image."""
    (folder / "annotations").mkdir(parents=True)
    write_ppdm(extra, folder / "annotations" / "trainval_augment.json")
    with open(folder / "manifest.jsonl", "w") as fh:
        for a, im in enumerate(extra):
            first = int(extra.pair_hoi[extra.pair_offsets[a]])
            fh.write(json.dumps({"event": "attempt", "hoi": first, "attempt": a, "status": "kept",
                                 "image": f"images/{im.file_name}",
                                 "annotation": {"pairs": im.pairs.tolist()}}) + "\n")


def test_augmentation_counts_count_instances_after_trimming(built, tmp_path: Path, capsys) -> None:
    extra = built["extra"]
    _augment_folder(tmp_path / "aug", extra)
    write_ppdm(built["real"], tmp_path / "real.json")
    main(["split", "balanced", "--dataset", str(tmp_path / "real.json"), "--seed", "3", "--top-k", "12",
          "--l-train", "30", "--l-test", "5", "--epochs", "4", "--zero-shot", "--l-zero-shot", "3",
          "--extra-train", str(tmp_path / "aug" / "annotations" / "trainval_augment.json"),
          "--out", str(tmp_path / "split")])
    capsys.readouterr()
    train = read_ppdm(tmp_path / "split" / "trainval_hico.json")
    names = set(extra.file_names)
    in_train = [i for i, f in enumerate(train.file_names) if f in names]
    want_instances = int(np.isin(train.pair_image, in_train).sum())
    assert want_instances == sum(built["deficits"].values()) < extra.n_pairs
    counts = augmentation_counts({"1": [tmp_path / "aug", tmp_path / "split"]})
    assert dict(counts.images["1"]) == {"generated": len(in_train), "crawled": 0}
    assert dict(counts.instances["1"]) == {"generated": want_instances, "crawled": 0}
    main(["analyze", "augmentation-counts", f"1={tmp_path / 'aug'}", f"1={tmp_path / 'split'}"])
    out = capsys.readouterr().out
    assert f"| 1 | {want_instances} | 0 | {want_instances} |" in out
    # without the split folder the tables say they count before trimming
    main(["analyze", "augmentation-counts", f"1={tmp_path / 'aug'}"])
    assert "before" in capsys.readouterr().out
    # a split whose extra images are in none of the split's augmentation folders is refused
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "manifest.jsonl").write_text(json.dumps(
        {"event": "attempt", "hoi": 0, "attempt": 0, "status": "rejected", "image": "images/x.png"}) + "\n")
    err = one_line_error(["analyze", "augmentation-counts", f"1={tmp_path / 'empty'}",
                          f"1={tmp_path / 'split'}"], capsys)
    assert "extra_train.json" in err and "none of the augmentation folders" in err


def test_bundled_hico_det_sets_stay_put_with_extra_train() -> None:
    """The reported case: seed 0 with the zero-shot set, then generated images for the deficits."""
    hico = load_dataset("hico-det")
    kw = {"top_k": 351, "l_train": 50, "l_test": 10, "epochs": 20, "random_state": 0, "zero_shot": True,
          "selection_counts": "official"}
    plain = build_balanced_split(hico, **kw)
    extra = extra_dataset({d.hoi: d.deficit for d in plain.deficits() if d.split == "train"})
    filled = build_balanced_split(hico, extra_train=extra, **kw)
    assert filled.test.dataset.equals(plain.test.dataset)
    assert filled.zero_shot.dataset.equals(plain.zero_shot.dataset)
    assert _real_part(filled.train.dataset, extra).equals(plain.train.dataset)
    assert filled.total_deficit("train") == 0 and filled.train.counts.max() == 50
