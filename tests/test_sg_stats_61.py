"""Section 6.1 of the SG paper from ``hoibench split stats``: the HICO-DET-SG train data relative to
V-COCO-SG's (images, HOI triplets, combination classes), the paper's stated ratios beside those its
Table 1 gives and those of the split folders given (built here from synthetic data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench.benchmarks.sg import PAPER_SECTION61, build_sg_split, paper_row, section61_ratios
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIImage
from hoibench.vocab import LabelSpace, hico_det, vcoco


def _synthetic(vocab: LabelSpace, combos: list[tuple[int, int]], n_images: int, prefix: str,
               seed: int) -> HOIDataset:
    """Images with 1-2 pairs, one person and one object box per pair."""
    rng = np.random.default_rng(seed)
    images = []
    for i in range(n_images):
        picks = [combos[j] for j in rng.choice(len(combos), size=int(rng.integers(1, 3)), replace=False)]
        boxes, labels, pairs = [], [], []
        for k, (v, o) in enumerate(picks):
            boxes += [[10.0 + k, 10.0, 60.0 + k, 100.0], [15.0, 50.0 + k, 90.0, 105.0 + k]]
            labels += [vocab.person, o]
            pairs.append([2 * k, 2 * k + 1, v])
        images.append(HOIImage.from_lists(f"{prefix}_{i:08d}.jpg", boxes, labels, pairs, width=200, height=200))
    return HOIDataset.from_images(vocab, images, name=prefix)


def _combos(vocab: LabelSpace, verbs: list[str], objects: list[str]) -> list[tuple[int, int]]:
    return [(vocab.verb_index(v), vocab.object_index(o)) for v in verbs for o in objects]


@pytest.fixture(scope="module")
def split_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, dict]:
    h, v = hico_det(), vcoco()
    hico = _synthetic(h, _combos(h, ["hold", "carry", "wash", "lick"], ["cup", "bottle", "knife", "fork"]),
                      160, "HICO_train2015", 0)
    vc = _synthetic(v, _combos(v, ["hold_obj", "carry_obj", "look_obj"], ["cup", "bottle", "knife"]),
                    50, "COCO_train2014", 1)
    root = tmp_path_factory.mktemp("sg61")
    hs = build_sg_split(hico, random_state=0, ratio=0.75, policy="released", verify="released", name="h-sg")
    vs = build_sg_split(vc, random_state=0, ratio=0.7, policy="released", verify="released", name="v-sg")
    hs.write(root / "h")
    vs.write(root / "v")
    return root / "h", root / "v", hs.table1(), vs.table1()


def test_ratios_of_the_paper_table1() -> None:
    """What the paper's own Table 1 gives for the quantities section 6.1 states."""
    r2 = section61_ratios(paper_row("hico-det-sg2"), paper_row("v-coco-sg2"))
    assert r2["images"] == pytest.approx(39213 / 7057)  # 5.56: the stated 5.6
    assert r2["combinations"] == pytest.approx(540 / 160)  # 3.375: the stated 3.4
    assert r2["triplets"] == pytest.approx(122299 / 15644)  # 7.82, not the stated 12.6
    assert r2["triplets_per_combination"] == pytest.approx((122299 / 540) / (15644 / 160))
    assert PAPER_SECTION61 == {"images": 5.6, "triplets": 12.6, "combinations": 3.4,
                               "triplets_per_combination": None}


def test_split_stats_prints_section61(split_dirs: tuple[Path, Path, dict, dict]) -> None:
    hdir, vdir, ht, vt = split_dirs
    r = CliRunner().invoke(cli, ["split", "stats", "--no-original", str(hdir), str(vdir)])
    assert r.exit_code == 0, r.output
    out = r.output
    assert "Section 6.1" in out
    assert "| paper section 6.1 (stated) | 5.6 | 12.6 | 3.4 | more (no number) |" in out
    assert "| paper Table 1, split 2 | 5.56 | 7.82 | 3.38 | 2.32 |" in out
    # the measured row: the built folders' own train counts, computed here by hand
    img = ht["images"]["train"] / vt["images"]["train"]
    trip = ht["triplets"]["train"] / vt["triplets"]["train"]
    comb = ht["combinations"]["train"] / vt["combinations"]["train"]
    row = f"| {hdir} / {vdir} (measured) | {img:.2f} | {trip:.2f} | {comb:.2f} | {trip / comb:.2f} |"
    assert row in out, out
    assert ht["combinations"]["train"] == 12 and vt["combinations"]["train"] == 6  # 0.75 x 16, 0.7 x 9


def test_unpaired_split_folders_are_said(split_dirs: tuple[Path, Path, dict, dict]) -> None:
    hdir, _, _, _ = split_dirs
    r = CliRunner().invoke(cli, ["split", "stats", "--no-original", str(hdir)])
    assert r.exit_code == 0, r.output
    assert "(measured)" not in r.output
    assert "1 HICO-DET and 0 V-COCO; the unpaired ones have no section 6.1 row" in r.output
