"""Zero-shot HOI splits (``hoibench split zero-shot``, :mod:`hoibench.benchmarks.zeroshot`).

The train file is checked against gen-vlkt's loading rule written out independently on the JSON
of the source file (``datasets/hico.py``: pairs that carry an unseen class are skipped, images
left without pairs are dropped); the unseen list travels with the split to ``eval hico``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench._exceptions import ConfigError
from hoibench.benchmarks import BenchmarkBuild, build_zero_shot_split
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIImage, HOIPredictions
from hoibench.datasets import hico_class_subsets, load_dataset, zero_shot_classes
from hoibench.formats import read_ppdm, write_ppdm, write_predictions
from hoibench.formats.ppdm import to_ppdm_list
from hoibench.vocab import hico_det
from tests.conftest import one_line_error

V = hico_det()
PERSON, HORSE = V.object_index("person"), V.object_index("horse")
RIDE, FEED, HOLD = V.verb_index("ride"), V.verb_index("feed"), V.verb_index("hold")


def gen_vlkt_rule(annotations: list[dict], unseen: set[int]) -> list[dict]:
    """gen-vlkt's train filter, re-written from its loop: skip every (subject, object) pair with
    an unseen hoi_category_id (1-based in the file), drop images left without pairs."""
    out = []
    for img in annotations:
        skip = {(h["subject_id"], h["object_id"]) for h in img["hoi_annotation"]
                if h["hoi_category_id"] - 1 in unseen}
        kept = [h for h in img["hoi_annotation"] if (h["subject_id"], h["object_id"]) not in skip]
        if kept:
            out.append({**img, "hoi_annotation": kept})
    return out


@pytest.fixture(scope="module")
def rf_uc(tmp_path_factory):
    out = tmp_path_factory.mktemp("zs") / "rf-uc"
    r = CliRunner().invoke(cli, ["split", "zero-shot", "--protocol", "rf-uc", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out, r.output


def test_rf_uc_train_file_is_gen_vlkt_rule_on_bundled_hico_det(rf_uc):
    out, output = rf_uc
    source = to_ppdm_list(load_dataset("hico-det", "train"))
    unseen = set(json.loads((out / "test_combinations.json").read_text())["combinations"][k]["hoi"]
                 for k in range(120))
    assert unseen == set(V.zero_shot_unseen("rf-uc").tolist())
    written = json.loads((out / "trainval_hico.json").read_text())
    expected = gen_vlkt_rule(source, unseen)
    assert written == expected
    # the rule removed something; HICO-DET gives every annotation its own boxes, so here the pair
    # rule removes exactly the unseen annotations (the hand-made test below tells the rules apart)
    n_unseen = sum(h["hoi_category_id"] - 1 in unseen for img in source for h in img["hoi_annotation"])
    n_removed = sum(len(i["hoi_annotation"]) for i in source) - sum(len(i["hoi_annotation"]) for i in written)
    assert 0 < n_unseen <= n_removed
    stats = json.loads((out / "stats.json").read_text())
    assert stats["train"]["removed_pairs"] == n_removed and stats["train"]["images"] == len(written)
    assert "120 unseen classes" in output
    # the test file is the full test set
    assert json.loads((out / "test_hico.json").read_text()) == to_ppdm_list(load_dataset("hico-det", "test"))


def test_eval_hico_reports_unseen_seen_and_full(rf_uc, tmp_path):
    out, _ = rf_uc
    gt = load_dataset("hico-det", "test")
    unseen = zero_shot_classes(str(out))
    # exact predictions for every test pair of a seen class, none for unseen ones
    keep = ~np.isin(gt.pair_hoi, unseen)
    files = list(gt.file_names)
    counts = np.bincount(gt.pair_image[keep], minlength=gt.n_images)
    p = HOIPredictions.from_arrays(V, files, counts, gt.pair_subject_boxes[keep], gt.pair_object_boxes[keep],
                                   gt.pair_object_label[keep], gt.pair_verb[keep], np.ones(int(keep.sum())))
    write_predictions(p, tmp_path / "p.json")
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", str(out / "test_hico.json"), "--pred",
                                 str(tmp_path / "p.json"), "--classes", f"unseen:{out}", "--json",
                                 str(tmp_path / "r.json")])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "r.json").read_text())
    with_gt = np.flatnonzero(gt.hoi_counts() > 0)
    seen_with_gt = np.setdiff1d(with_gt, unseen)
    assert res["subsets"]["unseen"] == pytest.approx(0.0)
    assert res["subsets"]["seen"] == pytest.approx(100 * len(seen_with_gt) / (600 - len(unseen)))
    assert res["full"] == pytest.approx(100 * len(seen_with_gt) / 600)
    assert "Full" in r.output  # the table; its Unseen and Seen columns are cut at the test width


def _image(name: str, pairs: list[tuple[int, int, int]], n_boxes: int = 3) -> HOIImage:
    """Person box 0, horse boxes 1.. ; pairs (subject, object, verb)."""
    boxes = [[0, 0, 10, 10]] + [[20 * k, 0, 20 * k + 10, 10] for k in range(1, n_boxes)]
    return HOIImage.from_lists(name, boxes, [PERSON] + [HORSE] * (n_boxes - 1), [list(p) for p in pairs],
                               width=100, height=100)


def test_builder_shape_and_rule_on_hand_made_pairs(tmp_path):
    train = HOIDataset.from_images(V, [
        _image("a.jpg", [(0, 1, RIDE), (0, 1, FEED), (0, 2, FEED)]),  # ride horse unseen: pair (0,1) goes
        _image("b.jpg", [(0, 1, RIDE)]),  # only unseen: image dropped
        _image("c.jpg", []),  # no pairs to begin with: dropped as gen-vlkt does
        _image("d.jpg", [(0, 2, HOLD)]),
    ], name="hand")
    test = HOIDataset.from_images(V, [_image("t.jpg", [(0, 1, RIDE)])], name="hand-test")
    ids = tmp_path / "unseen.txt"
    ids.write_text(f"{V.hoi_index(RIDE, HORSE)}\n")
    split = build_zero_shot_split(train, test=test, protocol=str(ids), random_state=0)
    assert isinstance(split, BenchmarkBuild)
    assert split.train.file_names == ("a.jpg", "d.jpg")
    assert split.train.pair_verb.tolist() == [FEED, HOLD] and split.removed_pairs == 3
    assert split.test is test and "unseen=1 classes" in repr(split)
    paths = split.write(tmp_path / "out")
    assert set(paths) == {"train", "test", "combinations", "stats", "provenance"}
    first = {k: p.read_bytes() for k, p in paths.items()}
    build_zero_shot_split(train, test=test, protocol=str(ids)).write(tmp_path / "out")
    assert {k: p.read_bytes() for k, p in paths.items()} == first  # byte-identical
    assert json.loads(paths["stats"].read_text()) == split.stats()
    assert read_ppdm(paths["train"], vocab=V).equals(split.train)
    assert read_ppdm(paths["test"], vocab=V).equals(split.test)
    subsets, sel = hico_class_subsets(f"unseen:{tmp_path / 'out'}")
    assert sel.tolist() == [V.hoi_index(RIDE, HORSE)] and len(subsets["seen"]) == 599


def test_b_right_folder_and_two_files_as_source(tmp_path):
    train = HOIDataset.from_images(V, [_image("a.jpg", [(0, 1, RIDE)]), _image("b.jpg", [(0, 2, FEED)])])
    test = HOIDataset.from_images(V, [_image("t.jpg", [(0, 1, FEED)])])
    folder = tmp_path / "bright"
    folder.mkdir()
    write_ppdm(train, folder / "trainval_hico.json")
    write_ppdm(test, folder / "test_hico.json")
    runner = CliRunner()
    r = runner.invoke(cli, ["split", "zero-shot", "--protocol", "uo", "--dataset", str(folder), "--out",
                            str(tmp_path / "o1"), "--json"])
    assert r.exit_code == 0, r.output
    horse_uo = V.hoi_index(RIDE, HORSE) in V.zero_shot_unseen("uo")
    assert json.loads(r.output)["train"]["images"] == (0 if horse_uo else 2)
    r2 = runner.invoke(cli, ["split", "zero-shot", "--protocol", "uo", "--dataset", str(folder / "trainval_hico.json"),
                             "--dataset", str(folder / "test_hico.json"), "--out", str(tmp_path / "o2")])
    assert r2.exit_code == 0, r2.output
    assert (tmp_path / "o1" / "trainval_hico.json").read_bytes() == (tmp_path / "o2" / "trainval_hico.json").read_bytes()



def test_bad_protocols_and_sources_give_one_line(tmp_path, capsys):
    out = ["--out", str(tmp_path / "o")]
    assert "zero-shot protocol must be one of" in one_line_error(
        ["split", "zero-shot", "--protocol", "nonsense", *out], capsys)
    (tmp_path / "classes.json").write_text(json.dumps({"kind": "balanced_classes", "classes": [{"hoi": 1}]}))
    assert "balanced classes.json" in one_line_error(
        ["split", "zero-shot", "--protocol", str(tmp_path / "classes.json"), *out], capsys)
    assert "needs a train and a test set" in one_line_error(
        ["split", "zero-shot", "--protocol", "rf-uc", "--dataset", "hico-det:train", *out], capsys)
    assert "trainval_hico.json and test_hico.json" in one_line_error(
        ["split", "zero-shot", "--protocol", "rf-uc", "--dataset", str(tmp_path), *out], capsys)
    vc = load_dataset("v-coco", "test")
    with pytest.raises(ConfigError, match="HICO-DET's 600 classes"):
        build_zero_shot_split(vc, test=vc, protocol="rf-uc")
