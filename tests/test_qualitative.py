"""Qualitative pages: sampled questions drawn with the target box, the choices and each model's
answer; top detections of a class on their images; a report with them in headless Chromium."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil

import numpy as np
import pytest
from PIL import Image

from hoibench.cli import main
from hoibench.data import Choice, HOIPredictions, MCAnswer, MCQuestion
from hoibench.formats import write_questions
from hoibench.formats.predictions import write_predictions
from hoibench.formats.questions import write_answers
from hoibench.reports import detection_qualitative_section, find_image, mcq_qualitative_section
from hoibench.vocab import hico_det
from tests.conftest import one_line_error
from tests.test_report import CHROMIUM, _chromium

VOCAB = hico_det()


def _images(folder, n: int, seed: int = 0) -> list[str]:
    """``n`` generated photos-to-be (noise with a few rectangles), 640×480 PNG."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(n):
        a = rng.integers(0, 255, size=(480, 640, 3), dtype=np.uint8) // 3
        for _ in range(3):
            x, y = int(rng.integers(0, 500)), int(rng.integers(0, 360))
            a[y:y + 100, x:x + 120] = rng.integers(0, 255, size=3)
        name = f"gen_{i:02d}.png"
        Image.fromarray(a).save(folder / name)
        names.append(name)
    return names


def _questions(names: list[str]) -> list[MCQuestion]:
    qs = []
    for i, name in enumerate(names):
        hois = [3 * i + k for k in range(4)]
        choices = tuple(Choice(VOCAB.hoi_name(h), h, int(VOCAB.hoi_verb_object[h][0]),
                               int(VOCAB.hoi_verb_object[h][1])) for h in hois)
        qs.append(MCQuestion(f"{name}#s2", name, 2, choices, frozenset({0, 2}),
                             person_box=(50.0 + i, 60.0, 300.0, 420.0), width=640, height=480))
    return qs


def _answers(qs: list[MCQuestion]) -> dict[str, dict[str, MCAnswer]]:
    return {"alpha": {q.id: MCAnswer(q.id, frozenset({q.choices[0].text})) for q in qs},
            "beta": {q.id: MCAnswer(q.id, frozenset({q.choices[1].text, q.choices[2].text})) for q in qs[:-1]}}


def _detections(names: list[str], hoi: int, seed: int = 0) -> HOIPredictions:
    rng = np.random.default_rng(seed)
    verb, obj = (int(x) for x in VOCAB.hoi_verb_object[hoi])
    counts = [3] * len(names)
    n = sum(counts)
    bh = np.tile([40.0, 50.0, 200.0, 400.0], (n, 1)) + rng.uniform(0, 30, (n, 1))
    bo = np.tile([220.0, 200.0, 400.0, 380.0], (n, 1))
    verbs = np.where(np.arange(n) % 3 == 2, (verb + 1) % VOCAB.n_verbs, verb)
    return HOIPredictions.from_arrays(VOCAB, names, counts, bh, bo, np.full(n, obj), verbs, rng.random(n))


def test_find_image_looks_in_hico_folders_and_refuses_escapes(tmp_path) -> None:
    (tmp_path / "test2015").mkdir()
    (tmp_path / "test2015" / "a.jpg").write_bytes(b"x")
    assert find_image(tmp_path, "a.jpg") == (tmp_path / "test2015" / "a.jpg").resolve()
    assert find_image(tmp_path, "b.jpg") is None
    with pytest.raises(Exception, match="leads out"):
        find_image(tmp_path / "test2015", "../../etc/passwd")


def test_mcq_pages_sample_is_seeded_and_skips_missing_images(tmp_path) -> None:
    names = _images(tmp_path / "img", 5)
    qs = _questions([*names, "absent.png"])
    answers = _answers(qs)
    a = mcq_qualitative_section(qs, answers, tmp_path / "img", n=3, seed=7)
    b = mcq_qualitative_section(qs, answers, tmp_path / "img", n=3, seed=7)
    assert [r[0] for r in a.tables[0].rows] == [r[0] for r in b.tables[0].rows]
    assert len(a.figures) == 3 and "1 questions whose image is not in the folder" in a.text
    # the sample: 3 distinct questions among those with an image, by the same seeded draw
    ids = [r[0] for r in a.tables[0].rows]
    found = [q.id for q in qs if q.file_name != "absent.png"]
    want = [found[i] for i in np.sort(np.random.default_rng(7).choice(len(found), 3, replace=False))]
    assert ids == want
    by_id = {q.id: q for q in qs}
    for row in a.tables[0].rows:
        q = by_id[row[0]]
        assert row[2] == " | ".join(sorted(q.correct_texts))
        assert row[3] == " | ".join(sorted(answers["alpha"][q.id].selected))
        assert row[4] == (" | ".join(sorted(answers["beta"][q.id].selected)) if q.id in answers["beta"] else None)
    for f in a.figures:
        with Image.open(io.BytesIO(f.png)) as im:
            assert im.width > 400  # an image panel and a text panel
    with pytest.raises(Exception, match="none of the 1 questions"):
        mcq_qualitative_section(qs[-1:], answers, tmp_path / "img")


def test_detection_pages_show_the_top_scores_of_the_class(tmp_path) -> None:
    names = _images(tmp_path / "img", 4)
    hoi = 10
    preds = _detections([*names, "absent.png"], hoi)
    sec = detection_qualitative_section(preds, hoi, tmp_path / "img", top_k=4)
    cls = preds.hois == hoi
    img_ok = np.array([preds.file_names[i] != "absent.png" for i in preds.image_index])
    want = np.sort(preds.scores[cls & img_ok])[::-1][:4]
    assert [r[2] for r in sec.tables[0].rows] == pytest.approx(want.tolist())
    assert len(sec.figures) == 1
    with pytest.raises(Exception, match="no detection of class"):
        detection_qualitative_section(preds, 599, tmp_path / "img")


def _write_inputs(tmp_path):
    names = _images(tmp_path / "img", 4, seed=2)
    qs = _questions(names)
    write_questions(tmp_path / "q.jsonl", qs)
    for model, ans in _answers(qs).items():
        write_answers(tmp_path / f"{model}.jsonl", list(ans.values()), header={"model": model})
    write_predictions(_detections(names, 10), tmp_path / "det.json")
    (tmp_path / "r.json").write_text(json.dumps(
        {"kind": "hico_map", "model": "det", "benchmark": "hico-det", "protocol": "official",
         "known_object": False, "full": 20.0, "rare": 10.0, "non_rare": 25.0}))
    return ["report", str(tmp_path / "r.json"), "--questions", str(tmp_path / "q.jsonl"),
            "--answers", str(tmp_path / "alpha.jsonl"), "--answers", str(tmp_path / "beta.jsonl"),
            "--images", str(tmp_path / "img"), "--detections", str(tmp_path / "det.json"),
            "--detection-class", VOCAB.hoi_name(10), "--out", str(tmp_path / "out")]


def test_report_cli_adds_qualitative_pages_and_checks_options(tmp_path, capsys) -> None:
    argv = _write_inputs(tmp_path)
    main(argv)
    page = (tmp_path / "out" / "report.html").read_text()
    for name in ("qualitative-mcq-1", "qualitative-mcq-4", "qualitative-detections-10"):
        assert f'data-figure="{name}"' in page
    assert not re.search(r'src="(?!data:)', page)  # every image embedded
    capsys.readouterr()
    assert "--questions and --answers go together" in one_line_error([*argv[:4], "--out", str(tmp_path / "o2")],
                                                                     capsys)
    assert "need --images" in one_line_error(["report", str(tmp_path / "r.json"), "--detections",
                                              str(tmp_path / "det.json"), "--out", str(tmp_path / "o3")], capsys)


def test_analyze_qualitative_writes_a_self_contained_page(tmp_path, capsys) -> None:
    argv = _write_inputs(tmp_path)
    main(["analyze", "qualitative", "--images", str(tmp_path / "img"), "--questions", str(tmp_path / "q.jsonl"),
          "--answers", str(tmp_path / "alpha.jsonl"), "--sample", "2", "--detections", str(tmp_path / "det.json"),
          "--out", str(tmp_path / "qual")])
    page = (tmp_path / "qual" / "report.html").read_text()
    assert page.count("<figure") == 3
    del argv
    capsys.readouterr()
    assert "--top has no effect without --detections" in one_line_error(
        ["analyze", "qualitative", "--images", str(tmp_path / "img"), "--questions", str(tmp_path / "q.jsonl"),
         "--answers", str(tmp_path / "alpha.jsonl"), "--top", "3", "--out", str(tmp_path / "q2")], capsys)


_SIZE_SCRIPT = """<script>window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var m = document.createElement('pre');
  m.textContent = 'PAGE height=' + document.documentElement.scrollHeight + ' images=' + imgs.length +
                  ' decoded=' + ok + ' END';
  document.body.appendChild(m); });</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_qualitative_report_in_headless_chromium_full_page_screenshot(tmp_path, capsys) -> None:
    main(_write_inputs(tmp_path))
    html = tmp_path / "out" / "report.html"
    probe = tmp_path / "probe.html"
    probe.write_text(html.read_text().replace("</body>", _SIZE_SCRIPT + "</body>"))
    dom = _chromium(["--window-size=1280,1000", "--dump-dom", probe.as_uri()], tmp_path / "profile-dom")
    found = re.search(r"PAGE height=(\d+) images=(\d+) decoded=(\d+) END", dom.stdout)
    assert found, dom.stderr[-2000:]
    height, n_img, decoded = map(int, found.groups())
    # every figure of the report is in the rendered page
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    names = {f["name"] for s in report["sections"] for f in s["figures"]}
    assert names == set(re.findall(r'data-figure="([^"]+)"', dom.stdout))
    assert {"qualitative-mcq-1", "qualitative-detections-10"} <= names
    assert n_img == decoded and n_img >= 6  # 4 questions, 1 detection grid, the mAP bars
    shot = tmp_path / "qualitative-report-screenshot.png"
    _chromium([f"--screenshot={shot}", f"--window-size=1280,{height}", html.as_uri()], tmp_path / "profile-shot")
    with Image.open(shot) as im:
        assert im.size == (1280, height)
        a = np.asarray(im.convert("RGB"))
    # the drawn target box (the palette's red) is on the page: the pages were rendered, not blank
    red = (np.abs(a.astype(int) - [0xD5, 0x5E, 0x00]).sum(axis=2) < 40).sum()
    assert red > 200
    artefacts = os.environ.get("HOIBENCH_ARTIFACTS")
    if artefacts:
        os.makedirs(artefacts, exist_ok=True)
        shutil.copy(shot, os.path.join(artefacts, shot.name))
    # every embedded figure is a PNG that decodes
    for data in re.findall(r'src="data:image/png;base64,([^"]+)"', html.read_text()):
        with Image.open(io.BytesIO(base64.b64decode(data))) as im:
            im.load()
    capsys.readouterr()
