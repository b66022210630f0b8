"""Box conventions inside one annotation file: which entries count pixels from 0 and which from
1, told apart per file-name prefix (``HICO_train2015``, ``HICO_test2015``, ...).

A file should hold its format's one convention. The released HICO-DET-SG files do not: entries
from the original test set keep the hicodet toolkit's 1-based pixels, the others are 0-based.
Read as PPDM, such a file is one pixel off on some entries, and writing it in another format
would carry the shift without a word. :func:`box_conventions` says what a file holds (what
``split sg`` recorded next to it, else detected from the boxes); :meth:`BoxConventions.unify`
moves the 1-based entries to 0-based (hoibench's convention, :mod:`hoibench.data`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench.data import HOIDataset
from hoibench.formats.sg_split import recorded_box_conventions

__all__ = [
    "BoxConventionGroup",
    "BoxConventions",
    "PrefixConvention",
    "box_convention_groups",
    "box_conventions",
    "file_prefix",
    "shift_image_boxes",
]


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


def file_prefix(file_name: str) -> str:
    """The file-name stem up to its last ``_`` (``HICO_test2015`` of ``HICO_test2015_00000001.jpg``):
    which original set an entry comes from, in HICO-DET's and COCO's naming."""
    stem = os.path.basename(file_name)
    return stem.rsplit("_", 1)[0] if "_" in stem else "(none)"


def box_convention_groups(ds: HOIDataset) -> list[BoxConventionGroup]:
    """Box-origin statistics per file-name prefix (see :class:`BoxConventionGroup`)."""
    prefixes = [file_prefix(f) for f in ds.file_names]
    uniq = sorted(set(prefixes))
    index = {p: k for k, p in enumerate(uniq)}
    img_group = np.fromiter((index[p] for p in prefixes), np.int64, len(prefixes))
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


def shift_image_boxes(ds: HOIDataset, images: np.ndarray, delta: float) -> HOIDataset:
    """The same dataset with the boxes of the masked images moved by ``delta`` pixels."""
    boxes = ds.boxes.copy()
    boxes[np.asarray(images, dtype=bool)[ds.box_image]] += delta
    return HOIDataset(
        vocab=ds.vocab, name=ds.name, file_names=ds.file_names, widths=ds.widths,
        heights=ds.heights, image_ids=ds.image_ids, box_offsets=ds.box_offsets, boxes=boxes,
        box_labels=ds.box_labels, pair_offsets=ds.pair_offsets, pair_subject=ds.pair_subject,
        pair_object=ds.pair_object, pair_verb=ds.pair_verb,
    )


@dataclass(frozen=True)
class PrefixConvention:
    """The entries of one file-name prefix and their box convention: ``"0-based"``,
    ``"1-based"``, ``"unknown"`` (detection cannot tell) or ``"mixed"`` (recorded: both)."""

    prefix: str
    entries: int
    convention: str


@dataclass(frozen=True)
class BoxConventions:
    """The box conventions of one file's entries, per file-name prefix.

    ``recorded``: what ``split sg`` recorded for the file in its folder's ``stats.json`` (exact);
    otherwise detected from the boxes (:func:`box_convention_groups`).
    """

    file: str
    groups: tuple[PrefixConvention, ...]
    recorded: bool

    @property
    def mixed(self) -> bool:
        """True when writing the file's boxes in one convention would be wrong for some entries:
        detected 0-based and 1-based groups side by side, or (recorded, hence exact) any 1-based
        or mixed group."""
        conv = {g.convention for g in self.groups if g.entries}
        if self.recorded:
            return bool(conv & {"1-based", "mixed"})
        return {"0-based", "1-based"} <= conv

    def describe(self) -> str:
        """``"1,732 HICO_test2015 entries 1-based, 5,911 HICO_train2015 entries 0-based
        (recorded in ...)"``: one clause for a one-line message."""
        parts = ", ".join(f"{g.entries:,} {g.prefix} entries {g.convention}" for g in self.groups if g.entries)
        how = "recorded by split sg in its folder's stats.json" if self.recorded else "detected per file-name prefix"
        return f"{parts} ({how})"

    def unify(self, ds: HOIDataset) -> HOIDataset:
        """``ds`` (read from :attr:`file`) with the 1-based entries moved to 0-based; refuses
        (one line) when a prefix mixes conventions or, in a mixed file, its convention is unknown."""
        undecided = [g for g in self.groups if g.entries and g.convention in ("mixed", "unknown")]
        if undecided and self.mixed:
            g = undecided[0]
            raise FormatError(f"the box convention of the {g.entries:,} {g.prefix} entries is {g.convention}, "
                              "so they cannot be moved to 0-based; rebuild the file with one convention "
                              "(split sg --boxes 0-based)", file=self.file)
        one_based = {g.prefix for g in self.groups if g.convention == "1-based"}
        if not one_based:
            return ds
        mask = np.fromiter((file_prefix(f) in one_based for f in ds.file_names), bool, ds.n_images)
        return shift_image_boxes(ds, mask, -1.0)


def box_conventions(ds: HOIDataset, path: str | os.PathLike[str]) -> BoxConventions:
    """The box conventions of ``ds``, read from ``path``: what ``split sg`` recorded for the file
    (when it sits, unchanged, in the split folder it wrote), else detected per file-name prefix."""
    rec = recorded_box_conventions(path)
    if rec is not None:
        groups = tuple(PrefixConvention(p, int(g["entries"]), str(g["convention"])) for p, g in rec.items())
        return BoxConventions(str(path), groups, recorded=True)
    groups = tuple(PrefixConvention(g.prefix, g.images, g.convention) for g in box_convention_groups(ds))
    return BoxConventions(str(path), groups, recorded=False)
