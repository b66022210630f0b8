"""The one image preparation (``runners/mcq/_frames.py``): the runner's own PNG encoder gives the
pixels of Pillow's resize exactly, and ``mcq run``, the VLMEvalKit export, the harness helper
``prepare_question`` and the fine-tuning export with ``resize_images`` all produce the very bytes
the runner sends."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hoibench._io import ImageFolder
from hoibench.data import Choice, MCQuestion
from hoibench.models import ScriptedBackend
from hoibench.runners import MCQRunner
from hoibench.runners.finetune import export_finetune
from hoibench.runners.mcq import encode_png, frame_png, load_template, model_frame, prepare_question
from hoibench.tasks.vlmevalkit import vlmevalkit_rows

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"


def _photo(w: int, h: int, seed: int) -> Image.Image:
    """Noise over gradients: a hard case for a lossless encoder (every filter byte differs)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(1, w - 1), y * 255 // max(1, h - 1), (x + y) % 256], axis=-1)
    return Image.fromarray(np.clip(base + rng.integers(-40, 41, (h, w, 3)), 0, 255).astype(np.uint8))


@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA", "P"])
@pytest.mark.parametrize("size", [(1, 1), (2, 7), (640, 480), (500, 375)])
def test_the_png_sent_decodes_to_pillows_resize_exactly(mode, size):
    im = _photo(*size, seed=size[0]).convert(mode)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    frame = model_frame("qwen2.5", *size)
    sent = frame_png(buf.getvalue(), frame.sent_width, frame.sent_height)
    expected = im.convert("RGB").resize((frame.sent_width, frame.sent_height))
    with Image.open(io.BytesIO(sent)) as back:
        assert back.format == "PNG" and back.mode == "RGB"
        assert np.array_equal(np.asarray(back), np.asarray(expected))
    assert encode_png(expected) == sent  # the same function behind both


@pytest.mark.parametrize("size", [(1, 1), (3, 2), (644, 476)])
def test_both_deflaters_give_the_same_pixels(monkeypatch, size):
    """igzip (``isal``) writes the stream where it is installed, zlib where it is not: the bytes
    differ, the decoded pixels and the size class do not, and the encoder's name says which."""
    from hoibench.runners.mcq import _frames

    im = _photo(*size, seed=3)
    fast = encode_png(im)
    monkeypatch.setattr(_frames, "_isal_zlib", None)
    plain = encode_png(im)
    assert _frames._isal_zlib is None
    for data in (fast, plain):
        with Image.open(io.BytesIO(data)) as back:
            back.load()  # a bad zlib stream or CRC fails here
            assert back.mode == "RGB" and np.array_equal(np.asarray(back), np.asarray(im))
    assert abs(len(fast) - len(plain)) <= 0.1 * len(plain) + 64
    assert _frames.PNG_ENCODER == "png:sub+igzip1"  # isal is a dependency: installed here


def test_a_file_changed_under_the_run_is_refused(tmp_path):
    path = tmp_path / "a.png"
    _photo(8, 8, 0).save(path)
    with pytest.raises(ValueError, match="changed while the run was reading it"):
        frame_png(path, 28, 28, sha256="0" * 64)


def _questions(n_images: int) -> list[MCQuestion]:
    return [MCQuestion(id=f"q{i}", file_name=f"im{i}.jpg", setting=2,
                       choices=(Choice("hold a/an cup"), Choice("drink with a/an cup"), Choice("no_interaction with a/an cup")),
                       correct=frozenset({0}), person_box=(3.0, 2.0, 40.0, 30.0))
            for i in range(n_images)]


@pytest.mark.parametrize("convention", ["qwen2.5", "original"])
def test_exports_hold_the_bytes_the_runner_sends(tmp_path: Path, convention: str):
    images = tmp_path / "images"
    images.mkdir()
    for k, size in enumerate([(61, 47), (640, 480), (333, 500)]):
        _photo(*size, seed=k).save(images / f"im{k}.jpg", quality=90)
    qs = _questions(3)

    sent: dict[str, bytes] = {}

    def reply(req):
        part = req.messages[0].parts[0]
        sent[req.meta["question_id"]] = part.read_bytes()
        return "A"

    MCQRunner(ScriptedBackend(reply, model=MODEL), images=images, model=MODEL, box_convention=convention,
              progress=False).run(qs, tmp_path / "answers.jsonl")
    assert len(sent) == 3

    template = load_template("crosshoi")
    rows = list(vlmevalkit_rows(qs, ImageFolder(images), box_convention=convention, template=template))
    assert {r["hoibench_id"]: base64.b64decode(r["image"]) for r in rows} == sent

    for q in qs:
        raw = (images / q.file_name).read_bytes()
        prep = prepare_question(q, images / q.file_name, box_convention=convention, template=template)
        assert prep.image_bytes(raw)[0] == sent[q.id]

    export_finetune(qs, tmp_path / "ft", target="trl", images=images, model=MODEL, box_convention=convention,
                    resize_images=True)
    rows = [json.loads(line) for line in (tmp_path / "ft" / "hoibench_mcq_train.jsonl").read_text().splitlines()]
    assert {r["id"]: Path(r["images"][0]).read_bytes() for r in rows} == sent


def test_the_data_url_on_the_wire_is_the_prepared_png(tmp_path: Path):
    from hoibench.models import make_backend
    from hoibench.testing import FakeChatServer, request_image

    images = tmp_path / "images"
    images.mkdir()
    _photo(640, 480, seed=1).save(images / "im0.jpg", quality=90)
    frame = model_frame("qwen2.5", 640, 480)
    with FakeChatServer() as server:
        backend = make_backend("openai", model=MODEL, base_urls=[server.url], concurrency=2)
        MCQRunner(backend, images=images, model=MODEL, progress=False).run(_questions(1), tmp_path / "a.jsonl")
        sent = request_image(server.bodies[0])
    assert sent == frame_png(images / "im0.jpg", frame.sent_width, frame.sent_height)


def test_image_workers_is_checked(tmp_path: Path):
    with pytest.raises(ValueError, match="image_workers must be one of"):
        MCQRunner(ScriptedBackend(lambda req: "A"), images=tmp_path, image_workers="gpu")


# --------------------------------------------------------------------------- the frame store


def _store_images(tmp_path: Path) -> Path:
    images = tmp_path / "images"
    images.mkdir()
    for k, size in enumerate([(61, 47), (640, 480), (333, 500)]):
        _photo(*size, seed=k).save(images / f"im{k}.jpg", quality=90)
    return images


def _sent_with(images: Path, out: Path, frames, **kw) -> dict[str, bytes]:
    """The image bytes each question's request carried, and the answers file written."""
    from hoibench.runners.mcq import FrameCache

    sent: dict[str, bytes] = {}

    def reply(req):
        sent[req.meta["question_id"]] = req.messages[0].parts[0].read_bytes()
        return "A"

    MCQRunner(ScriptedBackend(reply, model=MODEL), images=images, model=MODEL, progress=False,
              frames=FrameCache(store=frames), **kw).run(_questions(3), out)
    return sent


def test_png_is_whole_refuses_torn_damaged_and_resized_files():
    from hoibench.runners.mcq._frames import png_is_whole

    data = encode_png(_photo(30, 20, seed=4))
    assert png_is_whole(data, 30, 20)
    assert not png_is_whole(data, 20, 30)  # another size
    assert not png_is_whole(data[:-1], 30, 20)  # torn at the end
    assert not png_is_whole(data[: len(data) // 2], 30, 20)
    assert not png_is_whole(data + b"x", 30, 20)  # something after the end
    flipped = bytearray(data)
    flipped[60] ^= 1  # a bit inside the image data: its CRC no longer matches
    assert not png_is_whole(bytes(flipped), 30, 20)
    assert not png_is_whole(b"", 30, 20)


def test_a_frame_store_serves_later_runs_the_same_bytes(tmp_path: Path):
    """A second run over the same images prepares nothing and sends the very bytes (and writes the
    very answers file) of a run without the store; other frame settings or a changed image are
    never served a stored frame."""
    from hoibench.runners.mcq import FrameStore

    images = _store_images(tmp_path)
    plain = _sent_with(images, tmp_path / "plain.jsonl", None)
    first = FrameStore(tmp_path / "frames")
    assert _sent_with(images, tmp_path / "a.jsonl", first) == plain
    assert (first.hits, first.writes) == (0, 3)
    assert len(list((tmp_path / "frames").rglob("*.png"))) == 3

    again = FrameStore(tmp_path / "frames")
    assert _sent_with(images, tmp_path / "b.jsonl", again) == plain
    assert (again.hits, again.writes) == (3, 0)
    for name in ("a.jsonl", "b.jsonl"):
        assert (tmp_path / name).read_bytes() == (tmp_path / "plain.jsonl").read_bytes()

    other = FrameStore(tmp_path / "frames")  # other pixel bounds: another frame, not the stored one
    bounded = _sent_with(images, tmp_path / "c.jsonl", other, max_pixels=100_000)
    assert (other.hits, other.writes) == (0, 3) and bounded != plain
    assert _sent_with(images, tmp_path / "c2.jsonl", None, max_pixels=100_000) == bounded

    _photo(640, 480, seed=99).save(images / "im1.jpg", quality=90)  # new content, same name
    changed = FrameStore(tmp_path / "frames")
    sent = _sent_with(images, tmp_path / "d.jsonl", changed)
    assert (changed.hits, changed.writes) == (2, 1)
    assert sent == _sent_with(images, tmp_path / "d2.jsonl", None)


def test_a_damaged_stored_frame_is_prepared_again(tmp_path: Path, caplog):
    from hoibench.runners.mcq import FrameStore

    images = _store_images(tmp_path)
    plain = _sent_with(images, tmp_path / "plain.jsonl", None)
    _sent_with(images, tmp_path / "a.jsonl", FrameStore(tmp_path / "frames"))
    files = sorted((tmp_path / "frames").rglob("*.png"), key=lambda p: p.stat().st_size)
    files[0].write_bytes(files[0].read_bytes()[:-5])  # torn
    big = bytearray(files[2].read_bytes())
    big[len(big) // 2] ^= 0xFF  # damaged inside
    files[2].write_bytes(bytes(big))
    store = FrameStore(tmp_path / "frames")
    assert _sent_with(images, tmp_path / "b.jsonl", store) == plain
    assert (store.hits, store.rejected, store.writes) == (1, 2, 2)
    assert "not a whole prepared frame" in caplog.text
    again = FrameStore(tmp_path / "frames")  # rewritten whole
    assert _sent_with(images, tmp_path / "c.jsonl", again) == plain and again.hits == 3


def test_a_frame_store_that_cannot_be_written_warns_once_and_the_run_goes_on(tmp_path: Path, caplog):
    from hoibench.runners.mcq import FrameStore

    images = _store_images(tmp_path)
    plain = _sent_with(images, tmp_path / "plain.jsonl", None)
    store = FrameStore(tmp_path / "frames")
    (tmp_path / "blocker").write_text("a file where the frames' subfolder should be")
    store.path = lambda key: tmp_path / "blocker" / f"{key}.png"  # type: ignore[method-assign]
    assert _sent_with(images, tmp_path / "a.jsonl", store) == plain
    assert store.writes == 0 and caplog.text.count("cannot write prepared frames there") == 1
    assert not list((tmp_path / "frames").iterdir())


def test_cli_frame_cache_reports_what_it_reused(tmp_path: Path, capsys):
    from hoibench.cli import main
    from hoibench.formats.questions import write_questions
    from hoibench.testing import FakeChatServer, request_image

    images = _store_images(tmp_path)
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(3), header={"seed": 0})
    sent = []
    for k in range(2):
        with FakeChatServer(lambda b: "A") as server:
            main(["mcq", "run", "--questions", str(qpath), "--images", str(images), "--model", MODEL,
                  "--base-url", server.url, "--out", str(tmp_path / f"a{k}.jsonl"), "--no-progress", "--json",
                  "--frame-cache", str(tmp_path / "frames")])
            sent.append(sorted(request_image(b) for b in server.bodies))
        report = json.loads(capsys.readouterr().out)
        assert report["ok"] == 3
        assert report["frame_cache"] == {"folder": str(tmp_path / "frames"), "reused": 3 * k,
                                         "written": 3 * (1 - k), "rejected": 0}
    assert sent[0] == sent[1] and len(sent[0]) == 3


def test_base64_text_is_the_standard_librarys_with_or_without_pybase64(monkeypatch):
    import base64
    import os

    from hoibench import _io

    data = [b"", b"a", b"ab", b"abc", os.urandom(700_001)]
    fast = [_io.base64_text(d) for d in data]
    monkeypatch.setattr(_io, "_b64_text", None)
    assert [_io.base64_text(d) for d in data] == fast == [base64.b64encode(d).decode("ascii") for d in data]


def test_a_stored_frames_key_holds_everything_that_decides_its_bytes(monkeypatch):
    import PIL

    from hoibench.runners.mcq import FrameStore, _frames

    def key(**kw):
        args = {"image_sha256": "a" * 64, "convention": "qwen2.5", "min_pixels": 3136, "max_pixels": 12845056}
        args.update(kw)
        sha, conv = args.pop("image_sha256"), args.pop("convention")
        return FrameStore.key(sha, conv, **args)

    base = key()
    assert key() == base
    others = [key(image_sha256="b" * 64), key(convention="qwen3"), key(min_pixels=3137), key(max_pixels=100_000)]
    monkeypatch.setattr(_frames, "_DEFLATE_VERSION", "isal 0.0")
    others.append(key())
    monkeypatch.undo()
    monkeypatch.setattr(_frames, "PNG_ENCODER", "png:other")
    others.append(key())
    monkeypatch.undo()
    monkeypatch.setattr(PIL, "__version__", "0.0")
    others.append(key())
    assert len({base, *others}) == 1 + len(others)


def test_a_frame_store_fills_and_serves_with_worker_processes(tmp_path: Path, monkeypatch):
    """Frames prepared in worker processes are stored by the runner's process, and a later run
    with worker processes is served from the store: the same bytes as threads without a store."""
    from hoibench.runners.mcq import FrameStore, _run

    images = _store_images(tmp_path)
    plain = _sent_with(images, tmp_path / "plain.jsonl", None, image_workers="threads")
    monkeypatch.setattr(_run, "_POOL_MIN_IMAGES", 0)  # 3 images are enough to start the workers
    first = FrameStore(tmp_path / "frames")
    assert _sent_with(images, tmp_path / "a.jsonl", first, image_workers="processes") == plain
    again = FrameStore(tmp_path / "frames")
    assert _sent_with(images, tmp_path / "b.jsonl", again, image_workers="processes") == plain
    assert (first.writes, again.hits, again.writes) == (3, 3, 0)
