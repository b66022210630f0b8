"""The hicodet toolkit's ``instances_{train,test}2015.json`` (fredzzhang/hicodet).

Layout: ``annotation[i] = {boxes_h, boxes_o, hoi, object, verb}`` (one entry per pair, 0-based
ids), ``filenames``, ``size`` (``[width, height]``), ``empty`` (rows without pairs), ``objects``,
``verbs``, ``correspondence`` (``[hoi, object, verb]`` × 600), ``rare``, ``non_rare``.
Boxes are in HICO-DET's original 1-based pixel convention; they are shifted by −1 on reading.
"""

from __future__ import annotations

import os
from itertools import chain
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench._io import atomic_write_json, check_json_start, parse_json, read_bytes
from hoibench.data import DatasetBuilder, HOIDataset
from hoibench.formats import _scan as _S
from hoibench.formats._common import RecordReader, check_dataset
from hoibench.vocab import LabelSpace, hico_det

__all__ = ["looks_like_hicodet", "read_hicodet", "to_hicodet_dict", "write_hicodet"]

ONE_BASED = 1.0


def looks_like_hicodet(data: Any) -> bool:
    """True for a hicodet toolkit instances file (``annotation`` and ``filenames`` lists)."""
    return isinstance(data, dict) and "annotation" in data and "filenames" in data


def read_hicodet(path: str | os.PathLike[str], *, data: Any = None, validate: bool = True) -> HOIDataset:
    """Read an ``instances_*.json`` file of the hicodet toolkit."""
    if data is None:
        raw = read_bytes(check_json_start(path))
        ds = _read_native(raw, hico_det(), str(path))
        if ds is not None:
            return check_dataset(ds, path) if validate else ds
        data = parse_json(raw, path)  # the bytes already read, not the file again
    r = RecordReader(path)
    if not looks_like_hicodet(data):
        raise FormatError("not a hicodet instances file (needs 'annotation' and 'filenames')", file=path)
    vocab = hico_det()
    anns = r.get(data, "annotation", None, kind=list)
    names = r.get(data, "filenames", None, kind=list)
    sizes = data.get("size") or [[0, 0]] * len(names)
    if len(anns) != len(names) or len(sizes) != len(names):
        raise FormatError(
            f"annotation ({len(anns)}), filenames ({len(names)}) and size ({len(sizes)}) differ in length",
            file=path,
        )
    _check_vocab(data, vocab, path)
    try:
        ds = _read_fast(anns, names, sizes, vocab, str(path))
    except (KeyError, TypeError, ValueError, IndexError, OverflowError):  # (a size of 1e400: inf)
        ds = None
    if ds is None:  # malformed somewhere: the careful reader names the record and field
        ds = _read_careful(anns, names, sizes, vocab, r)
    return check_dataset(ds, path) if validate else ds


_NATIVE_ROOT = _S.field("", _S.OBJECT,
                        _S.field("annotation", _S.RECORDS, *(_S.field(k, _S.ROWS) for k in ("boxes_h", "boxes_o")),
                                 *(_S.field(k, _S.NUMS) for k in ("object", "verb", "hoi"))),
                        _S.field("filenames", _S.STRS), _S.field("size", _S.ROWS),
                        _S.field("objects", _S.STRS), _S.field("verbs", _S.STRS))


def _read_native(raw: bytes, vocab: LabelSpace, name: str) -> HOIDataset | None:
    """:func:`_read_fast` by the C scanner, straight from the text (no document of the file):
    the same dataset, or ``None`` for anything it does not prove (the JSON readers then take the
    file, and the careful one names a problem)."""
    c = _S.scan_document(raw, _NATIVE_ROOT, records="annotation")
    if c is None or c["filenames"].occ[0] != 1:
        return None
    per = slice(1, None)  # slot i + 1: annotation i
    names = c["filenames"].strings(raw)
    listed = {k: c[k].strings(raw) if c[k].occ[0] else None for k in ("objects", "verbs")}
    if names is None or any(v is not None and tuple(v) != getattr(vocab, k) for k, v in listed.items()):
        return None  # the JSON reader says which list differs
    n_images = len(c["annotation"].items) - 1
    bh, bo, obj, verb, hoi = (c[f"annotation.{k}"] for k in ("boxes_h", "boxes_o", "object", "verb", "hoi"))
    counts = bh.items[per]
    for col, width in ((bh, 4), (bo, 4), (obj, 0), (verb, 0)):
        if (col.occ[per] != 1).any() or (col.items[per] != counts).any():
            return None
        if width and not col.rows_of(width):
            return None
    if n_images != len(names):
        return None
    ids = _object_verb_ids(obj.values, verb.values, vocab)
    if ids is None:
        return None
    given = hoi.items[per]
    if hoi.values.size and ((given != counts).any() or hoi.fractional
                            or not np.array_equal(vocab.hoi_index(ids[1], ids[0]), hoi.values)):
        return None  # some images without their classes, or classes that disagree: the JSON readers
    size, wh = c["size"], np.zeros((len(names), 2), dtype=np.int64)  # no "size": unknown (0)
    if size.occ[0] and len(names):
        w = size.width[0]
        if (size.items[0] != len(names) or size.fractional or w < 2 or size.width != (w, w)
                or (size.values.size and np.abs(size.values).max() >= 2.0**53)):
            return None  # the JSON readers take (or name) other sizes (beyond 2**53 a double rounds them)
        wh = size.values.reshape(len(names), w)[:, :2].astype(np.int64)
    return _dataset(names, wh, counts, bh.values.reshape(-1, 4), bo.values.reshape(-1, 4), ids[0], ids[1],
                    vocab, name)


def _object_verb_ids(obj: np.ndarray, verb: np.ndarray, vocab: LabelSpace) -> tuple[np.ndarray, np.ndarray] | None:
    """Object and verb ids as int64, or ``None`` unless every one is an integer of ``vocab``
    (checked before the cast: a NaN or 1e30 cast to int64 is garbage and a numpy warning)."""
    if not (np.all(obj == np.round(obj)) and np.all(verb == np.round(verb))):
        return None
    if not (((obj >= 0) & (obj < vocab.n_objects)).all() and ((verb >= 0) & (verb < vocab.n_verbs)).all()):
        return None
    return obj.astype(np.int64), verb.astype(np.int64)


def _dataset(names: list[str], wh: np.ndarray, counts: np.ndarray, bh: np.ndarray, bo: np.ndarray,
             obj_i: np.ndarray, verb_i: np.ndarray, vocab: LabelSpace, name: str) -> HOIDataset:
    """The dataset of checked columns: per image its pairs (``counts``), each a subject and an
    object box (1-based in the file, 0-based here) of its own."""
    total = len(obj_i)
    boxes = np.empty((2 * total, 4))
    boxes[0::2] = bh - ONE_BASED
    boxes[1::2] = bo - ONE_BASED
    labels = np.empty(2 * total, dtype=np.int64)
    labels[0::2] = vocab.person
    labels[1::2] = obj_i
    box_offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(2 * counts, out=box_offsets[1:])
    pair_offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(counts, out=pair_offsets[1:])
    return HOIDataset(
        vocab=vocab, name=name, file_names=names, widths=wh[:, 0], heights=wh[:, 1],
        image_ids=np.full(len(names), -1, dtype=np.int64),
        box_offsets=box_offsets, boxes=boxes, box_labels=labels, pair_offsets=pair_offsets,
        pair_subject=np.arange(0, 2 * total, 2, dtype=np.int64),
        pair_object=np.arange(1, 2 * total, 2, dtype=np.int64), pair_verb=verb_i,
    )


def _read_fast(anns: list[Any], names: list[Any], sizes: list[Any], vocab: LabelSpace,
               name: str) -> HOIDataset | None:
    """Vectorised reading of a well-formed file; ``None`` (or an exception) sends it to the careful
    reader, which finds and names the problem."""
    counts = np.asarray([len(a["boxes_h"]) for a in anns], dtype=np.int64)
    total = int(counts.sum())

    def flat(key: str, shape: tuple[int, ...]) -> np.ndarray:
        arr = np.asarray(list(chain.from_iterable(a[key] for a in anns)), dtype=np.float64)
        if arr.shape != shape and not (total == 0 and arr.size == 0):
            raise ValueError(key)
        return arr.reshape(shape)

    bh = flat("boxes_h", (total, 4))
    bo = flat("boxes_o", (total, 4))
    ids = _object_verb_ids(flat("object", (total,)), flat("verb", (total,)), vocab)
    if ids is None:
        return None
    obj_i, verb_i = ids
    hoi_lists = [a.get("hoi", []) for a in anns]
    if any(len(h) not in (0, c) for h, c in zip(hoi_lists, counts.tolist())):
        return None
    if any(hoi_lists):
        if any(len(h) != c for h, c in zip(hoi_lists, counts.tolist())):
            return None
        hoi = np.asarray(list(chain.from_iterable(hoi_lists)), dtype=np.int64)
        if not np.array_equal(vocab.hoi_index(verb_i, obj_i), hoi):
            return None
    if not all(isinstance(n, str) for n in names):
        return None
    wh = np.asarray(sizes, dtype=np.int64).reshape(len(names), -1)[:, :2]
    return _dataset(names, wh, counts, bh, bo, obj_i, verb_i, vocab, name)


def _read_careful(anns: list[Any], names: list[Any], sizes: list[Any], vocab: LabelSpace,
                  r: RecordReader) -> HOIDataset:
    person = vocab.person
    hv = vocab.hoi_verb_object
    b = DatasetBuilder(vocab)
    for i, (ann, name, size) in enumerate(zip(anns, names, sizes)):
        bh = r.get(ann, "boxes_h", i, kind=list, where="annotation")
        bo = r.get(ann, "boxes_o", i, kind=list, where="annotation")
        objs = r.get(ann, "object", i, kind=list, where="annotation")
        verbs = r.get(ann, "verb", i, kind=list, where="annotation")
        hois = ann.get("hoi", [])
        n = len(bh)
        if not (len(bo) == n and len(objs) == n and len(verbs) == n and len(hois) in (0, n)):
            raise r.error(i, "annotation", "boxes_h, boxes_o, object, verb and hoi differ in length")
        boxes: list[list[float]] = []
        labels: list[int] = []
        verb_ids: list[int] = []
        for k in range(n):
            h = r.box(bh[k], i, f"annotation.boxes_h[{k}]")
            o = r.box(bo[k], i, f"annotation.boxes_o[{k}]")
            boxes.append([h[0] - ONE_BASED, h[1] - ONE_BASED, h[2] - ONE_BASED, h[3] - ONE_BASED])
            boxes.append([o[0] - ONE_BASED, o[1] - ONE_BASED, o[2] - ONE_BASED, o[3] - ONE_BASED])
            obj = r.integer(objs[k], i, f"annotation.object[{k}]")
            verb = r.integer(verbs[k], i, f"annotation.verb[{k}]")
            if not 0 <= obj < vocab.n_objects:
                raise r.error(i, f"annotation.object[{k}]", f"{obj} outside 0..{vocab.n_objects - 1}")
            if not 0 <= verb < vocab.n_verbs:
                raise r.error(i, f"annotation.verb[{k}]", f"{verb} outside 0..{vocab.n_verbs - 1}")
            if hois:
                hoi = r.integer(hois[k], i, f"annotation.hoi[{k}]")
                if not 0 <= hoi < len(hv) or hv[hoi, 0] != verb or hv[hoi, 1] != obj:
                    raise r.error(i, f"annotation.hoi[{k}]",
                                  f"HOI class {hoi} does not match verb {verb} and object {obj}")
            labels.append(person)
            labels.append(obj)
            verb_ids.append(verb)
        if not isinstance(size, (list, tuple)) or len(size) < 2:
            raise r.error(i, "size", f"expected [width, height], got {size!r}")
        if not isinstance(name, str):
            raise r.error(i, "filenames", f"expected a file name, got {name!r}")
        b.add_image(name, boxes, labels, list(range(0, 2 * n, 2)), list(range(1, 2 * n, 2)),
                    verb_ids, width=r.integer(size[0], i, "size"), height=r.integer(size[1], i, "size"))
    return b.build(name=r.file)


def _check_vocab(data: dict[str, Any], vocab: LabelSpace, path: object) -> None:
    for key, ours in (("objects", vocab.objects), ("verbs", vocab.verbs)):
        theirs = data.get(key)
        if theirs is not None and tuple(theirs) != ours:
            raise FormatError(f"{key} list differs from HICO-DET's", file=path, field=key)


def to_hicodet_dict(ds: HOIDataset) -> dict[str, Any]:
    """The JSON object of ``instances_*.json`` for ``ds`` (HICO-DET label space only)."""
    vocab = ds.vocab
    if vocab.name != "hico-det":
        raise FormatError(f"the hicodet format holds HICO-DET data only, not {vocab.name}", file=ds.name)
    if (ds.pair_object < 0).any():
        raise FormatError("the hicodet format cannot hold pairs without an object", file=ds.name)
    hoi = ds.pair_hoi
    bad = np.flatnonzero(hoi < 0)
    if len(bad):
        k = bad[0]
        raise FormatError(
            f"(verb {ds.pair_verb[k]}, object {ds.pair_object_label[k]}) is not a HICO-DET class",
            file=ds.name, record=int(ds.pair_image[k]), field="pairs",
        )
    bh = (ds.pair_subject_boxes + ONE_BASED).tolist()
    bo = (ds.pair_object_boxes + ONE_BASED).tolist()
    objs = ds.pair_object_label.tolist()
    verbs = ds.pair_verb.tolist()
    hois = hoi.tolist()
    annotation = []
    for i in range(ds.n_images):
        p0, p1 = int(ds.pair_offsets[i]), int(ds.pair_offsets[i + 1])
        annotation.append({
            "boxes_h": bh[p0:p1],
            "boxes_o": bo[p0:p1],
            "hoi": hois[p0:p1],
            "object": objs[p0:p1],
            "verb": verbs[p0:p1],
        })
    hv = vocab.hoi_verb_object
    rare = vocab.rare_classes()
    return {
        "annotation": annotation,
        "filenames": list(ds.file_names),
        "empty": np.flatnonzero(ds.pairs_per_image == 0).tolist(),
        "objects": list(vocab.objects),
        "verbs": list(vocab.verbs),
        "correspondence": [[h, int(o), int(v)] for h, (v, o) in enumerate(hv)],
        "size": [[int(w), int(h)] for w, h in zip(ds.widths, ds.heights)],
        "rare": rare.tolist(),
        "non_rare": np.setdiff1d(np.arange(vocab.n_hois), rare).tolist(),
    }


def write_hicodet(ds: HOIDataset, path: str | os.PathLike[str]) -> None:
    """Write ``ds`` as a hicodet toolkit ``instances_*.json`` (boxes back to 1-based)."""
    atomic_write_json(path, to_hicodet_dict(ds))

