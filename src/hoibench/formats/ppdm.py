"""The PPDM/QPIC annotation layout: ``trainval_hico.json``, ``test_hico.json`` and the V-COCO
variant (``trainval_vcoco.json``, ``test_vcoco.json``).

This is what HICO-DET-SG, QPIC, CDN, GEN-VLKT, HOTR and STIP train on. A file is a list of
``{file_name, img_id?, annotations: [{bbox, category_id}], hoi_annotation: [{subject_id,
object_id, category_id, hoi_category_id?}]}``: ``bbox`` is 0-based xyxy (our convention, no
shift), ``annotations[].category_id`` a COCO-91 id, ``hoi_annotation[].category_id`` the verb:
1-based for HICO-DET's 117 verbs, **0-based** for the 29 V-COCO action-roles (as QPIC's
``hico.py`` / ``vcoco.py`` read them), ``object_id`` −1 for no object. A V-COCO entry without
``img_id`` (the released V-COCO-SG files) takes the COCO id from its file name.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench._io import atomic_write_json, read_json
from hoibench.data import DatasetBuilder, HOIDataset
from hoibench.formats import _evidence as _ev
from hoibench.formats._common import RecordReader, check_dataset, plain_number
from hoibench.vocab import LabelSpace, hico_det, vcoco

__all__ = [
    "guess_ppdm_vocab",
    "image_id_from_name",
    "looks_like_ppdm",
    "read_ppdm",
    "to_ppdm_list",
    "verb_id_base",
    "write_ppdm",
]


def looks_like_ppdm(data: Any) -> bool:
    """True for a PPDM/QPIC annotation list (entries with ``file_name`` and ``hoi_annotation``)."""
    if not isinstance(data, list):
        return False
    if not data:
        return True
    first = data[0]
    return isinstance(first, dict) and "file_name" in first and "hoi_annotation" in first


def guess_ppdm_vocab(data: list[Any], path: str | os.PathLike[str] = "<annotations>") -> LabelSpace:
    """HICO-DET or V-COCO from the file names (``HICO_``/``COCO_``), else from the verb ids.

    Ids settle it where only one layout has them (0: V-COCO's 0-based ids; 29 and up: HICO-DET's
    1-based 117 verbs). Ids 1..28 fit both: the evidence is then the share of HOI annotations that
    are classes of each label space (with the object box's COCO label; no object fits V-COCO's
    agent-only actions only), weighed by :func:`~hoibench.formats._evidence.choose`, which refuses
    a file that fits neither clearly better."""
    for entry in data[:50]:
        name = entry.get("file_name", "") if isinstance(entry, dict) else ""
        if isinstance(name, str) and name.startswith("HICO_"):
            return hico_det()
        if isinstance(name, str) and name.startswith("COCO_"):
            return vcoco()
    verbs: list[int] = []
    coco: list[int] = []  # the object box's COCO-91 id; 0: no object (or none readable)
    for entry in data:
        if not isinstance(entry, dict):
            continue
        anns = entry.get("annotations")
        anns = anns if isinstance(anns, list) else []
        for h in entry.get("hoi_annotation", []) or []:
            if isinstance(h, dict) and isinstance(h.get("category_id"), int):
                verbs.append(h["category_id"])
                o = h.get("object_id")
                a = anns[o] if isinstance(o, int) and 0 <= o < len(anns) else None
                c = a.get("category_id") if isinstance(a, dict) else None
                coco.append(c if isinstance(c, int) and 0 < c < 92 else 0)
    if not verbs or max(verbs) < 1:
        return vcoco()
    if max(verbs) >= vcoco().n_verbs:
        return hico_det()
    v, c = np.asarray(verbs), np.asarray(coco)
    if v.min() < 1:  # HICO-DET's ids start at 1 (the reader names an id out of its range)
        return vcoco()
    hico, vc = hico_det(), vcoco()
    hico_fit = float(np.mean(hico.hoi_index(v - 1, hico.object_from_coco91(c)) >= 0))
    vcoco_obj = vc.object_from_coco91(c)
    vcoco_fit = float(np.mean((vc.hoi_index(v, vcoco_obj) >= 0) | (c == 0)))
    name, _ = _ev.choose(_ev.Reading(hico.name, hico_fit, "are HICO-DET classes as 1-based verb ids"),
                         _ev.Reading(vc.name, vcoco_fit, "are V-COCO action-roles as 0-based ids"),
                         records=f"{len(v):,} HOI annotations with verb ids 1..{int(v.max())}", path=path,
                         option="the label space",
                         remedy="name the images HICO_*/COCO_*, or read it with read_dataset(..., "
                                "vocab=get_label_space('hico-det'|'v-coco'))")
    return hico if name == hico.name else vc


_TRAILING_DIGITS = re.compile(r"(\d+)$")


def image_id_from_name(file_name: str) -> int:
    """COCO's image id from a file name such as ``COCO_train2014_000000226162.jpg`` (226162),
    the trailing digits of the stem; -1 when there are none. V-COCO-SG's released files carry no
    ``img_id``, and vsrl_eval-style detections name images by this id."""
    m = _TRAILING_DIGITS.search(os.path.splitext(os.path.basename(file_name))[0])
    return int(m.group(1)) if m else -1


def verb_id_base(vocab: LabelSpace) -> int:
    """First verb id of the layout: 1 for HICO-DET, 0 for V-COCO (QPIC's conventions)."""
    return 0 if vocab.name == "v-coco" else 1


def read_ppdm(
    path: str | os.PathLike[str],
    *,
    vocab: LabelSpace | None = None,
    data: Any = None,
    validate: bool = True,
) -> HOIDataset:
    """Read a PPDM/QPIC-layout file (HICO-DET or V-COCO, guessed unless ``vocab`` is given)."""
    if data is None:
        data = read_json(path)
    if not looks_like_ppdm(data):
        raise FormatError("not a PPDM/QPIC annotation file (needs a list of entries with "
                          "'file_name' and 'hoi_annotation')", file=path)
    vocab = vocab or guess_ppdm_vocab(data, path)
    first_verb = verb_id_base(vocab)
    r = RecordReader(path)
    coco_to_obj = np.full(92, -1, dtype=np.int64)
    coco_to_obj[vocab.object_to_coco91(np.arange(vocab.n_objects))] = np.arange(vocab.n_objects)
    c2o = coco_to_obj.tolist()
    hoi_of = {(v, o): h for h, (v, o) in enumerate(vocab.hoi_verb_object.tolist())}
    b = DatasetBuilder(vocab)
    for i, entry in enumerate(data):
        name = r.get(entry, "file_name", i, kind=str)
        anns = r.get(entry, "annotations", i, kind=list)
        hois = r.get(entry, "hoi_annotation", i, kind=list)
        boxes: list[list[float]] = []
        labels: list[int] = []
        for k, a in enumerate(anns):
            boxes.append(r.box(r.get(a, "bbox", i, where=f"annotations[{k}]"), i, f"annotations[{k}].bbox"))
            cat = r.integer(r.get(a, "category_id", i, where=f"annotations[{k}]"), i,
                            f"annotations[{k}].category_id")
            if not 0 < cat < 92 or c2o[cat] < 0:
                raise r.error(i, f"annotations[{k}].category_id", f"{cat} is not a COCO category id")
            labels.append(c2o[cat])
        subjects: list[int] = []
        objects: list[int] = []
        verbs: list[int] = []
        for k, h in enumerate(hois):
            where = f"hoi_annotation[{k}]"
            s = r.integer(r.get(h, "subject_id", i, where=where), i, f"{where}.subject_id")
            o = r.integer(r.get(h, "object_id", i, where=where), i, f"{where}.object_id")
            v = r.integer(r.get(h, "category_id", i, where=where), i, f"{where}.category_id")
            if not 0 <= s < len(boxes):
                raise r.error(i, f"{where}.subject_id", f"{s} refers to no box (the entry has {len(boxes)})")
            if not -1 <= o < len(boxes):
                raise r.error(i, f"{where}.object_id", f"{o} refers to no box (the entry has {len(boxes)})")
            if not first_verb <= v < vocab.n_verbs + first_verb:
                raise r.error(i, f"{where}.category_id",
                              f"verb {v} outside {first_verb}..{vocab.n_verbs + first_verb - 1}")
            hoi = h.get("hoi_category_id")
            if hoi is not None and vocab.name == "hico-det":  # redundant: must agree with verb + object
                hoi = r.integer(hoi, i, f"{where}.hoi_category_id")
                expect = hoi_of.get((v - first_verb, labels[o]), -1) + 1 if o >= 0 else 0
                if hoi != expect:
                    raise r.error(i, f"{where}.hoi_category_id",
                                  f"{hoi} contradicts its verb {v} and object "
                                  f"{vocab.objects[labels[o]] if o >= 0 else 'none'} (class {expect or 'none'})")
            subjects.append(s)
            objects.append(o)
            verbs.append(v - first_verb)
        img_id = entry.get("img_id")
        if not isinstance(img_id, int) or isinstance(img_id, bool):
            img_id = image_id_from_name(name) if vocab.name == "v-coco" else -1
        b.add_image(
            name, boxes, labels, subjects, objects, verbs,
            width=r.integer(entry.get("width") or 0, i, "width"),
            height=r.integer(entry.get("height") or 0, i, "height"),
            image_id=img_id,
        )
    ds = b.build(name=str(path))
    return check_dataset(ds, path) if validate else ds


def to_ppdm_list(ds: HOIDataset) -> list[dict[str, Any]]:
    """The list of entries of a PPDM/QPIC file for ``ds`` (boxes stay 0-based)."""
    coco91 = ds.vocab.object_to_coco91(ds.box_labels).tolist()
    boxes = [[plain_number(v) for v in row] for row in ds.boxes.tolist()]
    hoi = ds.pair_hoi.tolist()
    with_hoi_id = ds.vocab.name == "hico-det"
    first_verb = verb_id_base(ds.vocab)
    out = []
    bo = ds.box_offsets.tolist()
    po = ds.pair_offsets.tolist()
    subj, obj, verb = ds.pair_subject.tolist(), ds.pair_object.tolist(), ds.pair_verb.tolist()
    for i in range(ds.n_images):
        b0, b1, p0, p1 = bo[i], bo[i + 1], po[i], po[i + 1]
        entry: dict[str, Any] = {"file_name": ds.file_names[i]}
        if ds.image_ids[i] >= 0:
            entry["img_id"] = int(ds.image_ids[i])
        if ds.widths[i] > 0 and ds.heights[i] > 0:
            entry["width"] = int(ds.widths[i])
            entry["height"] = int(ds.heights[i])
        entry["annotations"] = [{"bbox": boxes[k], "category_id": coco91[k]} for k in range(b0, b1)]
        pairs = []
        for k in range(p0, p1):
            rec = {
                "subject_id": subj[k] - b0,
                "object_id": obj[k] - b0 if obj[k] >= 0 else -1,
                "category_id": verb[k] + first_verb,
            }
            if with_hoi_id and hoi[k] >= 0:
                rec["hoi_category_id"] = hoi[k] + 1
            pairs.append(rec)
        entry["hoi_annotation"] = pairs
        out.append(entry)
    return out


def write_ppdm(ds: HOIDataset, path: str | os.PathLike[str]) -> None:
    """Write ``ds`` in the PPDM/QPIC layout (drop-in for QPIC, CDN, GEN-VLKT, HOTR, STIP)."""
    atomic_write_json(path, to_ppdm_list(ds))
