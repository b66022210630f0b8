"""The vcoco toolkit's ``instances_vcoco_{trainval,test}.json`` (fredzzhang/vcoco).

Layout: ``annotations[i] = {boxes_h, boxes_o, actions, objects, file_name}`` (``actions`` index
``classes``, the 24 action-role names such as ``"hold obj"``; ``objects`` index ``objects``, COCO's
80 names after ``background``), ``images`` (COCO image ids), ``classes``, ``objects``,
``action_to_object``. Boxes are COCO pixel coordinates (0-based), kept as they are. Actions map
onto the 29 PPDM/QPIC action-role verbs of :func:`hoibench.vocab.vcoco`.
"""

from __future__ import annotations

import os
from typing import Any

from hoibench._exceptions import FormatError
from hoibench._io import read_json
from hoibench.data import DatasetBuilder, HOIDataset
from hoibench.formats._common import RecordReader, check_dataset
from hoibench.vocab import COCO, normalize_name, vcoco

__all__ = ["looks_like_vcoco", "read_vcoco"]


def looks_like_vcoco(data: Any) -> bool:
    """True for a vcoco toolkit instances file (``annotations``, ``classes`` and ``images``)."""
    return isinstance(data, dict) and "annotations" in data and "classes" in data and "images" in data


def read_vcoco(path: str | os.PathLike[str], *, data: Any = None, validate: bool = True) -> HOIDataset:
    """Read a vcoco toolkit ``instances_vcoco_*.json`` file."""
    if data is None:
        data = read_json(path)
    if not looks_like_vcoco(data):
        raise FormatError("not a vcoco instances file (needs 'annotations', 'classes', 'images')", file=path)
    vocab = vcoco()
    r = RecordReader(path)
    verb_of = {normalize_name(v.replace("_", " ")): i for i, v in enumerate(vocab.verbs)}
    classes = r.get(data, "classes", None, kind=list)
    try:
        class_to_verb = [verb_of[normalize_name(c)] for c in classes]
    except KeyError as exc:
        raise FormatError(f"unknown action-role class {exc}", file=path, field="classes") from None
    objects = r.get(data, "objects", None, kind=list)
    coco_index = {normalize_name(n): i for i, n in enumerate(COCO.names)}
    obj_map = [coco_index.get(normalize_name(n), -1) for n in objects]
    images = r.get(data, "images", None, kind=list)
    anns = r.get(data, "annotations", None, kind=list)
    if len(images) != len(anns):
        raise FormatError(f"images ({len(images)}) and annotations ({len(anns)}) differ in length", file=path)
    b = DatasetBuilder(vocab)
    for i, (ann, img_id) in enumerate(zip(anns, images)):
        name = r.get(ann, "file_name", i, kind=str, where="annotations")
        bh = r.get(ann, "boxes_h", i, kind=list, where="annotations")
        bo = r.get(ann, "boxes_o", i, kind=list, where="annotations")
        acts = r.get(ann, "actions", i, kind=list, where="annotations")
        objs = r.get(ann, "objects", i, kind=list, where="annotations")
        n = len(bh)
        if not (len(bo) == n and len(acts) == n and len(objs) == n):
            raise r.error(i, "annotations", "boxes_h, boxes_o, actions and objects differ in length")
        boxes: list[list[float]] = []
        labels: list[int] = []
        verbs: list[int] = []
        for k in range(n):
            a = r.integer(acts[k], i, f"annotations.actions[{k}]")
            o = r.integer(objs[k], i, f"annotations.objects[{k}]")
            if not 0 <= a < len(class_to_verb):
                raise r.error(i, f"annotations.actions[{k}]", f"{a} outside 0..{len(class_to_verb) - 1}")
            if not 0 <= o < len(obj_map) or obj_map[o] < 0:
                raise r.error(i, f"annotations.objects[{k}]", f"{o} is not an object category")
            boxes.append(r.box(bh[k], i, f"annotations.boxes_h[{k}]"))
            boxes.append(r.box(bo[k], i, f"annotations.boxes_o[{k}]"))
            labels.extend((vocab.person, obj_map[o]))
            verbs.append(class_to_verb[a])
        b.add_image(name, boxes, labels, list(range(0, 2 * n, 2)), list(range(1, 2 * n, 2)), verbs,
                    image_id=int(img_id))
    ds = b.build(name=str(path))
    return check_dataset(ds, path) if validate else ds
