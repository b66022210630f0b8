"""HICO-DET-SG / V-COCO-SG against the real released files in ``../shared/data/hoi-sg``.

Pairs are compared per image as (verb, object, subject box, object box): entries of the original
*test* set must match exactly after the released files' +1 shift (they keep the hicodet toolkit's
1-based pixels); entries of the original *train* set come from HAKE, whose boxes are another merge
of the same HICO-DET annotations than PPDM's (both boxes still overlap with IoU >= 0.68), so they
match at IoU >= 0.5.
"""

from __future__ import annotations

import numpy as np
import pytest

from hoibench._exceptions import ConfigError
from hoibench.benchmarks.sg import (
    PAPER_TABLE1,
    audit_split,
    build_preset,
    build_sg_split,
    compare_splits,
    load_union,
    select_test_combinations,
    sg_combinations,
)
from hoibench.formats import read_ppdm, unseen_hoi_classes

from .conftest import shared_file

pytestmark = pytest.mark.shared_data

#: The differences between ``--preset hico-det-sg1`` on the bundled data and the released test
#: file. All come from the 217 ``no_interaction`` train pairs that HAKE's file lacks: an image
#: whose only test pairs are such pairs stays in train with us.
SG1_MISSING_IMAGES = [
    "HICO_train2015_00000547.jpg", "HICO_train2015_00001552.jpg", "HICO_train2015_00002584.jpg",
    "HICO_train2015_00013570.jpg", "HICO_train2015_00019543.jpg", "HICO_train2015_00030555.jpg",
    "HICO_train2015_00032912.jpg",
]
SG1_MISSING_PAIRS = {
    "HICO_train2015_00019154.jpg": [("no_interaction", "handbag")],
    "HICO_train2015_00024950.jpg": [("no_interaction", "sink"), ("no_interaction", "sink")],
}


@pytest.fixture(scope="module")
def union():
    return load_union("hico-det")


@pytest.fixture(scope="module")
def released_sg1():
    return read_ppdm(shared_file("hoi-sg/test_hico_sg1.json"))


@pytest.fixture(scope="module")
def sg1(union):
    ds, origin = union
    return build_preset("hico-det-sg1", dataset=ds, origin_test=origin)


def test_select_reproduces_the_released_combinations(union, released_sg1, sg1):
    ds, _ = union
    combos = sg_combinations(ds)
    assert len(combos) == 600
    test = select_test_combinations(combos, ratio=0.9, random_state=368)
    released = set(map(tuple, released_sg1.combinations().tolist()))
    assert set(map(tuple, test.tolist())) == released and len(released) == 60
    assert set(map(tuple, sg1.test_combinations.tolist())) == released


def test_preset_sg1_reproduces_the_released_test_file(union, released_sg1, sg1):
    ds, _ = union
    cmp = compare_splits(sg1.test, released_sg1, box_shift=sg1.test_origin_test.astype(float))
    assert cmp.only_ours == []
    assert cmp.only_reference == SG1_MISSING_IMAGES
    assert cmp.extra_pairs == {}
    assert cmp.missing_pairs == SG1_MISSING_PAIRS
    in_missing = sum(len(released_sg1.image(released_sg1.index_of(f)).pairs) for f in SG1_MISSING_IMAGES)
    assert cmp.pairs_matched == sg1.test.n_pairs == released_sg1.n_pairs - in_missing - 3
    assert cmp.min_iou > 0.6
    # every missing image's test pairs are no_interaction pairs HAKE lacks: with us it is train
    no_inter = ds.vocab.verb_index("no_interaction")
    rel_names = set(SG1_MISSING_IMAGES)
    for i, f in enumerate(released_sg1.file_names):
        if f in rel_names:
            im = released_sg1.image(i)
            assert (im.pairs[:, 2] == no_inter).all()
            assert f in sg1.train.file_names
    # entries of the original test set match exactly (1-based in the released file)
    orig_test = np.flatnonzero(sg1.test_origin_test)
    exact = compare_splits(sg1.test.subset(orig_test), released_sg1, iou_threshold=1.0,
                           box_shift=np.ones(len(orig_test)))
    assert exact.identical is False  # the reference has more images...
    assert exact.only_ours == [] and exact.missing_pairs == {} and exact.extra_pairs == {}
    assert exact.exact_box_pairs == exact.pairs_matched == sg1.test.subset(orig_test).n_pairs


def test_released_policy_counts_add_up_to_the_papers_table1(union, sg1):
    """train + test + removed test entries = images with pairs, for every released split."""
    ds, origin = union
    with_pairs = int((ds.pairs_per_image > 0).sum())
    assert with_pairs == 47179
    for name in ("hico-det-sg1", "hico-det-sg2", "hico-det-sg3"):
        split = sg1 if name == "hico-det-sg1" else build_preset(name, dataset=ds, origin_test=origin)
        paper = PAPER_TABLE1[name]["images"]
        assert split.train.n_images + split.test.n_images + len(split.removed) == with_pairs
        assert paper[0] + paper[1] + len(split.removed) == with_pairs
        assert split.missing_removals == ()
        # only images whose test pairs HAKE lacks move (a few dozen at most)
        assert abs(split.test.n_images - paper[1]) <= 30
        assert split.table1()["combinations"] == {"train": 540, "test": 60}
        assert not audit_split(split.train, split.test).leaks


def test_split3_inherits_split2_deletions(union):
    ds, origin = union
    fresh = build_sg_split(ds, random_state=750, ratio=0.9, policy="released", origin_test=origin,
                           removals=build_preset("hico-det-sg3", dataset=ds, origin_test=origin).removed)
    inherited = build_preset("hico-det-sg3", dataset=ds, origin_test=origin)
    # inheritance moves images to train and drops pairs from test images (fewer test pairs)
    assert inherited.train.n_images > fresh.train.n_images
    assert inherited.test.n_pairs < fresh.test.n_pairs
    paper = PAPER_TABLE1["hico-det-sg3"]
    assert abs(inherited.test.n_pairs - paper["triplets"][1]) < abs(fresh.test.n_pairs - paper["triplets"][1])
    assert abs(inherited.test.n_pairs - paper["triplets"][1]) <= 10


def test_audit_of_released_sg1_reports_no_leak_and_the_box_mix(sg1, released_sg1):
    report = audit_split(sg1.train, released_sg1)
    # our train holds the 7 images whose released test pairs HAKE lacks, with other pairs
    assert not report.leaks and report.shared_images == SG1_MISSING_IMAGES
    conv = {g.prefix: g.convention for g in report.box_groups["test"]}
    assert conv == {"HICO_test2015": "1-based", "HICO_train2015": "0-based"}
    assert report.box_conventions_mixed["test"] is True


def test_paper_policy_on_the_three_seeds(union):
    ds, origin = union
    for seed in (368, 680, 750):
        paper = build_sg_split(ds, random_state=seed, ratio=0.9, policy="paper", origin_test=origin)
        released = build_sg_split(ds, random_state=seed, ratio=0.9, policy="released", origin_test=origin)
        assert paper.train.equals(released.train)  # train images are the same under both rules
        assert set(paper.test.file_names) < set(released.test.file_names)
        assert paper.test.n_images == released.test.n_images - released.mixed_images
        test_set = set(map(tuple, paper.test_combinations.tolist()))
        assert set(map(tuple, paper.test.combinations().tolist())) <= test_set
        assert not audit_split(paper.train, paper.test).leaks


def test_unseen_hoi_classes_of_the_released_split1(tmp_path, sg1, released_sg1):
    from hoibench._io import atomic_write_json

    atomic_write_json(tmp_path / "test_combinations.json", sg1.combinations_record())
    hoi = unseen_hoi_classes(tmp_path)
    expected = np.unique(released_sg1.pair_hoi)
    assert np.array_equal(hoi, expected) and len(hoi) == 60


@pytest.mark.slow
def test_written_split_directory_reads_back(tmp_path, sg1):
    paths = sg1.write(tmp_path)
    test = read_ppdm(paths["test"])
    assert test.file_names == sg1.test.file_names and test.n_pairs == sg1.test.n_pairs
    assert np.array_equal(unseen_hoi_classes(tmp_path), np.unique(sg1.test.pair_hoi))
    report = audit_split(read_ppdm(paths["train"]), test)
    assert not report.leaks and report.box_conventions_mixed == {"train": True, "test": True}


def test_vcoco_released_file_follows_the_last_box_rule():
    """Pairs without an object in the released V-COCO-SG test file are test pairs under the
    released generator's ``annotations[-1]`` lookup (the image's last box)."""
    from hoibench.benchmarks.sg._assign import _test_pair_mask

    rel = read_ppdm(shared_file("hoi-sg/test_vcoco_sg1.json"))
    agent_only = rel.pair_object_label < 0
    assert agent_only.sum() == 715
    observed = rel.combinations()
    last_box = _test_pair_mask(rel, observed, no_object="last_box")
    never = _test_pair_mask(rel, observed, no_object="never")
    assert not never[agent_only].any()
    assert last_box[agent_only].mean() > 0.98
    assert int((rel.pairs_per_image == 0).sum()) == 27  # empty images went to test


def test_vcoco_preset_refuses_the_bundled_data_which_splits_under_its_own_name():
    """The bundled V-COCO is not QPIC's conversion (no agent-only pairs, 236 combinations): the
    preset refuses it; the same parameters without the preset build a split of another name."""
    ds, origin = load_union("v-coco")
    with pytest.raises(ConfigError, match="QPIC's V-COCO files"):
        build_preset("v-coco-sg1", dataset=ds, origin_test=origin)
    split = build_sg_split(ds, random_state=564, ratio=0.7, policy="released", origin_test=origin)
    n = len(split.combinations)
    assert n == len(sg_combinations(ds)) == 236 and split.name == "v-coco-sg-seed564"
    assert len(split.test_combinations) == int(np.ceil(0.3 * n)) == 71
    assert split.verify_problems  # the released seed fails VERIFY on this data
    assert not audit_split(split.train, split.test).leaks


def test_cli_stats_prints_original_paper_and_released_rows():
    from click.testing import CliRunner

    from hoibench.cli import cli

    shared_file("hoi-sg/test_hico_sg1.json")
    r = CliRunner().invoke(cli, ["split", "stats"])
    assert r.exit_code == 0, r.output
    assert "| original hico-det (bundled) | 38,118 | 9,658 | 117,654 | 33,405 | 600 | 600 |" in r.output
    assert "| hico-det-sg3 (paper) | 40,672 | 6,229 | 120,096 | 8,994 | 540 | 60 |" in r.output
    assert "| hico-det-sg1 (released test file) | – | 8,515 | – | 14,475 | – | 60 |" in r.output
