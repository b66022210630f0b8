"""Wall-clock and CPU timing shared by the benchmark scripts (CPU time is the reliable figure on
a shared machine)."""

from __future__ import annotations

import compileall
import time
from pathlib import Path


class Timer:
    """``with Timer() as t: ...`` then ``t.wall`` / ``t.cpu`` in seconds."""

    def __enter__(self) -> Timer:
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.w
        self.cpu = time.process_time() - self.c

    def __str__(self) -> str:
        return f"{self.wall:7.2f} s wall {self.cpu:7.2f} s cpu"


def compile_package() -> None:
    """Byte-compile ``src/hoibench`` before timing whole commands: an installed package has its
    ``.pyc`` files, while a checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as on the machine these
    figures come from) would otherwise compile every module on each start (~0.25 s)."""
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "src" / "hoibench", quiet=1)
