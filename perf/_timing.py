"""Wall-clock and CPU timing shared by the benchmark scripts (CPU time is the reliable figure on
a shared machine)."""

from __future__ import annotations

import time


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
