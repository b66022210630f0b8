"""Fast assembly of an :class:`HOIDataset` from flat Python lists (used by format readers)."""

from __future__ import annotations

import numpy as np

from hoibench.data._dataset import HOIDataset, _offsets
from hoibench.vocab import LabelSpace

__all__ = ["DatasetBuilder"]


class DatasetBuilder:
    """Accumulate images one by one, then build the columnar dataset in one go.

    Box indices passed to :meth:`add_image` are local to the image; reading 150k pairs this way
    costs a few list appends per pair and one numpy conversion at the end.
    """

    def __init__(self, vocab: LabelSpace) -> None:
        self.vocab = vocab
        self.file_names: list[str] = []
        self.widths: list[int] = []
        self.heights: list[int] = []
        self.image_ids: list[int] = []
        self.n_boxes: list[int] = []
        self.n_pairs: list[int] = []
        self.boxes: list[list[float]] = []
        self.labels: list[int] = []
        self.subjects: list[int] = []
        self.objects: list[int] = []
        self.verbs: list[int] = []

    def add_image(
        self,
        file_name: str,
        boxes: list[list[float]],
        labels: list[int],
        subjects: list[int],
        objects: list[int],
        verbs: list[int],
        *,
        width: int = 0,
        height: int = 0,
        image_id: int = -1,
    ) -> None:
        """Append one image; ``objects`` holds -1 for "no object"."""
        base = len(self.boxes)
        self.file_names.append(file_name)
        self.widths.append(width)
        self.heights.append(height)
        self.image_ids.append(image_id)
        self.n_boxes.append(len(boxes))
        self.n_pairs.append(len(verbs))
        self.boxes.extend(boxes)
        self.labels.extend(labels)
        self.subjects.extend([s + base for s in subjects])
        self.objects.extend([o + base if o >= 0 else -1 for o in objects])
        self.verbs.extend(verbs)

    def build(self, *, name: str = "") -> HOIDataset:
        """The columnar :class:`HOIDataset` of everything added so far."""
        boxes = np.asarray(self.boxes, dtype=np.float64).reshape(-1, 4)
        return HOIDataset(
            vocab=self.vocab,
            name=name,
            file_names=self.file_names,
            widths=np.asarray(self.widths, dtype=np.int64),
            heights=np.asarray(self.heights, dtype=np.int64),
            image_ids=np.asarray(self.image_ids, dtype=np.int64),
            box_offsets=_offsets(np.asarray(self.n_boxes, dtype=np.int64)),
            boxes=boxes,
            box_labels=np.asarray(self.labels, dtype=np.int64),
            pair_offsets=_offsets(np.asarray(self.n_pairs, dtype=np.int64)),
            pair_subject=np.asarray(self.subjects, dtype=np.int64),
            pair_object=np.asarray(self.objects, dtype=np.int64),
            pair_verb=np.asarray(self.verbs, dtype=np.int64),
        )
