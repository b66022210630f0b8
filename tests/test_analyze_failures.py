"""Failure cases (the SG paper's Figure 3): ``hoibench analyze failures`` draws ground truth and
detections together, each detection marked TP or by kind of FP, from the matches file of
``eval hico --matches``. The ground truth and detections are built here, one per category."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench.analysis import classify_detections, failure_counts
from hoibench.cli import cli
from hoibench.data import HOIDataset, HOIImage, HOIPredictions
from hoibench.evaluation import match_hico_detections
from hoibench.formats import write_hicodet, write_predictions
from hoibench.vocab import hico_det
from tests.conftest import one_line_error

V = hico_det()
PERSON = [10.0, 10.0, 60.0, 100.0]


def _image(name: str, obj: str, box: list[float], verb: str) -> HOIImage:
    return HOIImage.from_lists(name, [PERSON, box], [V.person, V.object_index(obj)], [[0, 1, V.verb_index(verb)]],
                               width=200, height=150)


HORSE, BED, RACKET = [70.0, 40.0, 180.0, 140.0], [60.0, 60.0, 190.0, 140.0], [60.0, 20.0, 90.0, 60.0]
GT = HOIDataset.from_images(V, [_image("a.jpg", "horse", HORSE, "wash"),  # Figure 3a
                                _image("b.jpg", "bed", BED, "lie_on"),  # Figure 3b
                                _image("c.jpg", "tennis_racket", RACKET, "swing")])  # Figure 3c
# (image, verb, object, human box, object box, score, expected category)
DETECTIONS = [
    ("a.jpg", "wash", "horse", PERSON, HORSE, 0.90, "tp"),
    ("a.jpg", "wash", "horse", PERSON, [71.0, 41.0, 181.0, 141.0], 0.80, "duplicate"),
    ("a.jpg", "wash", "horse", PERSON, [130.0, 40.0, 240.0, 140.0], 0.70, "poor_localisation"),
    ("a.jpg", "straddle", "horse", PERSON, HORSE, 0.95, "wrong_verb"),
    ("b.jpg", "lie_on", "bench", PERSON, [0.0, 110.0, 40.0, 150.0], 0.85, "wrong_object"),
    ("c.jpg", "hold", "baseball_bat", PERSON, RACKET, 0.75, "wrong_verb_and_object"),
    ("c.jpg", "wash", "horse", [120.0, 100.0, 150.0, 148.0], [150.0, 100.0, 199.0, 148.0], 0.60, "background"),
]


def _predictions() -> HOIPredictions:
    names = ["a.jpg", "b.jpg", "c.jpg"]
    rows = sorted(DETECTIONS, key=lambda d: names.index(d[0]))
    return HOIPredictions.from_arrays(
        V, names, [sum(d[0] == n for d in rows) for n in names],
        np.array([d[3] for d in rows]), np.array([d[4] for d in rows]),
        np.array([V.object_index(d[2]) for d in rows]), np.array([V.verb_index(d[1]) for d in rows]),
        np.array([d[5] for d in rows]))


def test_every_category_on_hand_built_detections() -> None:
    preds = _predictions()
    matches = match_hico_detections(preds, GT)
    verdicts = classify_detections(matches, preds, GT)
    by_score = {v.score: v.category for v in verdicts}
    assert by_score == {d[5]: d[6] for d in DETECTIONS}
    assert failure_counts(verdicts) == {k: 1 for k in ("tp", "duplicate", "poor_localisation", "wrong_verb",
                                                       "wrong_object", "wrong_verb_and_object", "background")}
    wrong_verb = next(v for v in verdicts if v.category == "wrong_verb")
    assert V.hoi_name(int(GT.pair_hoi[wrong_verb.gt_pair])) == "wash horse"  # the pair that explains it
    assert wrong_verb.iou_human == pytest.approx(1.0) and wrong_verb.iou_object == pytest.approx(1.0)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    gt, pred, matches = tmp_path / "gt.json", tmp_path / "pred.json", tmp_path / "matches.json"
    write_hicodet(GT, gt)
    write_predictions(_predictions(), pred)
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", str(gt), "--pred", str(pred), "--matches", str(matches),
                                 "--model", "toy"])
    assert r.exit_code == 0, r.output
    return {"gt": str(gt), "pred": str(pred), "matches": str(matches)}


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_cli_class_draws_ground_truth_and_detections(files: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["analyze", "failures", "--matches", files["matches"], "--gt", files["gt"],
                                 "--pred", files["pred"], "--class", "wash horse", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "2 image(s) drawn on a blank canvas of the image's size (no --images given)" in r.output
    cls = V.hoi_index(V.verb_index("wash"), V.object_index("horse"))
    png = (out / f"failures-class-{cls}.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    rows = _read_csv(out / f"failures-class-{cls}-detections.csv")
    assert [(row["rank"], row["category"]) for row in rows] == [
        ("1", "tp"), ("2", "duplicate"), ("3", "poor_localisation"), ("4", "background")]
    counts = {row["category"]: int(row["detections"]) for row in _read_csv(out / f"failures-class-{cls}-categories.csv")}
    assert counts["tp"] == 1 and counts["background"] == 1 and counts["wrong_verb"] == 0
    # --fp-only draws the failures only; the counts still cover every detection of the class
    r = CliRunner().invoke(cli, ["analyze", "failures", "--matches", files["matches"], "--gt", files["gt"],
                                 "--pred", files["pred"], "--class", str(cls), "--fp-only", "--top", "2",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    rows = _read_csv(out / f"failures-class-{cls}-detections.csv")
    assert [row["category"] for row in rows] == ["duplicate", "poor_localisation"]


def test_cli_image_with_an_images_folder(files: dict[str, str], tmp_path: Path) -> None:
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (200, 150), (40, 90, 160)).save(images / "a.jpg")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["analyze", "failures", "--matches", files["matches"], "--gt", files["gt"],
                                 "--pred", files["pred"], "--image", "a.jpg", "--images", str(images),
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "blank canvas" not in r.output
    assert (out / "failures-image-a.png").read_bytes().startswith(b"\x89PNG")
    rows = _read_csv(out / "failures-image-a-detections.csv")
    assert [row["category"] for row in rows] == ["wrong_verb", "tp", "duplicate", "poor_localisation"]
    assert rows[0]["detection"] == "straddle horse" and rows[0]["ground_truth"] == "wash horse"


def test_matches_of_other_detections_are_one_line(files: dict[str, str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.json"
    preds = _predictions()
    write_predictions(HOIPredictions.from_arrays(V, preds.file_names, np.diff(preds.offsets), preds.boxes_h,
                                                 preds.boxes_o, preds.objects, preds.verbs[::-1].copy(),
                                                 preds.scores), other)
    line = one_line_error(["analyze", "failures", "--matches", files["matches"], "--gt", files["gt"],
                           "--pred", str(other), "--image", "a.jpg", "--out", str(tmp_path / "o")], capsys)
    assert "the matches come from another --pred or --gt" in line and files["matches"] in line
    line = one_line_error(["analyze", "failures", "--matches", files["matches"], "--gt", files["gt"],
                           "--pred", files["pred"], "--out", str(tmp_path / "o")], capsys)
    assert "give one of --class or --image" in line
    line = one_line_error(["analyze", "failures", "--matches", files["gt"], "--gt", files["gt"],
                           "--pred", files["pred"], "--image", "a.jpg", "--out", str(tmp_path / "o")], capsys)
    assert "error:" in line
    assert json.loads(Path(files["matches"]).read_text())["kind"] == "hoi_matches"
