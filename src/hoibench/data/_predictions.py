"""Detector outputs: scored (subject box, object box, object, verb) triplets per image.

Same box convention as :class:`~hoibench.data.HOIDataset` (0-based pixel xyxy float64) and the
same label space indices (object and verb of the dataset's vocab). Stored column-wise with CSR
offsets per image so that the evaluator works on whole arrays. Prediction *file formats* live in
:mod:`hoibench.formats`; this is only the model.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.data._dataset import _frozen, _offsets
from hoibench.vocab import LabelSpace

__all__ = ["HOIPredictions"]


class HOIPredictions:
    """Scored HOI triplets for a set of images.

    Parameters
    ----------
    vocab:
        Label space of ``objects`` and ``verbs``.
    file_names:
        One entry per image that has predictions (an image may have zero).
    offsets:
        ``offsets[i]:offsets[i+1]`` are image ``i``'s detections.
    boxes_h, boxes_o:
        ``(N, 4)`` subject and object boxes (object rows NaN where ``objects`` is -1).
    objects, verbs:
        ``(N,)`` object category and verb indices (object -1: no object).
    scores:
        ``(N,)`` confidence, higher is better.
    copy:
        The arrays are copied (default) and the copies made read-only. ``False``: arrays that
        already have the dtype are kept and made read-only in place, for callers that built them
        and hold them nowhere else (the readers: no second ~85 MB for 1M detections).
    """

    def __init__(
        self,
        *,
        vocab: LabelSpace,
        file_names: Sequence[str],
        offsets: np.ndarray,
        boxes_h: np.ndarray,
        boxes_o: np.ndarray,
        objects: np.ndarray,
        verbs: np.ndarray,
        scores: np.ndarray,
        name: str = "",
        copy: bool = True,
    ) -> None:
        self.vocab = vocab
        self.name = name
        self.file_names: tuple[str, ...] = tuple(file_names)
        self.offsets = _frozen(offsets, np.int64, copy=copy)
        self.boxes_h = _frozen(np.asarray(boxes_h, dtype=np.float64).reshape(-1, 4), np.float64, copy=copy)
        self.boxes_o = _frozen(np.asarray(boxes_o, dtype=np.float64).reshape(-1, 4), np.float64, copy=copy)
        self.objects = _frozen(objects, np.int64, copy=copy)
        self.verbs = _frozen(verbs, np.int64, copy=copy)
        self.scores = _frozen(scores, np.float64, copy=copy)
        n = len(self.scores)
        if len(self.offsets) != len(self.file_names) + 1 or self.offsets[-1] != n:
            raise ValidationError("offsets disagree with file_names or the number of detections")
        for attr in ("boxes_h", "boxes_o", "objects", "verbs"):
            if len(getattr(self, attr)) != n:
                raise ValidationError(f"{attr} has {len(getattr(self, attr))} rows, expected {n}")

    @classmethod
    def from_arrays(
        cls,
        vocab: LabelSpace,
        file_names: Sequence[str],
        counts: Sequence[int] | np.ndarray,
        boxes_h: np.ndarray,
        boxes_o: np.ndarray,
        objects: np.ndarray,
        verbs: np.ndarray,
        scores: np.ndarray,
        *,
        name: str = "",
        copy: bool = True,
    ) -> HOIPredictions:
        """Build from per-image detection counts and flat arrays (see the class for ``copy``)."""
        return cls(vocab=vocab, file_names=file_names,
                   offsets=_offsets(np.asarray(counts, dtype=np.int64)), boxes_h=boxes_h,
                   boxes_o=boxes_o, objects=objects, verbs=verbs, scores=scores, name=name, copy=copy)

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def n_images(self) -> int:
        return len(self.file_names)

    def __repr__(self) -> str:
        return f"HOIPredictions(name={self.name!r}, images={self.n_images}, detections={len(self)})"

    @functools.cached_property
    def image_index(self) -> np.ndarray:
        """Image row of every detection."""
        return _frozen(np.repeat(np.arange(self.n_images), np.diff(self.offsets)), np.int64, copy=False)

    @functools.cached_property
    def hois(self) -> np.ndarray:
        """HOI class of every detection (``-1`` where (verb, object) is not a class)."""
        return _frozen(self.vocab.hoi_index(self.verbs, self.objects), np.int64, copy=False)

    def index_of(self, file_name: str) -> int:
        """Row of an image by file name (``KeyError`` when absent, as :meth:`HOIDataset.index_of`)."""
        return self._name_index[file_name]

    @functools.cached_property
    def _name_index(self) -> dict[str, int]:
        return {f: i for i, f in enumerate(self.file_names)}

    def image_slice(self, i: int) -> slice:
        """Slice of image ``i``'s detections in the flat arrays."""
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def select(self, keep: np.ndarray) -> HOIPredictions:
        """Keep the detections where ``keep`` is true (images stay, possibly with none)."""
        keep = np.asarray(keep, dtype=bool)
        counts = np.bincount(self.image_index[keep], minlength=self.n_images)
        return HOIPredictions.from_arrays(self.vocab, self.file_names, counts, self.boxes_h[keep],
                                          self.boxes_o[keep], self.objects[keep], self.verbs[keep],
                                          self.scores[keep], name=self.name)
