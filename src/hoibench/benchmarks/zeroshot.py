"""Zero-shot HOI splits of HICO-DET (RF-UC, NF-UC, UO, UV, or any list of unseen classes).

The rule is the one the zero-shot HOI detectors apply when they load their training data
(YueLiao/gen-vlkt ``datasets/hico.py``, ``HICODetection.__init__``; Artanic30/HOICLIP
``datasets/datasets_gen/hico.py`` has the same loop):

* **train**: every human-object pair (subject box, object box) that carries an unseen HOI class
  loses *all* its interactions, seen verbs included (gen-vlkt's ``skip_pair``); images left
  without interactions are dropped (also images that had none to begin with). Boxes stay.
* **test**: the full original test set, unchanged; unseen / seen / full mAP are reported on it.

The unseen classes travel with the split in ``test_combinations.json`` (the layout of
:mod:`hoibench.formats.sg_split`), so ``hoibench eval hico --classes unseen:DIR`` reports the
unseen and seen classes next to the full mAP. The rule has no random step: the same inputs and
protocol give byte-identical files. See ``docs/zero-shot-splits.md``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench._io import atomic_write_json, check_folder
from hoibench.benchmarks._build import check_seed, write_folder
from hoibench.data import HOIDataset
from hoibench.datasets import (
    BUNDLED,
    is_dataset_name,
    is_zero_shot_setting,
    load_dataset,
    parse_dataset_name,
    resolve_dataset,
    zero_shot_classes,
)
from hoibench.formats import COMBINATIONS_FILE, combinations_record, write_ppdm
from hoibench.vocab import ZERO_SHOT_ALIASES, hico_det

__all__ = ["ZeroShotSplit", "build_zero_shot_split", "load_zero_shot_source", "unseen_pair_mask"]

#: files of a zero-shot split folder (the PPDM/QPIC names the zero-shot repositories read)
LAYOUT = {"train": "trainval_hico.json", "test": "test_hico.json",
          "combinations": COMBINATIONS_FILE, "stats": "stats.json"}


def unseen_pair_mask(dataset: HOIDataset, unseen: np.ndarray) -> np.ndarray:
    """Per interaction: whether its (subject box, object box) pair carries any unseen class.

    Box indices are global in :class:`HOIDataset`, so a (subject, object) key names one pair of
    one image, as ``(subject_id, object_id)`` does within an image in gen-vlkt.
    """
    is_unseen = np.isin(dataset.pair_hoi, np.asarray(unseen, dtype=np.int64))
    key = dataset.pair_subject * (dataset.n_boxes + 1) + (dataset.pair_object + 1)
    return np.isin(key, key[is_unseen])


@dataclass(frozen=True)
class ZeroShotSplit:
    """One zero-shot split: the filtered train set, the full test set and the unseen classes."""

    protocol: str  # the setting's short name (rf-uc, ...) or the file it was read from
    dataset_name: str
    unseen: np.ndarray  # sorted 0-based HOI classes
    train: HOIDataset
    test: HOIDataset
    source_train_images: int
    source_train_pairs: int
    removed_pairs: int  # interactions removed (all verbs of the pairs that carry an unseen class)
    source_empty_images: int = 0  # train images without pairs to begin with (dropped too)

    def __repr__(self) -> str:
        return (f"ZeroShotSplit(protocol={self.protocol!r}, unseen={len(self.unseen)} classes, "
                f"train={self.train.n_images} images/{self.train.n_pairs} pairs, "
                f"test={self.test.n_images} images/{self.test.n_pairs} pairs)")

    @property
    def name(self) -> str:
        return f"{self.dataset_name}-zero-shot-{self.protocol}"

    def stats(self) -> dict[str, Any]:
        """``stats.json``: the protocol, what the rule removed, and the sizes of both files."""
        test_unseen = int(np.isin(self.test.pair_hoi, self.unseen).sum())
        return {
            "kind": "zero_shot_stats",
            "name": self.name,
            "dataset": self.dataset_name,
            "protocol": self.protocol,
            "rule": "gen-vlkt: pairs carrying an unseen class removed from train; empty images dropped",
            "unseen_classes": len(self.unseen),
            "train": {"images": self.train.n_images, "pairs": self.train.n_pairs,
                      "source_images": self.source_train_images, "source_pairs": self.source_train_pairs,
                      "removed_pairs": self.removed_pairs,
                      "dropped_images": self.source_train_images - self.train.n_images,
                      "empty_source_images": self.source_empty_images},
            "test": {"images": self.test.n_images, "pairs": self.test.n_pairs,
                     "unseen_pairs": test_unseen, "seen_pairs": self.test.n_pairs - test_unseen},
        }

    def combinations_record(self) -> dict[str, Any]:
        """``test_combinations.json``: the unseen classes as (verb, object) entries."""
        vocab = self.train.vocab
        return combinations_record(vocab, vocab.hoi_verb_object[self.unseen], kind="zero_shot_unseen",
                                   name=self.name, label_space=vocab.name, protocol=self.protocol,
                                   n_classes=vocab.n_hois)

    def write(self, out: str | os.PathLike[str], *, inputs: dict[str, Any] | None = None) -> dict[str, Path]:
        """``trainval_hico.json``, ``test_hico.json`` (PPDM/QPIC), ``test_combinations.json``,
        ``stats.json`` and ``provenance.json`` into the folder ``out``, as a whole
        (:func:`~hoibench.benchmarks.write_folder`); returns ``{role: path}``."""

        def write_files(folder: Path) -> dict[str, Path]:
            paths = {role: folder / f for role, f in LAYOUT.items()}
            write_ppdm(self.train, paths["train"])
            write_ppdm(self.test, paths["test"])
            atomic_write_json(paths["combinations"], self.combinations_record())
            atomic_write_json(paths["stats"], self.stats())
            return paths

        params = {"name": self.name, "protocol": self.protocol, "dataset": self.dataset_name,
                  "unseen": [int(h) for h in self.unseen]}
        return write_folder(out, LAYOUT.values(), write_files, writer="split zero-shot", parameters=params,
                            inputs=inputs if inputs is not None else {"dataset": self.dataset_name})


def build_zero_shot_split(
    dataset: HOIDataset,
    *,
    test: HOIDataset,
    protocol: str,
    random_state: int | None = None,
    name: str = "",
) -> ZeroShotSplit:
    """The zero-shot split of ``dataset`` (the original train set) and ``test`` for ``protocol``.

    ``protocol``: ``rf-uc`` / ``nf-uc`` / ``uo`` / ``uv`` (or the long names), a split folder
    or ``test_combinations.json``, or a file of 0-based HOI ids
    (:func:`hoibench.datasets.zero_shot_classes`). ``random_state`` is accepted for the builders'
    one shape and checked, but the rule has no random step: it changes nothing.
    """
    if random_state is not None:
        check_seed(random_state)
    for part, ds in (("train", dataset), ("test", test)):
        if ds.vocab.name != "hico-det":
            raise ConfigError(f"zero-shot splits use HICO-DET's 600 classes; the {part} set has "
                              f"{ds.vocab.name} labels")
    unseen = zero_shot_classes(protocol, vocab=dataset.vocab)
    low = protocol.strip().lower()
    if is_zero_shot_setting(low):
        long_name = low.split(":", 1)[1] if low.startswith("zero-shot:") else low
        short = {v: k for k, v in ZERO_SHOT_ALIASES.items()}
        label = short.get(long_name, long_name)
    else:
        label = Path(protocol).stem if Path(protocol).is_file() else Path(protocol).name
    drop = unseen_pair_mask(dataset, unseen)
    kept = dataset.filter_pairs(~drop)
    train = kept.subset(np.flatnonzero(kept.pairs_per_image > 0), name=f"{name or 'zero-shot'}:train")
    return ZeroShotSplit(protocol=label, dataset_name=name or dataset.name.split(":")[0] or "hico-det",
                         unseen=unseen, train=train, test=test, source_train_images=dataset.n_images,
                         source_train_pairs=dataset.n_pairs, removed_pairs=int(drop.sum()),
                         source_empty_images=int((dataset.pairs_per_image == 0).sum()))


def load_zero_shot_source(specs: Sequence[str]) -> tuple[HOIDataset, HOIDataset, str]:
    """The (train, test) sets to split and a name: a bundled dataset (``hico-det``: its train and
    test splits), a folder holding ``trainval_hico.json`` and ``test_hico.json`` (a B-RIGHT or SG
    split folder, QPIC's annotation folder), or two files, train first."""
    if len(specs) == 1:
        spec = specs[0]
        if is_dataset_name(spec):
            key, split = parse_dataset_name(spec)
            if split is not None:
                raise ConfigError(f"a zero-shot split needs a train and a test set; give {key} (both "
                                  f"splits), a folder or two files, not {spec!r}")
            train_split, test_split = list(BUNDLED[key])
            return load_dataset(key, train_split), load_dataset(key, test_split), key
        folder = Path(spec)
        if folder.is_dir():
            check_folder(folder)  # a folder that mixes two splits is refused, not read
            files = [folder / LAYOUT["train"], folder / LAYOUT["test"]]
            missing = [f.name for f in files if not f.is_file()]
            if missing:
                raise ConfigError(f"{folder}: a dataset folder needs {' and '.join(missing)} (the PPDM/QPIC "
                                  "train and test files of a B-RIGHT or SG split folder)")
            return _read(files[0]), _read(files[1]), folder.name
        raise ConfigError(f"{spec}: one file is not enough for a zero-shot split; give the train file "
                          "and then the test file (--dataset TRAIN --dataset TEST), a folder or hico-det")
    if len(specs) != 2:
        raise ConfigError(f"give one bundled dataset, one folder or two files (train, test); got {len(specs)}")
    train, test = (_read(s) for s in specs)
    return train, test, Path(specs[0]).stem


def _read(path: str | os.PathLike[str]) -> HOIDataset:
    """An annotation file in HICO-DET labels (PPDM/QPIC files do not say which dataset they are)."""
    return resolve_dataset(path, vocab=hico_det())
