"""B-RIGHT's balanced zero-shot protocol: ``eval hico --classes zero-shot:DIR`` scores the zero-shot
classes a ``split balanced --zero-shot`` folder records, and ``analyze ranking --zero-shot`` adds
Table 3's zero-shot columns (RF-UC vs B-RIGHT zero-shot) from result files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench.benchmarks import build_balanced_split
from hoibench.cli import cli
from hoibench.evaluation import hico_mean_ap
from hoibench.formats import read_dataset, write_predictions
from hoibench.testing import noisy_predictions
from tests.conftest import one_line_error
from tests.test_balanced import synthetic

KW = {"top_k": 10, "l_train": 20, "l_test": 5, "epochs": 3, "random_state": 0}


@pytest.fixture(scope="module")
def split_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A balanced split with a zero-shot set (3 classes here), written as the CLI writes it."""
    out = tmp_path_factory.mktemp("bright") / "zs"
    res = build_balanced_split(synthetic(n_images=600, n_classes=24), zero_shot=True, l_zero_shot=3, **KW)
    assert len(res.zero_shot.classes) >= 2
    res.write(out)
    return out


def _eval(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["eval", "hico", *args])
    return r.exit_code, r.output


def test_zero_shot_dir_scores_the_recorded_zero_shot_classes(split_dir: Path, tmp_path: Path) -> None:
    gt_file = split_dir / "test_zero_shot_hico.json"
    gt = read_dataset(gt_file)
    preds = noisy_predictions(gt, seed=1, per_image=(5, 8))
    pred_file = tmp_path / "pred.json"
    write_predictions(preds, pred_file)
    classes = json.loads((split_dir / "classes.json").read_text())
    zs = sorted(c["hoi"] for c in classes["zero_shot_classes"])
    trained = sorted(c["hoi"] for c in classes["classes"])

    code, out = _eval(["--gt", str(gt_file), "--pred", str(pred_file), "--classes", f"zero-shot:{split_dir}",
                       "--json", str(tmp_path / "r.json"), "--benchmark", "b-right-zs"])
    assert code == 0, out
    rec = json.loads((tmp_path / "r.json").read_text())
    assert rec["headline"] == "unseen"  # the number the zero-shot set reports
    expected = hico_mean_ap(preds, gt, class_subsets={"unseen": np.array(zs)})
    assert math.isclose(rec["subsets"]["unseen"], 100 * expected.subsets["unseen"], abs_tol=1e-7)
    # the zero-shot test set holds no instance of the trained classes: their mean is undefined, not 0
    assert rec["subsets"]["seen"] is None
    assert "Unseen mAP" in out and f"{len(zs)} unseen classes" in out
    assert len(trained) == KW["top_k"]


def test_named_settings_keep_their_meaning(split_dir: Path, tmp_path: Path) -> None:
    """``zero-shot:uo`` is still the named UO list (headline full), not a folder called 'uo'."""
    gt_file = split_dir / "test_zero_shot_hico.json"
    pred_file = tmp_path / "pred.json"
    write_predictions(noisy_predictions(read_dataset(gt_file), seed=2, per_image=(4, 6)), pred_file)
    code, out = _eval(["--gt", str(gt_file), "--pred", str(pred_file), "--classes", "zero-shot:uo",
                       "--json", str(tmp_path / "r.json")])
    assert code == 0, out
    assert json.loads((tmp_path / "r.json").read_text())["headline"] == "full"


def test_a_folder_without_a_zero_shot_record_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    build_balanced_split(synthetic(n_images=300, n_classes=12), **KW).write(plain)
    pred_file = tmp_path / "pred.json"
    gt_file = plain / "test_hico.json"
    write_predictions(noisy_predictions(read_dataset(gt_file), seed=0, per_image=(3, 4)), pred_file)
    for folder, needle in ((plain, "classes.json: zero_shot_classes: no zero-shot record"),
                           (tmp_path, "no classes.json: not a folder written by `hoibench split balanced"),
                           (tmp_path / "missing", "not a folder")):
        line = one_line_error(["eval", "hico", "--gt", str(gt_file), "--pred", str(pred_file), "--classes",
                               f"zero-shot:{folder}"], capsys)
        assert needle in line, line


def _result(path: Path, model: str, bench: str, full: float, unseen: float | None) -> str:
    subsets = {} if unseen is None else {"unseen": unseen, "seen": full}
    d = {"kind": "hico_map", "model": model, "benchmark": bench, "protocol": "official",
         "known_object": False, "full": full, "rare": full, "non_rare": full, "subsets": subsets,
         "headline": "unseen" if bench == "b-right-zs" else "full",
         "per_class_ap": None, "n_gt": None, "class_names": None, "classes": None}
    p = path / f"{model}-{bench}.json"
    p.write_text(json.dumps(d))
    return str(p)


# B-RIGHT Table 3 (paper 002): HICO-DET, B-RIGHT, RF-UC unseen, B-RIGHT zero-shot
TABLE3 = {"DP-HOI": (36.56, 40.85, 30.49, 31.81), "RLIPv2": (35.46, 41.61, 21.45, 29.97),
          "PViC": (34.69, 43.73, None, 37.07), "HOICLIP": (34.56, 39.14, 25.53, 28.36),
          "GEN-VLKT": (33.61, 38.02, 21.36, 4.38), "UPT": (31.65, 42.34, None, 35.95),
          "CQL": (31.58, 33.59, None, 24.68), "CDN": (31.36, 35.24, None, 27.05),
          "QPIC": (29.11, 34.00, None, 24.05)}


def test_ranking_prints_table3_zero_shot_columns(tmp_path: Path) -> None:
    paths = []
    for m, (h, b, rfuc, zs) in TABLE3.items():
        paths += [_result(tmp_path, m, "hico-det", h, None), _result(tmp_path, m, "b-right", b, None),
                  _result(tmp_path, m, "b-right-zs", zs, zs)]
        if rfuc is not None:
            paths.append(_result(tmp_path, m, "hico-det-rf-uc", rfuc + 5, rfuc))
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["analyze", "ranking", *paths, "--reference", "hico-det", "--other", "b-right",
                                 "--zero-shot", "hico-det-rf-uc", "--zero-shot", "b-right-zs", "--out", str(out)])
    assert r.exit_code == 0, r.output
    # the RF-UC column is the unseen mAP (not the full one, +5 here); '–' where a model has none
    assert "| DP-HOI | 36.56 | 1 | 40.85 | 4 (↓ 3) | 30.49 | 31.81 |" in r.output
    assert "| PViC | 34.69 | 3 | 43.73 | 1 (↑ 2) | – | 37.07 |" in r.output
    assert "| GEN-VLKT | 33.61 | 5 | 38.02 | 6 (↓ 1) | 21.36 | 4.38 |" in r.output
    csv = (out / "ranking-shift.csv").read_text().splitlines()
    assert csv[0].endswith("map_zero_shot_unseen_hico-det-rf-uc,map_zero_shot_unseen_b-right-zs")
    assert (out / "ranking-shift.png").read_bytes().startswith(b"\x89PNG")


def test_ranking_zero_shot_needs_unseen_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [_result(tmp_path, m, bench, v, None) for m, v in (("a", 30.0), ("b", 20.0))
             for bench in ("hico-det", "b-right", "rf-uc-without-classes")]
    line = one_line_error(["analyze", "ranking", *paths, "--reference", "hico-det", "--other", "b-right",
                           "--zero-shot", "rf-uc-without-classes"], capsys)
    assert "no unseen mAP in this result" in line
