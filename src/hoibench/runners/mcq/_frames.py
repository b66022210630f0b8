"""The one image preparation: an image resized to the model's frame and encoded as the runner
sends it. ``mcq run``, the harness exports (lmms-eval, VLMEvalKit) and the fine-tuning export all
call :func:`frame_png`, so the images a model is trained or evaluated on elsewhere are byte for
byte what the runner sends.

The encoder is a plain PNG writer (:func:`encode_png`: RGB, 8 bits, the "Sub" filter on every
row, deflated by ISA-L's igzip at level 1 through ``isal``), not Pillow's: Pillow tries every
filter on every row (its adaptive choice), which made PNG encoding the largest cost of a run on
natural photos, and zlib's own deflate was still the second largest after the resize (17.5 ms per
natural 644x476 frame with ``Z_RLE``, igzip 5.3 ms for the same size; a flat colour 2.6 -> 0.1 ms).
Where ``isal`` cannot be imported, zlib level 1 with ``Z_RLE`` writes the stream instead
(:data:`PNG_ENCODER` names which). PNG is lossless, so the pixels the model sees are Pillow's
resize exactly either way (tested); only the compressed bytes differ, and numpy, igzip and zlib
release the interpreter lock while they work.

The CPU-heavy step runs in worker *processes* for large runs (:func:`frame_pool`,
:func:`frame_file`); each worker reads the file itself (the path travels, not the bytes), checks it
against the sha256 the runner keys the frame by, and returns the PNG with its own sha256.
"""

from __future__ import annotations

import base64
import hashlib
import io
import multiprocessing
import os
import struct
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.runners.mcq._boxes import ModelFrame, model_frame

__all__ = ["PNG_ENCODER", "PreparedFile", "encode_png", "frame_file", "frame_png", "frame_pool", "resize_rgb"]

try:  # ISA-L's deflate: 3-20x faster than zlib's at the same size on these frames
    from isal import isal_zlib as _isal_zlib
except ImportError:  # pragma: no cover - a platform without an isal wheel
    _isal_zlib = None

#: what :func:`encode_png` writes, for records that name the encoder (a change would change bytes)
PNG_ENCODER = "png:sub+zlib1-rle" if _isal_zlib is None else "png:sub+igzip1"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def encode_png(image: Any) -> bytes:
    """``image`` (a PIL image or an ``(H, W, 3)`` uint8 array) as an RGB PNG: every row with the
    "Sub" filter (byte minus the byte one pixel to the left, mod 256), deflated by igzip level 1
    (zlib level 1 with ``Z_RLE`` without ``isal``)."""
    rgb = np.asarray(image.convert("RGB") if hasattr(image, "convert") and image.mode != "RGB" else image,
                     dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"expected an RGB image, got an array of shape {rgb.shape}")
    h, w, _ = rgb.shape
    rows = rgb.reshape(h, 3 * w)
    filtered = np.empty((h, 3 * w + 1), dtype=np.uint8)
    filtered[:, 0] = 1  # filter type Sub
    filtered[:, 1:4] = rows[:, :3]
    np.subtract(rows[:, 3:], rows[:, :-3], out=filtered[:, 4:])
    if _isal_zlib is not None:
        data = _isal_zlib.compress(memoryview(filtered).cast("B"), 1)
    else:  # a platform without an isal wheel (tested by hiding it)
        comp = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
        data = comp.compress(memoryview(filtered).cast("B")) + comp.flush()
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", data) + _chunk(b"IEND", b""))


def resize_rgb(image: Any, width: int, height: int) -> Any:
    """``image`` in RGB at ``width`` x ``height`` (Pillow's default resampling, bicubic); the same
    object when it already has that size and mode (no work)."""
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    return rgb if rgb.size == (width, height) else rgb.resize((width, height))


def _read(source: str | Path | bytes, sha256: str | None) -> bytes:
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    if sha256 is not None and hashlib.sha256(raw).hexdigest() != sha256:
        raise ValidationError(f"{source if not isinstance(source, bytes) else 'image'}: changed while the "
                              "run was reading it (its sha256 differs); run again")
    return raw


def frame_png(source: str | Path | bytes, width: int, height: int, *, sha256: str | None = None) -> bytes:
    """The image at ``source`` (a path, or a file's bytes) resized to ``width`` x ``height`` and
    encoded as the runner sends it (:func:`encode_png`). ``sha256``: the digest the caller keys
    the result by; a file whose bytes no longer match it is refused (changed during the run)."""
    from PIL import Image

    with Image.open(io.BytesIO(_read(source, sha256))) as im:
        return encode_png(resize_rgb(im, width, height))


@dataclass(frozen=True)
class PreparedFile:
    """What :func:`frame_file` returns: the image's frame (its original size included), and when
    the frame resizes, the PNG sent, its sha256 and its base64 text (``None`` each when the file
    is sent as it is)."""

    frame: ModelFrame
    png: bytes | None = None
    sha256: str | None = None
    b64: str | None = None


def frame_file(source: str | Path | bytes, convention: str, *, sha256: str | None = None,
               min_pixels: int, max_pixels: int) -> PreparedFile:
    """All of one image's preparation for ``mcq run`` in one call (a worker process's task: the
    runner's process only hashes the file): the size, the frame, and when it resizes, the PNG
    :func:`frame_png` makes, with its sha256 and base64 (what a request body carries)."""
    from PIL import Image

    with Image.open(io.BytesIO(_read(source, sha256))) as im:
        frame = model_frame(convention, im.width, im.height, min_pixels=min_pixels, max_pixels=max_pixels)
        if not frame.resized:
            return PreparedFile(frame)
        data = encode_png(resize_rgb(im, frame.sent_width, frame.sent_height))
    return PreparedFile(frame, data, hashlib.sha256(data).hexdigest(), base64.b64encode(data).decode("ascii"))


def frame_pool() -> ProcessPoolExecutor:
    """Worker processes for :func:`frame_png`, one per CPU (``forkserver`` where it exists: no
    fork of a process whose threads hold locks)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        # preload this module, not the caller's __main__ (a script without a main guard)
        ctx.set_forkserver_preload([__name__])
    else:  # pragma: no cover - Windows, macOS without forkserver
        ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=max(1, os.cpu_count() or 1), mp_context=ctx)
