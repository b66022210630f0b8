"""Supplementary F's crawl path: the watermark stage and the people's review (the HTML page in
headless Chromium, the decisions file, and what ``augment collect`` keeps because of it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from hoibench.augment import (
    AugmentConfig,
    Detection,
    Detector,
    ReviewServer,
    TargetClass,
    WatermarkConfig,
    filter_images,
    read_manifests,
    review_cards,
    write_decisions,
)
from hoibench.cli import cli
from tests.test_augment_helpers import RIDE_HORSE, VOCAB, Script, pipeline

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def _crawled(root: Path, n: int, marked: set[int] = frozenset()) -> Path:
    """``n`` crawled images of ride horse; those in ``marked`` carry a white corner (the fake
    detector's watermark)."""
    folder = root / "crawled" / str(RIDE_HORSE)
    folder.mkdir(parents=True)
    for k in range(n):
        im = Image.new("RGB", (64, 48), (30 * k, 90, 160))
        if k in marked:
            im.paste((255, 255, 255), (48, 32, 64, 48))
        im.save(folder / f"c{k}.png")
    return root / "crawled"


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    return res.exit_code, res.output + ("" if res.exception is None or isinstance(res.exception, SystemExit)
                                        else repr(res.exception))


_CONFIG = ("detector: {kind: fake}\npseudo_label_verbs: target\n"
           "region_vlm: {kind: constant, reply: 'Yes.'}\nllm: {kind: constant, reply: 'yes'}\n")


# ------------------------------------------------------------------------------- watermark
def test_watermark_stage_rejects_marked_crawled_images(tmp_path: Path) -> None:
    crawled = _crawled(tmp_path, 3, marked={1})
    cfg = tmp_path / "c.yaml"
    names = {}
    for tag, extra in (("off", ""), ("on", "watermark: {enabled: true}\n"),
                       ("high", "watermark: {enabled: true, threshold: 0.99, queries: [watermark]}\n")):
        cfg.write_text(_CONFIG + extra)
        code, out = _cli("augment", "filter", "--images", str(crawled), "--out", str(tmp_path / tag),
                         "--config", str(cfg), "--no-progress")
        assert code == 0, out
        data = json.loads((tmp_path / tag / "annotations" / "trainval_augment.json").read_text())
        names[tag] = [e["file_name"] for e in data]
    h = str(RIDE_HORSE)
    assert names["off"] == names["high"] == [f"{h}/c0.png", f"{h}/c1.png", f"{h}/c2.png"]
    assert names["on"] == [f"{h}/c0.png", f"{h}/c2.png"]
    rec = {r["image"]: r for r in read_manifests(tmp_path / "on") if r["event"] == "filtered"}
    assert rec[f"{h}/c1.png"]["reason"] == "watermark detected" and rec[f"{h}/c1.png"]["detections"] == []
    assert rec[f"{h}/c1.png"]["watermark"][0]["box"] == [48.0, 32.0, 64.0, 48.0]
    assert rec[f"{h}/c0.png"]["watermark"] == [] and rec[f"{h}/c0.png"]["status"] == "kept"
    run = json.loads((tmp_path / "on" / "run.json").read_text())
    assert run["models"]["watermark"]["queries"] == ["watermark", "text logo"]
    assert run["config"]["watermark"]["threshold"] == 0.3
    cfg.write_text(_CONFIG + "watermark: {enabled: true, queries: watermark}\n")
    code, out = _cli("augment", "filter", "--images", str(crawled), "--out", str(tmp_path / "bad"),
                     "--config", str(cfg), "--no-progress")
    assert code != 0 and "watermark.queries: expected a list of texts" in out


class _ScoreDetector(Detector):
    """A watermark box of a fixed score on every image; records the queries it was asked."""

    def __init__(self, score: float) -> None:
        self.score, self.asked = score, []

    def detect(self, image, queries):
        self.asked.append(list(queries))
        return [Detection((0.0, 0.0, 5.0, 5.0), 0, self.score)]

    def fingerprint(self):
        return {"model": "score", "score": self.score}


@pytest.mark.parametrize(("score", "kept"), [(0.29, 1), (0.3, 0)])
def test_watermark_threshold_and_queries_are_the_configured_ones(tmp_path: Path, score: float, kept: int) -> None:
    crawled = _crawled(tmp_path, 1)
    det = _ScoreDetector(score)
    cfg = AugmentConfig(watermark=WatermarkConfig(enabled=True, queries=("stock photo watermark",), threshold=0.3))
    pipe = pipeline(None, Script(), config=cfg, watermark_detector=det)
    res = filter_images([(p, TargetClass.of(VOCAB, RIDE_HORSE, 0)) for p in sorted(crawled.rglob("*.png"))],
                        vocab=VOCAB, images_root=crawled, out_dir=tmp_path / "o", pipeline=pipe)
    assert res.dataset.n_images == kept and det.asked == [["stock photo watermark"]]


# ---------------------------------------------------------------------------------- review
def _filtered(tmp_path: Path, n: int = 3) -> Path:
    crawled = _crawled(tmp_path, n)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(_CONFIG)
    out = tmp_path / "out"
    code, text = _cli("augment", "filter", "--images", str(crawled), "--out", str(out), "--config", str(cfg),
                      "--no-progress")
    assert code == 0, text
    return out


def _kept_names(out: Path) -> list[str]:
    return [e["file_name"] for e in json.loads((out / "annotations" / "trainval_augment.json").read_text())]


def test_decisions_change_what_collect_keeps(tmp_path: Path) -> None:
    out = _filtered(tmp_path)
    h = str(RIDE_HORSE)
    assert _kept_names(out) == [f"{h}/c0.png", f"{h}/c1.png", f"{h}/c2.png"]
    cards = review_cards(out)
    sha = {c.image: c.annotation_sha256 for c in cards}
    entry = lambda k, d: {"hoi": RIDE_HORSE, "image": f"{h}/c{k}.png", "decision": d,  # noqa: E731
                          "annotation_sha256": sha[f"{h}/c{k}.png"]}
    write_decisions(out, {"kind": "augment_review", "decisions": [entry(0, "accept"), entry(1, "reject")]})
    code, text = _cli("augment", "collect", "--out", str(out))
    assert code == 0, text
    assert _kept_names(out) == [f"{h}/c0.png", f"{h}/c2.png"]
    assert "1 accepted, 1 rejected (dropped), 1 unreviewed (kept)" in " ".join(text.split())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["review"] == {"file": "review_decisions.json", "reviewed_only": False, "accepted": 1,
                                 "rejected": 1, "unreviewed": 1}
    assert summary["classes"][0]["kept_images"] == 2 and summary["instances"] == 2
    code, text = _cli("augment", "collect", "--out", str(out), "--reviewed-only")
    assert code == 0 and _kept_names(out) == [f"{h}/c0.png"]

    # a decision about something else than the folder holds is refused with one line
    path = out / "review_decisions.json"
    for bad, problem in (({**entry(2, "accept"), "image": "nope.png"}, "record 0: image: 'nope.png' of class"),
                         ({**entry(2, "accept"), "annotation_sha256": "0" * 64}, "reviewed on other pseudo-labels"),
                         ({**entry(2, "maybe")}, "decision: must be 'accept' or 'reject'")):
        path.write_text(json.dumps({"kind": "augment_review", "decisions": [bad]}))
        code, text = _cli("augment", "collect", "--out", str(out))
        assert code != 0 and problem in " ".join(text.split()), text


_PROBE = """<script>
(async () => {
  const key = k => document.dispatchEvent(new KeyboardEvent("keydown", {key: k, bubbles: true}));
  const wait = async cond => { for (let i = 0; i < 200 && !cond(); i++) await new Promise(r => setTimeout(r, 25)); };
  key("a");                       // card 0 accepted, focus moves to card 1
  key("r");                       // card 1 rejected, focus moves to card 2
  const third = () => document.querySelectorAll(".card")[2];
  third().querySelector("button.reject").click();   // card 2: rejected by a click ...
  third().querySelector("button.accept").click();   // ... then accepted
  await wait(() => document.body.dataset.saved === "3");
  await new Promise(r => setTimeout(r, 200));
  const m = document.createElement("pre");
  m.textContent = "REVIEW saved=" + document.body.dataset.saved + " status=" +
    document.getElementById("status").textContent + " END";
  document.body.appendChild(m);
})();
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs Debian's "
                                             "chromium package: apt-get install -y chromium)")
def test_review_page_in_headless_chromium_saves_decisions(tmp_path: Path) -> None:
    out = _filtered(tmp_path)
    code, text = _cli("augment", "review", str(out), "--no-serve")
    assert code == 0 and "3 kept images" in text, text
    page = (out / "review.html").read_text()
    # self-contained: every image embedded, no file or network fetched but the decisions POST
    assert page.count("data:image/jpeg;base64,") == 3 and not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    (out / "review.html").write_text(page.replace("</body>", _PROBE + "</body>"))
    with ReviewServer(out) as server:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom", server.url]
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r"REVIEW saved=(\d+) status=(.*?) END", dom.stdout)
    assert found, f"no marker in Chromium's DOM (rc={dom.returncode}): {dom.stderr[-2000:]}"
    assert found.group(1) == "3" and "3 of 3 reviewed" in found.group(2)
    saved = json.loads((out / "review_decisions.json").read_text())
    h = str(RIDE_HORSE)
    assert [(d["image"], d["decision"]) for d in saved["decisions"]] == [
        (f"{h}/c0.png", "accept"), (f"{h}/c1.png", "reject"), (f"{h}/c2.png", "accept")]
    code, text = _cli("augment", "collect", "--out", str(out))
    assert code == 0 and _kept_names(out) == [f"{h}/c0.png", f"{h}/c2.png"]
    # the page written again shows the saved decisions
    _cli("augment", "review", str(out), "--no-serve")
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>',
                                (out / "review.html").read_text(), re.S).group(1).replace("<\\/", "</"))
    assert [c["decision"] for c in data] == ["accept", "reject", "accept"]
    assert data[0]["labels"] == ["person 0 — ride — horse 1"] and len(data[0]["boxes"]) == 2
