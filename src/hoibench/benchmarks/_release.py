"""Frozen releases: every benchmark hoibench defines, built from the bundled annotations with fixed
seeds, and the sha256 manifest (``data/release_manifest.json``, shipped in the package) that a
folder is checked against.

A release is a folder of benchmark folders (:data:`RELEASE_BENCHMARKS`, in build order); each is
built by one public builder with the parameters of the CLI command recorded beside it, so
``hoibench release build DIR`` and those commands write the same bytes. ``verify_release``
compares a folder with the manifest and returns one :class:`Mismatch` per file that is missing,
changed or not in the manifest.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench._io import PROVENANCE_FILE, atomic_write_json, ensure_dir
from hoibench._version import __version__
from hoibench.benchmarks.balanced import build_balanced_split
from hoibench.benchmarks.mcq import build_mcq_benchmark, build_mcq_training_set
from hoibench.benchmarks.sg import build_preset
from hoibench.benchmarks.zeroshot import build_zero_shot_split, load_zero_shot_source
from hoibench.datasets import load_dataset

__all__ = [
    "MANIFEST_KIND",
    "RELEASE",
    "RELEASE_BENCHMARKS",
    "Mismatch",
    "ReleaseBenchmark",
    "build_release",
    "folder_manifest",
    "load_manifest",
    "select_benchmarks",
    "verify_release",
]

#: the release this version of hoibench freezes; bump it whenever a build's bytes change
RELEASE = "2026.2"
MANIFEST_KIND = "hoibench_release_manifest"
MANIFEST_RESOURCE = ("data", "release_manifest.json")
QUESTIONS_FILE = "questions.jsonl"


@dataclass(frozen=True)
class ReleaseBenchmark:
    """One frozen benchmark: its folder in a release, the CLI command that writes the same files,
    what it is (for the dataset card) and the function that writes it into a folder."""

    name: str
    command: str
    description: str
    build: Callable[[Path], object]


def _mcq_provenance(ds: Any, split: str) -> dict[str, Any]:
    # what `hoibench mcq build --dataset hico-det --split SPLIT` records (so the bytes agree)
    return {"dataset_spec": "hico-det", "split": split, "n_images": ds.n_images, "n_pairs": ds.n_pairs}


def _sg(preset: str) -> Callable[[Path], object]:
    return lambda out: build_preset(preset).write(out)


def _balanced(seed: int) -> Callable[[Path], object]:
    return lambda out: build_balanced_split(load_dataset("hico-det"), random_state=seed, zero_shot=True,
                                            selection_counts="official").write(out)


def _zero_shot(protocol: str) -> Callable[[Path], object]:
    def build(out: Path) -> object:
        train, test, name = load_zero_shot_source(("hico-det",))
        return build_zero_shot_split(train, test=test, protocol=protocol, name=name).write(out)

    return build


def _mcq_benchmark(out: Path) -> object:
    ds = load_dataset("hico-det:test")
    return build_mcq_benchmark(ds, random_state=0, provenance=_mcq_provenance(ds, "test")).write(
        ensure_dir(out) / QUESTIONS_FILE)


def _mcq_train(out: Path) -> object:
    ds = load_dataset("hico-det:train")
    return build_mcq_training_set(ds, random_state=0, provenance=_mcq_provenance(ds, "train")).write(
        ensure_dir(out) / QUESTIONS_FILE)


RELEASE_BENCHMARKS: tuple[ReleaseBenchmark, ...] = (
    *(ReleaseBenchmark(f"sg/hico-det-sg{i}", f"hoibench split sg --preset hico-det-sg{i} --out DIR/sg/hico-det-sg{i}",
                       f"HICO-DET-SG split {i} (systematic generalization; Takemoto et al. 2023), as released",
                       _sg(f"hico-det-sg{i}")) for i in (1, 2, 3)),
    *(ReleaseBenchmark(f"b-right/seed{s}", f"hoibench split balanced --seed {s} --zero-shot --out DIR/b-right/seed{s}",
                       f"B-RIGHT class-balanced train, test and zero-shot test sets, seed {s} (Jang et al. 2025)",
                       _balanced(s))
      for s in range(4)),
    *(ReleaseBenchmark(f"zero-shot/{p}", f"hoibench split zero-shot --protocol {p} --out DIR/zero-shot/{p}",
                       f"HICO-DET zero-shot split {p.upper()} (gen-vlkt's unseen classes)", _zero_shot(p))
      for p in ("rf-uc", "nf-uc", "uo", "uv")),
    ReleaseBenchmark("mcq/benchmark", "hoibench mcq build --split test --seed 0 --out DIR/mcq/benchmark/questions.jsonl",
                     "Multiple-choice HOI benchmark, settings 1 and 2 (Lei et al., CrossHOI-Bench), no negative-filtering judge",
                     _mcq_benchmark),
    ReleaseBenchmark("mcq/train", "hoibench mcq build --split train --seed 0 --out DIR/mcq/train/questions.jsonl",
                     "Multiple-choice HOI training questions (Lei et al., App. C.3)", _mcq_train),
)


def select_benchmarks(names: Iterable[str] | None = None) -> list[ReleaseBenchmark]:
    """The frozen benchmarks named (a name or a group prefix such as ``sg`` or ``b-right``), in
    build order; all of them for ``None``."""
    if names is None:
        return list(RELEASE_BENCHMARKS)
    wanted = [n.strip().strip("/") for n in names if n.strip()]
    out = []
    for n in wanted:
        hits = [b for b in RELEASE_BENCHMARKS if b.name == n or b.name.startswith(n + "/")]
        if not hits:
            raise ConfigError(f"no frozen benchmark {n!r}; choose from {[b.name for b in RELEASE_BENCHMARKS]} "
                              "or a group (sg, b-right, zero-shot, mcq)")
        out.extend(h for h in hits if h not in out)
    return sorted(out, key=RELEASE_BENCHMARKS.index)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _frozen(path: Path) -> bool:
    """Whether a file of a built benchmark is part of the release: every file but the folder's
    ``provenance.json``, hoibench's record of how it wrote the folder (its writer, the hoibench
    version, the command's parameters), which says how the bytes were made, not what they are —
    the library build and the recorded command write different ones for the same bytes."""
    return path.is_file() and path.name != PROVENANCE_FILE


def folder_manifest(folder: str | os.PathLike[str], benchmarks: Sequence[ReleaseBenchmark]) -> dict[str, Any]:
    """The manifest of the built benchmarks under ``folder``: per benchmark its command and every
    file's sha256 and size (POSIX paths relative to the benchmark's folder)."""
    root = Path(folder)
    entries: dict[str, Any] = {}
    for b in benchmarks:
        base = root / b.name
        files = {p.relative_to(base).as_posix(): {"sha256": _sha256(p), "bytes": p.stat().st_size}
                 for p in sorted(base.rglob("*")) if _frozen(p)}
        entries[b.name] = {"command": b.command, "description": b.description, "files": files}
    return {"kind": MANIFEST_KIND, "release": RELEASE, "hoibench": __version__, "benchmarks": entries}


def build_release(folder: str | os.PathLike[str], names: Iterable[str] | None = None, *,
                  progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
    """Build the frozen benchmarks ``names`` (default: all) into ``folder``; returns their
    manifest as built. ``progress(name, seconds)`` is called after each benchmark."""
    root = ensure_dir(folder)
    chosen = select_benchmarks(names)
    for b in chosen:
        t0 = time.perf_counter()
        b.build(ensure_dir(root / b.name))
        if progress is not None:
            progress(b.name, time.perf_counter() - t0)
    return folder_manifest(root, chosen)


@functools.cache
def _bundled_manifest() -> dict[str, Any]:
    return json.loads(resources.files("hoibench.benchmarks").joinpath(*MANIFEST_RESOURCE).read_bytes())


def load_manifest(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The shipped manifest, or one from ``path`` (a release's own ``manifest.json``)."""
    if path is None:
        return _bundled_manifest()
    try:
        obj = json.loads(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable manifest ({exc})") from None
    if not isinstance(obj, dict) or obj.get("kind") != MANIFEST_KIND or not isinstance(obj.get("benchmarks"), dict):
        raise ConfigError(f"{path}: not a hoibench release manifest (kind {MANIFEST_KIND!r} with 'benchmarks')")
    return obj


def write_manifest(manifest: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a manifest (``release build --freeze``; a maintainer copies it into the package)."""
    atomic_write_json(path, manifest, indent=True)


@dataclass(frozen=True)
class Mismatch:
    """One file that does not match the manifest: ``missing``, ``changed`` or ``unexpected``."""

    path: str
    problem: str
    detail: str = ""

    def line(self) -> str:
        return f"{self.path}: {self.problem}" + (f" ({self.detail})" if self.detail else "")


def verify_release(folder: str | os.PathLike[str], names: Iterable[str] | None = None, *,
                   manifest: dict[str, Any] | None = None) -> list[Mismatch]:
    """Check the benchmarks ``names`` (default: every benchmark of the manifest) under ``folder``
    against ``manifest`` (default: the shipped one); an empty list means every byte matches."""
    man = load_manifest() if manifest is None else manifest
    entries: dict[str, Any] = man["benchmarks"]
    chosen = [b.name for b in select_benchmarks(names)] if names is not None else list(entries)
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{root}: not a folder")
    out: list[Mismatch] = []
    for name in chosen:
        if name not in entries:
            raise ConfigError(f"the manifest (release {man.get('release')}) has no benchmark {name!r}")
        base = root / name
        expected: dict[str, Any] = entries[name]["files"]
        for rel, want in expected.items():
            path = base / rel
            shown = f"{name}/{rel}"
            if not path.is_file():
                out.append(Mismatch(shown, "missing"))
                continue
            size = path.stat().st_size
            digest = _sha256(path)
            if digest != want["sha256"]:
                out.append(Mismatch(shown, "changed", f"sha256 {digest[:12]}… ≠ {want['sha256'][:12]}…, "
                                                      f"{size:,} bytes, release has {want['bytes']:,}"))
        if base.is_dir():
            for p in sorted(base.rglob("*")):
                rel = p.relative_to(base).as_posix()
                if _frozen(p) and rel not in expected:
                    out.append(Mismatch(f"{name}/{rel}", "unexpected", "not in the release"))
    return out
