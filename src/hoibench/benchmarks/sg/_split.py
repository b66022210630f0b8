"""The built split (:class:`SGSplit`): its Table 1 row, its statistics and the split folder it
writes (PPDM/QPIC files, ``test_combinations.json``, ``stats.json``, ``table1.md``)."""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench._io import atomic_write_bytes, atomic_write_json
from hoibench.benchmarks._build import write_folder
from hoibench.benchmarks.sg._presets import reference_preset
from hoibench.benchmarks.sg._select import _combo_keys
from hoibench.benchmarks.sg._table1 import RELEASED_TEST_COUNTS, paper_row, table1_markdown
from hoibench.data import HOIDataset
from hoibench.formats import box_convention_groups, file_prefix, shift_image_boxes, write_ppdm
from hoibench.formats.sg_split import COMBINATIONS_FILE, STATS_FILE, combinations_record
from hoibench.vocab import LabelSpace

__all__ = ["SGSplit"]

BoxConvention = Literal["as-released", "0-based"]
BOX_CONVENTIONS = ("as-released", "0-based")
#: file-name stem of each label space in the PPDM/QPIC layout (trainval_hico.json, ...)
LAYOUT_STEM = {"hico-det": "hico", "v-coco": "vcoco"}
TABLE_FILE = "table1.md"
#: label spaces whose released files keep the original test set's boxes 1-based (HICO-DET-SG,
#: in the hicodet toolkit's pixels); the released V-COCO-SG files are 0-based throughout
RELEASED_ONE_BASED_TEST = frozenset({"hico-det"})


def default_boxes(policy: str) -> BoxConvention:
    """The box convention a policy writes unless told otherwise: the released files' for the
    released policy, 0-based for the paper's."""
    return "as-released" if policy == "released" else "0-based"


# --------------------------------------------------------------------------- the split
@dataclass(frozen=True)
class SGSplit:
    """One systematic-generalization split.

    ``train``/``test`` keep the union's image order; ``test_origin_*`` say which of their images
    came from the original *test* set (needed to write the released files' box conventions),
    when ``origin_known``. ``boxes`` is the convention :meth:`write` uses for such data:
    ``"as-released"`` writes the boxes of HICO-DET images from the original test set 1-based,
    as the released files have them (two conventions in one file; V-COCO-SG's released files
    are 0-based throughout); ``"0-based"`` writes every box 0-based. Without known origins
    (files given as they are) boxes are written as read. :meth:`box_conventions` says what each
    file holds; :meth:`box_convention_warning` is the one line to show when a file mixes two.
    """

    name: str
    dataset_name: str
    seed: int
    ratio: float
    policy: str
    verify: str
    train: HOIDataset
    test: HOIDataset
    combinations: np.ndarray  # (n, 2) (verb, object), all of the source, SELECT order
    test_combinations: np.ndarray  # (m, 2) (verb, object), sorted like ``combinations``
    attempts: int = 1
    verify_problems: tuple[str, ...] = ()
    mixed_images: int = 0
    removed: tuple[str, ...] = ()
    missing_removals: tuple[str, ...] = ()
    inherit: str | None = None
    boxes: BoxConvention | None = None  # None: the policy's (:func:`default_boxes`)
    train_origin_test: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    test_origin_test: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    origin_known: bool = False

    def __post_init__(self) -> None:
        boxes = self.boxes or default_boxes(self.policy)
        if boxes not in BOX_CONVENTIONS:
            raise ConfigError(f"boxes must be one of {list(BOX_CONVENTIONS)}; got {boxes!r}")
        object.__setattr__(self, "boxes", boxes)

    def __repr__(self) -> str:
        return (f"SGSplit(name={self.name!r}, seed={self.seed}, ratio={self.ratio}, policy={self.policy!r}, "
                f"train={self.train.n_images} images/{self.train.n_pairs} pairs, "
                f"test={self.test.n_images} images/{self.test.n_pairs} pairs, "
                f"test_combinations={len(self.test_combinations)} of {len(self.combinations)})")

    @property
    def vocab(self) -> LabelSpace:
        return self.train.vocab

    @property
    def train_combinations(self) -> np.ndarray:
        """The (verb, object) combinations kept for train: all minus the test (unseen) ones."""
        keys = self._keys(self.combinations)
        return self.combinations[~np.isin(keys, self._keys(self.test_combinations))]

    def _keys(self, c: np.ndarray) -> np.ndarray:
        return _combo_keys(self.vocab, c[:, 0], c[:, 1])

    def table1(self) -> dict[str, dict[str, int]]:
        """The paper's Table 1 row: images, triplets and combination classes, train and test."""
        return {
            "images": {"train": self.train.n_images, "test": self.test.n_images},
            "triplets": {"train": self.train.n_pairs, "test": self.test.n_pairs},
            "combinations": {"train": len(self.combinations) - len(self.test_combinations),
                             "test": len(self.test_combinations)},
            "observed_combinations": {"train": len(self.train.combinations()),
                                      "test": len(self.test.combinations())},
        }

    def stats(self) -> dict[str, Any]:
        """``stats.json``: the Table 1 row next to the paper's and the released files' counts."""
        out: dict[str, Any] = {
            "kind": "sg_stats",
            "name": self.name,
            "dataset": self.dataset_name,
            "label_space": self.vocab.name,
            "seed": self.seed,
            "ratio": self.ratio,
            "policy": self.policy,
            "verify": self.verify,
            "attempts": self.attempts,
            "inherit": self.inherit,
            "mixed_images": self.mixed_images,
            "removed_test_entries": len(self.removed),
            "removals_not_found": list(self.missing_removals),
            "table1": self.table1(),
        }
        ref = self.reference_preset
        if ref is not None:
            out["reference_split"] = ref
            out["paper_table1"] = paper_row(ref)
            out["released_test"] = dict(RELEASED_TEST_COUNTS[ref])
        out["verify_problems"] = list(self.verify_problems)
        out["box_conventions"] = self.box_conventions()
        out["boxes"] = self.boxes
        return out

    @property
    def file_names(self) -> dict[str, str]:
        """``{"train": "trainval_hico.json", "test": "test_hico.json"}`` (or ``_vcoco``)."""
        stem = LAYOUT_STEM.get(self.vocab.name, self.vocab.name)
        return {"train": f"trainval_{stem}.json", "test": f"test_{stem}.json"}

    @cached_property
    def _written(self) -> dict[str, tuple[HOIDataset, np.ndarray | None]]:
        """Per part: the dataset as :meth:`write` writes it and which of its images are 1-based
        (``None`` when the origins are unknown and boxes go out as read)."""
        out: dict[str, tuple[HOIDataset, np.ndarray | None]] = {}
        shift = self.boxes == "as-released" and self.vocab.name in RELEASED_ONE_BASED_TEST
        for part, ds, origin in (("train", self.train, self.train_origin_test),
                                 ("test", self.test, self.test_origin_test)):
            if not (self.origin_known and len(origin) == ds.n_images):
                out[part] = (ds, None)
                continue
            one = origin.astype(bool) if shift else np.zeros(ds.n_images, bool)
            out[part] = (shift_image_boxes(ds, one, 1.0) if one.any() else ds, one)
        return out

    def box_conventions(self) -> dict[str, Any]:
        """``stats.json``'s ``box_conventions``: per written file and file-name prefix, how many
        entries and their convention. ``how`` is ``"written"`` when the origins are known (the
        conventions are the ones :meth:`write` placed: exact), ``"as read"`` otherwise (boxes of
        the given files, detected per prefix as ``split audit`` does; possibly ``"unknown"``)."""
        files: dict[str, dict[str, dict[str, Any]]] = {}
        how = "written"
        for part, (ds, one) in self._written.items():
            groups: dict[str, dict[str, Any]] = {}
            if one is None:
                how = "as read"
                for g in box_convention_groups(ds):
                    groups[g.prefix] = {"entries": g.images, "convention": g.convention}
            else:
                prefixes = [file_prefix(f) for f in ds.file_names]
                for p in sorted(set(prefixes)):
                    sel = np.fromiter((q == p for q in prefixes), bool, len(prefixes))
                    n1 = int(one[sel].sum())
                    conv = "0-based" if n1 == 0 else "1-based" if n1 == sel.sum() else "mixed"
                    groups[p] = {"entries": int(sel.sum()), "convention": conv}
            files[self.file_names[part]] = groups
        return {"how": how, "files": files}

    def box_convention_warning(self) -> str | None:
        """One line when a written file holds entries in two box conventions (None otherwise):
        the counts per file and how to get one convention."""
        rec = self.box_conventions()
        mixed = {}
        for name, groups in rec["files"].items():
            conv = {g["convention"] for g in groups.values()}
            if "mixed" in conv or {"0-based", "1-based"} <= conv:
                mixed[name] = ", ".join(f"{g['entries']:,} {p} entries {g['convention']}"
                                        for p, g in groups.items())
        if not mixed:
            return None
        where = "; ".join(f"{name}: {text}" for name, text in mixed.items())
        if rec["how"] == "written":
            return (f"{self.name} writes boxes in two conventions, as the released files do ({where}); "
                    "--boxes 0-based writes every box 0-based")
        return (f"the given files mix box conventions, detected per file-name prefix ({where}); their boxes "
                "are written as read: give files in one convention (hoibench data convert --mixed-boxes unify)")

    def table1_rows(self) -> list[tuple[str, dict[str, dict[str, int]]]]:
        """This split's Table 1 row, then the paper's and the released test file's for the
        released split with the same seed (if any), for :func:`table1_markdown`."""
        rows = [(f"{self.name} (ours, {self.policy} policy, seed {self.seed})", self.table1())]
        ref = self.reference_preset
        if ref is not None:
            rows.append((f"{ref} (paper Table 1)", paper_row(ref)))
            rows.append((f"{ref} (released test file)",
                         {k: {"test": v} for k, v in RELEASED_TEST_COUNTS[ref].items()}))
        return rows

    @property
    def reference_preset(self) -> str | None:
        """The released split with this split's label space, seed and ratio, if any (its paper
        Table 1 row and released counts are the reference to compare with)."""
        return reference_preset(self.vocab.name, self.seed, self.ratio, self.name)

    def combinations_record(self) -> dict[str, Any]:
        """``test_combinations.json`` (layout in ``docs/sg-splits.md``)."""
        return combinations_record(
            self.vocab, self.test_combinations, kind="sg_test_combinations", name=self.name,
            label_space=self.vocab.name, seed=self.seed, ratio=self.ratio, policy=self.policy,
            n_combinations=len(self.combinations))

    def write(self, out: str | os.PathLike[str], *, boxes: BoxConvention | None = None,
              inputs: dict[str, Any] | None = None) -> dict[str, Path]:
        """Write ``trainval_<ds>.json``, ``test_<ds>.json`` (PPDM/QPIC layout),
        ``test_combinations.json``, ``stats.json`` (:meth:`stats`), ``table1.md`` and
        ``provenance.json`` (the parameters, ``inputs``: content hashes of the source files, and
        every file's hash) into the folder ``out``, as a whole (see
        :func:`~hoibench.benchmarks.write_folder`); returns ``{role: path}``.

        ``boxes`` is deprecated: build with ``boxes=`` (or ``dataclasses.replace(split,
        boxes=...)``) so that :meth:`stats` says what was written.
        """
        if boxes is not None:
            warnings.warn("SGSplit.write(boxes=...) is deprecated; pass boxes= to build_sg_split or "
                          "build_preset", DeprecationWarning, stacklevel=2)
            return dataclasses.replace(self, boxes=boxes).write(out, inputs=inputs)
        names = {**self.file_names, "combinations": COMBINATIONS_FILE, "stats": STATS_FILE,
                 "table": TABLE_FILE}

        def write_files(folder: Path) -> dict[str, Path]:
            paths = {role: folder / name for role, name in names.items()}
            for part, (ds, _) in self._written.items():
                write_ppdm(ds, paths[part])
            atomic_write_json(paths["combinations"], self.combinations_record())
            atomic_write_json(paths["stats"], self.stats())
            atomic_write_bytes(paths["table"], (table1_markdown(self.table1_rows()) + "\n").encode())
            return paths

        params = {"name": self.name, "dataset": self.dataset_name, "seed": self.seed, "ratio": self.ratio,
                  "policy": self.policy, "verify": self.verify, "boxes": self.boxes,
                  "removed": len(self.removed)}
        return write_folder(out, names.values(), write_files, writer="split sg", parameters=params,
                            inputs=inputs if inputs is not None else {"dataset": self.dataset_name})


