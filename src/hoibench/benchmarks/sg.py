"""HICO-DET-SG and V-COCO-SG: systematic-generalization splits (``../seeds/000_*``).

A split holds out a set of (object, verb) *combinations*: the test data contain only them, the
train data none of them, so a model is tested on novel combinations of known objects and verbs.

The steps (Algorithm 1 of the paper):

1. SELECT: the distinct combinations of the union of the original train and test sets, sorted by
   (COCO-80 object index, verb id), are split with scikit-learn's
   ``train_test_split(combos, train_size=ratio, random_state=seed)``. This is exactly how the
   released files were made (HICO-DET-SG seeds 368/680/750, ``ratio`` 0.9; V-COCO-SG seeds
   564/966/2065, ``ratio`` 0.7); only the number of combinations and their order matter.
2. ASSIGN images. ``policy="paper"`` (the paper's text and Algorithm 1): an image goes to train
   when none of its pairs is a test combination, to test when all are, and is dropped when mixed.
   ``policy="released"`` (what the released files contain, made by the repository's older
   generator): every image with at least one test pair goes to test keeping only its test pairs.
3. VERIFY the split; with ``seed="auto"`` try the next seed until it passes.

Images without any pair are never assigned (the released generator read PPDM/QPIC files, which
list only images with pairs). See ``docs/sg-splits.md`` for the released files' quirks
(split 3's inherited pair deletions, the deleted test entries, the mixed box conventions) and
how :data:`PRESETS` reproduce them.
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hoibench._exceptions import ConfigError, FormatError, ValidationError
from hoibench._io import atomic_write_bytes, atomic_write_json, ensure_dir, read_json
from hoibench.data import HOIDataset
from hoibench.formats.sg_split import COMBINATIONS_FILE
from hoibench.vocab import LabelSpace

__all__ = [
    "PAPER_TABLE1",
    "PRESETS",
    "RELEASED_TEST_COUNTS",
    "AuditReport",
    "BoxConventionGroup",
    "SGPreset",
    "SGSplit",
    "SplitComparison",
    "audit_split",
    "build_preset",
    "build_sg_split",
    "compare_splits",
    "load_released_removals",
    "select_test_combinations",
    "sg_combinations",
    "split_table1",
    "table1_markdown",
    "verify_split",
]

Policy = Literal["paper", "released"]
Verify = Literal["paper", "released"]
BoxConvention = Literal["as-released", "0-based"]

POLICIES = ("paper", "released")
VERIFY_RULES = ("paper", "released")
BOX_CONVENTIONS = ("as-released", "0-based")
#: file-name stem of each label space in the PPDM/QPIC layout (trainval_hico.json, ...)
LAYOUT_STEM = {"hico-det": "hico", "v-coco": "vcoco"}
STATS_FILE = "stats.json"


# --------------------------------------------------------------------------- reference numbers
#: Table 1 of the paper (``000_*.txt``): images, HOI triplets and combination classes.
PAPER_TABLE1: dict[str, dict[str, tuple[int, int]]] = {
    "hico-det": {"images": (38118, 9061), "triplets": (117871, 33405), "combinations": (600, 600)},
    "hico-det-sg1": {"images": (38312, 8515), "triplets": (119331, 14475), "combinations": (540, 60)},
    "hico-det-sg2": {"images": (39213, 7656), "triplets": (122299, 14811), "combinations": (540, 60)},
    "hico-det-sg3": {"images": (40672, 6229), "triplets": (120096, 8994), "combinations": (540, 60)},
    "v-coco": {"images": (5400, 4946), "triplets": (14153, 12649), "combinations": (228, 228)},
    "v-coco-sg1": {"images": (7297, 2850), "triplets": (18214, 3872), "combinations": (160, 68)},
    "v-coco-sg2": {"images": (7057, 3066), "triplets": (15644, 4322), "combinations": (160, 68)},
    "v-coco-sg3": {"images": (6210, 3888), "triplets": (10951, 6244), "combinations": (160, 68)},
}

#: Counts measured on the released test files (FujitsuResearch/hoi_sg, HEAD): images, triplets,
#: distinct (object, verb) combinations with an object. They equal the paper's Table 1 test column.
RELEASED_TEST_COUNTS: dict[str, dict[str, int]] = {
    "hico-det-sg1": {"images": 8515, "triplets": 14475, "combinations": 60},
    "hico-det-sg2": {"images": 7656, "triplets": 14811, "combinations": 60},
    "hico-det-sg3": {"images": 6229, "triplets": 8994, "combinations": 60},
    "v-coco-sg1": {"images": 2850, "triplets": 3872, "combinations": 60},
    "v-coco-sg2": {"images": 3066, "triplets": 4322, "combinations": 58},
    "v-coco-sg3": {"images": 3888, "triplets": 6244, "combinations": 66},
}


@dataclass(frozen=True)
class SGPreset:
    """The parameters of one released split.

    ``inherit`` names the preset whose in-place pair deletions this one inherited (the released
    split 3 was generated in the same process right after split 2).
    """

    name: str
    dataset: str
    seed: int
    ratio: float
    inherit: str | None = None


PRESETS: dict[str, SGPreset] = {
    p.name: p
    for p in (
        SGPreset("hico-det-sg1", "hico-det", 368, 0.9),
        SGPreset("hico-det-sg2", "hico-det", 680, 0.9),
        SGPreset("hico-det-sg3", "hico-det", 750, 0.9, inherit="hico-det-sg2"),
        SGPreset("v-coco-sg1", "v-coco", 564, 0.7),
        SGPreset("v-coco-sg2", "v-coco", 966, 0.7),
        SGPreset("v-coco-sg3", "v-coco", 2065, 0.7),
    )
}
_PRESET_ALIASES = {f"{p.dataset.split('-')[0]}-sg{p.name[-1]}": p.name for p in PRESETS.values()}
_PRESET_ALIASES.update({f"sg{i}": f"hico-det-sg{i}" for i in (1, 2, 3)})


def get_preset(name: str) -> SGPreset:
    """A preset by name (``hico-det-sg1`` ... ``v-coco-sg3``; ``sg2`` means ``hico-det-sg2``)."""
    key = name.lower().replace("_", "-").replace("hicodet", "hico-det").replace("vcoco", "v-coco")
    key = _PRESET_ALIASES.get(key, key)
    if key not in PRESETS:
        raise ConfigError(f"preset must be one of {sorted(PRESETS)}; got {name!r}")
    return PRESETS[key]


@functools.cache
def _bundled_removals() -> dict[str, tuple[str, ...]]:
    ref = resources.files("hoibench.benchmarks").joinpath("data", "hoi_sg_released_test_removals.json")
    data = json.loads(ref.read_bytes())
    return {k: tuple(v) for k, v in data.items() if not k.startswith("_")}


def load_released_removals(preset: str, path: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """File names deleted from a released test file after generation (empty for V-COCO-SG).

    The lists ship with hoibench (``released_test_removals.json``, derived from the
    repository's history); ``path`` reads another file of the same layout.
    """
    if path is None:
        return _bundled_removals().get(preset, ())
    data = read_json(path)
    if not isinstance(data, dict):
        raise FormatError("expected an object {split name: [file names]}", file=path)
    names = data.get(preset, [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FormatError("expected a list of file names", file=path, field=preset)
    return tuple(names)


# --------------------------------------------------------------------------- SELECT
def _combo_keys(vocab: LabelSpace, verbs: np.ndarray, objects: np.ndarray) -> np.ndarray:
    """One sortable integer per (object, verb): COCO-80 index major, verb minor."""
    return vocab.coco80[objects].astype(np.int64) * (vocab.n_verbs + 1) + verbs


def sg_combinations(ds: HOIDataset) -> np.ndarray:
    """Distinct (verb, object) combinations with an object, in the released generator's order.

    The order is (COCO-80 object index, verb id), the row-major order of the generator's
    object × verb count matrix; returned as an ``(n, 2)`` array of (verb, object) indices.
    """
    has = ds.pair_object_label >= 0
    verbs, objs = ds.pair_verb[has], ds.pair_object_label[has]
    _, first = np.unique(_combo_keys(ds.vocab, verbs, objs), return_index=True)
    return np.stack([verbs[first], objs[first]], axis=1).reshape(-1, 2).astype(np.int64)


def select_test_combinations(combinations: np.ndarray, *, ratio: float, seed: int) -> np.ndarray:
    """SELECT: the test rows of ``combinations`` (kept in the order scikit-learn returns them).

    ``train_test_split(combinations, train_size=ratio, random_state=seed)``, as the released
    generator calls it; ``combinations`` must already be in :func:`sg_combinations` order.
    """
    from sklearn.model_selection import train_test_split

    _check_ratio(ratio)
    if len(combinations) < 2:
        raise ConfigError(f"need at least 2 combinations to split; got {len(combinations)}")
    try:
        _, test = train_test_split(np.asarray(combinations), train_size=ratio, random_state=int(seed))
    except ValueError as exc:  # e.g. a ratio that leaves train or test empty
        raise ConfigError(f"cannot split {len(combinations)} combinations with ratio {ratio}: {exc}") from None
    return np.asarray(test, dtype=np.int64).reshape(-1, 2)


def _check_ratio(ratio: float) -> None:
    if not 0.0 < float(ratio) < 1.0:
        raise ConfigError(f"ratio must be in (0, 1) (the share of combinations kept for train); got {ratio!r}")


# --------------------------------------------------------------------------- ASSIGN
def _test_pair_mask(ds: HOIDataset, test_combos: np.ndarray, *, no_object: str) -> np.ndarray:
    """Which pairs belong to a test combination.

    Pairs without an object: ``"never"`` (Algorithm 1's MATCH gives 0) or ``"last_box"`` (the
    released generator looked up ``annotations[object_id]`` with ``object_id == -1``, i.e. the
    image's last box, and matched that category).
    """
    vocab = ds.vocab
    test_keys = np.sort(_combo_keys(vocab, test_combos[:, 0], test_combos[:, 1]))
    obj = ds.pair_object_label
    if no_object == "last_box":
        last_box = ds.box_offsets[1:][ds.pair_image] - 1
        has_box = last_box >= ds.box_offsets[:-1][ds.pair_image]
        fallback = np.where(has_box, ds.box_labels[np.maximum(last_box, 0)], -1)
        obj = np.where(obj >= 0, obj, fallback)
    has = obj >= 0
    keys = _combo_keys(vocab, ds.pair_verb, np.maximum(obj, 0))
    return has & np.isin(keys, test_keys)


@dataclass(frozen=True)
class _Assignment:
    train: np.ndarray  # image rows
    test: np.ndarray  # image rows
    mixed: np.ndarray  # image rows with test and non-test pairs
    keep_pair: np.ndarray  # pairs written out (all pairs of train images, test pairs of test images)


def _assign(ds: HOIDataset, is_test: np.ndarray, policy: str, empty_images: str = "drop") -> _Assignment:
    n_pairs = ds.pairs_per_image
    n_test = np.bincount(ds.pair_image[is_test], minlength=ds.n_images)
    train = (n_pairs > 0) & (n_test == 0)
    mixed = (n_test > 0) & (n_test < n_pairs)
    # the released generator tests ``sum == len(hois)`` first, so an image without pairs
    # (listed in QPIC's V-COCO files, not in its HICO-DET files) went to test
    test = (n_test == n_pairs) & ((n_pairs > 0) | (empty_images == "test"))
    if policy == "released":
        test = test | mixed
    keep = train[ds.pair_image] | (test[ds.pair_image] & is_test)
    return _Assignment(np.flatnonzero(train), np.flatnonzero(test), np.flatnonzero(mixed), keep)


# --------------------------------------------------------------------------- VERIFY
def verify_split(
    train_combinations: np.ndarray,
    test_combinations: np.ndarray,
    all_combinations: np.ndarray,
    *,
    vocab: LabelSpace,
    rule: Verify = "paper",
) -> list[str]:
    """Why a split fails VERIFY (empty list: it passes). Combinations are (verb, object) rows.

    ``rule="released"`` (the released generator's ``checker``): the object and the verb of
    every test combination occur among the train combinations. ``rule="paper"`` (Appendix A and
    Algorithm 1, on the train *data*): every object and every verb of the dataset occurs in the
    train data, every object is paired with at least two verbs there, and every verb that the
    dataset pairs with three or more objects is paired with at least two there.

    The last clause relaxes the paper's "every interaction class is paired with multiple object
    classes": HICO-DET pairs 39 verbs with a single object and many with exactly two, so the
    literal rule holds for no split (0 of the first 300 seeds pass it). ``train_combinations``
    are the combinations of the train *images* for ``"paper"`` and the SELECTed train
    combinations for ``"released"``.
    """
    if rule not in VERIFY_RULES:
        raise ConfigError(f"verify must be one of {list(VERIFY_RULES)}; got {rule!r}")
    tr = np.asarray(train_combinations, dtype=np.int64).reshape(-1, 2)
    problems: list[str] = []
    if rule == "released":
        verbs, objs = set(tr[:, 0].tolist()), set(tr[:, 1].tolist())
        for v, o in np.asarray(test_combinations).reshape(-1, 2).tolist():
            if o not in objs:
                problems.append(f"object {vocab.objects[o]!r} of a test combination is in no train combination")
            if v not in verbs:
                problems.append(f"verb {vocab.verbs[v]!r} of a test combination is in no train combination")
        return sorted(set(problems))
    allc = np.asarray(all_combinations, dtype=np.int64).reshape(-1, 2)
    total_verbs_of = Counter(allc[:, 1].tolist())
    total_objs_of = Counter(allc[:, 0].tolist())
    train_verbs_of = Counter(tr[:, 1].tolist())
    train_objs_of = Counter(tr[:, 0].tolist())
    for o, k in sorted(total_verbs_of.items()):
        need = min(2, k)
        if train_verbs_of[o] < need:
            problems.append(f"object {vocab.objects[o]!r} has {train_verbs_of[o]} verb(s) in train, needs {need}")
    for v, k in sorted(total_objs_of.items()):
        need = 1 if k < 3 else 2
        if train_objs_of[v] < need:
            problems.append(f"verb {vocab.verbs[v]!r} has {train_objs_of[v]} object(s) in train, needs {need}")
    return problems


def _observed(ds: HOIDataset, pair_mask: np.ndarray) -> np.ndarray:
    """Distinct (verb, object) combinations of the masked pairs (pairs with an object only)."""
    m = pair_mask & (ds.pair_object_label >= 0)
    vo = np.stack([ds.pair_verb[m], ds.pair_object_label[m]], axis=1)
    return np.unique(vo, axis=0) if len(vo) else np.zeros((0, 2), np.int64)


# --------------------------------------------------------------------------- the split
@dataclass(frozen=True)
class SGSplit:
    """One systematic-generalization split.

    ``train``/``test`` keep the union's image order; ``test_origin_*`` say which of their images
    came from the original *test* set (needed to write the released files' box conventions).
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
    train_origin_test: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    test_origin_test: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

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
        return out

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
        if self.name in PRESETS:
            return self.name
        for p in PRESETS.values():
            if p.dataset == self.vocab.name and p.seed == self.seed and abs(p.ratio - self.ratio) < 1e-9:
                return p.name
        return None

    def combinations_record(self) -> dict[str, Any]:
        """``test_combinations.json`` (layout in ``docs/sg-splits.md``)."""
        vocab = self.vocab
        base = 0 if vocab.name == "v-coco" else 1
        hois = vocab.hoi_index(self.test_combinations[:, 0], self.test_combinations[:, 1]).tolist()
        coco91 = vocab.object_to_coco91(self.test_combinations[:, 1]).tolist()
        return {
            "kind": "sg_test_combinations",
            "name": self.name,
            "label_space": vocab.name,
            "seed": self.seed,
            "ratio": self.ratio,
            "policy": self.policy,
            "n_combinations": len(self.combinations),
            "combinations": [
                {
                    "verb": vocab.verbs[v],
                    "object": vocab.objects[o],
                    "verb_index": v,
                    "object_index": o,
                    "verb_id": v + base,
                    "object_coco91": coco91[k],
                    "hoi": hois[k] if vocab.name == "hico-det" and hois[k] >= 0 else None,
                }
                for k, (v, o) in enumerate(self.test_combinations.tolist())
            ],
        }

    def write(self, out_dir: str | os.PathLike[str], *, boxes: BoxConvention | None = None) -> dict[str, Path]:
        """Write ``trainval_<ds>.json``, ``test_<ds>.json`` (PPDM/QPIC layout),
        ``test_combinations.json`` and ``stats.json`` into ``out_dir`` (each atomically).

        ``boxes="as-released"`` (default for ``policy="released"``) writes the boxes of images
        from the original test set 1-based, as the released files have them; ``"0-based"``
        writes every box 0-based (default for ``policy="paper"``).
        """
        from hoibench.formats import write_ppdm

        boxes = boxes or ("as-released" if self.policy == "released" else "0-based")
        if boxes not in BOX_CONVENTIONS:
            raise ConfigError(f"boxes must be one of {list(BOX_CONVENTIONS)}; got {boxes!r}")
        out = Path(out_dir)
        ensure_dir(out)
        stem = LAYOUT_STEM.get(self.vocab.name, self.vocab.name)
        paths = {
            "train": out / f"trainval_{stem}.json",
            "test": out / f"test_{stem}.json",
            "combinations": out / COMBINATIONS_FILE,
            "stats": out / STATS_FILE,
        }
        for part, ds, origin in (("train", self.train, self.train_origin_test),
                                 ("test", self.test, self.test_origin_test)):
            if boxes == "as-released" and len(origin) == ds.n_images and origin.any():
                ds = _shift_boxes(ds, origin, 1.0)
            write_ppdm(ds, paths[part])
        atomic_write_json(paths["combinations"], self.combinations_record())
        stats = self.stats()
        stats["boxes"] = boxes
        atomic_write_json(paths["stats"], stats)
        atomic_write_bytes(out / "table1.md", (table1_markdown(self.table1_rows()) + "\n").encode())
        return paths


def _shift_boxes(ds: HOIDataset, images: np.ndarray, delta: float) -> HOIDataset:
    """The same dataset with the boxes of the masked images moved by ``delta`` pixels."""
    boxes = ds.boxes.copy()
    boxes[images[ds.box_image]] += delta
    return HOIDataset(
        vocab=ds.vocab, name=ds.name, file_names=ds.file_names, widths=ds.widths,
        heights=ds.heights, image_ids=ds.image_ids, box_offsets=ds.box_offsets, boxes=boxes,
        box_labels=ds.box_labels, pair_offsets=ds.pair_offsets, pair_subject=ds.pair_subject,
        pair_object=ds.pair_object, pair_verb=ds.pair_verb,
    )


def _parse_seed(seed: int | str) -> tuple[int, bool]:
    """``368`` → (368, fixed); ``"auto"`` → (0, search); ``"auto:368"`` → (368, search)."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        if seed < 0:
            raise ConfigError(f"seed must be >= 0 (scikit-learn's random_state); got {seed}")
        return int(seed), False
    if isinstance(seed, str):
        s = seed.strip().lower()
        if s.isdigit():
            return int(s), False
        if s == "auto" or s.startswith("auto:"):
            start = s.partition(":")[2] or "0"
            if not start.isdigit():
                raise ConfigError(f"seed must be N, 'auto' or 'auto:START'; got {seed!r}")
            return int(start), True
    raise ConfigError(f"seed must be N, 'auto' or 'auto:START'; got {seed!r}")


def build_sg_split(
    dataset: HOIDataset,
    *,
    seed: int | str,
    ratio: float = 0.9,
    policy: Policy = "paper",
    verify: Verify | None = None,
    origin_test: np.ndarray | None = None,
    removals: Sequence[str] = (),
    inherit: tuple[int, float] | None = None,
    no_object: Literal["never", "last_box"] | None = None,
    empty_images: Literal["drop", "test"] = "drop",
    max_attempts: int = 10000,
    on_attempt: Callable[[int, Sequence[str]], None] | None = None,
    name: str = "",
) -> SGSplit:
    """Build one SG split of ``dataset`` (the union of the original train and test sets).

    Parameters
    ----------
    seed:
        ``random_state`` of SELECT, or ``"auto"`` / ``"auto:START"`` to try START, START+1, ...
        until VERIFY passes (Algorithm 1; the released generator started at 368 for HICO-DET).
    ratio:
        Share of combinations kept for train (0.9 for HICO-DET-SG, 0.7 for V-COCO-SG).
    policy:
        ``"paper"`` drops mixed images; ``"released"`` sends them to test with their test pairs.
    verify:
        VERIFY rule (:func:`verify_split`); defaults to the policy's own. With a fixed seed a
        failing VERIFY is reported in ``verify_problems``, not raised.
    origin_test:
        Per image of ``dataset``: whether it comes from the original test set (used to write
        the released box conventions).
    removals:
        Test file names deleted after generation (the released files; see
        :func:`load_released_removals`).
    inherit:
        ``(seed, ratio)`` of a released-policy run whose in-place deletions this split inherits:
        that run's mixed images keep only their test pairs before this split is built.
    no_object:
        How pairs without an object are matched (V-COCO): ``"never"`` (paper) or ``"last_box"``
        (released generator). Defaults to the policy's own.
    empty_images:
        Images without pairs are dropped (``"drop"``), or sent to test as the released
        generator did with the images QPIC's V-COCO files list without pairs (``"test"``).
    on_attempt:
        Called after each tried seed with the seed and its VERIFY problems (progress display).
    """
    if policy not in POLICIES:
        raise ConfigError(f"policy must be one of {list(POLICIES)}; got {policy!r}")
    verify = verify or policy
    if verify not in VERIFY_RULES:
        raise ConfigError(f"verify must be one of {list(VERIFY_RULES)}; got {verify!r}")
    no_object = no_object or ("last_box" if policy == "released" else "never")
    if no_object not in ("never", "last_box"):
        raise ConfigError(f"no_object must be one of ['never', 'last_box']; got {no_object!r}")
    if empty_images not in ("drop", "test"):
        raise ConfigError(f"empty_images must be one of ['drop', 'test']; got {empty_images!r}")
    _check_ratio(ratio)
    if len(set(dataset.file_names)) != dataset.n_images:
        dup = next(f for f, n in Counter(dataset.file_names).items() if n > 1)
        raise ValidationError(f"{dataset.name or 'dataset'}: image {dup!r} occurs more than once (the same "
                              f"file given twice?); an image would land in both train and test")
    start, search = _parse_seed(seed)
    if origin_test is None:
        origin_test = np.zeros(dataset.n_images, dtype=bool)
    origin_test = np.asarray(origin_test, dtype=bool)
    if len(origin_test) != dataset.n_images:
        raise ConfigError(f"origin_test has {len(origin_test)} entries for {dataset.n_images} images")

    ds = dataset
    if inherit is not None:
        prev_seed, prev_ratio = inherit
        prev_combos = select_test_combinations(sg_combinations(ds), ratio=prev_ratio, seed=prev_seed)
        prev_test = _test_pair_mask(ds, prev_combos, no_object=no_object)
        mixed = np.zeros(ds.n_images, dtype=bool)
        mixed[_assign(ds, prev_test, "released").mixed] = True
        ds = ds.filter_pairs(~mixed[ds.pair_image] | prev_test)

    combos = sg_combinations(ds)
    combo_keys = _combo_keys(ds.vocab, combos[:, 0], combos[:, 1])
    attempts = 0
    s = start
    while True:
        attempts += 1
        test_combos = _sorted_like(ds.vocab, select_test_combinations(combos, ratio=ratio, seed=s))
        test_keys = _combo_keys(ds.vocab, test_combos[:, 0], test_combos[:, 1])
        selected_train = combos[~np.isin(combo_keys, test_keys)]
        # the released check is cheap and necessary for the paper one (train images hold only
        # SELECTed train combinations), so it screens seeds before images are assigned
        problems = verify_split(selected_train, test_combos, combos, vocab=ds.vocab, rule="released")
        a = None
        if verify == "paper" and not problems:
            a = _assign(ds, _test_pair_mask(ds, test_combos, no_object=no_object), policy, empty_images)
            in_train = np.zeros(ds.n_images, dtype=bool)
            in_train[a.train] = True
            problems = verify_split(_observed(ds, in_train[ds.pair_image]), test_combos, combos,
                                    vocab=ds.vocab, rule="paper")
        if on_attempt is not None:
            on_attempt(s, problems)
        if not problems or not search:
            break
        if attempts >= max_attempts:
            raise ConfigError(f"no seed in {start}..{s} passes VERIFY {verify!r} "
                              f"(last problem: {problems[0]})")
        s += 1
    if a is None:
        a = _assign(ds, _test_pair_mask(ds, test_combos, no_object=no_object), policy, empty_images)

    kept = ds.filter_pairs(a.keep_pair)
    train = kept.subset(a.train, name=f"{name or 'sg'}:train")
    test_rows = a.test
    removed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    if removals:
        drop = set(removals)
        names = kept.file_names
        is_removed = np.fromiter((names[i] in drop for i in test_rows), bool, len(test_rows))
        removed = tuple(names[i] for i in test_rows[is_removed])
        missing = tuple(sorted(drop - set(removed)))
        test_rows = test_rows[~is_removed]
    test = kept.subset(test_rows, name=f"{name or 'sg'}:test")
    return SGSplit(
        name=name or f"{dataset.vocab.name}-sg-seed{s}",
        dataset_name=dataset.name,
        seed=s,
        ratio=float(ratio),
        policy=policy,
        verify=verify,
        train=train,
        test=test,
        combinations=combos,
        test_combinations=test_combos,
        attempts=attempts,
        verify_problems=tuple(problems),
        mixed_images=len(a.mixed),
        removed=removed,
        missing_removals=missing,
        inherit=None if inherit is None else f"seed {inherit[0]}, ratio {inherit[1]}",
        train_origin_test=origin_test[a.train],
        test_origin_test=origin_test[test_rows],
    )


def _sorted_like(vocab: LabelSpace, combos: np.ndarray) -> np.ndarray:
    order = np.argsort(_combo_keys(vocab, combos[:, 0], combos[:, 1]), kind="stable")
    return combos[order]


def build_preset(
    preset: str,
    *,
    dataset: HOIDataset | None = None,
    origin_test: np.ndarray | None = None,
    removals_file: str | os.PathLike[str] | None = None,
    policy: Policy = "released",
    verify: Verify | None = None,
) -> SGSplit:
    """A released split (``hico-det-sg1`` ... ``v-coco-sg3``) from the bundled union, or from
    ``dataset`` (e.g. the PPDM/QPIC trainval and test files concatenated).

    ``policy="released"`` reproduces the released files (with split 3's inheritance and the
    deleted test entries); ``policy="paper"`` applies the paper's rule to the same seed.
    For V-COCO-SG pass QPIC's ``trainval_vcoco.json`` + ``test_vcoco.json`` as ``dataset``:
    the bundled V-COCO (vcoco toolkit instances) has other pairs and 236 combinations, not 228.
    """
    p = get_preset(preset)
    bundled = dataset is None
    if dataset is not None and dataset.vocab.name != p.dataset:
        raise ConfigError(f"preset {p.name} splits {p.dataset}; the given dataset has {dataset.vocab.name} labels")
    if dataset is None:
        dataset, origin_test = load_union(p.dataset)
    inherit = None
    removals: tuple[str, ...] = ()
    if policy == "released":
        if p.inherit is not None:
            prev = PRESETS[p.inherit]
            inherit = (prev.seed, prev.ratio)
        removals = load_released_removals(p.name, removals_file)
    # QPIC's V-COCO files list images whose pairs all lack an object role; the released generator
    # sent such pair-less entries to test. The bundled V-COCO has no agent-only pairs at all, so
    # its pair-less images are not those entries and are dropped.
    empty = "test" if policy == "released" and p.dataset == "v-coco" and not bundled else "drop"
    return build_sg_split(
        dataset, seed=p.seed, ratio=p.ratio, policy=policy, verify=verify, origin_test=origin_test,
        removals=removals, inherit=inherit, empty_images=empty, name=p.name,
    )


def load_union(name: str) -> tuple[HOIDataset, np.ndarray]:
    """The bundled union of the original train and test sets, and which images are test ones."""
    from hoibench.datasets import BUNDLED, load_dataset, parse_dataset_name

    key, split = parse_dataset_name(name)
    if split is not None:
        raise ConfigError(f"the union of a bundled dataset's splits takes a dataset name, not a split; "
                          f"got {name!r}")
    parts = [load_dataset(key, s) for s in BUNDLED[key]]
    union = HOIDataset.concat(parts, name=key)
    origin = np.concatenate([np.full(p.n_images, s == "test") for p, s in zip(parts, BUNDLED[key])])
    return union, origin


# --------------------------------------------------------------------------- Table 1
def split_table1(ds_train: HOIDataset, ds_test: HOIDataset) -> dict[str, dict[str, int]]:
    """Table 1 counts of any train/test pair (combinations as observed in the files)."""
    return {
        "images": {"train": ds_train.n_images, "test": ds_test.n_images},
        "triplets": {"train": ds_train.n_pairs, "test": ds_test.n_pairs},
        "combinations": {"train": len(ds_train.combinations()), "test": len(ds_test.combinations())},
    }


def table1_markdown(rows: Sequence[tuple[str, dict[str, dict[str, int]]]]) -> str:
    """A Markdown table in the paper's Table 1 layout."""
    lines = [
        "| data split | images train | images test | triplets train | triplets test "
        "| comb. train | comb. test |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, t in rows:
        cells = [f"{t[k][s]:,}" if isinstance(t.get(k, {}).get(s), int) else "–"
                 for k in ("images", "triplets", "combinations") for s in ("train", "test")]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paper_row(name: str) -> dict[str, dict[str, int]]:
    """A row of the paper's Table 1 in :func:`table1_markdown`'s layout."""
    return {k: {"train": v[0], "test": v[1]} for k, v in PAPER_TABLE1[name].items()}


# --------------------------------------------------------------------------- AUDIT
@dataclass(frozen=True)
class BoxConventionGroup:
    """Boxes of the images whose file names share a prefix (``HICO_train2015``, ...).

    A 0-based file has boxes starting at pixel 0; a 1-based one never does. ``convention`` is
    ``"0-based"`` when some box touches 0, ``"1-based"`` when none does but at least 1 % touch 1
    (the first 1-based pixel), ``"unknown"`` otherwise.
    """

    prefix: str
    images: int
    boxes: int
    at_zero: int
    at_one: int

    @property
    def convention(self) -> str:
        if self.at_zero > 0:
            return "0-based"
        if self.boxes and self.at_one >= max(1, 0.01 * self.boxes):
            return "1-based"
        return "unknown"

    def as_dict(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "images": self.images, "boxes": self.boxes,
                "at_zero": self.at_zero, "at_one": self.at_one, "convention": self.convention}


@dataclass(frozen=True)
class AuditReport:
    """Leakage report of a train/test pair (:func:`audit_split`)."""

    train_name: str
    test_name: str
    table1: dict[str, dict[str, int]]
    shared_combinations: list[dict[str, Any]]
    shared_images: list[str]
    objects_only_in_test: list[str]
    verbs_only_in_test: list[str]
    per_combination: list[dict[str, Any]]
    box_groups: dict[str, list[BoxConventionGroup]]

    @property
    def leaks(self) -> bool:
        """True when a combination occurs in both train and test (the split is not an SG split)."""
        return bool(self.shared_combinations)

    @property
    def box_conventions_mixed(self) -> dict[str, bool]:
        out = {}
        for part, groups in self.box_groups.items():
            known = {g.convention for g in groups if g.convention != "unknown"}
            out[part] = len(known) > 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "sg_audit",
            "train": self.train_name,
            "test": self.test_name,
            "leaks": self.leaks,
            "table1": self.table1,
            "shared_combinations": self.shared_combinations,
            "shared_images": self.shared_images,
            "objects_only_in_test": self.objects_only_in_test,
            "verbs_only_in_test": self.verbs_only_in_test,
            "box_conventions": {k: [g.as_dict() for g in v] for k, v in self.box_groups.items()},
            "box_conventions_mixed": self.box_conventions_mixed,
            "per_combination": self.per_combination,
        }


def _prefix(file_name: str) -> str:
    stem = os.path.basename(file_name)
    return stem.rsplit("_", 1)[0] if "_" in stem else "(none)"


def box_convention_groups(ds: HOIDataset) -> list[BoxConventionGroup]:
    """Box-origin statistics per file-name prefix (see :class:`BoxConventionGroup`)."""
    prefixes = [_prefix(f) for f in ds.file_names]
    uniq = sorted(set(prefixes))
    img_group = np.asarray([uniq.index(p) for p in prefixes], dtype=np.int64) if uniq else np.zeros(0, np.int64)
    box_group = img_group[ds.box_image] if ds.n_boxes else np.zeros(0, np.int64)
    corner = ds.boxes[:, :2].min(axis=1) if ds.n_boxes else np.zeros(0)
    out = []
    for g, p in enumerate(uniq):
        sel = box_group == g
        out.append(BoxConventionGroup(
            prefix=p, images=int((img_group == g).sum()), boxes=int(sel.sum()),
            at_zero=int((corner[sel] == 0).sum()), at_one=int((corner[sel] == 1).sum()),
        ))
    return out


def audit_split(train: HOIDataset, test: HOIDataset) -> AuditReport:
    """Leakage report for any train/test pair: shared combinations and images, objects or verbs
    only in test, per-combination counts, and the box conventions of each part."""
    if train.vocab.name != test.vocab.name:
        raise ConfigError(f"train is {train.vocab.name}, test is {test.vocab.name}: cannot audit across label spaces")
    vocab = train.vocab

    def counts(ds: HOIDataset) -> Counter[tuple[int, int]]:
        has = ds.pair_object_label >= 0
        return Counter(zip(ds.pair_verb[has].tolist(), ds.pair_object_label[has].tolist()))

    ctr, cte = counts(train), counts(test)
    per = []
    for v, o in sorted(set(ctr) | set(cte), key=lambda c: (int(vocab.coco80[c[1]]), c[0])):
        per.append({"verb": vocab.verbs[v], "object": vocab.objects[o], "verb_index": v,
                    "object_index": o, "train": ctr.get((v, o), 0), "test": cte.get((v, o), 0)})
    shared = [r for r in per if r["train"] and r["test"]]
    tr_obj = set(train.pair_object_label[train.pair_object_label >= 0].tolist())
    te_obj = set(test.pair_object_label[test.pair_object_label >= 0].tolist())
    tr_verb, te_verb = set(train.pair_verb.tolist()), set(test.pair_verb.tolist())
    return AuditReport(
        train_name=train.name,
        test_name=test.name,
        table1=split_table1(train, test),
        shared_combinations=shared,
        shared_images=sorted(set(train.file_names) & set(test.file_names)),
        objects_only_in_test=[vocab.objects[o] for o in sorted(te_obj - tr_obj)],
        verbs_only_in_test=[vocab.verbs[v] for v in sorted(te_verb - tr_verb)],
        per_combination=per,
        box_groups={"train": box_convention_groups(train), "test": box_convention_groups(test)},
    )


# --------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class SplitComparison:
    """How a built split file differs from a reference (e.g. released) file.

    Pairs are compared per image as (verb, object, subject box, object box); boxes match when
    both IoUs reach ``iou_threshold`` (1.0: identical boxes).
    """

    only_ours: list[str]
    only_reference: list[str]
    images_compared: int
    pairs_matched: int
    exact_box_pairs: int
    min_iou: float
    missing_pairs: dict[str, list[tuple[str, str]]]  # image → (verb, object) in the reference only
    extra_pairs: dict[str, list[tuple[str, str]]]  # image → (verb, object) in ours only

    @property
    def identical(self) -> bool:
        return not (self.only_ours or self.only_reference or self.missing_pairs or self.extra_pairs)


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of ``a`` with every box of ``b`` (continuous coordinates); two empty
    boxes (e.g. the zero boxes standing for a missing object) overlap fully when equal."""
    from hoibench.evaluation import box_iou

    iou = box_iou(a, b)
    return np.where(np.isnan(iou), (a[:, None, :] == b[None, :, :]).all(axis=2), iou)


def compare_splits(
    ours: HOIDataset,
    reference: HOIDataset,
    *,
    iou_threshold: float = 0.5,
    box_shift: np.ndarray | None = None,
) -> SplitComparison:
    """Compare two split files image by image and pair by pair (greedy one-to-one matching).

    ``box_shift`` (per image of ``ours``) is added to our boxes first, e.g. +1 for the images
    that the released files keep in 1-based pixels.
    """
    vocab = ours.vocab
    ref_index = {f: i for i, f in enumerate(reference.file_names)}
    only_ours = [f for f in ours.file_names if f not in ref_index]
    ours_set = set(ours.file_names)
    only_ref = [f for f in reference.file_names if f not in ours_set]
    missing: dict[str, list[tuple[str, str]]] = {}
    extra: dict[str, list[tuple[str, str]]] = {}
    matched = exact = compared = 0
    min_iou = 1.0
    for i, f in enumerate(ours.file_names):
        j = ref_index.get(f)
        if j is None:
            continue
        compared += 1
        a, b = ours.image(i), reference.image(j)
        shift = float(box_shift[i]) if box_shift is not None else 0.0
        used = np.zeros(len(b.pairs), dtype=bool)
        a_sub = a.subject_boxes + shift
        a_obj = a.object_boxes + shift
        b_sub, b_obj = b.subject_boxes, b.object_boxes
        b_lab = b.object_labels
        a_lab = a.object_labels
        q_sub = _iou(a_sub, b_sub) if len(a.pairs) and len(b.pairs) else np.zeros((len(a.pairs), len(b.pairs)))
        q_obj = _iou(np.nan_to_num(a_obj), np.nan_to_num(b_obj)) if len(a.pairs) and len(b.pairs) else q_sub
        for k in range(len(a.pairs)):
            same = (b.pairs[:, 2] == a.pairs[k, 2]) & (b_lab == a_lab[k]) & ~used
            q = np.where(same, np.minimum(q_sub[k], q_obj[k]), -1.0)
            best = int(np.argmax(q)) if len(q) else -1
            if best >= 0 and q[best] >= iou_threshold:
                used[best] = True
                matched += 1
                min_iou = min(min_iou, float(q[best]))
                exact += bool(np.array_equal(a_sub[k], b_sub[best])
                              and np.array_equal(np.nan_to_num(a_obj[k]), np.nan_to_num(b_obj[best])))
            else:
                extra.setdefault(f, []).append(_vo_names(vocab, a.pairs[k, 2], a_lab[k]))
        for k in np.flatnonzero(~used):
            missing.setdefault(f, []).append(_vo_names(vocab, b.pairs[k, 2], b_lab[k]))
    return SplitComparison(only_ours, only_ref, compared, matched, exact, min_iou, missing, extra)


def _vo_names(vocab: LabelSpace, verb: int, obj: int) -> tuple[str, str]:
    return vocab.verbs[int(verb)], vocab.objects[int(obj)] if obj >= 0 else "-"
