"""Helpers shared by the format readers: typed field access with precise error messages."""

from __future__ import annotations

import math
import mmap
import re
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench.data import HOIDataset, validate_dataset

__all__ = ["RecordReader", "check_dataset", "image_spans", "json_brackets", "list_spans", "plain_number",
           "short_repr"]


class RecordReader:
    """Field access for one file; every failure names the file, the record and the field."""

    def __init__(self, file: object) -> None:
        self.file = str(file)

    def error(self, record: object, field: str | None, problem: str) -> FormatError:
        return FormatError(problem, file=self.file, record=record, field=field)

    def get(self, obj: Any, key: str, record: object, *, kind: type | tuple[type, ...] | None = None,
            where: str = "") -> Any:
        field = f"{where}.{key}" if where else key
        if not isinstance(obj, dict):
            raise self.error(record, where or None, f"expected an object, got {type(obj).__name__}")
        if key not in obj:
            raise self.error(record, field, "missing")
        value = obj[key]
        if kind is not None and not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.error(record, field, f"expected {names}, got {type(value).__name__}")
        return value

    def box(self, value: Any, record: object, field: str) -> list[float]:
        """A 4-number box; NaN and inverted boxes are caught later by :func:`check_dataset`."""
        if not isinstance(value, (list, tuple)) or len(value) != 4:
            raise self.error(record, field, f"expected a box of 4 numbers, got {value!r}")
        for v in value:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.error(record, field, f"expected a box of 4 numbers, got {value!r}")
        try:
            return [float(v) for v in value]
        except OverflowError:  # an int of 400 digits
            raise self.error(record, field, "expected a box of 4 numbers within float64's range") from None

    def integer(self, value: Any, record: object, field: str) -> int:
        """An integer (``2.0`` too) within 64 bits: 2**80 is refused here, not an OverflowError later."""
        if (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer()):
            if -(2**63) <= value < 2**63:
                return int(value)
            raise self.error(record, field, f"expected an integer within 64 bits, got {short_repr(value)}")
        raise self.error(record, field, f"expected an integer, got {short_repr(value)}")


def short_repr(v: Any) -> str:
    """``repr(v)`` for an error line, a 400-digit number cut short."""
    r = repr(v)
    return r if len(r) <= 40 else f"{r[:24]}... ({len(r)} characters)"


def check_dataset(ds: HOIDataset, file: object) -> HOIDataset:
    """Raise a :class:`FormatError` for the first structural problem of a freshly read dataset."""
    problems = validate_dataset(ds, limit=1)
    if problems:
        p = problems[0]
        raise FormatError(p.problem, file=file, record=p.record, field=p.field)
    return ds


def plain_number(v: float) -> int | float:
    """Write integral coordinates as integers (as the released files do)."""
    return int(v) if math.isfinite(v) and float(v).is_integer() else float(v)


def text_brackets(text: bytes | mmap.mmap | Any) -> int:
    """``[`` characters in a text held as bytes or any other buffer: a memory map
    (:func:`read_buffer <hoibench._io.read_buffer>`; a map has no ``count``, and its ``in`` looks
    for one byte) or a ``msgspec.Raw`` slice, counted in place."""
    view = np.frombuffer(text, dtype=np.uint8)
    if len(view) <= _SLICE:
        return int(np.count_nonzero(view == ord("[")))
    # in 4 MB slices: the comparison's temporary stays in cache instead of faulting in a
    # file-sized array (0.05 s for 169 MB, against 0.34 s whole and 0.13 s for bytes.count)
    return sum(int(np.count_nonzero(view[i:i + _SLICE] == ord("["))) for i in range(0, len(view), _SLICE))


_SLICE = 1 << 22


def json_brackets(value: Any) -> int:
    """``[`` characters in a value parsed by pysimdjson (an array or object: its minified text; a
    string: itself). pysimdjson's ``as_buffer`` flattens any nesting, so the readers that export
    numeric rows with it prove that no row nests by counting the file's ``[`` against those of
    its layout; values outside the layout (unknown keys, names) are counted with this."""
    if isinstance(value, str):
        return value.count("[")
    mini = getattr(value, "mini", None)
    return int(mini.count(b"[")) if mini is not None else 0


_IMAGES_OPEN = re.compile(rb'"images"[ \t\n\r]*:[ \t\n\r]*\[[ \t\n\r]*\Z')
_JSON_SPACE = b" \t\n\r"


def _brace_positions(view: np.ndarray, step: int = 1 << 20, pair: bytes = b"{}") -> np.ndarray:
    """Where ``{`` and ``}`` (or the two bytes of ``pair``) are, scanned in 1 MB slices through
    reused buffers (0.16 s for 320 MB; temporaries the size of the file, or fresh ones per slice,
    fault in page by page and take 0.6 s)."""
    a, b = np.empty(step, dtype=bool), np.empty(step, dtype=bool)
    found = [np.zeros(0, dtype=np.int64)]
    for i in range(0, len(view), step):
        c = view[i:i + step]
        x, y = a[:len(c)], b[:len(c)]
        np.equal(c, pair[0], out=x)
        np.equal(c, pair[1], out=y)
        np.logical_or(x, y, out=x)
        found.append(np.flatnonzero(x) + i)
    return np.concatenate(found)


def _objects_at(raw: bytes | mmap.mmap | Any, level: int, pair: bytes = b"{}"
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """Start and stop offsets of the objects (or with ``pair=b"[]"`` the lists) opened at depth
    ``level`` (1: the top level's own), from those brackets alone; ``None`` when they do not
    close or nothing is found."""
    view = np.frombuffer(raw, dtype=np.uint8)
    pos = _brace_positions(view, pair=pair)
    opens = view[pos] == pair[0]
    depth = np.cumsum(np.where(opens, 1, -1))
    if not len(pos) or depth[-1] != 0 or depth.min() < 0:
        return None
    starts, stops = pos[opens & (depth == level)], pos[~opens & (depth == level - 1)] + 1
    return (starts, stops) if len(starts) == len(stops) and len(starts) else None


def image_spans(raw: bytes | mmap.mmap | Any) -> tuple[bytes, list[memoryview]] | None:
    """A JSON object's ``"images"`` list as each image's text, found from the braces alone, and
    the rest of the file with that list emptied (``{..."images": []...}``, the "skeleton").

    The candidates are the objects one level below the top; the images are the run of them
    right after ``"images": [``, separated by commas only and closed by ``]``, and the skeleton
    must hold one ``"images"``. The caller decodes the skeleton as the top level and parses each
    image on its own: if every image is JSON, the file is JSON with these images. A brace inside
    a string can mislead the count; then some span is not JSON (the caller then reads the file
    another way). ``None`` when there is no such run (no images, a top level that is not an
    object, a brace count that does not close). Each image is parsed by itself, so a reader's
    parser buffers stay image-sized: no document of the whole file, whose fresh pages fault in
    one by one."""
    found = _objects_at(raw, 2)
    if found is None:
        return None
    starts, stops = found
    first = next((k for k, at in enumerate(starts.tolist()) if _IMAGES_OPEN.search(bytes(raw[max(0, at - 64):at]))),
                 None)
    if first is None:
        return None
    mem = memoryview(raw)
    last = first
    while last + 1 < len(starts) and bytes(mem[stops[last]:starts[last + 1]]).strip(_JSON_SPACE) == b",":
        last += 1
    end = int(stops[last])
    skeleton = bytes(mem[:starts[first]]) + bytes(mem[end:])
    if not bytes(mem[end:end + 64]).lstrip(_JSON_SPACE).startswith(b"]") or skeleton.count(b'"images"') != 1:
        return None
    return skeleton, [mem[a:b] for a, b in zip(starts[first:last + 1].tolist(), stops[first:last + 1].tolist())]


def list_spans(raw: bytes | mmap.mmap | Any, *, of: bytes = b"{}") -> list[memoryview] | None:
    """A top-level JSON list of objects (``[{...}, {...}]``, QPIC's per-image outputs; with
    ``of=b"[]"`` a list of lists) as each element's text, found from the braces (brackets) alone
    as :func:`image_spans` finds images: the elements are those at the top level of the list,
    and the text between them must be ``[``, commas and ``]`` with white space only. If each
    element then parses as JSON by itself, the file is JSON with these elements (the grammar
    composes); a brace inside a string can mislead the split, and then some element is not JSON
    (the caller reads the file another way). ``None`` when the file is not split so (no elements,
    anything else at the top level, brackets that do not close)."""
    found = _objects_at(raw, 1 if of == b"{}" else 2, of)
    if found is None:
        return None
    starts, stops = found[0].tolist(), found[1].tolist()
    mem = memoryview(raw)
    if (bytes(mem[:starts[0]]).strip(_JSON_SPACE) != b"[" or bytes(mem[stops[-1]:]).strip(_JSON_SPACE) != b"]"
            or any(bytes(mem[b:a]).strip(_JSON_SPACE) != b"," for b, a in zip(stops, starts[1:]))):
        return None
    return [mem[a:b] for a, b in zip(starts, stops)]

