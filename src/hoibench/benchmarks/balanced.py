"""B-RIGHT class-balanced splits and the balanced zero-shot test set (paper ``002``, section 4.1,
supplementary C and Algorithm 1).

The recipe
----------
1. Merge train and test, count instances (pairs) per HOI class, sort classes by count (ties by
   class id) and keep the top ``K``.
2. Build the **test set first, from real images only**, with the balancing algorithm below and
   ``L = l_test``; then the **train set** from the remaining images with ``L = l_train``.
3. Balancing algorithm (Algorithm 1): for ``N`` epochs, walk the classes tail → head adding random
   images that contain the class until it has at least ``L`` instances; then (except in the last
   epoch) walk head → tail removing random images that contain the class until it has at most
   ``L``. Afterwards every class above ``L`` loses random annotations of that class until it has
   exactly ``L``. The number of images that lost annotations is the paper's "R/A".
4. Classes that still have fewer than ``L`` instances are reported as **deficits** (what the
   augmentation pipeline must generate), never hidden.
5. The balanced zero-shot set: HOI classes outside the top ``K`` whose verb and object both occur
   among the top ``K``, with at least ``L`` instances in the images used by neither split, balanced
   the same way (``l_zero_shot`` instances each).
6. Optional extra (generated or crawled) train images fill the train deficits last (supplementary
   C), from a random stream of their own: tail → head, random extra images holding a class still
   below ``L`` are added until it reaches ``L``, and the per-class cap then removes random
   annotations of the extra images only (:func:`_fill_deficits`). Steps 1-5 never see them, so
   the test set, the zero-shot set and the real train images are the same with or without them.

Only annotations of the balanced classes are kept in each set (the paper's instance totals are
exactly ``K * L``); images left without any pair are dropped.

Deviation from the paper's pseudo-code: ``get_image`` there samples with replacement and loops for
ever when a class cannot reach ``L``; here images are drawn without replacement from those not yet
in the set, and a class whose images are exhausted simply stops (and is reported as a deficit).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hoibench._exceptions import ConfigError, FormatError, ValidationError
from hoibench._io import atomic_write_bytes, atomic_write_json, read_json
from hoibench._random import check_random_state
from hoibench.benchmarks._build import check_seed, write_folder
from hoibench.data import HOIDataset
from hoibench.datasets import load_dataset
from hoibench.formats import write_hicodet, write_ppdm
from hoibench.vocab import hico_det

__all__ = [
    "EXTRA_TRAIN_FILE",
    "LAYOUT",
    "BalancedSet",
    "BalancedSplit",
    "ClassDeficit",
    "balance_images",
    "build_balanced_split",
    "hico_det_selection_counts",
    "read_extra_train_record",
    "select_top_classes",
    "stats_markdown",
    "write_balanced_split",
    "zero_shot_candidates",
]

log = logging.getLogger(__name__)

#: file names written by :meth:`BalancedSplit.write`, per set: (PPDM/QPIC, hicodet toolkit)
LAYOUT = {
    "train": ("trainval_hico.json", "instances_train.json"),
    "test": ("test_hico.json", "instances_test.json"),
    "zero_shot": ("test_zero_shot_hico.json", "instances_zero_shot.json"),
}
#: what a split built with extra train images used of them (:meth:`BalancedSplit.extra_train_json`)
EXTRA_TRAIN_FILE = "extra_train.json"


# ---------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class ClassDeficit:
    """A balanced class that still lacks instances in one set (one entry of ``deficits.json``)."""

    hoi: int
    name: str
    verb: int
    object: int
    split: str
    have: int
    need: int

    @property
    def deficit(self) -> int:
        return self.need - self.have

    def to_dict(self) -> dict[str, Any]:
        return {"hoi": self.hoi, "name": self.name, "verb": self.verb, "object": self.object,
                "split": self.split, "have": self.have, "need": self.need, "deficit": self.deficit}


@dataclass(frozen=True)
class BalancedSet:
    """One balanced set: its dataset, its classes and their final instance counts.

    ``counts[j]`` is the number of instances of ``classes[j]`` in ``dataset``; ``target`` is ``L``.
    """

    name: str
    dataset: HOIDataset
    classes: np.ndarray
    counts: np.ndarray
    target: int
    removed_annotation_images: int
    extra_images: int = 0

    def __repr__(self) -> str:
        return (f"BalancedSet(name={self.name!r}, target={self.target}, classes={len(self.classes)}, "
                f"images={self.dataset.n_images}, instances={int(self.counts.sum())})")

    def deficits(self) -> list[ClassDeficit]:
        """Classes below ``target`` (tail first, in the order of :attr:`classes`)."""
        vocab = self.dataset.vocab
        out = []
        for h, c in zip(self.classes.tolist(), self.counts.tolist(), strict=True):
            if c < self.target:
                v, o = vocab.hoi_verb_object[h]
                out.append(ClassDeficit(hoi=int(h), name=vocab.hoi_name(h), verb=int(v), object=int(o),
                                        split=self.name, have=int(c), need=self.target))
        return out

    def stats(self) -> dict[str, int]:
        """The paper's Table 1 / S1 row: images, instances, max, min, classes, objects, verbs, R/A."""
        vocab = self.dataset.vocab
        present = self.classes[self.counts > 0]
        vo = vocab.hoi_verb_object[present]
        return {
            "images": self.dataset.n_images,
            "instances": int(self.counts.sum()),
            "max": int(self.counts.max()) if len(self.counts) else 0,
            "min": int(self.counts.min()) if len(self.counts) else 0,
            "classes": len(present),
            "objects": len(np.unique(vo[:, 1])),
            "verbs": len(np.unique(vo[:, 0])),
            "removed_annotation_images": self.removed_annotation_images,
            "extra_images": self.extra_images,
        }


@dataclass(frozen=True)
class BalancedSplit:
    """Result of :func:`build_balanced_split`.

    Attributes
    ----------
    classes:
        The top-``K`` HOI classes, most frequent first.
    selection_counts:
        The instance counts the selection ranked by, one per class of the label space.
    train, test, zero_shot:
        The balanced sets (``zero_shot`` is ``None`` unless requested).
    params:
        The parameters of the run (echoed in ``stats.json``).
    extra_train:
        What the train set took of the extra images (``extra_train.json``; None without them): the
        deficits they filled, each chosen extra image with its kept instances and the annotations
        the per-class cap removed from it, and the real train set, which they never change.
    """

    classes: np.ndarray
    selection_counts: np.ndarray
    train: BalancedSet
    test: BalancedSet
    zero_shot: BalancedSet | None
    params: dict[str, Any] = field(default_factory=dict)
    extra_train: dict[str, Any] | None = None

    def __repr__(self) -> str:
        p = self.params
        sizes = ", ".join(f"{s.name}={s.dataset.n_images} images" for s in self.sets)
        return (f"BalancedSplit(seed={p.get('seed')}, top_k={len(self.classes)}, l_train={p.get('l_train')}, "
                f"l_test={p.get('l_test')}, {sizes}, deficit={self.total_deficit()})")

    @property
    def sets(self) -> list[BalancedSet]:
        return [s for s in (self.train, self.test, self.zero_shot) if s is not None]

    def deficits(self) -> list[ClassDeficit]:
        """Every class below its target in any set."""
        return [d for s in self.sets for d in s.deficits()]

    def total_deficit(self, split: str | None = None) -> int:
        """Missing instances summed over the classes below target (of one split, or all)."""
        return sum(d.deficit for d in self.deficits() if split is None or d.split == split)

    def deficits_json(self) -> dict[str, Any]:
        """The ``deficits.json`` object (contract in ``docs/interfaces.md``)."""
        return {
            "kind": "balanced_deficits",
            "l_train": self.params["l_train"],
            "l_test": self.params["l_test"],
            "seed": self.params["seed"],
            "classes": [d.to_dict() for d in self.deficits()],
        }

    def stats(self) -> dict[str, Any]:
        """Table 1 / S1 rows per set plus the parameters (``stats.json``)."""
        return {
            "kind": "balanced_stats",
            "params": self.params,
            "sets": {s.name: s.stats() for s in self.sets},
            "total_deficit": {s.name: self.total_deficit(s.name) for s in self.sets},
        }

    def classes_json(self) -> dict[str, Any]:
        """The ``classes.json`` object: the balanced classes with their selection counts."""
        vocab = self.train.dataset.vocab
        return {
            "kind": "balanced_classes",
            "classes": [{"hoi": int(h), "name": vocab.hoi_name(h), "count": int(self.selection_counts[h])}
                        for h in self.classes.tolist()],
            "zero_shot_classes": None if self.zero_shot is None else [
                {"hoi": int(h), "name": vocab.hoi_name(h)} for h in self.zero_shot.classes.tolist()],
        }

    def extra_train_json(self, file_sha256: str | None = None) -> dict[str, Any] | None:
        """The ``extra_train.json`` object (None without extra images); ``file_sha256`` names the
        file the extra images were read from (``sha256:...``), when known."""
        if self.extra_train is None:
            return None
        rec = dict(self.extra_train)
        rec["extra_train"] = {"file_sha256": file_sha256, **rec["extra_train"]}
        return rec

    def write(self, out: str | os.PathLike[str], *, inputs: dict[str, Any] | None = None) -> dict[str, Path]:
        """Write every set into the folder ``out`` in the PPDM/QPIC and hicodet-toolkit layouts
        (:data:`LAYOUT`), plus ``stats.json`` (:meth:`stats`), ``deficits.json``, ``classes.json``,
        ``stats.md``, ``extra_train.json`` (:meth:`extra_train_json`, with extra images only; its
        file hash is ``inputs["extra_train"]``) and ``provenance.json`` (the parameters,
        ``inputs``: content hashes of the source files, and every file's hash); returns
        ``{role: path}`` (``train``, ``train_hicodet``, ...).

        The folder is written as a whole (:func:`~hoibench.benchmarks.write_folder`) and
        byte-stable: the same result gives identical files.
        """
        names = {"stats": "stats.json", "deficits": "deficits.json", "classes": "classes.json",
                 "table": "stats.md", "extra_train": EXTRA_TRAIN_FILE}
        file_hash = (inputs or {}).get("extra_train")
        extra = self.extra_train_json(file_hash if isinstance(file_hash, str) else None)
        for s in self.sets:
            names[s.name], names[f"{s.name}_hicodet"] = LAYOUT[s.name]

        def write_files(folder: Path) -> dict[str, Path]:
            paths: dict[str, Path] = {}
            for s in self.sets:
                paths[s.name] = folder / names[s.name]
                write_ppdm(s.dataset, paths[s.name])
                paths[f"{s.name}_hicodet"] = folder / names[f"{s.name}_hicodet"]
                write_hicodet(s.dataset, paths[f"{s.name}_hicodet"])
            for role, obj in (("stats", self.stats()), ("deficits", self.deficits_json()),
                              ("classes", self.classes_json()), ("extra_train", extra)):
                if obj is None:
                    continue
                paths[role] = folder / names[role]
                atomic_write_json(paths[role], obj, indent=True)
            paths["table"] = folder / names["table"]
            atomic_write_bytes(paths["table"], stats_markdown(self).encode())
            return paths

        known = [n for pair in LAYOUT.values() for n in pair] + list(names.values())
        return write_folder(out, known, write_files, writer="split balanced", parameters=dict(self.params),
                            inputs=inputs if inputs is not None else {})


# ---------------------------------------------------------------------------------------- selection
def hico_det_selection_counts(test: HOIDataset | None = None) -> np.ndarray:
    """HICO-DET train + test instances per class with the *official* train counts.

    The bundled train set (from HAKE) misses 217 ``no_interaction`` pairs; the official counts
    make the top-351 selection reproduce the paper's Table S4 (350 of 351 classes; the 351st
    is a tie at 48 instances).
    """
    test = load_dataset("hico-det:test") if test is None else test
    return hico_det().train_counts_official() + test.hoi_counts()


def select_top_classes(counts: np.ndarray, top_k: int) -> np.ndarray:
    """The ``top_k`` classes with the most instances, most frequent first (ties: lower id first)."""
    counts = np.asarray(counts)
    if not 0 < top_k <= len(counts):
        raise ConfigError(f"top_k must be in [1, {len(counts)}]; got {top_k}")
    order = np.lexsort((np.arange(len(counts)), -counts))
    return order[:top_k].astype(np.int64)


def zero_shot_candidates(vocab: Any, selected: np.ndarray) -> np.ndarray:
    """HOI classes outside ``selected`` whose verb and object both occur among ``selected``."""
    hv = vocab.hoi_verb_object
    sel = np.zeros(len(hv), dtype=bool)
    sel[selected] = True
    verbs = np.unique(hv[selected, 0])
    objects = np.unique(hv[selected, 1])
    ok = ~sel & np.isin(hv[:, 0], verbs) & np.isin(hv[:, 1], objects)
    return np.flatnonzero(ok)


# ---------------------------------------------------------------------------------------- core
class _ClassIndex:
    """Which of the balanced classes every image holds, and how many instances of each.

    Classes are addressed by rank ``k`` (0 = head). Two CSR tables: image → (k, n) and k → images.
    """

    def __init__(self, ds: HOIDataset, classes: np.ndarray) -> None:
        self.n_classes = k_n = len(classes)
        rank = np.full(ds.vocab.n_hois + 1, -1, dtype=np.int64)
        rank[classes] = np.arange(k_n)
        pair_k = rank[ds.pair_hoi]  # pair_hoi -1 maps to the sentinel last entry
        sel = pair_k >= 0
        base = max(k_n, 1)  # no classes: no keys, but no division by zero either
        keys = ds.pair_image[sel] * base + pair_k[sel]
        uniq, n = np.unique(keys, return_counts=True)
        img, k = uniq // base, uniq % base
        self.img_ptr = np.searchsorted(img, np.arange(ds.n_images + 1)).tolist()
        self.img_k = k
        self.img_n = n
        order = np.argsort(k, kind="stable")
        self.cls_imgs = img[order]
        self.cls_ptr = np.searchsorted(k[order], np.arange(k_n + 1))

    def images_of(self, k: int) -> np.ndarray:
        return self.cls_imgs[self.cls_ptr[k]:self.cls_ptr[k + 1]]

    def available(self, allowed: np.ndarray) -> np.ndarray:
        """Instances per class over the allowed images."""
        rows = np.repeat(np.arange(len(self.img_ptr) - 1), np.diff(self.img_ptr))
        return np.bincount(self.img_k[allowed[rows]], weights=self.img_n[allowed[rows]],
                           minlength=self.n_classes).astype(np.int64)


def _add_stage(idx: _ClassIndex, in_set: np.ndarray, allowed: np.ndarray, cnt: np.ndarray,
               target: int, rng: np.random.Generator) -> None:
    """Tail → head: add random allowed images holding class k until it has ``target`` instances."""
    ptr, ks, ns = idx.img_ptr, idx.img_k, idx.img_n
    for k in range(idx.n_classes - 1, -1, -1):
        if cnt[k] >= target:
            continue
        imgs = idx.images_of(k)
        cand = imgs[allowed[imgs] & ~in_set[imgs]]
        for i in rng.permutation(cand).tolist():
            in_set[i] = True
            a, b = ptr[i], ptr[i + 1]
            cnt[ks[a:b]] += ns[a:b]
            if cnt[k] >= target:
                break


def _remove_stage(idx: _ClassIndex, in_set: np.ndarray, cnt: np.ndarray, target: int,
                  rng: np.random.Generator) -> None:
    """Head → tail: remove random images holding class k until it has at most ``target``."""
    ptr, ks, ns = idx.img_ptr, idx.img_k, idx.img_n
    for k in range(idx.n_classes):
        if cnt[k] <= target:
            continue
        imgs = idx.images_of(k)
        for i in rng.permutation(imgs[in_set[imgs]]).tolist():
            in_set[i] = False
            a, b = ptr[i], ptr[i + 1]
            cnt[ks[a:b]] -= ns[a:b]
            if cnt[k] <= target:
                break


def balance_images(
    dataset: HOIDataset,
    classes: np.ndarray,
    *,
    target: int,
    epochs: int = 20,
    allowed: np.ndarray | None = None,
    extra: np.ndarray | None = None,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1: the images of a balanced set (boolean mask over ``dataset``'s images).

    Parameters
    ----------
    dataset:
        All candidate images (real and, if any, extra ones).
    classes:
        HOI classes to balance, most frequent first (the walk order depends on it).
    target:
        ``L``, the instances each class should reach.
    epochs:
        ``N``; the last epoch only adds.
    allowed:
        Real images the algorithm may use (default: all but ``extra``).
    extra:
        Images (e.g. generated ones) added only after the ``N`` epochs, for classes still below
        ``target``, as in the paper's supplementary C.
    random_state:
        Seed or generator; the result is a pure function of it.

    Returns
    -------
    mask, counts:
        Boolean image mask and the instances per class (aligned with ``classes``) before the
        annotation trimming that :func:`build_balanced_split` applies.
    """
    rng = check_random_state(random_state)
    _check_positive(target=target, epochs=epochs)
    idx = _ClassIndex(dataset, np.asarray(classes, dtype=np.int64))
    n = dataset.n_images
    extra_mask = np.zeros(n, dtype=bool) if extra is None else np.asarray(extra, dtype=bool)
    allowed = ~extra_mask if allowed is None else np.asarray(allowed, dtype=bool) & ~extra_mask
    in_set = np.zeros(n, dtype=bool)
    cnt = np.zeros(idx.n_classes, dtype=np.int64)
    for epoch in range(epochs):
        _add_stage(idx, in_set, allowed, cnt, target, rng)
        if epoch < epochs - 1:
            _remove_stage(idx, in_set, cnt, target, rng)
    if extra_mask.any():
        _add_stage(idx, in_set, extra_mask, cnt, target, rng)
    return in_set, cnt


def _trim(ds: HOIDataset, mask: np.ndarray, classes: np.ndarray, target: int | np.ndarray,
          rng: np.random.Generator, name: str) -> tuple[HOIDataset, np.ndarray, int]:
    """Keep the masked images and only pairs of ``classes``; drop random annotations of every class
    above ``target`` (one for all, or one per class; head first). Returns the set, its counts and
    the R/A image count."""
    cap = np.broadcast_to(np.asarray(target, dtype=np.int64), (len(classes),))
    sub = ds.subset(np.flatnonzero(mask))
    rank = np.full(ds.vocab.n_hois + 1, -1, dtype=np.int64)
    rank[classes] = np.arange(len(classes))
    pair_k = rank[sub.pair_hoi]
    keep = pair_k >= 0
    # pairs of each class, grouped by rank in image order
    order = np.argsort(pair_k, kind="stable")
    bounds = np.searchsorted(pair_k[order], np.arange(len(classes) + 1))
    touched = np.zeros(sub.n_images, dtype=bool)
    for k in range(len(classes)):
        members = order[bounds[k]:bounds[k + 1]]
        excess = len(members) - int(cap[k])
        if excess > 0:
            drop = rng.choice(members, size=excess, replace=False)
            keep[drop] = False
            touched[sub.pair_image[drop]] = True
    out = sub.filter_pairs(keep, prune_boxes=True, name=name)
    nonempty = out.pairs_per_image > 0
    if not nonempty.all():
        out = out.subset(np.flatnonzero(nonempty), name=name)
    counts = np.bincount(rank[out.pair_hoi], minlength=len(classes))[: len(classes)]
    return out, counts, int(touched.sum())


def _balanced_set(name: str, ds: HOIDataset, classes: np.ndarray, *, target: int, epochs: int,
                  allowed: np.ndarray, rng: np.random.Generator) -> BalancedSet:
    """Algorithm 1 on the allowed (real) images, then the per-class cap."""
    mask, _ = balance_images(ds, classes, target=target, epochs=epochs, allowed=allowed, random_state=rng)
    out, counts, removed = _trim(ds, mask, classes, target, rng, name)
    return BalancedSet(name=name, dataset=out, classes=classes, counts=counts, target=target,
                       removed_annotation_images=removed)


def _fill_deficits(real: BalancedSet, extra: HOIDataset,
                   rng: np.random.Generator) -> tuple[BalancedSet, dict[str, Any]]:
    """Supplementary C's extra images, after the real train set is final: tail → head, random extra
    images holding a class still below ``L`` are added until it reaches ``L``; then each class keeps
    at most ``L`` minus its real instances of the extra annotations (random ones removed).

    The real train set is never touched: its own cap left every class at ``L`` or below, so a
    class's excess is never more than its extra instances. Returns the train set and the record
    of ``extra_train.json`` (without its kind and seed)."""
    classes, target = real.classes, real.target
    vocab = extra.vocab
    chosen = np.zeros(extra.n_images, dtype=bool)
    cnt = real.counts.astype(np.int64)
    _add_stage(_ClassIndex(extra, classes), chosen, np.ones(extra.n_images, dtype=bool), cnt, target, rng)
    room = target - real.counts
    if (room < 0).any():  # the real set's cap guarantees this; a broken invariant is not a silent number
        raise ValidationError("the real train set holds a class above L; cannot fill deficits")
    kept, kept_counts, touched = _trim(extra, chosen, classes, room, rng, "train")
    train = HOIDataset.concat([real.dataset, kept], name="train") if kept.n_images else real.dataset
    rank = np.full(vocab.n_hois + 1, -1, dtype=np.int64)
    rank[classes] = np.arange(len(classes))
    picked = extra.subset(np.flatnonzero(chosen))
    before = _pairs_by_image(picked, rank >= 0)
    after = _pairs_by_image(kept, rank >= 0)
    images = []
    for name, hois in before.items():
        left = after.get(name, {})
        removed = [[h, n - left.get(h, 0)] for h, n in sorted(hois.items()) if n > left.get(h, 0)]
        images.append({"image": name, "instances": sum(left.values()), "removed": removed})
    filled = [{"hoi": int(h), "name": vocab.hoi_name(h), "real": int(c), "need": target,
               "extra": int(kept_counts[k])}
              for k, (h, c) in enumerate(zip(classes.tolist(), real.counts.tolist(), strict=True)) if c < target]
    record = {
        "l_train": target,
        "extra_train": {"content_sha256": extra.content_hash(), "images": extra.n_images,
                        "instances": extra.n_pairs},
        "real_train": {"images": real.dataset.n_images, "instances": int(real.counts.sum()),
                       "changed_images": []},
        "classes": filled,
        "images_used": kept.n_images,
        "images_unused": extra.n_images - int(chosen.sum()),
        "images": images,
    }
    out = BalancedSet(name="train", dataset=train, classes=classes, counts=real.counts + kept_counts,
                      target=target, removed_annotation_images=real.removed_annotation_images + touched,
                      extra_images=kept.n_images)
    return out, record


def _pairs_by_image(ds: HOIDataset, keep_class: np.ndarray) -> dict[str, dict[int, int]]:
    """``{file name: {hoi: pairs}}`` over the pairs whose class ``keep_class`` marks, every image listed."""
    out: dict[str, dict[int, int]] = {f: {} for f in ds.file_names}
    names = ds.file_names
    for i, h in zip(ds.pair_image.tolist(), ds.pair_hoi.tolist(), strict=True):
        if h >= 0 and keep_class[h]:
            row = out[names[i]]
            row[h] = row.get(h, 0) + 1
    return out


def build_balanced_split(
    dataset: HOIDataset,
    *,
    top_k: int = 351,
    l_train: int = 50,
    l_test: int = 10,
    epochs: int = 20,
    random_state: int = 0,
    extra_train: HOIDataset | None = None,
    zero_shot: bool = False,
    l_zero_shot: int | None = None,
    n_zero_shot_classes: int | None = None,
    selection_counts: np.ndarray | Literal["data", "official"] | None = None,
) -> BalancedSplit:
    """Build B-RIGHT balanced train and test sets (and optionally the balanced zero-shot set).

    Parameters
    ----------
    dataset:
        Real images: the merged train and test sets (``load_dataset("hico-det")``).
    top_k, l_train, l_test, epochs:
        ``K``, ``L_train``, ``L_test`` and ``N`` of the paper (351, 50, 10, 20).
    random_state:
        Integer seed; the output is byte-for-byte a function of it (the paper released four).
    extra_train:
        Additional (generated or crawled) training images with the same label space; used only
        to fill the train set's deficits once every set is built from the real images, so the test
        set, the zero-shot set and the real train images are the same with or without them (see
        :func:`_fill_deficits`; what was used is :attr:`BalancedSplit.extra_train`).
    zero_shot:
        Also build the balanced zero-shot test set from the images neither split uses.
    l_zero_shot:
        Instances per zero-shot class (default ``l_test``).
    n_zero_shot_classes:
        Keep only this many zero-shot classes: the eligible candidates with the most instances in
        the remaining images (ties: class id). None (default): every eligible candidate. The
        paper's 107 in all four seeds is reproduced only this way (docs/b-right.md).
    selection_counts:
        Instances per class to rank by: ``"data"`` or None (counted in ``dataset``),
        ``"official"`` (HICO-DET only: :func:`hico_det_selection_counts`, the official train
        counts the paper ranked by), or an array. Recorded in ``stats.json`` as ``"data"``,
        ``"official"`` or ``"given"``.
    """
    vocab = dataset.vocab
    seed = check_seed(random_state)
    if vocab.n_hois == 0:
        raise ConfigError(f"balanced splits need a label space with HOI classes; {vocab.name} has none")
    if len(set(dataset.file_names)) != dataset.n_images:
        raise ValidationError(f"{dataset.name or 'dataset'}: file names are not unique; the sets are "
                              f"kept apart by image file name")
    if n_zero_shot_classes is not None and not zero_shot:
        raise ConfigError("n_zero_shot_classes applies only to the zero-shot test set; pass zero_shot=True "
                          "(--zero-shot) or drop it")
    if n_zero_shot_classes is not None and n_zero_shot_classes < 1:
        raise ConfigError(f"n_zero_shot_classes must be >= 1; got {n_zero_shot_classes}")
    if l_zero_shot is not None and not zero_shot:
        raise ConfigError("l_zero_shot applies only to the zero-shot test set; pass zero_shot=True "
                          "(--zero-shot) or drop it")
    l_zero_shot = l_test if l_zero_shot is None else l_zero_shot
    _check_positive(l_train=l_train, l_test=l_test, epochs=epochs, l_zero_shot=l_zero_shot)
    selection, counts = _selection_counts(dataset, selection_counts)
    if counts.shape != (vocab.n_hois,):
        raise ConfigError(f"selection_counts must have {vocab.n_hois} entries; got shape {counts.shape}")
    classes = select_top_classes(counts, top_k)
    rng = check_random_state(seed)

    if extra_train is not None:
        _check_extra(dataset, extra_train)

    # every draw below sees the real images and the seed only: the extra images come last
    test = _balanced_set("test", dataset, classes, target=l_test, epochs=epochs,
                         allowed=np.ones(dataset.n_images, dtype=bool), rng=rng)
    # images of the test set are excluded from train even if only some of their pairs were kept
    used = _rows_of(dataset, test.dataset.file_names)
    train = _balanced_set("train", dataset, classes, target=l_train, epochs=epochs, allowed=~used, rng=rng)
    used |= _rows_of(dataset, train.dataset.file_names)

    zs = None
    if zero_shot:
        cand = zero_shot_candidates(vocab, classes)
        remaining = ~used
        avail = _ClassIndex(dataset, cand).available(remaining)
        ok = avail >= l_zero_shot
        zs_classes = cand[ok][np.lexsort((cand[ok], -avail[ok]))]
        if n_zero_shot_classes is not None:
            if len(zs_classes) < n_zero_shot_classes:
                raise ConfigError(f"only {len(zs_classes)} zero-shot candidate classes have "
                                  f"{l_zero_shot} instances in the remaining images; cannot keep "
                                  f"n_zero_shot_classes={n_zero_shot_classes}")
            zs_classes = zs_classes[:n_zero_shot_classes]
        zs = _balanced_set("zero_shot", dataset, zs_classes, target=l_zero_shot, epochs=epochs,
                           allowed=remaining, rng=rng)

    record = None
    if extra_train is not None:
        # a stream of its own: the same extra images give the same train set with or without --zero-shot
        train, record = _fill_deficits(train, extra_train,
                                       np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,))))
        record = {"kind": "balanced_extra_train", "seed": seed, **record}
    params = {"dataset": dataset.name, "top_k": int(top_k), "l_train": int(l_train),
              "l_test": int(l_test), "l_zero_shot": int(l_zero_shot) if zero_shot else None,
              "n_zero_shot_classes": n_zero_shot_classes,
              "epochs": int(epochs), "seed": seed, "selection_counts": selection,
              "extra_train_images": 0 if extra_train is None else extra_train.n_images,
              "extra_train_sha256": None if extra_train is None else extra_train.content_hash()}
    return BalancedSplit(classes=classes, selection_counts=counts, train=train, test=test,
                         zero_shot=zs, params=params, extra_train=record)


def _selection_counts(dataset: HOIDataset, selection_counts: Any) -> tuple[str, np.ndarray]:
    """How classes are ranked (the name recorded in ``stats.json``) and the counts."""
    if selection_counts is None or (isinstance(selection_counts, str) and selection_counts == "data"):
        return "data", dataset.hoi_counts()
    if isinstance(selection_counts, str):
        if selection_counts != "official":
            raise ConfigError(f"selection_counts must be 'data', 'official' or an array; got {selection_counts!r}")
        if dataset.vocab.name != "hico-det":
            raise ConfigError(f"selection_counts='official' needs HICO-DET data; {dataset.name or 'the dataset'} "
                              f"uses {dataset.vocab.name} labels")
        return "official", hico_det_selection_counts()
    return "given", np.asarray(selection_counts)


def _rows_of(ds: HOIDataset, names: Sequence[str]) -> np.ndarray:
    mask = np.zeros(ds.n_images, dtype=bool)
    index = ds._name_index
    for f in names:
        i = index.get(f)
        if i is not None:
            mask[i] = True
    return mask


def _check_extra(dataset: HOIDataset, extra: HOIDataset) -> None:
    what = f"extra_train ({extra.name})" if extra.name else "extra_train"
    if extra.vocab.name != dataset.vocab.name:
        raise ConfigError(f"{what} uses the {extra.vocab.name} label space, the dataset {dataset.vocab.name}")
    clash = set(extra.file_names) & set(dataset.file_names)
    if clash:
        raise ValidationError(f"{what}: file name {sorted(clash)[0]!r} is also a real image "
                              f"({len(clash)} clashes); extra images need their own names")
    if len(set(extra.file_names)) != extra.n_images:
        raise ValidationError(f"{what}: file names are not unique")


def read_extra_train_record(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``extra_train.json`` of a ``split balanced --extra-train`` folder, checked: each chosen
    extra image with the instances the train set kept of it (``images``)."""
    path = Path(folder) / EXTRA_TRAIN_FILE
    rec = read_json(path)
    if not isinstance(rec, dict) or rec.get("kind") != "balanced_extra_train":
        raise FormatError("not a balanced split's extra-train record", file=path, field="kind")
    images = rec.get("images")
    if not isinstance(images, list):
        raise FormatError("expected a list", file=path, field="images")
    for n, im in enumerate(images):
        if not (isinstance(im, dict) and isinstance(im.get("image"), str)
                and isinstance(im.get("instances"), int) and im["instances"] >= 0):
            raise FormatError("expected {'image': name, 'instances': count >= 0, ...}", file=path,
                              record=n + 1, field="images")
    return rec


def _check_positive(**values: int) -> None:
    for name, v in values.items():
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"{name} must be a positive integer; got {v!r}")


# ---------------------------------------------------------------------------------------- writing
def stats_markdown(result: BalancedSplit) -> str:
    """Table S1-style Markdown table of the sets."""
    lines = ["| Split | # Images | # Instances / # Max / # Min | # Categories | # Object | # Verb | # R/A | deficit |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s in result.sets:
        st = s.stats()
        lines.append(f"| {s.name} | {st['images']:,} | {st['instances']:,} / {st['max']} / {st['min']} | "
                     f"{st['classes']} | {st['objects']} | {st['verbs']} | "
                     f"{st['removed_annotation_images']:,} | {result.total_deficit(s.name):,} |")
    return "\n".join(lines) + "\n"


def write_balanced_split(result: BalancedSplit, out_dir: str | os.PathLike[str]) -> list[Path]:
    """Deprecated: :meth:`BalancedSplit.write` (which returns ``{role: path}``)."""
    warnings.warn("write_balanced_split(result, out) is deprecated; use result.write(out)",
                  DeprecationWarning, stacklevel=2)
    return list(result.write(out_dir).values())
