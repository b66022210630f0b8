"""People review the kept images (``002`` supp. F: "human filtering ... to ensure high-quality
data"): one self-contained HTML page with a card per kept image and its pseudo-labels, keyboard
accept/reject, and a decisions file that :func:`~hoibench.augment.collect_augmented` honours.

The page (``review.html`` in the output folder) embeds its thumbnails, styles and script, so it
opens anywhere. Served by :class:`ReviewServer` (127.0.0.1 only), every decision is saved to
``review_decisions.json`` as it is made; opened as a file, its *Download* button saves the same
file for the user to put in the folder. A decision names the pseudo-labels it was made on (their
hash): a decision about other labels than the folder now holds is refused, not applied.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hoibench._exceptions import FormatError
from hoibench._io import atomic_write_bytes, atomic_write_json, dumps_json, read_json
from hoibench.augment._manifest import read_manifests
from hoibench.vocab import LabelSpace

__all__ = [
    "DECISIONS_FILE",
    "REVIEW_PAGE",
    "ReviewCard",
    "ReviewServer",
    "final_records",
    "read_decisions",
    "review_cards",
    "write_decisions",
    "write_review_page",
]

#: files of an output folder
REVIEW_PAGE = "review.html"
DECISIONS_FILE = "review_decisions.json"
_DECISIONS = ("accept", "reject")
_THUMB = 480  # longest side of an embedded thumbnail, pixels


def final_records(records: Sequence[Mapping[str, Any]]) -> dict[tuple[int, str], dict[str, Any]]:
    """The last decision record per (class, attempt or image) of the manifests (an attempt redone
    after a crash replaces the earlier record), in class order, then attempt or image order."""
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for rec in records:
        if rec["event"] not in ("attempt", "filtered"):
            continue
        key = str(rec["attempt"] if rec["event"] == "attempt" else rec["image"]).zfill(12)
        out[(int(rec["hoi"]), key)] = dict(rec)
    return dict(sorted(out.items()))


def annotation_hash(rec: Mapping[str, Any]) -> str:
    """sha256 of a kept image's pseudo-labels (what a decision was made on)."""
    return hashlib.sha256(dumps_json(rec.get("annotation"), sort_keys=True)).hexdigest()


@dataclass(frozen=True)
class ReviewCard:
    """One kept image to review: its class, file, pseudo-labels and their hash."""

    hoi: int
    image: str  # as the manifest names it
    path: Path  # where it lies
    record: dict[str, Any]

    @property
    def key(self) -> tuple[int, str]:
        return (self.hoi, self.image)

    @property
    def annotation_sha256(self) -> str:
        return annotation_hash(self.record)


def review_cards(out_dir: str | os.PathLike[str]) -> list[ReviewCard]:
    """The kept images of an output folder (all shards), in class and image order."""
    out = Path(out_dir)
    run = read_json(out / "run.json")
    root = out if run["kind"] == "augment_generate" else Path(run.get("images_root", out))
    cards = []
    for (hoi, _), rec in final_records(read_manifests(out)).items():
        if rec["status"] == "kept":
            cards.append(ReviewCard(hoi, str(rec["image"]), root / str(rec["image"]), rec))
    return cards


def read_decisions(out_dir: str | os.PathLike[str],
                   cards: Sequence[ReviewCard] | None = None) -> dict[tuple[int, str], str]:
    """``{(class, image): "accept" | "reject"}`` from the folder's decisions file (empty when
    there is none). Every entry must name a kept image with the pseudo-labels it was made on;
    anything else is a :class:`FormatError` naming the file, the entry and the field."""
    path = Path(out_dir) / DECISIONS_FILE
    if not path.exists():
        return {}
    return _check_decisions(read_json(path), review_cards(out_dir) if cards is None else cards, path)


def _check_decisions(raw: Any, cards: Sequence[ReviewCard], path: object) -> dict[tuple[int, str], str]:
    if not isinstance(raw, Mapping) or raw.get("kind") != "augment_review":
        raise FormatError("expected an object with kind 'augment_review'", file=path)
    entries = raw.get("decisions")
    if not isinstance(entries, list):
        raise FormatError("expected a list", file=path, field="decisions")
    by_key = {c.key: c for c in cards}
    out: dict[tuple[int, str], str] = {}
    for n, e in enumerate(entries):
        if not isinstance(e, Mapping):
            raise FormatError("expected an object", file=path, record=n)
        hoi, image, decision = e.get("hoi"), e.get("image"), e.get("decision")
        if not isinstance(hoi, int) or isinstance(hoi, bool):
            raise FormatError(f"expected a class index; got {hoi!r}", file=path, record=n, field="hoi")
        if decision not in _DECISIONS:
            raise FormatError(f"must be 'accept' or 'reject'; got {decision!r}", file=path, record=n,
                              field="decision")
        card = by_key.get((hoi, image))  # type: ignore[arg-type]
        if card is None:
            raise FormatError(f"{image!r} of class {hoi} is not a kept image of this folder", file=path,
                              record=n, field="image")
        if e.get("annotation_sha256") != card.annotation_sha256:
            raise FormatError(f"{image!r} was reviewed on other pseudo-labels than the folder now "
                              "holds; review it again", file=path, record=n, field="annotation_sha256")
        out[card.key] = str(decision)
    return out


def write_decisions(out_dir: str | os.PathLike[str], raw: Any,
                    cards: Sequence[ReviewCard] | None = None) -> int:
    """Check decisions (the page's JSON) against the folder and write them atomically; returns
    how many there are."""
    cards = review_cards(out_dir) if cards is None else cards
    path = Path(out_dir) / DECISIONS_FILE
    decided = _check_decisions(raw, cards, path)
    by_key = {c.key: c for c in cards}
    atomic_write_json(path, {"kind": "augment_review", "version": 1, "decisions": [
        {"hoi": k[0], "image": k[1], "decision": d, "annotation_sha256": by_key[k].annotation_sha256}
        for k, d in sorted(decided.items())]}, indent=True)
    return len(decided)


def _thumbnail(path: Path) -> str:
    """The image as a JPEG data URI, longest side at most ``_THUMB`` pixels ("" when unreadable)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            im.thumbnail((_THUMB, _THUMB))
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=85)
    except (OSError, UnidentifiedImageError):
        return ""
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def _card_json(card: ReviewCard, vocab: LabelSpace, decision: str | None) -> dict[str, Any]:
    rec = card.record
    ann = rec.get("annotation") or {"boxes": [], "labels": [], "pairs": []}
    w, h = max(int(rec.get("width", 1)), 1), max(int(rec.get("height", 1)), 1)
    boxes = [{"x": b[0] / w, "y": b[1] / h, "w": (b[2] - b[0]) / w, "h": (b[3] - b[1]) / h,
              "name": f"{vocab.objects[lab]} {k}"} for k, (b, lab) in enumerate(zip(ann["boxes"], ann["labels"]))]
    labels = [f"{vocab.objects[ann['labels'][s]]} {s} — {vocab.verbs[v].replace('_', ' ')} — "
              f"{vocab.objects[ann['labels'][o]].replace('_', ' ')} {o}" for s, o, v in ann["pairs"]]
    return {"hoi": card.hoi, "image": card.image, "name": vocab.hoi_name(card.hoi),
            "target_instances": int(rec.get("target_instances", 0)), "src": _thumbnail(card.path),
            "boxes": boxes, "labels": labels, "annotation_sha256": card.annotation_sha256,
            "decision": decision}


def write_review_page(out_dir: str | os.PathLike[str], vocab: LabelSpace) -> Path:
    """Write ``review.html`` (self-contained) for the folder's kept images, with the decisions
    already in its decisions file; returns its path."""
    out = Path(out_dir)
    cards = review_cards(out)
    decided = read_decisions(out, cards)
    data = [_card_json(c, vocab, decided.get(c.key)) for c in cards]
    payload = json.dumps(data, ensure_ascii=True).replace("</", "<\\/")
    page = (_PAGE.replace("@TITLE@", html.escape(f"Review: {out.name}"))
            .replace("@DECISIONS_FILE@", DECISIONS_FILE).replace("@CARDS@", payload))
    path = out / REVIEW_PAGE
    atomic_write_bytes(path, page.encode("utf-8"))
    return path


class ReviewServer:
    """Serves ``review.html`` on 127.0.0.1 and writes the decisions the page posts
    (``POST /decisions``), checked against the folder, to ``review_decisions.json``.

    >>> with ReviewServer(out) as server:  # doctest: +SKIP
    ...     print(server.url)              # open it; Ctrl-C (or leaving the block) stops it
    """

    def __init__(self, out_dir: str | os.PathLike[str], *, port: int = 0, max_body: int = 16 << 20) -> None:
        self.out = Path(out_dir)
        self.cards = review_cards(self.out)
        out, cards = self.out, self.cards

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the CLI prints the URL
                pass

            def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.split("?")[0] in ("/", "/" + REVIEW_PAGE):
                    self._send(200, (out / REVIEW_PAGE).read_bytes(), "text/html; charset=utf-8")
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                if self.path != "/decisions":
                    self._send(404, b'{"error": "not found"}')
                    return
                size = int(self.headers.get("Content-Length") or 0)
                if not 0 < size <= max_body:
                    self._send(413, b'{"error": "body missing or too large"}')
                    return
                try:
                    n = write_decisions(out, json.loads(self.rfile.read(size)), cards)
                except (ValueError, FormatError) as exc:
                    self._send(400, json.dumps({"error": " ".join(str(exc).split())}).encode())
                    return
                self._send(200, json.dumps({"saved": n}).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/{REVIEW_PAGE}"

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def __enter__(self) -> ReviewServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self.httpd.server_close()


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>@TITLE@</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f4f4f4; color: #222; }
header { position: sticky; top: 0; background: #222; color: #eee; padding: 8px 16px; z-index: 2; }
header kbd { background: #444; border-radius: 3px; padding: 0 4px; }
#status { float: right; }
main { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 12px; padding: 12px; }
.card { background: #fff; border: 3px solid #ddd; border-radius: 6px; padding: 8px; }
.card.focus { border-color: #2a6fdb; }
.card.accept { background: #e6f6e6; } .card.reject { background: #fbe4e4; opacity: .75; }
.frame { position: relative; line-height: 0; }
.frame img { width: 100%; }
.box { position: absolute; border: 2px solid #ffcc00; box-sizing: border-box; }
.box span { position: absolute; top: -1px; left: -1px; background: #ffcc00; font-size: 11px; line-height: 14px; padding: 0 2px; }
.name { font-weight: 600; margin: 6px 0 2px; } ul { margin: 4px 0; padding-left: 18px; }
.buttons button { margin-right: 6px; } .verdict { font-weight: 600; }
</style></head><body>
<header>@TITLE@ — <kbd>a</kbd> accept, <kbd>r</kbd> reject, <kbd>u</kbd> undo,
<kbd>←</kbd>/<kbd>→</kbd> previous/next
<button id="download">Download @DECISIONS_FILE@</button><span id="status"></span></header>
<main id="cards"></main>
<script type="application/json" id="data">@CARDS@</script>
<script>
"use strict";
const cards = JSON.parse(document.getElementById("data").textContent);
const served = location.protocol === "http:" || location.protocol === "https:";
let focus = 0, saving = Promise.resolve(), saved = 0, failed = "";
const main = document.getElementById("cards"), status = document.getElementById("status");

function payload() {
  return {kind: "augment_review", version: 1, decisions: cards.filter(c => c.decision).map(c => (
    {hoi: c.hoi, image: c.image, decision: c.decision, annotation_sha256: c.annotation_sha256}))};
}
function showStatus() {
  const n = cards.filter(c => c.decision).length;
  status.textContent = `${n} of ${cards.length} reviewed` + (served ? (failed ? ` — not saved: ${failed}`
    : ` — saved ${saved}`) : " — opened as a file: use Download");
  document.body.dataset.saved = String(saved);
}
function save() {
  if (!served) { showStatus(); return; }
  const body = JSON.stringify(payload());
  saving = saving.then(() => fetch("decisions", {method: "POST", body, headers: {"Content-Type": "application/json"}}))
    .then(r => r.json().then(j => { if (r.ok) { saved = j.saved; failed = ""; } else { failed = j.error; } }))
    .catch(e => { failed = String(e); }).then(showStatus);
}
function render() {
  main.textContent = "";
  cards.forEach((c, i) => {
    const el = document.createElement("section");
    el.className = "card" + (i === focus ? " focus" : "") + (c.decision ? " " + c.decision : "");
    el.dataset.index = i;
    const frame = document.createElement("div"); frame.className = "frame";
    const img = document.createElement("img"); img.src = c.src; img.alt = c.image; frame.appendChild(img);
    for (const b of c.boxes) {
      const d = document.createElement("div"); d.className = "box";
      Object.assign(d.style, {left: 100 * b.x + "%", top: 100 * b.y + "%", width: 100 * b.w + "%", height: 100 * b.h + "%"});
      const s = document.createElement("span"); s.textContent = b.name; d.appendChild(s); frame.appendChild(d);
    }
    el.appendChild(frame);
    const name = document.createElement("div"); name.className = "name";
    name.textContent = `${c.name} (class ${c.hoi}) — ${c.target_instances} target instance(s)`; el.appendChild(name);
    const file = document.createElement("div"); file.textContent = c.image; el.appendChild(file);
    const ul = document.createElement("ul");
    for (const t of c.labels) { const li = document.createElement("li"); li.textContent = t; ul.appendChild(li); }
    el.appendChild(ul);
    const buttons = document.createElement("div"); buttons.className = "buttons";
    for (const [what, label] of [["accept", "Accept (a)"], ["reject", "Reject (r)"]]) {
      const b = document.createElement("button"); b.className = what; b.textContent = label;
      b.addEventListener("click", ev => { ev.stopPropagation(); decide(i, what); }); buttons.appendChild(b);
    }
    const v = document.createElement("span"); v.className = "verdict"; v.textContent = c.decision || "";
    buttons.appendChild(v); el.appendChild(buttons);
    el.addEventListener("click", () => { focus = i; render(); });
    main.appendChild(el);
  });
  showStatus();
}
function decide(i, what) {
  cards[i].decision = what; focus = Math.min(i + 1, cards.length - 1); render(); save();
  const el = main.children[focus]; if (el && el.scrollIntoView) el.scrollIntoView({block: "nearest"});
}
document.addEventListener("keydown", ev => {
  if (!cards.length || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key.toLowerCase();
  if (k === "a" || k === "y") decide(focus, "accept");
  else if (k === "r" || k === "n") decide(focus, "reject");
  else if (k === "u") { cards[focus].decision = null; render(); save(); }
  else if (k === "arrowright" || k === "j") { focus = Math.min(focus + 1, cards.length - 1); render(); }
  else if (k === "arrowleft" || k === "k") { focus = Math.max(focus - 1, 0); render(); }
  else return;
  ev.preventDefault();
});
document.getElementById("download").addEventListener("click", () => {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([JSON.stringify(payload(), null, 2)], {type: "application/json"}));
  a.download = "@DECISIONS_FILE@"; document.body.appendChild(a); a.click(); a.remove();
});
render();
</script></body></html>
"""
