"""Columns straight from a JSON (or Python-literal) text: the ``_colscan`` extension's interface.

The readers of large prediction files describe the fields they want as a schema; the scanner
reads the text once and appends every number of a field to one float64 column, with counts
per record, so no document, tape or Python object per number is built. It refuses (``None``)
whatever it does not prove, and the reader then takes its careful path, which accepts the file or
names the record and field of the problem, checking each parsed record against the same schema
(:func:`conform`). The extension is optional: built from ``_colscan.c`` when hoibench is
installed from source with a C compiler; without it (or with ``HOIBENCH_NO_NATIVE=1``)
:data:`AVAILABLE` is false and the careful readers read every file.

Schema: :func:`field` (``key``, kind, sub-fields). The counters of a column are per *slot*:
slot 0 holds what lies outside the outermost list of objects, slot ``1 + i`` everything inside
its element ``i`` (an image), however deep.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench.formats._common import short_repr

try:  # (by name: an import "from hoibench.formats" would read as one of the package itself)
    _colscan: Any = importlib.import_module("hoibench.formats._colscan")
except ImportError:  # no compiler at install time: the careful readers
    _colscan = None

#: the extension as imported (tests turn the scanner off and on through ``_colscan``)
_NATIVE = _colscan
#: whether this install holds a build of the extension at all (an import that fails is a bug)
BUILT = any(Path(__file__).parent.glob("_colscan*.so")) or any(Path(__file__).parent.glob("_colscan*.pyd"))

if os.environ.get("HOIBENCH_NO_NATIVE"):  # for comparisons: the readers without the scanner
    _colscan = None

AVAILABLE = _colscan is not None

#: field kinds: a string, a number, a list of numbers, a list of rows of numbers, a list of
#: objects (records), an object, a list of strings, a list of lists of rows (V-COCO's role boxes)
STR, NUM, NUMS, ROWS, RECORDS, OBJECT, STRS, ROWS3 = 1, 2, 3, 4, 5, 6, 7, 8


def field(key: str, kind: int, *sub: tuple[Any, ...], strict: bool = False, nulls: bool = False,
          null_row: int = 0, f32: bool = False) -> tuple[Any, ...]:
    """One field of a schema; ``sub``: the fields of a ``RECORDS`` or ``OBJECT`` field's objects,
    ``strict``: their other keys are refused (else parsed, checked and skipped). For ``NUMS``,
    ``ROWS`` and ``ROWS3``: ``nulls``, a ``null`` number is read as NaN (else refused);
    ``null_row``, a ``null`` where a row is expected is read as that many NaNs (0: refused);
    ``f32``, the values are kept as float32 (each double rounded as ``astype(np.float32)``
    rounds it: half the memory, for a reader that would cast them anyway)."""
    return (key.encode(), kind, (strict, tuple(sub)) if kind in (RECORDS, OBJECT) else None, int(nulls), null_row,
            int(f32))


def not_a_number(value: Any, *, nulls: bool = True) -> Any:
    """The first value inside ``value`` (nested lists, tuples and arrays) that is not a number
    (a string, a boolean, an object; ``None`` too unless ``nulls``), as a 1-tuple; ``()`` when
    there is none. Numpy would convert ``"12.5"`` or ``true`` silently; the careful readers
    refuse them."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        return ()
    try:
        a = np.asarray(value)
        if a.dtype.kind in "iuf":  # the usual case: numbers only, or numbers and booleans (made 0 and 1)
            leaves: Any = value
            for _ in range(a.ndim - 1):  # a regular nesting, a.ndim deep
                leaves = chain.from_iterable(leaves)
            kinds = set(map(type, leaves)) if a.ndim else {type(value)}
            if not kinds & {bool, np.bool_}:
                return ()
    except (TypeError, ValueError, OverflowError):  # ragged (nulls among rows), huge ints: look inside
        pass
    stack = [value]
    while stack:  # no recursion: nesting is bounded by the parser alone
        v = stack.pop()
        if isinstance(v, (list, tuple, np.ndarray)):
            stack.extend(reversed(list(v)))
        elif v is None:
            if not nulls:
                return (v,)
        elif isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            return (v,)
    return ()


#: per kind, the Python type the careful readers take for it (after parsing the whole text) and
#: how an error line names it
_PYTHON = {STR: (str, "a string"), NUM: ((int, float), "a number"), NUMS: (list, "a list"),
           ROWS: (list, "a list"), RECORDS: (list, "a list"), OBJECT: (dict, "an object"),
           STRS: (list, "a list"), ROWS3: (list, "a list")}


def fields_of(schema: tuple[Any, ...], key: str = "") -> tuple[Any, ...]:
    """The field ``key`` of a ``RECORDS`` or ``OBJECT`` schema (``""``: the schema itself)."""
    if not key:
        return schema
    return next(f for f in schema[2][1] if f[0] == key.encode())


def conform(value: Any, schema: tuple[Any, ...], *, file: object, record: object = None,
            required: tuple[str, ...] = (), ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """The careful readers' check of one parsed record against the fields the scanner reads
    (``schema``: a ``RECORDS`` or ``OBJECT`` :func:`field`): an object, each field of the schema
    that is given (not ``null``) of its kind but those in ``ignore`` (another format's keys), each
    of ``required`` given. The first problem is one
    :class:`~hoibench.FormatError` naming the file, the record and the field; the numbers inside
    lists are the reader's to check (vectorised, with its own rules for ids). Returns ``value``."""
    if not isinstance(value, dict):
        raise FormatError(f"expected an object, got {type(value).__name__}", file=file, record=record)
    for key, kind, *_ in schema[2][1]:
        name = key.decode()
        if name in ignore:
            continue
        v = value.get(name)
        if v is None:
            if name in required:
                raise FormatError("missing", file=file, record=record, field=name)
            continue
        types, what = _PYTHON[kind]
        if not isinstance(v, types) or isinstance(v, bool):
            got = short_repr(v) if kind in (STR, NUM) else type(v).__name__
            raise FormatError(f"expected {what}, got {got}", file=file, record=record, field=name)
    return value


@dataclass
class Column:
    """One field's values over the text. ``occ``: times the key was met per slot; ``items``:
    per slot, elements of its lists (rows for ``ROWS``, lists of rows for ``ROWS3``, objects
    for ``RECORDS``, strings for ``STRS``, 1 per value otherwise); ``nums``: numbers per slot;
    ``values``: float64 numbers (float32 for an ``f32`` field), or (start, stop) byte offsets of
    strings; ``width``: (shortest, longest) innermost list, (-1, -1) if none."""

    occ: np.ndarray
    items: np.ndarray
    nums: np.ndarray
    values: np.ndarray
    width: tuple[int, int]
    fractional: bool  # a number written with a fraction or an exponent
    escaped: bool  # a string holding a backslash escape
    nulls: bool = False  # a null was read (as NaN)
    middle: tuple[int, int] = (-1, -1)  # ROWS3: (shortest, longest) list of rows, (-1, -1) if none

    def integers(self, limit: float = 2.0**53) -> np.ndarray | None:
        """The values as int64 ids; ``None`` for a number written as a fraction or at or beyond
        ``limit`` in size (beyond 2**53 a double no longer holds every integer)."""
        v = self.values
        if self.fractional or (v.size and (v.max() >= limit or v.min() <= -limit)):
            return None
        return v.astype(np.int64)

    def rows_of(self, width: int) -> bool:
        """Whether every row of a ``ROWS`` field holds exactly ``width`` numbers: in every slot
        as many numbers as rows times ``width`` (rows that are all empty leave no width to
        compare), and no row shorter or longer."""
        return bool((self.nums == self.items * width).all()) and (not self.values.size or self.width == (width, width))

    def starts(self) -> np.ndarray:
        """Per element of the outermost list, where its items begin among the column's items."""
        items = self.items[1:]
        return np.cumsum(items) - items

    def owners(self) -> np.ndarray:
        """Per item, the element of the outermost list it lies in."""
        return np.repeat(np.arange(len(self.items) - 1), self.items[1:])

    def strings(self, buf: Any) -> list[str] | None:
        """The strings, decoded; ``None`` for text that is not UTF-8."""
        mem = memoryview(buf)
        out = []
        try:
            for a, b in self.values.reshape(-1, 2).tolist():
                raw = bytes(mem[a:b])
                out.append(json.loads(b'"' + raw + b'"') if self.escaped and b"\\" in raw else raw.decode())
        except (UnicodeDecodeError, ValueError):
            return None
        return out


@dataclass
class Scanned:
    """What :func:`scan` read: where it stopped, whether the root list closed, the slots and a
    column per field, named by its path (``"images.boxes_h"``)."""

    stop: int
    done: bool
    n_slots: int
    columns: dict[str, Column]
    #: with ``select``: the kept cells, their scores, and how many each element kept
    selection: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: literal mode: an identifier named float64 (``np.float64(x)``, ``dtype=float64``)
    float64: bool = False
    #: with ``split``: a second thread's columns were used (the same columns either way)
    halves: bool = False

    def __getitem__(self, path: str) -> Column:
        return self.columns[path]


def _paths(root: tuple[Any, ...]) -> list[tuple[str, type]]:
    """The fields' paths and value types in the extension's column order (depth first, the
    root first): int64 (string offsets), float32 or float64."""
    out: list[tuple[str, type]] = [(root[0].decode(), np.float64)]

    def walk(schema: Any, prefix: str) -> None:
        for key, kind, sub, _, _, f32 in schema[1]:
            path = f"{prefix}{key.decode()}"
            out.append((path, np.int64 if kind in (STR, STRS) else np.float32 if f32 else np.float64))
            if sub is not None:
                walk(sub, path + ".")

    walk(root[2], f"{out[0][0]}." if out[0][0] else "")
    return out


@dataclass
class Select:
    """A per-element reduction of a (pairs, columns) score table, done as each element of a
    ``RECORDS`` root is read (a QPIC file's ``verb_scores``): the element's best ``k`` cells
    among the valid ones, as :func:`top_valid` keeps them; the row of ``valid`` of a pair is
    ``row_of_label[labels[pairs[pair]]]``. ``scores``, ``pairs``, ``labels``: the fields' paths;
    ``boxes``: the ``ROWS`` field ``labels`` gives one label per row of. The element is refused
    when a pair or label index is not an integer inside its table."""

    scores: str
    pairs: str
    labels: str
    boxes: str
    row_of_label: np.ndarray
    valid: np.ndarray
    k: int | None


def scan(buf: Any, pos: int, root: tuple[Any, ...], *, literal: bool = False, limit: int = -1,
         resume: bool = False, select: Select | None = None, split: int | None = None) -> Scanned | None:
    """Read the value at ``pos`` (a ``RECORDS`` or ``OBJECT`` root :func:`field`) into columns;
    ``None`` when the text is anything the schema does not prove, or without the extension.
    ``literal``: a Python repr held in a JSON string (``'...'`` strings, ``np.float32(x)``,
    ``array([...], dtype=...)``, escaped newlines between tokens; any other escape refused).
    A ``RECORDS`` root reads at most ``limit`` objects (all: -1); ``resume`` goes on where a
    previous call stopped. ``split`` (with ``limit=-1``): the outermost list of objects is read
    by two threads, the second from the first boundary of two elements found after that byte
    offset; its columns are used only when the first thread, reading on, ends an element exactly
    there, so the result is the same as without it, whatever the offset (see :func:`halfway`)."""
    if _colscan is None:
        return None
    paths = _paths(root)
    reduce = None
    if select is not None:
        valid = np.ascontiguousarray(select.valid, dtype=np.uint8)
        names = [path for path, _ in paths]
        if any(dict(paths)[p] != np.float64 for p in (select.scores, select.pairs, select.labels)):
            raise ValueError("select: its score, pair and label fields must be float64")
        reduce = (*(names.index(p) for p in (select.scores, select.pairs, select.labels, select.boxes)),
                  np.ascontiguousarray(select.row_of_label, dtype=np.int64).tobytes(), valid.tobytes(),
                  valid.shape[1], -1 if select.k is None else select.k)
    got = _colscan.scan(buf, pos, root, literal, limit, resume, reduce, -1 if split is None else split)
    if got is None:
        return None
    stop, done, n_slots, cols, selected, float64, halves = got
    chosen = None
    if selected is not None:
        cells, scores, kept = selected
        chosen = (np.frombuffer(cells, np.int64), np.frombuffer(scores, np.float64), np.frombuffer(kept, np.int64))
    columns = {}
    for (path, dtype), (occ, items, nums, data, wmin, wmax, fractional, escaped, nulls, mmin, mmax) in zip(paths, cols):
        columns[path] = Column(np.frombuffer(occ, np.int64), np.frombuffer(items, np.int64),
                               np.frombuffer(nums, np.int64), np.frombuffer(data, dtype),
                               (wmin, wmax), bool(fractional), bool(escaped), bool(nulls), (mmin, mmax))
    return Scanned(stop, bool(done), n_slots, columns, chosen, bool(float64), bool(halves))


#: texts shorter than this are read by one thread (a second one would cost more than it saves)
SPLIT_MIN_BYTES = 8 << 20


def halfway(buf: Any, pos: int = 0) -> int | None:
    """The ``split`` for :func:`scan` that shares a large text between two threads (the middle
    of what lies after ``pos``), or ``None`` for a short text or a machine with one core."""
    n = len(buf) - pos
    return pos + n // 2 if n >= SPLIT_MIN_BYTES and (os.cpu_count() or 1) > 1 else None


def only_space_after(buf: Any, stop: int) -> bool:
    """Whether nothing but JSON whitespace follows ``stop`` (where a scan ended)."""
    return not bytes(buf[stop:]).strip(b" \t\n\r")


def scan_document(buf: Any, root: tuple[Any, ...], *, records: str, split: int | None = None
                  ) -> dict[str, Column] | None:
    """The columns of a whole text that is one ``root`` object holding its list ``records``
    (the images) exactly once, with nothing but whitespace after it; ``None`` otherwise.
    ``split``: as for :func:`scan`."""
    got = scan(buf, 0, root, split=split)
    if got is None or not only_space_after(buf, got.stop) or got.columns[records].occ[0] != 1:
        return None
    return got.columns


def parse_float(token: bytes, *, literal: bool = False) -> float | None:
    """The scanner's conversion of one number token (``None``: refused); for the tests."""
    if _colscan is None:
        raise RuntimeError("the _colscan extension is not built")
    return _colscan.parse_float(token, literal)


def top_valid(scores: np.ndarray, pair_row: np.ndarray, valid: np.ndarray, pairs_per_image: np.ndarray,
              k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per image, the best ``k`` (``None``: all) cells ``pair * columns + column`` (the pair
    counted within its image) of a (pairs, columns) score table whose ``valid[pair_row[pair],
    column]`` is set, best first, ties by cell: what a stable ``argsort`` of the negated valid
    scores keeps. Returns the cells, their scores and how many each image kept. (The selection
    that :class:`Select` applies while scanning, callable by itself: the tests check it against
    numpy.)"""
    if _colscan is None:
        raise RuntimeError("the _colscan extension is not built")
    s = np.ascontiguousarray(scores, dtype=np.float64)
    cells, chosen, kept = _colscan.top_valid(s, np.ascontiguousarray(pair_row, dtype=np.int64),
                                             np.ascontiguousarray(valid, dtype=np.uint8), valid.shape[1],
                                             np.ascontiguousarray(pairs_per_image, dtype=np.int64),
                                             -1 if k is None else k)
    return np.frombuffer(cells, np.int64), np.frombuffer(chosen, np.float64), np.frombuffer(kept, np.int64)
