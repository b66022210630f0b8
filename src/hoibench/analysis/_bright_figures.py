"""Numbers behind B-RIGHT's Figure 2, Figure S6 and Tables S2/S3 (``002_*.txt``).

- :func:`class_split_counts` — per HOI class, the instances (pairs) in a train and a test set
  and their ratio: Figure 2's long tail and its varying train/test ratio, and, with the unseen
  classes of a zero-shot split, Figure S6's imbalance of seen and unseen classes (RF-UC).
- :func:`augmentation_counts` — generated and crawled images and HOI instances in a balanced
  train set after its per-class cap (or, without the split folder, as the augmentation pipeline
  kept them), read from the manifests of its output folders (Tables S2/S3).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench.augment import manifest_image_name, read_manifests
from hoibench.benchmarks.balanced import EXTRA_TRAIN_FILE, read_extra_train_record
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
    """Tables S2/S3: per split, kept images and their HOI instances by origin.

    ``train_split[split]`` is the balanced split folder whose train set was counted (after its
    per-class cap), or None where the counts are the augmentation's own (before any trimming)."""

    splits: tuple[str, ...]
    images: Mapping[str, Mapping[str, int]]  # split -> {"generated", "crawled"}
    instances: Mapping[str, Mapping[str, int]]
    train_split: Mapping[str, str | None] = field(default_factory=dict)

    @property
    def untrimmed(self) -> tuple[str, ...]:
        """The splits counted without a balanced split folder (before trimming)."""
        return tuple(s for s in self.splits if self.train_split.get(s) is None)

    def rows(self, what: str) -> list[dict[str, Any]]:
        table = self.images if what == "images" else self.instances
        return [{"split": s, "generated": table[s]["generated"], "crawled": table[s]["crawled"],
                 "total": table[s]["generated"] + table[s]["crawled"]} for s in self.splits]


def augmentation_counts(folders: Mapping[str, Sequence[str | os.PathLike[str]]]) -> AugmentationCounts:
    """Images and instances per split from augmentation output folders.

    ``folders[split]`` lists the output folders of that split (``hoibench augment run`` writes
    generated images, ``hoibench augment filter`` crawled ones) and, optionally, the folder of
    ``hoibench split balanced --extra-train`` built from them. With that folder an image counts
    when the train set holds it, with the instances the per-class cap left it (its
    ``extra_train.json``); every image of the train set must come from one of the augmentation
    folders. Without it, an image counts by its last verdict (a resumed run may re-inspect one)
    with the pairs of its pseudo-label: the augmentation's output, before any trimming.
    """
    images: dict[str, dict[str, int]] = {}
    instances: dict[str, dict[str, int]] = {}
    trained_by: dict[str, str | None] = {}
    for split, dirs in folders.items():
        img = {"generated": 0, "crawled": 0}
        ins = {"generated": 0, "crawled": 0}
        split_dirs = [Path(d) for d in dirs if (Path(d) / EXTRA_TRAIN_FILE).is_file()]
        if len(split_dirs) > 1:
            raise ConfigError(f"split {split}: {len(split_dirs)} balanced split folders "
                              f"({', '.join(map(str, split_dirs))}); give one per split")
        in_train: dict[str, int] | None = None
        if split_dirs:
            in_train = {im["image"]: im["instances"] for im in read_extra_train_record(split_dirs[0])["images"]
                        if im["instances"] > 0}
        seen: set[str] = set()
        for d in dirs:
            path = Path(d)
            if path in split_dirs:
                continue
            if not path.is_dir():
                raise ConfigError(f"{path}: not an augmentation output folder")
            records = read_manifests(path)
            if not records and (path / "deficits.json").is_file():
                raise ConfigError(f"{path}: a balanced split built without --extra-train (no "
                                  f"{EXTRA_TRAIN_FILE}); its train set holds no augmentation image")
            if not records:
                raise ConfigError(f"{path}: no manifest records (manifest*.jsonl of hoibench augment)")
            last: dict[tuple[str, Any], dict[str, Any]] = {}
            for rec in records:
                if rec["event"] == "attempt":
                    last[("generated", (rec.get("hoi"), rec.get("attempt")))] = rec
                elif rec["event"] == "filtered":
                    last[("crawled", rec.get("image"))] = rec
            for (origin, key), rec in last.items():
                if in_train is not None:
                    name = manifest_image_name(rec)
                    if name in in_train and name not in seen:
                        seen.add(name)
                        img[origin] += 1
                        ins[origin] += in_train[name]
                    continue
                if rec.get("status") != "kept":
                    continue
                ann = rec.get("annotation")
                if not isinstance(ann, dict) or not isinstance(ann.get("pairs"), list):
                    raise FormatError(f"kept image {key!r} has no annotation pairs", file=path,
                                      field="annotation")
                img[origin] += 1
                ins[origin] += len(ann["pairs"])
        if in_train is not None:
            missing = sorted(set(in_train) - seen)
            if missing:
                raise ConfigError(f"{split_dirs[0] / EXTRA_TRAIN_FILE}: {len(missing)} extra train images "
                                  f"are in none of the augmentation folders of split {split} (first: "
                                  f"{missing[0]}); add the augment run/filter folders they came from")
        images[split], instances[split] = img, ins
        trained_by[split] = str(split_dirs[0]) if split_dirs else None
    return AugmentationCounts(tuple(folders), images, instances, trained_by)
