"""Numbers behind B-RIGHT's Figure 2, Figure S6 and Tables S2/S3 (``002_*.txt``).

- :func:`class_split_counts` — per HOI class, the instances (pairs) in a train and a test set
  and their ratio: Figure 2's long tail and its varying train/test ratio, and, with the unseen
  classes of a zero-shot split, Figure S6's imbalance of seen and unseen classes (RF-UC).
- :func:`augmentation_counts` — generated and crawled images and HOI instances kept by the
  augmentation pipeline, read from the manifests of its output folders (Tables S2/S3).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench.augment import read_manifests
from hoibench.data import HOIDataset

__all__ = [
    "AugmentationCounts",
    "ClassSplitCounts",
    "augmentation_counts",
    "class_split_counts",
    "imbalance",
]


def imbalance(counts: np.ndarray) -> dict[str, float | int | None]:
    """Summary of a class-count vector: classes, total, min, median, max, max/min and the
    coefficient of variation (std / mean); undefined entries are None."""
    c = np.asarray(counts, dtype=np.float64)
    if len(c) == 0:
        return {"classes": 0, "instances": 0, "min": None, "median": None, "max": None,
                "max_over_min": None, "cv": None}
    mean = float(c.mean())
    return {"classes": len(c), "instances": int(c.sum()), "min": int(c.min()),
            "median": float(np.median(c)), "max": int(c.max()),
            "max_over_min": float(c.max() / c.min()) if c.min() > 0 else None,
            "cv": float(c.std() / mean) if mean > 0 else None}


@dataclass(frozen=True)
class ClassSplitCounts:
    """Per class (``classes``, HOI indices, head first by train count; ties by index): train and
    test instances, and whether the class is unseen (a zero-shot split's classes)."""

    classes: np.ndarray
    names: tuple[str, ...]
    train: np.ndarray
    test: np.ndarray
    unseen: np.ndarray  # bool per class

    @property
    def ratio(self) -> np.ndarray:
        """train / test per class; NaN where the class has no test instance (undefined)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.test > 0, self.train / np.maximum(self.test, 1), np.nan)

    def summary(self) -> dict[str, dict[str, Any]]:
        """:func:`imbalance` of train and test counts, over all, seen and unseen classes."""
        groups = {"all": np.ones(len(self.classes), dtype=bool)}
        if self.unseen.any():
            groups.update(seen=~self.unseen, unseen=self.unseen)
        out: dict[str, dict[str, Any]] = {}
        for g, sel in groups.items():
            out[g] = {"train": imbalance(self.train[sel]), "test": imbalance(self.test[sel])}
        return out

    def rows(self) -> list[dict[str, Any]]:
        ratio = self.ratio
        return [{"hoi": int(h), "name": n, "train": int(a), "test": int(b),
                 "train_over_test": None if np.isnan(r) else float(r), "unseen": bool(u)}
                for h, n, a, b, r, u in zip(self.classes, self.names, self.train, self.test, ratio,
                                            self.unseen)]


def class_split_counts(train: HOIDataset, test: HOIDataset, *, classes: Sequence[int] | np.ndarray | None = None,
                       unseen: Sequence[int] | np.ndarray = ()) -> ClassSplitCounts:
    """Instances per class in ``train`` and ``test`` (same label space).

    ``classes``: the classes to show (default: every class with an instance in either set, and
    every unseen class); ``unseen``: a zero-shot split's unseen classes (flagged).
    """
    if train.vocab.n_hois != test.vocab.n_hois:
        raise ConfigError(f"train and test have different label spaces ({train.vocab.name}: "
                          f"{train.vocab.n_hois} classes, {test.vocab.name}: {test.vocab.n_hois})")
    n = train.vocab.n_hois
    tr = train.hoi_counts().astype(np.int64)
    te = test.hoi_counts().astype(np.int64)
    uns = np.zeros(n, dtype=bool)
    u = np.asarray(unseen, dtype=np.int64)
    if len(u) and (u.min() < 0 or u.max() >= n):
        raise ConfigError(f"unseen classes must be in 0..{n - 1}")
    uns[u] = True
    if classes is None:
        sel = np.flatnonzero((tr > 0) | (te > 0) | uns)
    else:
        sel = np.unique(np.asarray(classes, dtype=np.int64))
        if len(sel) and (sel.min() < 0 or sel.max() >= n):
            raise ConfigError(f"classes must be in 0..{n - 1}")
    order = sel[np.lexsort((sel, -tr[sel]))]
    names = tuple(train.vocab.hoi_name(int(h)) for h in order)
    return ClassSplitCounts(order, names, tr[order], te[order], uns[order])


@dataclass(frozen=True)
class AugmentationCounts:
    """Tables S2/S3: per split, kept images and their HOI instances by origin."""

    splits: tuple[str, ...]
    images: Mapping[str, Mapping[str, int]]  # split -> {"generated", "crawled"}
    instances: Mapping[str, Mapping[str, int]]

    def rows(self, what: str) -> list[dict[str, Any]]:
        table = self.images if what == "images" else self.instances
        return [{"split": s, "generated": table[s]["generated"], "crawled": table[s]["crawled"],
                 "total": table[s]["generated"] + table[s]["crawled"]} for s in self.splits]


def augmentation_counts(folders: Mapping[str, Sequence[str | os.PathLike[str]]]) -> AugmentationCounts:
    """Kept images and instances per split from augmentation output folders.

    ``folders[split]`` lists the output folders of that split (``hoibench augment run`` writes
    generated images, ``hoibench augment filter`` crawled ones). An image counts once, by its last
    verdict (a resumed run may re-inspect one); its instances are the pairs of its pseudo-label.
    """
    images: dict[str, dict[str, int]] = {}
    instances: dict[str, dict[str, int]] = {}
    for split, dirs in folders.items():
        img = {"generated": 0, "crawled": 0}
        ins = {"generated": 0, "crawled": 0}
        for d in dirs:
            path = Path(d)
            if not path.is_dir():
                raise ConfigError(f"{path}: not an augmentation output folder")
            records = read_manifests(path)
            if not records:
                raise ConfigError(f"{path}: no manifest records (manifest*.jsonl of hoibench augment)")
            last: dict[tuple[str, Any], dict[str, Any]] = {}
            for rec in records:
                if rec["event"] == "attempt":
                    last[("generated", (rec.get("hoi"), rec.get("attempt")))] = rec
                elif rec["event"] == "filtered":
                    last[("crawled", rec.get("image"))] = rec
            for (origin, key), rec in last.items():
                if rec.get("status") != "kept":
                    continue
                ann = rec.get("annotation")
                if not isinstance(ann, dict) or not isinstance(ann.get("pairs"), list):
                    raise FormatError(f"kept image {key!r} has no annotation pairs", file=path,
                                      field="annotation")
                img[origin] += 1
                ins[origin] += len(ann["pairs"])
        images[split], instances[split] = img, ins
    return AugmentationCounts(tuple(folders), images, instances)
