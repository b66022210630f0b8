"""The CPU-heavy step of preparing an image (decode, resize, PNG encode) as a plain function of
bytes, so that it runs in worker *processes*: in threads it holds the interpreter lock often
enough to slow the event loop that keeps the servers busy (measured in ``perf/bench_runner.py``)."""

from __future__ import annotations

import io
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

__all__ = ["frame_pool", "resize_png"]


def resize_png(raw: bytes, width: int, height: int) -> bytes:
    """``raw`` (any format PIL reads) resized to ``width`` x ``height`` and encoded as the runner
    sends it: RGB, PNG, ``compress_level=1`` (lossless; fast over small)."""
    from PIL import Image

    with Image.open(io.BytesIO(raw)) as im:
        rgb = (im if im.mode == "RGB" else im.convert("RGB")).resize((width, height))
        buf = io.BytesIO()
        rgb.save(buf, format="PNG", compress_level=1)
        return buf.getvalue()


def frame_pool() -> ProcessPoolExecutor:
    """Worker processes for :func:`resize_png`, one per CPU (``forkserver`` where it exists: no
    fork of a process whose threads hold locks)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        # preload this module, not the caller's __main__ (a script without a main guard)
        ctx.set_forkserver_preload([__name__])
    else:  # pragma: no cover - Windows, macOS without forkserver
        ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=max(1, os.cpu_count() or 1), mp_context=ctx)
