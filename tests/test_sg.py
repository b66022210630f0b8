"""HICO-DET-SG / V-COCO-SG builder on small synthetic datasets (always run)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.model_selection import train_test_split

from hoibench._exceptions import ConfigError, FormatError
from hoibench.benchmarks.sg import (
    audit_split,
    box_convention_groups,
    build_preset,
    build_sg_split,
    compare_splits,
    get_preset,
    load_released_removals,
    select_test_combinations,
    sg_combinations,
    verify_split,
)
from hoibench.benchmarks.sg._assign import _test_pair_mask
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIImage
from hoibench.formats import read_ppdm, unseen_combinations, unseen_hoi_classes, write_ppdm
from hoibench.formats import shift_image_boxes as _shift_boxes
from hoibench.vocab import hico_det, vcoco
from tests.conftest import one_line_error

H = hico_det()


def _combo(verb: str, obj: str) -> tuple[int, int]:
    return H.verb_index(verb), H.object_index(obj)


def _image(name: str, combos: list[tuple[int, int]], *, corner: float = 10.0) -> HOIImage:
    """One person box and one object box per pair."""
    boxes, labels, pairs = [], [], []
    for k, (v, o) in enumerate(combos):
        boxes += [[corner + k, corner, corner + 50 + k, corner + 90], [corner + 5, corner + 40 + k, corner + 80, corner + 95 + k]]
        labels += [H.person, o]
        pairs.append([2 * k, 2 * k + 1, v])
    return HOIImage.from_lists(name, boxes, labels, pairs, width=200, height=200)


#: a small vocabulary of combinations over 4 objects and 4 verbs
COMBOS = [_combo(v, o) for v, o in [
    ("hold", "cup"), ("drink_with", "cup"), ("wash", "cup"), ("carry", "cup"),
    ("hold", "bottle"), ("drink_with", "bottle"), ("carry", "bottle"), ("wash", "bottle"),
    ("hold", "knife"), ("carry", "knife"), ("wash", "knife"), ("lick", "knife"),
    ("hold", "fork"), ("carry", "fork"), ("lick", "fork"), ("wash", "fork"),
]]


def _dataset(n_images: int = 120, seed: int = 0) -> tuple[HOIDataset, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = []
    for i in range(n_images):
        k = int(rng.integers(1, 4))
        picks = [COMBOS[j] for j in rng.choice(len(COMBOS), size=k, replace=False)]
        prefix = "HICO_train2015" if i < n_images * 3 // 4 else "HICO_test2015"
        images.append(_image(f"{prefix}_{i:08d}.jpg", picks))
    images.append(HOIImage.from_lists("HICO_train2015_empty.jpg", [], [], [], width=10, height=10))
    ds = HOIDataset.from_images(H, images, name="synthetic")
    origin = np.array([f.startswith("HICO_test2015") for f in ds.file_names])
    return ds, origin


def _keyset(c: np.ndarray) -> set[tuple[int, int]]:
    return set(map(tuple, np.asarray(c).tolist()))


# ----------------------------------------------------------------------------- SELECT
def test_select_matches_scikit_learn_on_sorted_combinations():
    ds, _ = _dataset()
    combos = sg_combinations(ds)
    keys = [(int(H.coco80[o]), v) for v, o in combos.tolist()]
    assert keys == sorted(keys) and len(combos) == len(set(keys)) == 16
    _, expected = train_test_split(combos, train_size=0.75, random_state=7)
    got = select_test_combinations(combos, ratio=0.75, random_state=7)
    assert np.array_equal(got, expected) and len(got) == 4


@pytest.mark.parametrize("ratio", [0.0, 1.0, 1.5, -0.1])
def test_ratio_out_of_range_is_a_config_error(ratio):
    ds, _ = _dataset(20)
    with pytest.raises(ConfigError, match="ratio"):
        build_sg_split(ds, random_state=0, ratio=ratio)


@pytest.mark.parametrize("seed", ["abc", "auto:x", -3, "1.5", None])
def test_bad_seed_is_a_config_error(seed):
    ds, _ = _dataset(20)
    with pytest.raises(ConfigError, match="random_state"):
        build_sg_split(ds, random_state=seed, ratio=0.75)


def test_bad_policy_and_verify_are_config_errors():
    ds, _ = _dataset(20)
    with pytest.raises(ConfigError, match="policy"):
        build_sg_split(ds, random_state=0, ratio=0.75, policy="sloppy")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="verify"):
        build_sg_split(ds, random_state=0, ratio=0.75, verify="none")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- ASSIGN
def _pairs_of(ds: HOIDataset, name: str) -> set[tuple[int, int]]:
    im = ds.image(ds.index_of(name))
    return {(int(v), int(im.labels[o])) for _, o, v in im.pairs}


@pytest.mark.parametrize("policy", ["paper", "released"])
def test_assignment_rules(policy):
    ds, _ = _dataset()
    split = build_sg_split(ds, random_state=3, ratio=0.75, policy=policy, verify="released")
    test_set = _keyset(split.test_combinations)
    assert len(test_set) == 4
    n_mixed = 0
    for i in range(ds.n_images):
        im = ds.image(i)
        combos = {(int(v), int(im.labels[o])) for _, o, v in im.pairs}
        name = ds.file_names[i]
        if not combos:
            assert name not in split.train.file_names and name not in split.test.file_names
        elif not combos & test_set:
            assert name in split.train.file_names and _pairs_of(split.train, name) == combos
        elif combos <= test_set:
            assert _pairs_of(split.test, name) == combos
        else:
            n_mixed += 1
            assert name not in split.train.file_names
            if policy == "paper":
                assert name not in split.test.file_names
            else:
                assert _pairs_of(split.test, name) == combos & test_set
    assert split.mixed_images == n_mixed > 0
    # never a test combination in train, never a train combination in test
    assert not _keyset(split.train.combinations()) & test_set
    assert _keyset(split.test.combinations()) <= test_set
    # image order of the union is kept
    order = [ds.index_of(f) for f in split.test.file_names]
    assert order == sorted(order)


def test_empty_images_go_to_test_only_when_asked():
    ds, _ = _dataset(40)
    kept = build_sg_split(ds, random_state=1, ratio=0.75, policy="released", empty_images="test")
    dropped = build_sg_split(ds, random_state=1, ratio=0.75, policy="released")
    assert "HICO_train2015_empty.jpg" in kept.test.file_names
    assert "HICO_train2015_empty.jpg" not in dropped.test.file_names + dropped.train.file_names


def test_pairs_without_object_released_last_box_rule():
    v = vcoco()
    hold, stand = v.verb_index("hold_obj"), v.verb_index("stand")
    cup, person = v.object_index("cup"), v.person
    # image 0: agent-only 'hold' whose last box is a cup; image 1: same, last box a person
    im0 = HOIImage.from_lists("COCO_a_0.jpg", [[0, 0, 5, 5], [1, 1, 4, 4]], [person, cup], [[0, -1, hold]])
    im1 = HOIImage.from_lists("COCO_a_1.jpg", [[1, 1, 4, 4], [0, 0, 5, 5]], [cup, person], [[1, -1, hold]])
    im2 = HOIImage.from_lists("COCO_a_2.jpg", [[0, 0, 5, 5], [1, 1, 4, 4]], [person, cup], [[0, 1, hold], [0, -1, stand]])
    ds = HOIDataset.from_images(v, [im0, im1, im2])
    test = np.array([[hold, cup]])
    last_box = _test_pair_mask(ds, test, no_object="last_box")
    never = _test_pair_mask(ds, test, no_object="never")
    assert last_box.tolist() == [True, False, True, False]
    assert never.tolist() == [False, False, True, False]


# ----------------------------------------------------------------------------- VERIFY
def test_verify_released_rule():
    c = np.array([_combo("hold", "cup"), _combo("wash", "cup"), _combo("hold", "knife"), _combo("lick", "knife")])
    ok = verify_split(c[[0, 1, 2]], c[[3]][:, :], c, vocab=H, rule="released")
    assert ok == ["verb 'lick' of a test combination is in no train combination"]
    assert verify_split(c[[0, 1, 3]], c[[2]], c, vocab=H, rule="released") == []


def test_verify_paper_rule_needs_two_partners():
    c = np.array([_combo(v, o) for v, o in [("hold", "cup"), ("wash", "cup"), ("hold", "knife"),
                                             ("wash", "knife"), ("hold", "fork"), ("lick", "fork")]])
    assert verify_split(c, c[:0], c, vocab=H, rule="paper") == []
    # fork keeps one verb; 'hold' (3 objects in the data) keeps only cup
    problems = verify_split(c[[0, 1, 3, 5]], c[[2, 4]], c, vocab=H, rule="paper")
    assert "object 'fork' has 1 verb(s) in train, needs 2" in problems
    assert "verb 'hold' has 1 object(s) in train, needs 2" in problems
    # a verb the data pairs with a single object needs only that one
    assert not any("lick" in p for p in problems)


def test_seed_auto_finds_the_first_passing_seed_and_is_deterministic():
    ds, _ = _dataset()
    tried: list[tuple[int, bool]] = []
    a = build_sg_split(ds, random_state="auto", ratio=0.75, policy="paper",
                       on_attempt=lambda s, p: tried.append((s, bool(p))))
    assert a.verify_problems == ()
    assert tried == [(s, s != a.seed) for s in range(a.seed + 1)]
    for s in range(0, a.seed):
        assert build_sg_split(ds, random_state=s, ratio=0.75, policy="paper").verify_problems
    b = build_sg_split(ds, random_state=f"auto:{a.seed}", ratio=0.75, policy="paper")
    assert (b.seed, b.attempts) == (a.seed, 1)
    assert a.attempts == a.seed + 1
    assert b.train.equals(a.train) and b.test.equals(a.test)


def test_seed_auto_gives_up_with_a_clear_error():
    ds, _ = _dataset()
    with pytest.raises(ConfigError, match="passes VERIFY"):
        build_sg_split(ds, random_state="auto", ratio=0.2, policy="paper", max_attempts=5)
    with pytest.raises(ConfigError, match="train set will be empty"):
        build_sg_split(ds, random_state=0, ratio=0.01)


# ----------------------------------------------------------------------------- removals, inherit
def test_removals_drop_test_entries_and_report_unknown_names():
    ds, _ = _dataset()
    base = build_sg_split(ds, random_state=3, ratio=0.75, policy="released")
    gone = base.test.file_names[:2]
    split = build_sg_split(ds, random_state=3, ratio=0.75, policy="released", removals=[*gone, "nope.jpg"])
    assert split.test.file_names == base.test.file_names[2:]
    assert split.removed == gone and split.missing_removals == ("nope.jpg",)
    assert split.train.equals(base.train)


def test_inherit_keeps_only_previous_test_pairs_of_previously_mixed_images():
    ds, _ = _dataset()
    prev = build_sg_split(ds, random_state=3, ratio=0.75, policy="released")
    prev_test = _keyset(prev.test_combinations)
    split = build_sg_split(ds, random_state=11, ratio=0.75, policy="released", inherit=(3, 0.75))
    now_test = _keyset(split.test_combinations)
    checked = 0
    for i in range(ds.n_images):
        im = ds.image(i)
        combos = {(int(v), int(im.labels[o])) for _, o, v in im.pairs}
        if combos & prev_test and combos - prev_test:  # mixed under the previous run
            effective = combos & prev_test
            name = ds.file_names[i]
            if effective & now_test:
                assert _pairs_of(split.test, name) == effective & now_test
            else:
                assert _pairs_of(split.train, name) == effective
            checked += 1
    assert checked > 5


def test_presets_are_known_and_unknown_is_an_error():
    assert get_preset("sg2").seed == 680
    assert get_preset("HICO-DET-SG3").inherit == "hico-det-sg2"
    assert get_preset("vcoco-sg3").seed == 2065
    with pytest.raises(ConfigError, match="preset"):
        build_preset("hico-det-sg4")
    assert len(load_released_removals("hico-det-sg1")) == 352
    assert load_released_removals("v-coco-sg1") == ()


def test_removals_file_one_reader_for_presets_and_plain_lists(tmp_path):
    bundled = load_released_removals("sg1")  # preset aliases resolve like get_preset's
    assert bundled == load_released_removals("hico-det-sg1") and bundled[0].startswith("HICO_")
    with pytest.raises(ConfigError, match="name the preset"):
        load_released_removals()
    layout = tmp_path / "removals.json"
    layout.write_text(json.dumps({"_note": "comments are skipped", "hico-det-sg1": ["a.jpg"],
                                  "hico-det-sg2": ["b.jpg", "c.jpg"]}))
    assert load_released_removals("hico-det-sg2", layout) == ("b.jpg", "c.jpg")
    with pytest.raises(FormatError, match="no list for hico-det-sg3"):
        load_released_removals("hico-det-sg3", layout)
    with pytest.raises(FormatError, match="holds 2 lists"):
        load_released_removals(path=layout)
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(["x.jpg", "y.jpg"]))
    assert load_released_removals(path=plain) == load_released_removals("hico-det-sg1", plain) == ("x.jpg", "y.jpg")
    single = tmp_path / "single.json"
    single.write_text(json.dumps({"_note": "", "mine": ["z.jpg"]}))
    assert load_released_removals(path=single) == ("z.jpg",)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hico-det-sg1": [1, 2]}))
    with pytest.raises(FormatError, match=r"bad.json: hico-det-sg1: expected a list of file names"):
        load_released_removals("hico-det-sg1", bad)


def test_cli_removals_file_without_preset(tmp_path):
    tr, te = _files(tmp_path)
    base = build_sg_split(_dataset()[0].drop_empty_images(), random_state=3, ratio=0.75, policy="released")
    gone = base.test.file_names[:3]
    (tmp_path / "rm.json").write_text(json.dumps(list(gone)))
    r = CliRunner().invoke(cli, ["split", "sg", "--dataset", tr, "--dataset", te, "--seed", "3", "--ratio",
                                 "0.75", "--policy", "released", "--removals", str(tmp_path / "rm.json"),
                                 "--out", str(tmp_path / "o"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["removed_test_entries"] == 3
    assert not set(gone) & set(read_ppdm(tmp_path / "o" / "test_hico.json").file_names)


def test_seed_is_a_deprecated_name_of_random_state():
    ds, _ = _dataset(40)
    new = build_sg_split(ds, random_state=3, ratio=0.75)
    with pytest.warns(DeprecationWarning, match="random_state"):
        old = build_sg_split(ds, seed=3, ratio=0.75)
    assert old.train.equals(new.train) and old.test.equals(new.test) and old.seed == new.seed == 3
    with pytest.raises(ConfigError, match="random_state only"):
        build_sg_split(ds, random_state=3, seed=3, ratio=0.75)
    combos = sg_combinations(ds)
    with pytest.warns(DeprecationWarning):
        assert np.array_equal(select_test_combinations(combos, ratio=0.75, seed=3),
                              select_test_combinations(combos, ratio=0.75, random_state=3))


def test_boxes_are_a_build_parameter_recorded_in_stats(tmp_path):
    ds, origin = _dataset()
    released = build_sg_split(ds, random_state=3, ratio=0.75, policy="released", origin_test=origin)
    paper = build_sg_split(ds, random_state=3, ratio=0.75, policy="paper", origin_test=origin)
    assert (released.boxes, paper.boxes) == ("as-released", "0-based")
    assert released.stats()["boxes"] == "as-released" and list(released.stats())[-1] == "boxes"
    with pytest.raises(ConfigError, match="boxes must be one of"):
        build_sg_split(ds, random_state=3, ratio=0.75, boxes="1-based")  # type: ignore[arg-type]
    zero = build_sg_split(ds, random_state=3, ratio=0.75, policy="released", origin_test=origin, boxes="0-based")
    zero.write(tmp_path / "new")
    with pytest.warns(DeprecationWarning, match="boxes"):
        released.write(tmp_path / "old", boxes="0-based")
    for f in ("trainval_hico.json", "test_hico.json", "stats.json", "table1.md"):
        assert (tmp_path / "new" / f).read_bytes() == (tmp_path / "old" / f).read_bytes(), f


def test_split_repr_names_parameters_and_sizes():
    ds, _ = _dataset()
    split = build_sg_split(ds, random_state=3, ratio=0.75, policy="released")
    text = repr(split)
    assert text.startswith("SGSplit(name='hico-det-sg-seed3', seed=3, ratio=0.75, policy='released'")
    assert f"test={split.test.n_images} images/{split.test.n_pairs} pairs" in text
    assert "test_combinations=4 of 16" in text and "array" not in text


# ----------------------------------------------------------------------------- writing, split dirs
def test_write_split_directory_round_trips(tmp_path):
    ds, origin = _dataset()
    split = build_sg_split(ds, random_state=3, ratio=0.75, policy="released", origin_test=origin)
    paths = split.write(tmp_path / "out")
    train = read_ppdm(paths["train"])
    test = read_ppdm(paths["test"])
    assert train.file_names == split.train.file_names and test.n_pairs == split.test.n_pairs
    # as-released: images of the original test set are written 1-based
    shift = np.repeat(split.test_origin_test.astype(float), np.diff(split.test.box_offsets))
    assert np.array_equal(test.boxes, split.test.boxes + shift[:, None])
    assert split.test_origin_test.any() and not split.test_origin_test.all()
    zero = build_sg_split(ds, random_state=3, ratio=0.75, policy="released", origin_test=origin,
                          boxes="0-based").write(tmp_path / "zero")
    assert np.array_equal(read_ppdm(zero["test"]).boxes, split.test.boxes)
    # test combinations, unseen classes and stats
    expected = np.unique(H.hoi_index(split.test_combinations[:, 0], split.test_combinations[:, 1]))
    assert np.array_equal(unseen_hoi_classes(tmp_path / "out"), expected)
    assert _keyset(unseen_combinations(paths["combinations"])) == _keyset(split.test_combinations)
    stats = json.loads(paths["stats"].read_text())
    assert stats["table1"]["images"] == {"train": split.train.n_images, "test": split.test.n_images}
    assert stats["table1"]["combinations"] == {"train": 12, "test": 4}
    assert stats["boxes"] == "as-released"
    assert (tmp_path / "out" / "table1.md").read_text().startswith("| data split |")
    assert "paper_table1" not in stats  # seed 3 is no released split
    released_seed = build_sg_split(ds, random_state=368, ratio=0.9, policy="paper").stats()
    assert released_seed["reference_split"] == "hico-det-sg1"
    assert released_seed["paper_table1"]["images"] == {"train": 38312, "test": 8515}


def test_same_seed_gives_byte_identical_files(tmp_path):
    ds, origin = _dataset()
    for d in ("a", "b"):
        build_sg_split(ds, random_state=5, ratio=0.75, origin_test=origin).write(tmp_path / d)
    for f in ("trainval_hico.json", "test_hico.json", "test_combinations.json", "stats.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


def test_unseen_classes_errors(tmp_path):
    (tmp_path / "test_combinations.json").write_text(json.dumps({"combinations": [{"verb_index": "x"}]}))
    with pytest.raises(FormatError, match="record 0"):
        unseen_hoi_classes(tmp_path)
    (tmp_path / "test_combinations.json").write_text(json.dumps({"label_space": "v-coco", "combinations": []}))
    with pytest.raises(ConfigError, match="hico-det splits only"):
        unseen_hoi_classes(tmp_path)
    with pytest.raises(FormatError, match="no such file"):
        unseen_hoi_classes(tmp_path / "missing")


# ----------------------------------------------------------------------------- audit, compare
def test_audit_detects_leakage_and_box_convention_mix():
    ds, origin = _dataset()
    split = build_sg_split(ds, random_state=3, ratio=0.75, policy="released", origin_test=origin)
    clean = audit_split(split.train, split.test)
    assert not clean.leaks and clean.shared_images == []
    assert repr(clean) == (f"AuditReport(train='sg:train', test='sg:test', leaks=False, shared_combinations=0, "
                           f"shared_images=0, combinations={len(clean.per_combination)})")
    assert all(r["train"] == 0 or r["test"] == 0 for r in clean.per_combination)
    # leak one test image into train
    leaky_train = HOIDataset.concat([split.train, split.test.subset([0])])
    report = audit_split(leaky_train, split.test)
    assert report.leaks and report.shared_images == [split.test.file_names[0]]
    # a 1-pixel shift on the original-test images makes the conventions differ
    groups = {g.prefix: g for g in box_convention_groups(split.test)}
    assert groups["HICO_test2015"].convention == "unknown"  # synthetic boxes never touch 0 or 1
    shifted = _shift_boxes(split.test, split.test_origin_test, -10.0)
    zero_based = _shift_boxes(shifted, ~split.test_origin_test, -9.0)
    mixed = audit_split(split.train, zero_based)
    conv = {g.prefix: g.convention for g in mixed.box_groups["test"]}
    assert conv == {"HICO_test2015": "0-based", "HICO_train2015": "1-based"}
    assert mixed.box_conventions_mixed == {"train": False, "test": True}


def test_compare_splits_reports_missing_and_extra_pairs():
    ds, _ = _dataset(30)
    a = ds.subset(np.arange(10))
    b_keep = np.ones(a.n_pairs, bool)
    b_keep[0] = False
    b = a.filter_pairs(b_keep).subset(np.arange(1, 10))
    c = compare_splits(a, a)
    assert c.identical and c.exact_box_pairs == a.n_pairs and c.min_iou == 1.0
    d = compare_splits(a, b)
    assert d.only_ours == [a.file_names[0]] and d.only_reference == []
    assert compare_splits(b, a).only_reference == [a.file_names[0]]
    first_with_pair = a.file_names[0]
    assert first_with_pair not in d.missing_pairs
    # shifted boxes still match at IoU >= 0.5 but not exactly
    e = compare_splits(a, a, box_shift=np.ones(a.n_images))
    assert e.pairs_matched == a.n_pairs and e.exact_box_pairs == 0 and 0.5 < e.min_iou < 1.0
    assert not compare_splits(a, a, box_shift=np.ones(a.n_images), iou_threshold=1.0).identical


# ----------------------------------------------------------------------------- CLI
def _files(tmp_path) -> tuple[str, str]:
    ds, origin = _dataset()
    train, test = ds.subset(np.flatnonzero(~origin)), ds.subset(np.flatnonzero(origin))
    write_ppdm(train, tmp_path / "trainval.json")
    write_ppdm(test, tmp_path / "test.json")
    return str(tmp_path / "trainval.json"), str(tmp_path / "test.json")


def test_cli_sg_audit_stats(tmp_path):
    tr, te = _files(tmp_path)
    out = tmp_path / "split"
    r = CliRunner().invoke(cli, ["split", "sg", "--dataset", tr, "--dataset", te, "--seed", "auto",
                                 "--ratio", "0.75", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "| data split |" in r.output and (out / "test_hico.json").exists()
    r = CliRunner().invoke(cli, ["split", "audit", str(out / "trainval_hico.json"), str(out / "test_hico.json")])
    assert r.exit_code == 0, r.output
    assert "no leakage" in r.output
    r = CliRunner().invoke(cli, ["split", "audit", tr, te, "--json"])
    assert r.exit_code == 1
    assert json.loads(r.output)["leaks"] is True
    r = CliRunner().invoke(cli, ["split", "stats", str(out), "--no-original"])
    assert r.exit_code == 0, r.output
    assert "hico-det-sg1 (paper) | 38,312 | 8,515 |" in r.output
    assert f"({out}, paper)" in r.output


def test_cli_errors_are_one_line(tmp_path, capsys):
    from hoibench.cli import main

    tr, _ = _files(tmp_path)
    for argv, needle in [
        (["split", "sg", "--dataset", tr, "--seed", "zz", "--out", str(tmp_path / "o")], "random_state must be"),
        (["split", "sg", "--dataset", tr, "--out", str(tmp_path / "o")], "--seed"),
        (["split", "sg", "--preset", "hico-det-sg1", "--seed", "3", "--out", str(tmp_path / "o")], "fixes --seed"),
        (["split", "sg", "--dataset", str(tmp_path / "nope.json"), "--seed", "1", "--out", str(tmp_path / "o")],
         "no such file"),
    ]:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err


def test_files_in_the_released_box_conventions_give_the_same_split_files(tmp_path):
    """The bundled route (0-based inside, +1 on write for original-test images) and the file
    route (PPDM files as the generator read them: test entries 1-based) write the same bytes."""
    ds, origin = _dataset()
    ds = ds.drop_empty_images()
    origin = np.array([f.startswith("HICO_test2015") for f in ds.file_names])
    train_part = ds.subset(np.flatnonzero(~origin))
    test_part = _shift_boxes(ds.subset(np.flatnonzero(origin)),
                                   np.ones(int(origin.sum()), bool), 1.0)
    write_ppdm(train_part, tmp_path / "trainval_hico.json")
    write_ppdm(test_part, tmp_path / "test_hico.json")
    build_sg_split(ds, random_state=3, ratio=0.75, policy="released", origin_test=origin).write(tmp_path / "api")
    r = CliRunner().invoke(cli, ["split", "sg", "--dataset", str(tmp_path / "trainval_hico.json"),
                                 "--dataset", str(tmp_path / "test_hico.json"), "--seed", "3",
                                 "--ratio", "0.75", "--policy", "released", "--out", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    for f in ("trainval_hico.json", "test_hico.json", "test_combinations.json"):
        a = json.loads((tmp_path / "api" / f).read_text())
        b = json.loads((tmp_path / "cli" / f).read_text())
        if f == "test_combinations.json":
            a.pop("name"), b.pop("name")
        assert a == b, f


# ----------------------------------------------------------------------------- V-COCO-SG presets
VC = vcoco()
_VC_OBJECTS = ("cup", "bottle", "knife", "fork", "bowl", "chair", "couch", "bed", "laptop", "book")
_VC_VERBS = ("hold_obj", "carry_obj", "look_obj", "hit_instr", "cut_instr", "eat_obj", "drink_instr",
             "read_obj", "work_on_computer_instr", "sit_instr")


def _qpic_vcoco_files(tmp_path) -> tuple[str, str]:
    """Synthetic files in QPIC's V-COCO layout: 10 x 10 (verb, object) combinations, and
    agent-only pairs (object_id -1) such as QPIC's conversion lists and the bundled V-COCO lacks."""
    rng = np.random.default_rng(5)
    grid = [(VC.verb_index(v), VC.object_index(o)) for v in _VC_VERBS for o in _VC_OBJECTS]
    stand = VC.verb_index("stand")
    parts = []
    for part, n, prefix in (("trainval", 300, "COCO_train2014"), ("test", 100, "COCO_val2014")):
        images = []
        for i in range(n):
            picks = [grid[j] for j in rng.choice(len(grid), size=int(rng.integers(1, 3)), replace=False)]
            boxes = [[10.0, 10.0, 60.0, 100.0]] + [[20.0 + 5 * k, 40.0, 90.0, 95.0] for k in range(len(picks))]
            labels = [VC.person] + [o for _, o in picks]
            pairs = [[0, k + 1, v] for k, (v, _) in enumerate(picks)] + [[0, -1, stand]]
            images.append(HOIImage.from_lists(f"{prefix}_{i:012d}.jpg", boxes, labels, pairs, width=200, height=200))
        path = tmp_path / f"{part}_vcoco.json"
        write_ppdm(HOIDataset.from_images(VC, images, name=part), path)
        parts.append(str(path))
    return parts[0], parts[1]



@pytest.mark.parametrize("preset", ["v-coco-sg1", "v-coco-sg2", "vcoco-sg3"])
def test_vcoco_preset_refuses_the_bundled_data_in_one_line(preset, tmp_path, capsys):
    out = ["--out", str(tmp_path / "o")]
    for extra in ([], ["--dataset", "v-coco"]):
        line = one_line_error(["split", "sg", "--preset", preset, *extra, *out], capsys)
        assert "QPIC's V-COCO files" in line and "trainval_vcoco.json and test_vcoco.json" in line
    assert not (tmp_path / "o").exists()  # nothing named like a released split was written
    with pytest.raises(ConfigError, match="QPIC's V-COCO files"):
        build_preset(preset)


def test_vcoco_preset_runs_on_files_in_qpic_layout_as_before(tmp_path):
    tr, te = _qpic_vcoco_files(tmp_path)
    r = CliRunner().invoke(cli, ["split", "sg", "--preset", "v-coco-sg1", "--dataset", tr, "--dataset", te,
                                 "--out", str(tmp_path / "cli"), "--json"])
    assert r.exit_code == 0, r.output
    stats = json.loads(r.output)
    assert stats["name"] == "v-coco-sg1" and stats["seed"] == 564 and stats["verify_problems"] == []
    # what the preset did before: build_sg_split with the preset's seed, ratio and released rules
    union = HOIDataset.concat([read_ppdm(tr), read_ppdm(te)])
    ref = build_sg_split(union, random_state=564, ratio=0.7, policy="released", no_object="last_box",
                         empty_images="test", name="v-coco-sg1")
    ref.write(tmp_path / "ref")
    for f in ("trainval_vcoco.json", "test_vcoco.json", "test_combinations.json", "stats.json"):
        assert (tmp_path / "cli" / f).read_bytes() == (tmp_path / "ref" / f).read_bytes(), f
    # 100 combinations: train_size=0.7 keeps 70 for train (on V-COCO's 228: 159, not the paper's 160)
    assert stats["table1"]["combinations"] == {"train": 70, "test": 30}


def test_vcoco_bundled_split_under_its_own_name(tmp_path, capsys):
    """The bundled V-COCO still splits, without a preset: any seed, a name that is not a preset's."""
    r = CliRunner().invoke(cli, ["split", "sg", "--dataset", "v-coco", "--seed", "5486", "--ratio", "0.7",
                                 "--policy", "released", "--name", "v-coco-bundled-sg", "--out",
                                 str(tmp_path / "b"), "--json"])
    assert r.exit_code == 0, r.output
    stats = json.loads(r.output)
    assert stats["name"] == "v-coco-bundled-sg" and stats["table1"]["combinations"] == {"train": 165, "test": 71}
    assert "is the released split v-coco-sg1's name" in one_line_error(
        ["split", "sg", "--dataset", "v-coco", "--seed", "564", "--name", "vcoco-sg1", "--out",
         str(tmp_path / "x")], capsys)
    # the preset's seed on the bundled data fails VERIFY: non-zero exit, one line, files kept to inspect
    line = one_line_error(["split", "sg", "--dataset", "v-coco", "--seed", "564", "--ratio", "0.7", "--policy",
                            "released", "--out", str(tmp_path / "f")], capsys)
    assert "v-coco-sg-seed564 fails VERIFY released (seed 564)" in line
    assert json.loads((tmp_path / "f" / "stats.json").read_text())["verify_problems"]


def test_cli_exits_non_zero_when_verify_fails(tmp_path, capsys):
    tr, te = _files(tmp_path)
    ds = HOIDataset.concat([read_ppdm(tr), read_ppdm(te)])
    failing = next(s for s in range(50) if build_sg_split(ds, random_state=s, ratio=0.75,
                                                          policy="paper").verify_problems)
    line = one_line_error(["split", "sg", "--dataset", tr, "--dataset", te, "--seed", str(failing), "--ratio",
                            "0.75", "--out", str(tmp_path / "o")], capsys)
    assert f"fails VERIFY paper (seed {failing})" in line
    passing = build_sg_split(ds, random_state="auto", ratio=0.75, policy="paper").seed
    r = CliRunner().invoke(cli, ["split", "sg", "--dataset", tr, "--dataset", te, "--seed", str(passing),
                                 "--ratio", "0.75", "--out", str(tmp_path / "p")])
    assert r.exit_code == 0, r.output
