"""V-COCO detections for role AP: person detections with per-action scores and role boxes (the
role ground truth is :mod:`hoibench.formats.vcoco_ground_truth`).

Read by :func:`read_vcoco_detections`, written by :func:`write_vcoco_detections`. The hoibench
layout, one JSON object (``null`` = "not predicted" for a score, "no role object" for a role box;
class lists are optional and default to all 26 actions / 25 role classes)::

    {"kind": "vcoco_detections",
     "agent_classes": ["hold", "stand", ...],            # names of the agent_scores columns
     "role_classes": ["hold_obj", "eat_instr", ...],     # names of the role columns
     "images": [{"image_id": 165,                        # or a COCO "file_name"
                 "person_boxes": [[x1, y1, x2, y2], ...],
                 "agent_scores": [[s, ...], ...],        # one row per person, one column per class
                 "role_boxes":  [[[x1, y1, x2, y2] | null, ...], ...],
                 "role_scores": [[s | null, ...], ...]}]}

Instead of ``role_boxes`` an image may give ``"object_boxes": [[x1, y1, x2, y2], ...]`` and
``"role_objects": [[k | -1 | null, ...], ...]`` (per person and role class, an index into
``object_boxes``; -1 or null = no role object), which is how HOI detectors produce role boxes and
several times smaller; :func:`write_vcoco_detections` writes that form by default.

Columns that a file does not list are "not predicted". Boxes are passed to the evaluator as they
are, exactly as ``vsrl_eval.py`` takes them (it compares with the +1 pixel rule).

The reference layout of ``vsrl_eval.py`` is also read, as a pickle or as JSON: a list with one
dict per detected person, ``{"image_id", "person_box": [x1, y1, x2, y2], "<action>_agent": score,
"<action>_<role>": [x1, y1, x2, y2, score]}`` (NaN score = not predicted; an all-zero or NaN
box = no role object). Pickles are read with an unpickler that only builds numpy arrays and plain
Python values, and UPT's/PViC's ``utils.CacheTemplate`` (their ``--cache`` ``vcoco_cache/cache.pkl``:
one record per detected pair and action, boxes as their model outputs them, in the original
image's pixels, passed on unchanged), read as a plain mapping whose missing keys get
CacheTemplate's defaults (score 0, role ``[0, 0, .1, .1, 0]``). :func:`write_vsrl_detections`
writes that pickle, to cross-check with the reference.

Reading: the hoibench layout is described once (``_LAYOUT``, a :func:`~hoibench.formats._scan.field`
schema) and read by two tiers. The C column scanner (:func:`_native`, where the extension is built
and ``HOIBENCH_NO_NATIVE`` is unset) reads the whole text into columns in one pass and hands over
whatever it does not prove; the careful reader (:func:`_from_hoibench`), the reference, parses the
file whole, checks each image against the same description and then each field's numbers and
shape, and names the file, record (image) and field of the first problem. Both give the same
arrays or the same error line. ``vsrl_eval.py``'s list (pickle or JSON) is read by one reader,
record by record (:func:`_from_vsrl`).
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np

from hoibench._exceptions import FormatError
from hoibench._io import (
    atomic_write,
    atomic_write_json,
    check_json_start,
    parse_json,
    read_buffer,
    refuses_deep_nesting,
)
from hoibench.data import VCOCODetections, VCOCOGroundTruth
from hoibench.data._vcoco import (
    DETECTION_PROBLEMS,
    vcoco_action_names,
    vcoco_role_classes,
    vcoco_schema,
)
from hoibench.formats import _scan as _S
from hoibench.formats._common import short_repr

__all__ = [
    "VCOCODetectionsFile",
    "read_vcoco_detections",
    "write_vcoco_detections",
    "write_vsrl_detections",
]

_COCO_NAME = re.compile(r"(\d+)\.\w+$")


@dataclass
class VCOCODetectionsFile:
    """Detections read from a file, with the record each row came from (for error messages)."""

    detections: VCOCODetections
    records: np.ndarray
    file: str
    layout: str
    dropped: dict[str, int] = field(default_factory=dict)

    def restrict_to(self, ground_truth: VCOCOGroundTruth, *, lenient: bool = False) -> VCOCODetectionsFile:
        """Check every detection's image against ``ground_truth``; drop (lenient) or raise."""
        rows = ground_truth.image_index(self.detections.image_ids)
        bad = rows < 0
        if not bad.any():
            return self
        i = int(np.flatnonzero(bad)[0])
        if not lenient:
            raise FormatError(f"image {int(self.detections.image_ids[i])} is not in the ground truth "
                              f"({int(bad.sum())} detections on unknown images)",
                              file=self.file, record=int(self.records[i]), field="image_id")
        dropped = dict(self.dropped)
        dropped["unknown image"] = dropped.get("unknown image", 0) + int(bad.sum())
        keep = np.flatnonzero(~bad)
        return VCOCODetectionsFile(self.detections.subset(keep), self.records[keep], self.file,
                                   self.layout, dropped)


# --------------------------------------------------------------------------- detections: read
@refuses_deep_nesting
def read_vcoco_detections(path: str | os.PathLike[str], *, lenient: bool = False) -> VCOCODetectionsFile:
    """Read V-COCO detections (hoibench JSON, or ``vsrl_eval.py``'s list as pickle or JSON).

    Bad rows (NaN or inverted boxes, infinite scores, unknown classes, missing fields) raise a
    :class:`FormatError` naming file, record and field; with ``lenient=True`` they are dropped and
    counted in ``dropped``.
    """
    # a file that is neither (a pickle begins with 0x80) is refused from its first bytes
    buf = read_buffer(check_json_start(path, also=b"\x80", what="a pickle or JSON"))
    head = bytes(buf[:64])
    if head[:1] == b"\x80":
        return _from_vsrl(_safe_unpickle(bytes(buf), path), path, lenient, "vsrl pickle")
    if head.lstrip()[:1] == b"{":
        native = _native(buf, path, lenient)
        if native is not None:
            return native
    raw = bytes(buf)  # a copy of a map only (bytes() of bytes is the same object)
    del buf
    data = parse_json(raw, path)  # NaN literals (Python's json writes them) read too
    if isinstance(data, list):
        return _from_vsrl(data, path, lenient, "vsrl json")
    if isinstance(data, dict) and "images" in data:
        return _from_hoibench(data, path, lenient)
    raise FormatError("not V-COCO detections: expected an object with 'images' or a list of "
                      "vsrl_eval detection dicts", file=path)


class _NumpyOnlyUnpickler(pickle.Unpickler):
    _ALLOWED: ClassVar[set[tuple[str, str]]] = {
        ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"), ("numpy", "float32"), ("numpy", "float64"),
        ("numpy", "int64"), ("numpy", "int32"), ("builtins", "float"), ("builtins", "int"),
        ("builtins", "list"),  # write_vsrl_detections' list, made as it is pickled
        ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        if (module, name) == ("utils", "CacheTemplate"):  # UPT/PViC cache.pkl records
            return CacheRecord
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} (only numpy arrays, plain values "
                                     "and UPT's utils.CacheTemplate)")


class CacheRecord(dict):  # type: ignore[type-arg]
    """A plain-mapping stand-in for UPT's/PViC's ``utils.CacheTemplate`` (a ``defaultdict``
    subclass pickled as ``CacheTemplate()`` plus its items). Theirs answers missing keys with
    score 0 (``<action>_agent``) or ``[0, 0, .1, .1, 0]`` (``<action>_<role>``), which is what
    ``vsrl_eval.py`` sees; :func:`read_vcoco_detections` fills them in the same way."""

    def __init__(self, *args: Any) -> None:  # unpickling calls CacheTemplate() with no arguments
        super().__init__()


def _fill_cache_defaults(data: list[Any], agent_keys: list[str], role_keys: list[str]) -> list[Any]:
    """UPT records hold one action each; the others get CacheTemplate's ``__missing__`` values."""
    defaults: dict[str, Any] = dict.fromkeys(agent_keys, 0.0)
    defaults.update(dict.fromkeys(role_keys, (0.0, 0.0, 0.1, 0.1, 0.0)))
    return [{**defaults, **d} if isinstance(d, CacheRecord) else d for d in data]


def _safe_unpickle(raw: bytes, path: object) -> Any:
    try:
        # a buffered reader has peek(), so the unpickler takes the stream in large reads; on a bare
        # BytesIO an unframed pickle (protocols 0-3: Python 2's, the writer's) costs a read() call
        # per opcode, 2.2x slower
        return _NumpyOnlyUnpickler(io.BufferedReader(io.BytesIO(raw), 1 << 20), encoding="latin1").load()
    except Exception as exc:
        raise FormatError(f"cannot read the pickle: {exc}", file=path) from None


def _column_index(names: Any, known: tuple[str, ...], path: object, key: str) -> np.ndarray:
    if names is None:
        return np.arange(len(known))
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FormatError("expected a list of class names", file=path, field=key)
    pos = {n: i for i, n in enumerate(known)}
    out = []
    for n in names:
        if n not in pos:
            raise FormatError(f"unknown class {n!r}; known: {', '.join(known)}", file=path, field=key)
        out.append(pos[n])
    if len(set(out)) != len(out):
        raise FormatError("a class is listed twice", file=path, field=key)
    return np.asarray(out, dtype=np.int64)


def _image_id(entry: dict[str, Any], path: object, record: int) -> int:
    if "image_id" in entry:
        v = entry["image_id"]
        if ((isinstance(v, (int, np.integer)) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
                ) and -(2**63) <= v < 2**63:  # (2**80 is no id: refused here, not an OverflowError later)
            return int(v)
        raise FormatError(f"expected an integer within 64 bits, got {short_repr(v)}", file=path, record=record,
                          field="image_id")
    name = entry.get("file_name")
    m = _COCO_NAME.search(name) if isinstance(name, str) else None
    if m is None:
        raise FormatError("missing (needs image_id or a COCO file_name ending in the image id)",
                          file=path, record=record, field="image_id")
    if len(m.group(1).lstrip("0")) > 18:
        raise FormatError(f"the id ending file_name has more than 18 digits: {name[-40:]!r}", file=path,
                          record=record, field="file_name")
    return int(m.group(1))


#: the hoibench layout's per-image number fields, in the order the readers take them
_IMAGE_FIELDS = ("person_boxes", "agent_scores", "object_boxes", "role_objects", "role_scores")
#: the hoibench layout, described once: the C scanner reads it (:func:`_native`) and the careful
#: reader checks each image against it (:func:`_image_rows`)
_IMAGES = _S.field("images", _S.RECORDS, _S.field("image_id", _S.NUM), _S.field("file_name", _S.STR),
                   # float32 where the detections keep float32; indices exact (float64)
                   *(_S.field(key, _S.ROWS, nulls=True, f32=key != "role_objects") for key in _IMAGE_FIELDS),
                   _S.field("role_boxes", _S.ROWS3, nulls=True, null_row=4, f32=True))
_LAYOUT = _S.field("", _S.OBJECT, _S.field("agent_classes", _S.STRS), _S.field("role_classes", _S.STRS), _IMAGES)


def _matrix(value: Any, shape_tail: tuple[int, ...], n: int, path: object, record: int, key: str) -> np.ndarray:
    bad = _S.not_a_number(value)
    if bad:  # "12.5" or true for a coordinate: refused, as every HICO-DET reader does
        raise FormatError(f"expected numbers (or null), got {short_repr(bad[0])}", file=path, record=record, field=key)
    if len(shape_tail) == 2 and isinstance(value, list):  # role boxes: a null box is 4 NaNs (no role object)
        nan4 = [np.nan] * 4
        value = [[nan4 if b is None else b for b in row] if isinstance(row, list) else row for row in value]
    try:
        a = np.array(value, dtype=np.float64)
    except OverflowError:  # an int beyond float64 (400 digits)
        raise FormatError("expected numbers within float64's range", file=path, record=record, field=key) from None
    except (TypeError, ValueError):
        raise FormatError("expected numbers (or null) of the documented shape",
                          file=path, record=record, field=key) from None
    if n == 0 and a.size == 0:
        return np.zeros((0, *shape_tail))
    if a.shape != (n, *shape_tail):
        raise FormatError(f"expected shape {(n, *shape_tail)}, got {a.shape}", file=path, record=record, field=key)
    return a


class _ImageRows(NamedTuple):
    """One image's detections, role boxes dense (NaN: no role object), as the file gives them."""

    image_id: int
    person_boxes: np.ndarray
    agent_scores: np.ndarray
    role_scores: np.ndarray
    role_boxes: np.ndarray


def _columns(data: dict[str, Any], path: object) -> tuple[np.ndarray, np.ndarray]:
    return (_column_index(data.get("agent_classes"), vcoco_action_names(), path, "agent_classes"),
            _column_index(data.get("role_classes"), vcoco_role_classes(), path, "role_classes"))


def _from_hoibench(data: dict[str, Any], path: object, lenient: bool) -> VCOCODetectionsFile:
    a_cols, r_cols = _columns(data, path)
    images = data["images"]
    if not isinstance(images, list):
        raise FormatError("expected a list", file=path, field="images")
    rows = [_image_rows(entry, path, k, a_cols, r_cols) for k, entry in enumerate(images)]
    return _assemble(rows, a_cols, r_cols, path, lenient)


def _image_rows(entry: Any, path: object, k: int, a_cols: np.ndarray, r_cols: np.ndarray) -> _ImageRows:
    """One image of the hoibench layout, every field checked (errors name record and field): its
    fields' kinds against the layout's description, the id, then each field's numbers and shape."""
    shared = isinstance(entry, dict) and "role_objects" in entry
    roles = ("object_boxes", "role_objects") if shared else ("role_boxes",)
    _S.conform(entry, _IMAGES, file=path, record=k, required=("person_boxes", "agent_scores", *roles, "role_scores"),
               ignore=("image_id", "file_name", *(("role_boxes",) if shared else ("object_boxes", "role_objects"))))
    img = _image_id(entry, path, k)
    pb = entry["person_boxes"]
    n = len(pb) if isinstance(pb, list) else -1
    boxes = _matrix(pb, (4,), n, path, k, "person_boxes")
    agent = _matrix(entry["agent_scores"], (a_cols.size,), n, path, k, "agent_scores")
    rbox = (_shared_role_boxes(entry, n, r_cols.size, path, k) if shared
            else _matrix(entry["role_boxes"], (r_cols.size, 4), n, path, k, "role_boxes"))
    rsc = _matrix(entry["role_scores"], (r_cols.size,), n, path, k, "role_scores")
    return _ImageRows(img, boxes, agent, rsc, rbox)


def _assemble(rows: list[_ImageRows], a_cols: np.ndarray, r_cols: np.ndarray, path: object,
              lenient: bool) -> VCOCODetectionsFile:
    """Join the images' rows into full-width float32 arrays (NaN = class not listed), the scores
    stored class by class as the scanner's reading stores them (:func:`_by_column`)."""
    kept = [(k, r) for k, r in enumerate(rows) if len(r.person_boxes)]
    if not kept:
        return _checked(VCOCODetections.empty(), np.zeros(0, dtype=np.int64), path, lenient, "hoibench json", {})
    counts = [len(r.person_boxes) for _, r in kept]
    d = sum(counts)
    acts, roles = vcoco_action_names(), vcoco_role_classes()

    def joined(i: int) -> np.ndarray:
        return np.concatenate([r[i] for _, r in kept])

    with np.errstate(over="ignore"):  # beyond float32: inf, as the scanner's float32 columns (checked later)
        boxes = joined(1).astype(np.float32)
        agent = _widen(_by_column(joined(2), d, a_cols.size), a_cols, len(acts))
        rsc = _widen(_by_column(joined(3), d, r_cols.size), r_cols, len(roles))
        rbox_listed = joined(4).reshape(d, r_cols.size, 4).astype(np.float32)
    if _every_column(r_cols, len(roles)):
        rbox = rbox_listed
    else:
        rbox = np.full((d, len(roles), 4), np.nan, dtype=np.float32)
        rbox[:, r_cols] = rbox_listed
    det = VCOCODetections(np.repeat(np.array([r.image_id for _, r in kept], dtype=np.int64), counts), boxes,
                          agent, rbox, rsc)
    return _checked(det, np.repeat(np.array([k for k, _ in kept], dtype=np.int64), counts), path, lenient,
                    "hoibench json", {})


def _every_column(cols: np.ndarray, n_all: int) -> bool:
    """Whether ``cols`` lists all ``n_all`` classes in their order (nothing to widen)."""
    return cols.size == n_all and bool((cols == np.arange(n_all)).all())


def _widen(block: np.ndarray, cols: np.ndarray, n_all: int) -> np.ndarray:
    """float32 columns ``cols`` of ``n_all`` (NaN where a class is not listed)."""
    if _every_column(cols, n_all):
        return block.astype(np.float32, copy=False)
    out = np.full((len(block), n_all), np.nan, dtype=np.float32)
    out[:, cols] = block
    return out


def _native(buf: bytes | mmap.mmap, path: object, lenient: bool) -> VCOCODetectionsFile | None:
    """The hoibench layout read by the C scanner in one pass, straight into columns
    (:mod:`~hoibench.formats._scan`): what the careful reader makes of it, or
    ``None`` for anything the scanner or these checks do not prove (a row of another width, an
    index outside its image's objects, an image id that is not an integer, shared and dense role
    boxes in one file): the careful reader then takes the file and names what is wrong. ``null`` is
    NaN, a ``null`` role object -1 and a ``null`` role box "no role object", as they read it."""
    c = _S.scan_document(buf, _LAYOUT, records="images", split=_S.halfway(buf))
    if c is None:
        return None
    names = {}
    for key in ("agent_classes", "role_classes"):
        if c[key].occ[0]:
            names[key] = c[key].strings(buf)
            if names[key] is None:
                return None
    a_cols, r_cols = _columns(names, path)
    per = slice(1, None)  # slot i + 1: image i
    n_images = len(c["images"].items) - 1
    pb, agent, obj, idx, rsc = (c[f"images.{key}"] for key in _IMAGE_FIELDS)
    dense = c["images.role_boxes"]
    n = pb.items[per]
    shared = bool(idx.occ[per].all())  # else every image gives dense role_boxes (no role_objects)
    if not shared and (idx.occ[per].any() or (dense.occ[per] != 1).any() or (dense.items[per] != n).any()
                       or (dense.nums[per] != n * r_cols.size * 4).any()
                       or (dense.values.size and (dense.width != (4, 4) or dense.middle != (r_cols.size,) * 2))):
        return None
    checks = [(pb, 4, n), (agent, a_cols.size, n), (rsc, r_cols.size, n)]
    if shared:
        checks += [(obj, 4, None), (idx, r_cols.size, n)]
    for col, width, rows in checks:
        if (col.occ[per] != 1).any() or (rows is not None and (col.items[per] != rows).any()):
            return None
        if not col.rows_of(width):
            return None
    del checks, col  # they hold the columns, which are freed one by one below
    ids = _native_image_ids(c, buf, n_images)
    if ids is None:
        return None
    d = int(n.sum())
    owner = np.repeat(np.arange(n_images), n)
    # each column is freed once converted (a float32 column and the array made of it are each ~100 MB)
    if shared:
        made = _native_shared_index(obj, idx, n, r_cols.size, owner)
        if made is None:
            return None
        del obj, idx, c["images.object_boxes"], c["images.role_objects"]
        rbox_listed = made[0][made[1]]
        del made
    else:
        rbox_listed = dense.values.reshape(d, r_cols.size, 4)
    del dense, c["images.role_boxes"]
    roles = vcoco_role_classes()
    if _every_column(r_cols, len(roles)):
        rbox = rbox_listed
    else:
        rbox = np.full((d, len(roles), 4), np.nan, dtype=np.float32)
        rbox[:, r_cols] = rbox_listed
    del rbox_listed
    boxes = pb.values.reshape(d, 4)
    del pb, c["images.person_boxes"]
    agent_scores = _widen(_by_column(agent.values, d, a_cols.size), a_cols, len(vcoco_action_names()))
    del agent, c["images.agent_scores"]
    role_scores = _widen(_by_column(rsc.values, d, r_cols.size), r_cols, len(roles))
    del rsc, c["images.role_scores"]
    det = VCOCODetections(np.repeat(ids, n), boxes, agent_scores, rbox, role_scores)
    return _checked(det, owner, path, lenient, "hoibench json", {})


def _native_shared_index(obj: _S.Column, idx: _S.Column, rows: np.ndarray, width: int,
                         owner: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """All images' ``object_boxes`` as float32 rows (a NaN row last) and each detection's
    ``role_objects`` as rows of that table (-1 or null: the NaN row, "no role object"): the
    role boxes are ``objects[index]``. ``None`` unless every index is an integer from -1 to its
    image's object count - 1 (``rows``: detections per image)."""
    m = obj.items[1:]
    v = idx.values.reshape(len(owner), width)
    if idx.nulls:
        v = np.where(np.isnan(v), -1.0, v)
    if v.size and (idx.fractional or (v.min(axis=1) < -1).any() or (v.max(axis=1) >= np.repeat(m, rows)).any()):
        return None
    objects = np.empty((int(m.sum()) + 1, 4), dtype=np.float32)
    objects[:-1] = obj.values.reshape(-1, 4)
    objects[-1] = np.nan  # what index -1 picks: "no role object"
    gather = v.astype(np.int32 if len(objects) < 2**31 else np.int64)
    del v
    np.add(gather, (np.cumsum(m) - m)[owner, None].astype(gather.dtype), out=gather, where=gather >= 0)
    return objects, gather


def _by_column(values: np.ndarray, rows: int, width: int) -> np.ndarray:
    """Row-major values as a (rows, width) float32 array stored column by column (each class
    contiguous, as the metric reads it class by class without a transposed copy)."""
    return np.ascontiguousarray(values.reshape(rows, width).T, dtype=np.float32).T


def _native_image_ids(c: dict[str, _S.Column], buf: Any, n_images: int) -> np.ndarray | None:
    """Each image's id: ``image_id`` (an integer, also written as one with a fraction, as
    :func:`_image_id` takes it), else the COCO id ending ``file_name``; ``None`` when an image
    has neither in that form (the careful reader names it)."""
    per = slice(1, None)
    given, named = c["images.image_id"], c["images.file_name"]
    ids = np.empty(n_images, dtype=np.int64)
    has = given.occ[per].astype(bool)
    v = given.values
    if v.size and (not np.isfinite(v).all() or (v != np.round(v)).any() or np.abs(v).max() >= 2.0**53):
        return None
    ids[has] = v.astype(np.int64)
    if not has.all():
        names = named.strings(buf)
        if names is None:
            return None
        by_image = dict(zip(np.repeat(np.arange(n_images), named.items[per]).tolist(), names))
        for k in np.flatnonzero(~has).tolist():
            m = _COCO_NAME.search(by_image.get(k, ""))
            if m is None or len(m.group(1).lstrip("0")) > 18:
                return None
            ids[k] = int(m.group(1))
    return ids


def _shared_role_boxes(entry: dict[str, Any], n: int, n_cols: int, path: object, record: int) -> np.ndarray:
    """Role boxes given as indices into the image's ``object_boxes`` (-1 or null: no role object)."""
    objs = entry.get("object_boxes")
    m = len(objs) if isinstance(objs, list) else -1
    obj = _matrix(objs, (4,), m, path, record, "object_boxes")
    idx = _matrix(entry["role_objects"], (n_cols,), n, path, record, "role_objects")
    idx = np.where(np.isnan(idx), -1, idx)
    if np.any((idx != np.round(idx)) | (idx < -1) | (idx >= m)):
        raise FormatError(f"expected indices into object_boxes (0..{m - 1}) or -1/null",
                          file=path, record=record, field="role_objects")
    out = np.full((n, n_cols, 4), np.nan)
    has = idx >= 0
    out[has] = obj[idx[has].astype(np.int64)]
    return out


def _from_vsrl(data: Any, path: object, lenient: bool, layout: str) -> VCOCODetectionsFile:
    if not isinstance(data, list):
        raise FormatError(f"expected a list of detection dicts, got {type(data).__name__}", file=path)
    names, roles = vcoco_schema()
    agent_keys = [f"{a}_agent" for a in names]
    role_keys = [f"{a}_{r}" for a, rs in zip(names, roles) for r in rs[1:]]
    known = {"image_id", "person_box", *agent_keys, *role_keys}
    if any(isinstance(d, CacheRecord) for d in data):
        data, layout = _fill_cache_defaults(data, agent_keys, role_keys), "upt cache.pkl"
    n = len(data)
    ids = np.zeros(n, dtype=np.int64)
    boxes = np.full((n, 4), np.nan, dtype=np.float32)
    agent = np.full((n, len(agent_keys)), np.nan, dtype=np.float32)
    rbox = np.full((n, len(role_keys), 4), np.nan, dtype=np.float32)
    rsc = np.full((n, len(role_keys)), np.nan, dtype=np.float32)
    bad = np.zeros(n, dtype=bool)
    dropped: dict[str, int] = {}
    for k, det in enumerate(data):
        try:
            # the usual record (every key, plain numbers): three conversions; else key by key
            plain = _vsrl_values(det, agent_keys, role_keys) if type(det) is dict and len(det) == len(known) else None
            if plain is not None:
                ids[k] = _image_id(det, path, k)
                boxes[k], agent[k], rbox[k], rsc[k] = plain[0], plain[1], plain[2][:, :4], plain[2][:, 4]
                continue
            if not isinstance(det, dict):
                raise FormatError(f"expected a dict, got {type(det).__name__}", file=path, record=k)
            extra = set(det) - known
            if extra:
                raise FormatError(f"unknown class key {sorted(extra)[0]!r}", file=path, record=k,
                                  field=sorted(extra)[0])
            ids[k] = _image_id(det, path, k)
            if "person_box" not in det:
                raise FormatError("missing", file=path, record=k, field="person_box")
            boxes[k] = _vec(det["person_box"], 4, path, k, "person_box")
            for j, key in enumerate(agent_keys):
                if key not in det:
                    raise FormatError("missing score", file=path, record=k, field=key)
                agent[k, j] = _vec(det[key], 1, path, k, key)[0]
            for j, key in enumerate(role_keys):
                if key not in det:
                    raise FormatError("missing box and score", file=path, record=k, field=key)
                v = _vec(det[key], 5, path, k, key)
                rbox[k, j], rsc[k, j] = v[:4], v[4]
        except FormatError as exc:
            if not lenient:
                raise
            bad[k] = True
            reason = exc.problem.split(" (")[0].split(":")[0]
            dropped[reason] = dropped.get(reason, 0) + 1
    keep = np.flatnonzero(~bad)
    result = VCOCODetections(ids[keep], boxes[keep], agent[keep], rbox[keep], rsc[keep])
    return _checked(result, keep.astype(np.int64), path, lenient, layout, dropped)


def _vsrl_values(det: dict[str, Any], agent_keys: list[str], role_keys: list[str]) -> list[np.ndarray] | None:
    """A record's person box, agent scores and role boxes with scores (rows of 5) as float64, one
    conversion each; ``None`` when a key is missing or a value is not plain numbers of that shape
    (the key-by-key checks then take the record and name the key)."""
    try:
        values = (det["person_box"], [det[key] for key in agent_keys], [det[key] for key in role_keys])
    except KeyError:
        return None
    out = []
    for v, shape in zip(values, ((4,), (len(agent_keys),), (len(role_keys), 5))):
        if _S.not_a_number(v):
            return None
        try:
            a = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            return None
        if a.shape != shape:
            return None
        out.append(a)
    return out


def _vec(value: Any, size: int, path: object, record: int, key: str) -> np.ndarray:
    try:
        a = np.zeros(0) if _S.not_a_number(value) else np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        a = np.zeros(0)
    if a.size != size:
        what = "a number" if size == 1 else f"{size} numbers"
        raise FormatError(f"expected {what}, got {value!r}", file=path, record=record, field=key)
    return a


def _checked(det: VCOCODetections, records: np.ndarray, path: object, lenient: bool, layout: str,
             dropped: dict[str, int]) -> VCOCODetectionsFile:
    code = det.problems()
    bad = np.flatnonzero(code)
    if bad.size and not lenient:
        i = int(bad[0])
        raise FormatError(f"{DETECTION_PROBLEMS[int(code[i])]} ({bad.size} bad detections in all)",
                          file=path, record=int(records[i]),
                          field="person_box" if code[i] <= 2 else "role_boxes" if code[i] >= 4 else "scores")
    if bad.size:
        for c in code[bad]:
            reason = DETECTION_PROBLEMS[int(c)]
            dropped[reason] = dropped.get(reason, 0) + 1
        keep = np.flatnonzero(code == 0)
        det, records = det.subset(keep), records[keep]
    return VCOCODetectionsFile(det, records, str(path), layout, dropped)


# --------------------------------------------------------------------------- detections: write
def write_vcoco_detections(detections: VCOCODetections, path: str | os.PathLike[str], *,
                           share_role_boxes: bool = True) -> None:
    """Write the hoibench JSON layout (atomically): float32 values in their shortest form, NaN as
    ``null``. With ``share_role_boxes`` the distinct role boxes of an image are written once
    (``object_boxes``) and referenced by index (``role_objects``), as detectors produce them."""
    det = detections
    images = []
    order = np.argsort(det.image_ids, kind="stable")
    ids = det.image_ids[order]
    cuts = np.flatnonzero(np.diff(ids)) + 1
    for rows in np.split(order, cuts) if order.size else []:
        entry: dict[str, Any] = {"image_id": int(det.image_ids[rows[0]]),
                                 "person_boxes": det.person_boxes[rows],
                                 "agent_scores": det.agent_scores[rows]}
        rb = det.role_boxes[rows]
        if share_role_boxes:
            flat = rb.reshape(-1, 4)
            has = ~np.isnan(flat).all(axis=1)
            uniq, inverse = np.unique(flat[has], axis=0, return_inverse=True)
            index = np.full(flat.shape[0], -1, dtype=np.int64)
            index[has] = inverse.reshape(-1)
            entry["object_boxes"] = uniq
            entry["role_objects"] = index.reshape(rb.shape[:2])
        else:
            entry["role_boxes"] = [[None if np.isnan(b).all() else b for b in row] for row in rb]
        entry["role_scores"] = det.role_scores[rows]
        images.append(entry)
    atomic_write_json(path, {"kind": "vcoco_detections", "agent_classes": list(vcoco_action_names()),
                             "role_classes": list(vcoco_role_classes()), "images": images})


def write_vsrl_detections(detections: VCOCODetections, path: str | os.PathLike[str]) -> None:
    """Write ``vsrl_eval.py``'s detection pickle (list of dicts, float32 values as it keeps them).

    The records are made one at a time while the list is pickled (the pickler takes a list's
    items from an iterator, and its memo is cleared between batches of records, which share
    nothing), so memory holds one batch's Python objects, not all of them (1.85 GB at the peak
    for 49,460 detections, ~17 GB for 494,600). Protocol 3: its memo indices are explicit, so a
    cleared memo starts over without the loader's memo going out of step (protocol 4 numbers
    entries implicitly)."""
    names, roles = vcoco_schema()
    keys = ["image_id", "person_box", *[f"{a}_agent" for a in names],
            *[f"{a}_{r}" for a, rs in zip(names, roles) for r in rs[1:]]]
    det = detections
    agent = det.agent_scores.astype(np.float32, copy=False)
    role = np.concatenate([det.role_boxes, det.role_scores[..., None]], axis=2).astype(np.float32, copy=False)
    with atomic_write(path) as fh:
        pickler = pickle.Pickler(fh, protocol=3)

        def records() -> Iterator[dict[str, Any]]:
            for k in range(len(det)):
                if k and k % 1000 == 0:
                    pickler.clear_memo()  # the records written so far are never referred to again
                yield dict(zip(keys, (int(det.image_ids[k]), det.person_boxes[k].copy(), *agent[k], *role[k])))

        pickler.dump(_PickledList(records()))


class _PickledList:
    """Pickles as a list whose items come from an iterator (``copyreg``'s reduce protocol:
    ``list()`` then the items appended in batches); loads as a plain ``list``."""

    def __init__(self, items: Iterator[Any]) -> None:
        self.items = items

    def __reduce__(self) -> tuple[Any, ...]:
        return list, (), None, self.items
