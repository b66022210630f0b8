"""``hoibench detect people`` with a tiny DETR built from a config (no download): the file it
writes drives ``mcq run --setting 3 --detections`` against a fake chat server; resume, header
check and failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from hoibench.cli import main
from hoibench.data import Choice, MCQuestion
from hoibench.formats import read_answers
from hoibench.formats.questions import write_questions
from hoibench.runners.mcq import load_detections
from hoibench.testing import FakeChatServer, request_text, save_tiny_detr

pytest.importorskip("transformers")

# every query of the tiny DETR finds a person at this relative (cx, cy, w, h) box: on a
# 64x48 image that is x 16..48, y 12..36 (worked out by hand)
REL_BOX = (0.5, 0.5, 0.5, 0.5)
PIXEL_BOX = [16.0, 12.0, 48.0, 36.0]


@pytest.fixture(scope="module")
def detr(tmp_path_factory) -> Path:
    return save_tiny_detr(tmp_path_factory.mktemp("detr"), person_box=REL_BOX)


@pytest.fixture
def images(tmp_path) -> Path:
    d = tmp_path / "images"
    (d / "sub").mkdir(parents=True)
    for k, name in enumerate(["im0.jpg", "im1.jpg", "sub/im2.png"]):
        Image.new("RGB", (64, 48), (40 * k, 90, 200)).save(d / name)
    return d


def _error(err: str) -> str:
    """The one error line (transformers' weight-loading bar may come before it)."""
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def _detect(images: Path, detr: Path, out: Path, *extra: str) -> int:
    try:
        main(["detect", "people", "--images", str(images), "--model", str(detr), "--out", str(out),
              "--device", "cpu", "--batch-size", "2", "--no-progress", "--json", *extra])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_detect_people_drives_setting3(tmp_path, images, detr, capsys):
    out = tmp_path / "det.json"
    assert _detect(images, detr, out) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["total"], summary["ok"], summary["errors"], summary["resumed"]) == (3, 3, 0, 0)
    assert summary["forward_passes"] == 2  # 3 images in batches of 2
    raw = json.loads(out.read_text())
    assert sorted(raw) == ["im0.jpg", "im1.jpg", "sub/im2.png"]
    assert set(raw["im0.jpg"]["labels"]) == {"person"} and len(raw["im0.jpg"]["boxes"]) == 10
    dets = load_detections(out)  # NMS leaves one of the ten equal boxes
    assert dets["im1.jpg"].tolist() == [pytest.approx(PIXEL_BOX, abs=0.05)]

    # setting 3: im0's target is the detected person, im1's target is elsewhere (no match)
    qs = [MCQuestion(id=f"q{k}", file_name=f"im{k}.jpg", setting=2,
                     choices=(Choice("hold a/an bicycle"), Choice("ride a/an bicycle")),
                     correct=frozenset({0}), person_box=box)
          for k, box in enumerate([(17.0, 12.0, 47.0, 35.0), (0.0, 0.0, 8.0, 8.0)])]
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, qs, header={"seed": 0})
    with FakeChatServer(lambda body: "A") as server:
        main(["mcq", "run", "--questions", str(qpath), "--images", str(images), "--model", "llava-onevision-7b",
              "--base-url", server.url, "--setting", "3", "--detections", str(out),
              "--out", str(tmp_path / "a.jsonl"), "--no-progress", "--json"])
    run = json.loads(capsys.readouterr().out)
    assert (run["ok"], run["no_person_match"]) == (1, 1) and server.count == 1
    assert "with a bounding box [16.0, 12.0, 48.0, 36.0]." in request_text(server.bodies[0])
    assert read_answers(tmp_path / "a.jsonl").header["detections"].startswith("det.json:sha256:")


def test_resume_redoes_only_missing_images_and_checks_the_header(tmp_path, images, detr, capsys):
    out = tmp_path / "det.json"
    assert _detect(images, detr, out) == 0
    capsys.readouterr()
    records = out.with_name("det.json.records.jsonl")
    lines = records.read_bytes().split(b"\n")
    first = out.read_bytes()
    records.write_bytes(b"\n".join(lines[:2]) + b"\n" + lines[2][:15])  # killed mid-line
    out.unlink()
    assert _detect(images, detr, out) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["resumed"], summary["ok"], summary["forward_passes"]) == (1, 3, 1)
    assert out.read_bytes() == first
    assert len(records.read_text().splitlines()) == 4  # header + one record per image

    assert _detect(images, detr, out, "--threshold", "0.9") == 2
    err = _error(capsys.readouterr().err)
    assert "detector" in err and "--overwrite" in err
    assert _detect(images, detr, out, "--threshold", "0.9", "--overwrite") == 0


def test_unreadable_image_fails_the_run_and_is_retried(tmp_path, images, detr, capsys):
    (images / "broken.jpg").write_bytes(b"not a jpeg")
    out = tmp_path / "det.json"
    assert _detect(images, detr, out) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["errors"] == 1
    assert "1 image(s) failed" in _error(captured.err)
    assert "broken.jpg" not in json.loads(out.read_text())
    Image.new("RGB", (64, 48)).save(images / "broken.jpg")
    assert _detect(images, detr, out) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["resumed"], summary["ok"], summary["forward_passes"]) == (3, 4, 1)


def test_questions_select_images_and_unknown_label_is_refused(tmp_path, images, detr, capsys):
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, [MCQuestion(id="q", file_name="sub/im2.png", setting=1,
                                       choices=(Choice("ride a/an bicycle"),), correct=frozenset({0}))],
                    header={"seed": 0})
    out = tmp_path / "det.json"
    assert _detect(images, detr, out, "--questions", str(qpath)) == 0
    assert list(json.loads(out.read_text())) == ["sub/im2.png"]
    capsys.readouterr()
    assert _detect(images, detr, tmp_path / "x.json", "--label", "horse") == 2
    assert "has no class 'horse'" in _error(capsys.readouterr().err)
