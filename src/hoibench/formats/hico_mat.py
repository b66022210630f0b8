"""HICO-DET's original MATLAB annotations ``anno_bbox.mat`` (ywchao, HICO-DET release).

Variables: ``bbox_train`` / ``bbox_test`` (struct arrays with ``filename``, ``size``
(``width``, ``height``, ``depth``) and ``hoi``: a struct array with ``id`` (1-based HOI class),
``bboxhuman`` and ``bboxobject`` (struct arrays with ``x1``, ``x2``, ``y1``, ``y2``, 1-based),
``connection`` (k×2, 1-based human/object indices) and ``invis`` (1: no boxes)). Each row of
``connection`` of a visible ``hoi`` entry is one pair, which is how the hicodet toolkit and the
official evaluation count them. Boxes are shifted by −1.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import read_mat
from hoibench.data import DatasetBuilder, HOIDataset
from hoibench.formats._common import check_dataset
from hoibench.vocab import hico_det

__all__ = ["read_hico_mat"]


def _as_list(x: Any) -> list[Any]:
    if isinstance(x, np.ndarray):
        return list(x.reshape(-1))
    return [x]


def _box(s: Any) -> list[float]:
    return [float(s.x1) - 1.0, float(s.y1) - 1.0, float(s.x2) - 1.0, float(s.y2) - 1.0]


def read_hico_mat(path: str | os.PathLike[str], *, split: str = "train", validate: bool = True) -> HOIDataset:
    """Read ``bbox_train`` or ``bbox_test`` of HICO-DET's ``anno_bbox.mat``."""
    if split not in ("train", "test"):
        raise ConfigError(f"split must be one of ['train', 'test']; got {split!r}")
    mat = read_mat(path, squeeze_me=True, struct_as_record=False)
    key = f"bbox_{split}"
    if key not in mat:
        raise FormatError(f"no variable {key!r} (has {sorted(k for k in mat if not k.startswith('__'))})",
                          file=path)
    vocab = hico_det()
    hv = vocab.hoi_verb_object
    b = DatasetBuilder(vocab)
    for i, rec in enumerate(_as_list(mat[key])):
        try:
            name = str(rec.filename)
            size = rec.size
            width, height = int(size.width), int(size.height)
            boxes: list[list[float]] = []
            labels: list[int] = []
            subjects: list[int] = []
            objects: list[int] = []
            verbs: list[int] = []
            for k, hoi in enumerate(_as_list(rec.hoi)):
                if int(np.asarray(hoi.invis).reshape(-1)[0]) == 1:
                    continue
                cls = int(hoi.id) - 1
                if not 0 <= cls < len(hv):
                    raise FormatError(f"HOI id {cls + 1} outside 1..600", file=path, record=i,
                                      field=f"hoi[{k}].id")
                hum = [_box(s) for s in _as_list(hoi.bboxhuman)]
                obj = [_box(s) for s in _as_list(hoi.bboxobject)]
                conn = np.asarray(hoi.connection, dtype=np.int64).reshape(-1, 2)
                h0 = len(boxes)
                boxes.extend(hum)
                labels.extend([vocab.person] * len(hum))
                o0 = len(boxes)
                boxes.extend(obj)
                labels.extend([int(hv[cls, 1])] * len(obj))
                for hi, oi in conn:
                    if not (1 <= hi <= len(hum) and 1 <= oi <= len(obj)):
                        raise FormatError(f"connection ({hi}, {oi}) refers to no box", file=path,
                                          record=i, field=f"hoi[{k}].connection")
                    subjects.append(h0 + int(hi) - 1)
                    objects.append(o0 + int(oi) - 1)
                    verbs.append(int(hv[cls, 0]))
        except AttributeError as exc:
            raise FormatError(f"missing struct field ({exc})", file=path, record=i, field=key) from None
        b.add_image(name, boxes, labels, subjects, objects, verbs, width=width, height=height)
    ds = b.build(name=f"{path}:{split}")
    return check_dataset(ds, path) if validate else ds
