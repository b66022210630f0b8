"""The contract every benchmark builder keeps (``hoibench.benchmarks._build``): the same
``random_state`` gives the same files byte for byte and another gives other files; ``write``
then reading back gives the same benchmark; ``stats()`` is what was written; the repr is short."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hoibench.benchmarks import BenchmarkBuild, build_balanced_split, build_sg_split
from hoibench.benchmarks.mcq import build_mcq_benchmark
from hoibench.data import HOIDataset
from hoibench.datasets import load_dataset
from hoibench.formats import read_ppdm, read_questions


@pytest.fixture(scope="module")
def images() -> HOIDataset:
    """500 real images (the bundled HICO-DET test set's first ones): enough for every builder."""
    test = load_dataset("hico-det:test")
    return test.subset(np.arange(500), name="hico-det:test[:500]")


@dataclass(frozen=True)
class Builder:
    name: str
    build: Callable[[HOIDataset, int], BenchmarkBuild]
    out: str  # what ``write`` is given, relative to a fresh folder
    read_stats: Callable[[Path], dict[str, Any]]
    read_back: Callable[[Any, dict[str, Path]], None]  # asserts the files hold the benchmark


def _stats_json(out: Path) -> dict[str, Any]:
    return json.loads((out / "stats.json").read_bytes())


def _sg_back(split: Any, paths: dict[str, Path]) -> None:
    assert read_ppdm(paths["train"]).equals(split.train)
    assert read_ppdm(paths["test"]).equals(split.test)


def _balanced_back(res: Any, paths: dict[str, Path]) -> None:
    for s in res.sets:
        assert read_ppdm(paths[s.name]).equals(s.dataset), s.name


def _mcq_back(build: Any, paths: dict[str, Path]) -> None:
    back = read_questions(paths["questions"])
    assert list(back) == list(build.questions)
    assert {k: v for k, v in back.header.items() if k != "report"} == build.header


BUILDERS = [
    Builder("sg", lambda ds, seed: build_sg_split(ds, random_state=seed, ratio=0.9, policy="paper"),
            "split", _stats_json, _sg_back),
    Builder("balanced", lambda ds, seed: build_balanced_split(ds, random_state=seed, top_k=12, l_train=6,
                                                               l_test=3, epochs=3, zero_shot=True),
            "split", _stats_json, _balanced_back),
    Builder("mcq", lambda ds, seed: build_mcq_benchmark(ds, random_state=seed),
            "questions.jsonl", lambda out: dict(read_questions(out).header["report"]), _mcq_back),
]


def _digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.name)
def test_builder_contract(builder: Builder, images: HOIDataset, tmp_path: Path) -> None:
    built = {k: builder.build(images, seed) for k, seed in (("a", 1), ("b", 1), ("c", 2))}
    assert all(isinstance(r, BenchmarkBuild) for r in built.values())
    paths = {k: r.write(tmp_path / k / builder.out) for k, r in built.items()}

    # every written file is named in the returned {role: path}, and nothing else is there
    for k, p in paths.items():
        assert sorted(p.values()) == sorted(f for f in (tmp_path / k).rglob("*") if f.is_file())
    # same seed: the same bytes; another seed: other bytes in every data file
    assert _digests(tmp_path / "a") == _digests(tmp_path / "b")
    a, c = _digests(tmp_path / "a"), _digests(tmp_path / "c")
    assert a.keys() == c.keys() and a != c
    # what was written is the benchmark, and stats() is what the files say
    builder.read_back(built["a"], paths["a"])
    assert builder.read_stats(tmp_path / "a" / builder.out) == built["a"].stats()
    # writing again over the same place gives the same bytes (no stale or half-written file)
    built["a"].write(tmp_path / "a" / builder.out)
    assert _digests(tmp_path / "a") == a
    # a short repr: one line naming the seed and the sizes, no arrays or datasets
    text = repr(built["a"])
    assert "\n" not in text and len(text) < 300 and "array" not in text and "HOIDataset" not in text
    assert "seed=1" in text and type(built["a"]).__name__ in text

