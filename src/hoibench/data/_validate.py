"""Structural checks of a dataset: box coordinates, ids in range, dangling references, duplicates."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from hoibench.data._dataset import HOIDataset

__all__ = ["Problem", "validate_dataset"]


@dataclass(frozen=True)
class Problem:
    """One problem found by :func:`validate_dataset`: image row, field and what is wrong."""

    record: int
    field: str
    problem: str

    def format(self, file: str = "") -> str:
        head = f"{file}: " if file else ""
        return f"{head}record {self.record}: {self.field}: {self.problem}"


def validate_dataset(ds: HOIDataset, *, limit: int | None = None, geometry: bool = False) -> list[Problem]:
    """Return every structural problem of ``ds`` (at most ``limit``), in image order.

    Checks: finite box coordinates; x2 >= x1 and y2 >= y1; box labels and verbs inside the label
    space; subject boxes labelled ``person``; pair box references inside the pair's own image;
    duplicate image file names; negative image sizes. ``geometry`` (``hoibench data validate``)
    also checks that every box lies inside its image where the size is known (0-based pixel
    ``xyxy``: ``0 <= x1``, ``x2 <= width``; the readers do not refuse such files, which some
    released annotations are).
    """
    problems: list[Problem] = []
    box_img = ds.box_image
    pair_img = ds.pair_image
    b = ds.boxes
    finite = np.isfinite(b).all(axis=1)
    for k in np.flatnonzero(~finite):
        problems.append(Problem(int(box_img[k]), f"boxes[{k - ds.box_offsets[box_img[k]]}]",
                                f"non-finite coordinate {b[k].tolist()}"))
    inverted = finite & ((b[:, 2] < b[:, 0]) | (b[:, 3] < b[:, 1]))
    for k in np.flatnonzero(inverted):
        problems.append(Problem(int(box_img[k]), f"boxes[{k - ds.box_offsets[box_img[k]]}]",
                                f"inverted box (x2 < x1 or y2 < y1): {b[k].tolist()}"))
    bad_label = (ds.box_labels < 0) | (ds.box_labels >= ds.vocab.n_objects)
    for k in np.flatnonzero(bad_label):
        problems.append(Problem(int(box_img[k]), f"boxes[{k - ds.box_offsets[box_img[k]]}].category",
                                f"object id {ds.box_labels[k]} outside 0..{ds.vocab.n_objects - 1}"))
    bad_verb = (ds.pair_verb < 0) | (ds.pair_verb >= ds.vocab.n_verbs)
    for k in np.flatnonzero(bad_verb):
        problems.append(Problem(int(pair_img[k]), f"pairs[{k - ds.pair_offsets[pair_img[k]]}].verb",
                                f"verb id {ds.pair_verb[k]} outside 0..{ds.vocab.n_verbs - 1}"))
    lo = ds.box_offsets[pair_img]
    hi = ds.box_offsets[pair_img + 1]
    for name, ref, allow_none in (("subject", ds.pair_subject, False), ("object", ds.pair_object, True)):
        none = ref < 0
        dangling = ((ref < lo) | (ref >= hi)) & ~(none & allow_none)
        for k in np.flatnonzero(dangling):
            problems.append(Problem(int(pair_img[k]), f"pairs[{k - ds.pair_offsets[pair_img[k]]}].{name}",
                                    "refers to a box that does not exist in this image"))
    ok_subject = (ds.pair_subject >= lo) & (ds.pair_subject < hi)
    not_person = ok_subject & (ds.box_labels[np.where(ok_subject, ds.pair_subject, 0)] != ds.vocab.person)
    for k in np.flatnonzero(not_person):
        problems.append(Problem(int(pair_img[k]), f"pairs[{k - ds.pair_offsets[pair_img[k]]}].subject",
                                "subject box is not labelled person"))
    for name, count in Counter(ds.file_names).items():
        if count > 1:
            first = ds.file_names.index(name)
            problems.append(Problem(first, "file_name", f"duplicate image {name!r} ({count} records)"))
    if geometry and len(b):
        w, h = ds.widths[box_img], ds.heights[box_img]
        known = (w > 0) & (h > 0) & finite
        outside = known & ((b[:, 0] < 0) | (b[:, 1] < 0) | (b[:, 2] > w) | (b[:, 3] > h))
        for k in np.flatnonzero(outside):
            problems.append(Problem(int(box_img[k]), f"boxes[{k - ds.box_offsets[box_img[k]]}]",
                                    f"box {b[k].tolist()} lies outside the {w[k]}x{h[k]} image"))
    for i in np.flatnonzero((ds.widths < 0) | (ds.heights < 0)):
        problems.append(Problem(int(i), "size", "negative width or height"))
    problems.sort(key=lambda p: p.record)
    return problems[:limit] if limit is not None else problems
