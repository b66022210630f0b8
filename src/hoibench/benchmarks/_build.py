"""The one shape of the benchmark builders (``sg``, ``balanced``, ``zeroshot``, ``mcq``).

Every builder is a function ``build_*(dataset, *, random_state=..., ...)`` that does all the
work in memory and returns a frozen result object with

* ``stats()``: the statistics dict the builder writes (``stats.json`` of a split folder, the
  ``report`` of a question file's header), equal to what :meth:`write` puts on disk;
* ``write(out)``: the benchmark's files under ``out`` (a folder for the splits, the JSONL file
  for the multiple-choice questions), each written atomically (no half-written file, ever),
  byte-identical for equal results; returns ``{role: path}`` of every file written;
* a short ``repr`` naming the parameters and sizes.

The seed argument is ``random_state`` everywhere (``--seed`` on the command line, ``"seed"`` in
the files): an integer, since it is recorded in the output so that a benchmark can be rebuilt.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hoibench._exceptions import ConfigError

__all__ = ["BenchmarkBuild"]


@runtime_checkable
class BenchmarkBuild(Protocol):
    """What every builder returns (see the module docstring)."""

    def stats(self) -> dict[str, Any]:
        """The statistics written with the benchmark."""
        ...

    def write(self, out: str | os.PathLike[str]) -> dict[str, Path]:
        """Write the benchmark's files atomically; ``{role: path}`` of each."""
        ...


def check_seed(random_state: Any) -> int:
    """``random_state`` as the int recorded in the output (a Generator could not be recorded)."""
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise ConfigError(f"random_state must be an integer seed (it is recorded in the output); "
                          f"got {random_state!r}")
    return int(random_state)


def renamed_seed(random_state: Any, seed: Any, *, function: str) -> Any:
    """``random_state``, or the value of the deprecated ``seed=`` keyword it replaced (warned)."""
    if seed is None:
        return random_state
    if random_state is not None:
        raise ConfigError(f"{function}: give random_state only (seed is its deprecated name)")
    warnings.warn(f"{function}(seed=...) is deprecated; pass random_state=... instead",
                  DeprecationWarning, stacklevel=3)
    return seed
