"""Helpers shared by the format readers: typed field access with precise error messages."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench.data import HOIDataset, validate_dataset
from hoibench.vocab import LabelSpace

__all__ = [
    "FLOAT_INTS",
    "Columns",
    "RecordReader",
    "check_dataset",
    "objects_of_coco80",
    "only_numbers",
    "plain_number",
    "short_repr",
]


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


#: ints from this size on have no float64 (``float(10**400)`` raises OverflowError)
FLOAT_INTS = 2**1024 - 2**970


def only_numbers(items: list[Any]) -> bool:
    """Whether nested lists hold only ints and floats (``np.asarray`` would turn ``True`` into 1),
    ints within float64's range."""
    stack = [items]
    while stack:
        for v in stack.pop():
            if type(v) is list:
                stack.append(v)
            elif type(v) is not float and (type(v) is not int or not -FLOAT_INTS < v < FLOAT_INTS):
                return False  # (an int beyond float64 would raise OverflowError in np.asarray)
    return True


def objects_of_coco80(vocab: LabelSpace) -> np.ndarray:
    """The label space's object index of each COCO-80 label (``-1`` for labels outside it)."""
    inv80 = np.full(80, -1, dtype=np.int64)
    inv80[vocab.coco80] = np.arange(vocab.n_objects)
    return inv80


@dataclass
class Columns:
    """One prediction file as columns, what either reading tier gives: per image its file name and
    detection count, then one row per detection (``objects``+``verbs`` or ``hois``)."""

    file_names: list[str]
    counts: np.ndarray
    boxes_h: np.ndarray
    boxes_o: np.ndarray
    objects: np.ndarray | None
    verbs: np.ndarray | None
    hois: np.ndarray | None
    scores: np.ndarray
