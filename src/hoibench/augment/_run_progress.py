"""What a run shows while it works, on stderr (stdout carries the final table).

In a terminal: :func:`hoibench._progress.make_progress`'s bar over the instances (or images) to
fill, its text naming the class, the attempt and the stage at work. Anywhere else (a log file, a
pipe, a batch job) a bar is never redrawn, so one plain line per attempt is written instead. Both
end with one line of counts per stage. Nothing at all when disabled (``--no-progress``).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from hoibench._progress import make_progress

__all__ = ["RunProgress"]

#: the stage that turned an image down, by the manifest's ``reason``
_REJECTED_AT = {"watermark detected": "watermark", "no person-object pair detected": "detect",
                "verification answered no": "verify",
                "pseudo-labelling confirmed no target pair": "pseudo-label"}


class RunProgress:
    """Progress of one ``augment_deficits`` or ``filter_images`` call over ``total`` ``unit``
    (``done`` of them filled by earlier runs)."""

    def __init__(self, enabled: bool, *, total: int, unit: str, done: int = 0, label: str = "augment") -> None:
        self.enabled = enabled
        self.total, self.done, self.unit, self.label = total, done, unit, label
        self.counts: dict[str, int] = {}
        self._bar: Any = None
        self._task: Any = None
        self._t0 = time.perf_counter()

    def __enter__(self) -> RunProgress:
        if self.enabled:
            bar = make_progress()
            if bar.console.is_terminal:
                self._bar = bar
                bar.start()
                self._task = bar.add_task(self.label, total=self.total, completed=self.done)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self.enabled and exc[0] is None:
            self.line(self.summary())

    # ---------------------------------------------------------------------------- reporting
    def line(self, text: str) -> None:
        """One line on stderr (above the bar in a terminal)."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def stage(self, where: str, stage: str) -> None:
        """The stage now at work (the bar's text; lines are written per attempt only)."""
        if self._bar is not None:
            self._bar.update(self._task, description=f"{where} · {stage}")

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def outcome(self, where: str, rec: dict[str, Any], advance: int) -> None:
        """Count an inspected image (its manifest record) and report it; ``advance``: the units
        of progress it makes."""
        self.done += advance
        self.count("inspected")
        if rec["status"] == "kept":
            n = int(rec["target_instances"])
            self.count("kept")
            self.count("instances", n)
            what = f"kept, {n} instance{'s' if n != 1 else ''}"
        else:
            self.count(f"rejected at {_REJECTED_AT.get(str(rec['reason']), 'filter')}")
            what = f"rejected: {rec['reason']}"
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif self.enabled:
            self.line(f"{self.label} [{self.done}/{self.total} {self.unit}] {where}: {what}")

    def summary(self) -> str:
        """The counts per stage and the time taken, one line."""
        c = self.counts
        order = ("described", "basic prompt", "generated", "reused", "inspected", "rejected at watermark",
                 "rejected at detect", "rejected at verify", "rejected at pseudo-label", "kept", "instances")
        parts = [f"{name} {c[name]}" for name in order if c.get(name)]
        parts += [f"{name} {n}" for name, n in sorted(c.items()) if name not in order and n]
        took = time.perf_counter() - self._t0
        return (f"{self.label}: {self.done}/{self.total} {self.unit}; "
                f"{', '.join(parts) or 'nothing to do'}; {took:.1f} s")
