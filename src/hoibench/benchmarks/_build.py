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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench._io import atomic_folder, owned_folder, write_folder_provenance

__all__ = ["BenchmarkBuild", "write_folder"]


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


def write_folder(out: str | os.PathLike[str], names: Iterable[str], write_files: Callable[[Path], dict[str, Path]],
                 *, writer: str, parameters: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Path]:
    """Write a benchmark folder as a whole: ``write_files(stage)`` fills a staging folder beside
    ``out``, :func:`~hoibench._io.write_folder_provenance` records the ``parameters``, the
    ``inputs`` and every file's hash, and the folder is swapped in (a kill leaves the old folder
    or the new one, never a mix of two splits). An ``out`` holding files other than ``names`` (and
    not written by hoibench) is refused. Returns ``{role: path}`` under ``out``, ``provenance``
    included."""
    target = Path(out)
    with atomic_folder(target, owned=owned_folder(names)) as stage:
        written = write_files(stage)
        written["provenance"] = write_folder_provenance(stage, writer=writer, parameters=parameters,
                                                        inputs=inputs)
    return {role: target / p.relative_to(stage) for role, p in written.items()}
