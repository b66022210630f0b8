"""The core data model: an HOI dataset of images, boxes and interactions, stored column-wise.

Box convention (the only one inside hoibench)
---------------------------------------------
Boxes are ``(x1, y1, x2, y2)`` float64 in **0-based pixel coordinates**, the convention of
COCO, PPDM/QPIC ``trainval_hico.json`` and every DETR-style detector: the top-left pixel's
corner is (0, 0). HICO-DET's original MATLAB annotations (``anno_bbox.mat``), the hicodet
toolkit's ``instances_*.json`` and HAKE number pixels from 1; their readers subtract 1 and their
writers add it back, so round trips are exact. Conversion happens in ``hoibench.formats`` only.

Layout
------
Images are rows; boxes and interactions ("pairs") are stored in flat arrays with CSR offsets
(``box_offsets[i]:box_offsets[i+1]`` are image ``i``'s boxes). A pair refers to its subject and
object boxes by *global* box index; ``object == -1`` means "no object" (V-COCO agent-only
actions). This makes whole-dataset statistics single numpy expressions, and per-image access a
slice (:meth:`HOIDataset.image`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.vocab import LabelSpace

__all__ = ["HOIDataset", "HOIImage", "concat_ranges"]


@dataclass(frozen=True, eq=False)
class HOIImage:
    """One image with its boxes and interactions (box indices local to the image).

    ``pairs`` is an ``(n, 3)`` int array of ``(subject, object, verb)``; ``object`` is ``-1``
    when the interaction has no object.
    """

    file_name: str
    width: int
    height: int
    boxes: np.ndarray  # (k, 4) float64, 0-based xyxy
    labels: np.ndarray  # (k,) int64 object index
    pairs: np.ndarray  # (n, 3) int64 (subject, object, verb)
    image_id: int = -1

    @classmethod
    def from_lists(
        cls,
        file_name: str,
        boxes: Sequence[Sequence[float]],
        labels: Sequence[int],
        pairs: Sequence[Sequence[int]],
        *,
        width: int = 0,
        height: int = 0,
        image_id: int = -1,
    ) -> HOIImage:
        """Build an image from plain Python lists (used by format readers and tests)."""
        b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        lab = np.asarray(labels, dtype=np.int64).reshape(-1)
        p = np.asarray(pairs, dtype=np.int64).reshape(-1, 3)
        return cls(file_name, int(width), int(height), b, lab, p, int(image_id))

    @property
    def subject_boxes(self) -> np.ndarray:
        return self.boxes[self.pairs[:, 0]]

    @property
    def object_boxes(self) -> np.ndarray:
        """Object box of each pair (NaN rows where a pair has no object)."""
        out = np.full((len(self.pairs), 4), np.nan)
        has = self.pairs[:, 1] >= 0
        out[has] = self.boxes[self.pairs[has, 1]]
        return out

    @property
    def object_labels(self) -> np.ndarray:
        """Object category of each pair (``-1`` where a pair has no object)."""
        o = self.pairs[:, 1]
        return np.where(o >= 0, self.labels[np.maximum(o, 0)] if len(self.labels) else -1, -1)


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


class HOIDataset:
    """An HOI dataset: images (file name, width, height), boxes with categories, interactions.

    Build one with :meth:`from_images` (or a reader in :mod:`hoibench.formats`); derive new ones
    with :meth:`subset`, :meth:`filter_pairs` and :meth:`concat`. Instances are immutable: the
    arrays are marked read-only.

    Parameters
    ----------
    vocab:
        The label space that box labels and verbs index into.
    file_names, widths, heights, image_ids:
        One entry per image; width/height 0 and image id -1 mean "unknown".
    box_offsets, boxes, box_labels:
        CSR layout of boxes (0-based xyxy float64, see the module docstring).
    pair_offsets, pair_subject, pair_object, pair_verb:
        CSR layout of interactions; subject/object are global box indices (object -1: none).
    name:
        A short description (the file or dataset it came from).
    """

    def __init__(
        self,
        *,
        vocab: LabelSpace,
        file_names: Sequence[str],
        widths: np.ndarray,
        heights: np.ndarray,
        image_ids: np.ndarray,
        box_offsets: np.ndarray,
        boxes: np.ndarray,
        box_labels: np.ndarray,
        pair_offsets: np.ndarray,
        pair_subject: np.ndarray,
        pair_object: np.ndarray,
        pair_verb: np.ndarray,
        name: str = "",
    ) -> None:
        self.vocab = vocab
        self.name = name
        self.file_names: tuple[str, ...] = tuple(file_names)
        self.widths = _frozen(widths, np.int64)
        self.heights = _frozen(heights, np.int64)
        self.image_ids = _frozen(image_ids, np.int64)
        self.box_offsets = _frozen(box_offsets, np.int64)
        self.boxes = _frozen(np.asarray(boxes, dtype=np.float64).reshape(-1, 4), np.float64)
        self.box_labels = _frozen(box_labels, np.int64)
        self.pair_offsets = _frozen(pair_offsets, np.int64)
        self.pair_subject = _frozen(pair_subject, np.int64)
        self.pair_object = _frozen(pair_object, np.int64)
        self.pair_verb = _frozen(pair_verb, np.int64)
        n = len(self.file_names)
        for attr, size in (("widths", n), ("heights", n), ("image_ids", n),
                           ("box_offsets", n + 1), ("pair_offsets", n + 1)):
            if len(getattr(self, attr)) != size:
                raise ValidationError(f"{attr} has {len(getattr(self, attr))} entries, expected {size}")
        if self.box_offsets[-1] != len(self.boxes) or len(self.box_labels) != len(self.boxes):
            raise ValidationError("box arrays disagree with box_offsets")
        p = len(self.pair_subject)
        if self.pair_offsets[-1] != p or len(self.pair_object) != p or len(self.pair_verb) != p:
            raise ValidationError("pair arrays disagree with pair_offsets")

    def content_hash(self) -> str:
        """SHA-256 of everything the dataset holds (label space, images, boxes, pairs; not its
        ``name``): what provenance records of an input, equal for equal data whatever the file
        format it was read from."""
        import hashlib

        h = hashlib.sha256(self.vocab.name.encode())
        h.update("\x00".join(self.file_names).encode("utf-8", "surrogatepass"))
        for arr in (self.widths, self.heights, self.image_ids, self.box_offsets, self.boxes,
                    self.box_labels, self.pair_offsets, self.pair_subject, self.pair_object,
                    self.pair_verb):
            h.update(np.ascontiguousarray(arr).tobytes())
        return h.hexdigest()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_images(cls, vocab: LabelSpace, images: Iterable[HOIImage], *, name: str = "") -> HOIDataset:
        """Assemble a dataset from per-image records (box indices local to each image)."""
        images = list(images)
        n_boxes = np.fromiter((len(im.boxes) for im in images), dtype=np.int64, count=len(images))
        n_pairs = np.fromiter((len(im.pairs) for im in images), dtype=np.int64, count=len(images))
        box_offsets = _offsets(n_boxes)
        pair_offsets = _offsets(n_pairs)
        if images:
            boxes = np.concatenate([im.boxes.reshape(-1, 4) for im in images])
            labels = np.concatenate([im.labels.reshape(-1) for im in images])
            pairs = np.concatenate([im.pairs.reshape(-1, 3) for im in images])
        else:
            boxes, labels, pairs = np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros((0, 3), np.int64)
        base = np.repeat(box_offsets[:-1], n_pairs)
        obj = pairs[:, 1]
        return cls(
            vocab=vocab,
            name=name,
            file_names=[im.file_name for im in images],
            widths=np.fromiter((im.width for im in images), np.int64, len(images)),
            heights=np.fromiter((im.height for im in images), np.int64, len(images)),
            image_ids=np.fromiter((im.image_id for im in images), np.int64, len(images)),
            box_offsets=box_offsets,
            boxes=boxes,
            box_labels=labels,
            pair_offsets=pair_offsets,
            pair_subject=pairs[:, 0] + base,
            pair_object=np.where(obj >= 0, obj + base, -1),
            pair_verb=pairs[:, 2],
        )

    @classmethod
    def concat(cls, datasets: Sequence[HOIDataset], *, name: str = "") -> HOIDataset:
        """Images of several datasets (same label space) one after the other."""
        if not datasets:
            raise ValidationError("concat needs at least one dataset")
        vocab = datasets[0].vocab
        for d in datasets[1:]:
            if d.vocab is not vocab and d.vocab.name != vocab.name:
                raise ValidationError(f"cannot concatenate {vocab.name} with {d.vocab.name} datasets")
        box_shift = np.cumsum([0] + [d.n_boxes for d in datasets[:-1]])
        pair_shift = np.cumsum([0] + [d.n_pairs for d in datasets[:-1]])
        return cls(
            vocab=vocab,
            name=name or "+".join(d.name for d in datasets),
            file_names=[f for d in datasets for f in d.file_names],
            widths=np.concatenate([d.widths for d in datasets]),
            heights=np.concatenate([d.heights for d in datasets]),
            image_ids=np.concatenate([d.image_ids for d in datasets]),
            box_offsets=np.concatenate(
                [[0]] + [d.box_offsets[1:] + s for d, s in zip(datasets, box_shift)]
            ),
            boxes=np.concatenate([d.boxes for d in datasets]),
            box_labels=np.concatenate([d.box_labels for d in datasets]),
            pair_offsets=np.concatenate(
                [[0]] + [d.pair_offsets[1:] + s for d, s in zip(datasets, pair_shift)]
            ),
            pair_subject=np.concatenate([d.pair_subject + s for d, s in zip(datasets, box_shift)]),
            pair_object=np.concatenate(
                [np.where(d.pair_object >= 0, d.pair_object + s, -1) for d, s in zip(datasets, box_shift)]
            ),
            pair_verb=np.concatenate([d.pair_verb for d in datasets]),
        )

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        return len(self.file_names)

    @property
    def n_images(self) -> int:
        return len(self.file_names)

    @property
    def n_boxes(self) -> int:
        return len(self.boxes)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_verb)

    def __repr__(self) -> str:
        return (
            f"HOIDataset(name={self.name!r}, vocab={self.vocab.name!r}, images={self.n_images}, "
            f"boxes={self.n_boxes}, pairs={self.n_pairs})"
        )

    # ------------------------------------------------------------------ per-image access
    def image(self, i: int) -> HOIImage:
        """Image ``i`` with its boxes and pairs (box indices local to the image)."""
        if not -self.n_images <= i < self.n_images:
            raise IndexError(f"image index {i} out of range for {self.n_images} images")
        i %= self.n_images
        b0, b1 = self.box_offsets[i], self.box_offsets[i + 1]
        p0, p1 = self.pair_offsets[i], self.pair_offsets[i + 1]
        obj = self.pair_object[p0:p1]
        pairs = np.stack(
            [self.pair_subject[p0:p1] - b0, np.where(obj >= 0, obj - b0, -1), self.pair_verb[p0:p1]],
            axis=1,
        ).reshape(-1, 3)
        return HOIImage(
            file_name=self.file_names[i],
            width=int(self.widths[i]),
            height=int(self.heights[i]),
            boxes=self.boxes[b0:b1],
            labels=self.box_labels[b0:b1],
            pairs=pairs,
            image_id=int(self.image_ids[i]),
        )

    def __iter__(self) -> Iterator[HOIImage]:
        for i in range(self.n_images):
            yield self.image(i)

    def __getitem__(self, i: int) -> HOIImage:
        return self.image(i)

    def index_of(self, file_name: str) -> int:
        """Row of an image by file name (``KeyError`` when absent)."""
        return self._name_index[file_name]

    @functools.cached_property
    def _name_index(self) -> dict[str, int]:
        return {f: i for i, f in enumerate(self.file_names)}

    # ------------------------------------------------------------------ columnar views
    @functools.cached_property
    def box_image(self) -> np.ndarray:
        """Image row of every box."""
        return _frozen(np.repeat(np.arange(self.n_images), np.diff(self.box_offsets)), np.int64)

    @functools.cached_property
    def pair_image(self) -> np.ndarray:
        """Image row of every pair."""
        return _frozen(np.repeat(np.arange(self.n_images), np.diff(self.pair_offsets)), np.int64)

    @functools.cached_property
    def pair_object_label(self) -> np.ndarray:
        """Object category of every pair (``-1`` where the pair has no object)."""
        lab = np.full(self.n_pairs, -1, dtype=np.int64)
        has = self.pair_object >= 0
        lab[has] = self.box_labels[self.pair_object[has]]
        return _frozen(lab, np.int64)

    @functools.cached_property
    def pair_hoi(self) -> np.ndarray:
        """HOI class of every pair (``-1`` where (verb, object) is not a class of the vocab)."""
        return _frozen(self.vocab.hoi_index(self.pair_verb, self.pair_object_label), np.int64)

    @property
    def pair_subject_boxes(self) -> np.ndarray:
        return self.boxes[self.pair_subject]

    @property
    def pair_object_boxes(self) -> np.ndarray:
        """Object box of every pair (NaN rows for pairs without object)."""
        out = np.full((self.n_pairs, 4), np.nan)
        has = self.pair_object >= 0
        out[has] = self.boxes[self.pair_object[has]]
        return out

    @property
    def pairs_per_image(self) -> np.ndarray:
        return np.diff(self.pair_offsets)

    # ------------------------------------------------------------------ statistics
    def combinations(self) -> np.ndarray:
        """Distinct (verb, object) combinations with an object, sorted, as an ``(n, 2)`` array."""
        has = self.pair_object_label >= 0
        vo = np.stack([self.pair_verb[has], self.pair_object_label[has]], axis=1)
        return np.unique(vo, axis=0) if len(vo) else np.zeros((0, 2), np.int64)

    def hoi_counts(self) -> np.ndarray:
        """Pairs per HOI class of the vocab (pairs that are no class are not counted)."""
        h = self.pair_hoi
        return np.bincount(h[h >= 0], minlength=self.vocab.n_hois)

    def summary(self) -> dict[str, int]:
        """The counts ``hoibench data info`` prints."""
        return {
            "images": self.n_images,
            "empty_images": int((self.pairs_per_image == 0).sum()),
            "pairs": self.n_pairs,
            "boxes": self.n_boxes,
            "combinations": len(self.combinations()),
            "objects": len(np.unique(self.pair_object_label[self.pair_object_label >= 0])),
            "verbs": len(np.unique(self.pair_verb)),
            "pairs_without_object": int((self.pair_object < 0).sum()),
        }

    # ------------------------------------------------------------------ derivation
    def subset(self, images: Sequence[int] | np.ndarray, *, name: str = "") -> HOIDataset:
        """The given image rows (in the given order, boolean masks allowed)."""
        idx = np.asarray(images)
        if idx.dtype == bool:
            if len(idx) != self.n_images:
                raise ValidationError(f"mask has {len(idx)} entries for {self.n_images} images")
            idx = np.flatnonzero(idx)
        idx = idx.astype(np.int64)
        nb = np.diff(self.box_offsets)[idx]
        npairs = np.diff(self.pair_offsets)[idx]
        box_sel = concat_ranges(self.box_offsets[idx], nb)
        pair_sel = concat_ranges(self.pair_offsets[idx], npairs)
        box_offsets = _offsets(nb)
        # a pair's boxes move with its own copy of the image (an image given twice is two
        # images, each pointing at its own boxes): shift by the image's old and new box start
        shift = np.repeat(box_offsets[:-1] - self.box_offsets[idx], npairs)
        obj = self.pair_object[pair_sel]
        return HOIDataset(
            vocab=self.vocab,
            name=name or self.name,
            file_names=[self.file_names[i] for i in idx],
            widths=self.widths[idx],
            heights=self.heights[idx],
            image_ids=self.image_ids[idx],
            box_offsets=box_offsets,
            boxes=self.boxes[box_sel],
            box_labels=self.box_labels[box_sel],
            pair_offsets=_offsets(npairs),
            pair_subject=self.pair_subject[pair_sel] + shift,
            pair_object=np.where(obj >= 0, obj + shift, -1),
            pair_verb=self.pair_verb[pair_sel],
        )

    def filter_pairs(self, keep: np.ndarray, *, prune_boxes: bool = False, name: str = "") -> HOIDataset:
        """Keep the pairs where ``keep`` is true; images stay (possibly empty).

        With ``prune_boxes`` boxes no kept pair refers to are dropped too.
        """
        keep = np.asarray(keep, dtype=bool)
        if len(keep) != self.n_pairs:
            raise ValidationError(f"mask has {len(keep)} entries for {self.n_pairs} pairs")
        npairs = np.bincount(self.pair_image[keep], minlength=self.n_images)
        subj, obj = self.pair_subject[keep], self.pair_object[keep]
        boxes, labels, box_offsets = self.boxes, self.box_labels, self.box_offsets
        if prune_boxes:
            used = np.zeros(self.n_boxes, dtype=bool)
            used[subj] = True
            used[obj[obj >= 0]] = True
            remap = np.cumsum(used) - 1
            subj = remap[subj]
            obj = np.where(obj >= 0, remap[np.maximum(obj, 0)], -1)
            boxes, labels = boxes[used], labels[used]
            box_offsets = _offsets(np.bincount(self.box_image[used], minlength=self.n_images))
        return HOIDataset(
            vocab=self.vocab,
            name=name or self.name,
            file_names=self.file_names,
            widths=self.widths,
            heights=self.heights,
            image_ids=self.image_ids,
            box_offsets=box_offsets,
            boxes=boxes,
            box_labels=labels,
            pair_offsets=_offsets(npairs),
            pair_subject=subj,
            pair_object=obj,
            pair_verb=self.pair_verb[keep],
        )

    def drop_empty_images(self) -> HOIDataset:
        """Only the images with at least one pair."""
        return self.subset(np.flatnonzero(self.pairs_per_image > 0))

    # ------------------------------------------------------------------ comparison
    def equals(self, other: HOIDataset, *, atol: float = 0.0) -> bool:
        """Same images, sizes, ids, boxes, labels and pairs (boxes compared within ``atol``)."""
        return not self.differences(other, atol=atol)

    def differences(self, other: HOIDataset, *, atol: float = 0.0) -> list[str]:
        """Human-readable list of the ways two datasets differ (empty when equal)."""
        out: list[str] = []
        if self.vocab.name != other.vocab.name:
            out.append(f"label space {self.vocab.name} != {other.vocab.name}")
        if self.file_names != other.file_names:
            out.append("file names differ")
            return out
        for attr in ("widths", "heights", "image_ids", "box_offsets", "box_labels", "pair_offsets",
                     "pair_subject", "pair_object", "pair_verb"):
            if not np.array_equal(getattr(self, attr), getattr(other, attr)):
                out.append(f"{attr} differ")
        if self.boxes.shape != other.boxes.shape or not np.allclose(
            self.boxes, other.boxes, atol=atol, rtol=0, equal_nan=True
        ):
            out.append("boxes differ")
        return out


def concat_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` for each (start, count), without a Python loop."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    rep = np.repeat(np.asarray(starts, dtype=np.int64) - (ends - counts), counts)
    return rep + np.arange(total, dtype=np.int64)


def _frozen(a: np.ndarray | Sequence[int], dtype: type, *, copy: bool = True) -> np.ndarray:
    """A read-only array of ``dtype``: a copy, or (``copy=False``) ``a`` itself where it already
    has that dtype, made read-only in place (for arrays that nobody else holds)."""
    arr = np.array(a, dtype=dtype, copy=True if copy else None)
    arr.setflags(write=False)
    return arr
