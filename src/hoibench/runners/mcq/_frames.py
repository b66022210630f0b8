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

:class:`FrameStore` keeps prepared frames on disk between runs (``mcq run --frame-cache DIR``): a
sweep of one model family over the same images, a rerun with another prompt or seed, each shard of
a split run, prepares every image once in all.
"""

from __future__ import annotations

import hashlib
import io
import logging
import multiprocessing
import os
import struct
import threading
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench._io import atomic_write_bytes, base64_text, dumps_json, ensure_dir
from hoibench.runners.mcq._boxes import ModelFrame, model_frame

__all__ = ["PNG_ENCODER", "FrameStore", "PreparedFile", "encode_png", "frame_file", "frame_png", "frame_pool",
           "resize_rgb"]

log = logging.getLogger(__name__)

try:  # ISA-L's deflate: 3-20x faster than zlib's at the same size on these frames
    import isal
    from isal import isal_zlib as _isal_zlib
except ImportError:  # pragma: no cover - a platform without an isal wheel
    _isal_zlib = None

_crc32 = zlib.crc32 if _isal_zlib is None else _isal_zlib.crc32  # ISA-L's: ~20x zlib's on a frame
#: the deflater's version, part of a stored frame's key (another version may write other bytes)
_DEFLATE_VERSION = (f"zlib {zlib.ZLIB_RUNTIME_VERSION}" if _isal_zlib is None
                    else f"isal {getattr(isal, '__version__', '?')}")

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
    return _prepared(frame, data)


def _prepared(frame: ModelFrame, png: bytes) -> PreparedFile:
    return PreparedFile(frame, png, hashlib.sha256(png).hexdigest(), base64_text(png))


def png_is_whole(data: bytes, width: int, height: int) -> bool:
    """Whether ``data`` is a complete PNG as :func:`encode_png` writes it at ``width`` x ``height``:
    the signature, an RGB 8-bit header of that size first, every chunk whole with its CRC right,
    image data, and the end chunk last (a torn or damaged file fails one of these)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return False
    pos, kinds, view = 8, [], memoryview(data)
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">I", data, pos)
        end = pos + 12 + length
        if end > len(data):
            return False
        (crc,) = struct.unpack_from(">I", data, end - 4)
        if _crc32(view[pos + 4:end - 4]) != crc:
            return False
        kinds.append(bytes(view[pos + 4:pos + 8]))
        if kinds[-1] == b"IEND":
            break
        pos = end
    return (pos + 12 == len(data) and len(kinds) >= 3 and kinds[0] == b"IHDR" and kinds[-1] == b"IEND"
            and b"IDAT" in kinds and data[16:26] == struct.pack(">IIBB", width, height, 8, 2))


class FrameStore:
    """Prepared frames on disk, shared by runs and processes (``mcq run --frame-cache DIR``).

    A frame's file is named by sha256 of everything that decides its bytes: the image file's
    sha256, the convention, the pixel bounds, the encoder (:data:`PNG_ENCODER`), the deflater's
    and Pillow's versions (the compressed bytes, the resize). So a frame is reused only for the same image content prepared the same
    way, and the bytes sent are those :func:`frame_file` would make. Files are written as every
    hoibench output is (:func:`~hoibench._io.atomic_write_bytes`: a temporary name, synced, then
    renamed; several shards may write one folder); a file read back is used only when
    :func:`png_is_whole` at the expected size, else it is prepared and written again (counted in
    :attr:`rejected`).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = ensure_dir(Path(root))
        self.hits = self.writes = self.rejected = 0
        self._lock = threading.Lock()
        self._write_failed = False

    @staticmethod
    def key(image_sha256: str, convention: str, *, min_pixels: int, max_pixels: int) -> str:
        from PIL import __version__ as pillow

        spec = {"image": image_sha256, "convention": convention, "min_pixels": min_pixels,
                "max_pixels": max_pixels, "encoder": PNG_ENCODER, "deflate": _DEFLATE_VERSION, "pillow": pillow}
        return hashlib.sha256(dumps_json(spec, sort_keys=True)).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.png"

    def load(self, key: str, source: bytes, convention: str, *, min_pixels: int,
             max_pixels: int) -> PreparedFile | None:
        """The stored preparation under ``key`` (:meth:`key`) of the image file ``source`` (its
        bytes), or ``None`` when there is none (or none that is whole). Reads only the image's
        header."""
        from PIL import Image

        with Image.open(io.BytesIO(source)) as im:
            frame = model_frame(convention, im.width, im.height, min_pixels=min_pixels, max_pixels=max_pixels)
        if not frame.resized:
            return PreparedFile(frame)
        path = self.path(key)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # not prepared yet
            return None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read this prepared frame ({exc.strerror or exc}); "
                              f"check the --frame-cache folder {self.root}") from None
        if not png_is_whole(data, frame.sent_width, frame.sent_height):
            log.warning("%s: not a whole prepared frame of %dx%d; preparing it again", path,
                        frame.sent_width, frame.sent_height)
            with self._lock:
                self.rejected += 1
            return None
        with self._lock:
            self.hits += 1
        return _prepared(frame, data)

    def save(self, key: str, prepared: PreparedFile) -> None:
        """Keep ``prepared`` under ``key`` (:meth:`key`). A folder that cannot be written is
        reported once and then left alone: the run's answers do not depend on it."""
        if prepared.png is None or self._write_failed:
            return
        try:
            atomic_write_bytes(self.path(key), prepared.png)
        except ConfigError as exc:  # what atomic_write makes of an OSError, naming the file
            with self._lock:
                first, self._write_failed = not self._write_failed, True
            if first:
                log.warning("%s: cannot write prepared frames there (%s); the run goes on without "
                            "keeping them", self.root, exc)
            return
        with self._lock:
            self.writes += 1


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
