"""Checked reads of result objects (the JSON of :mod:`hoibench.results`), and the unit rule at
their boundary.

Every result type's ``from_json`` reads its object through :class:`Fields`, so that each problem
becomes one :class:`~hoibench.FormatError` naming the file, the record and the field (never a
``KeyError`` traceback, never a silently wrong number). Pure: it parses dicts and reads no file.

Units: the Python API speaks fractions (like scikit-learn and torchmetrics); the JSON keeps
percent where the documented schema always said percent (the mAP summary of ``hico_map``, the
summary means of ``vcoco_role_ap``). :func:`to_percent` and :func:`from_percent` are the only
conversions at that boundary.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError

__all__ = ["SCHEMA_VERSION", "Fields", "from_percent", "json_float", "result_header", "to_percent"]

#: version of the result schema this hoibench writes (and the newest it reads); files without a
#: ``version`` are version 1, the layout of every result file written before the key existed
SCHEMA_VERSION = 1

_MISSING: Any = object()


def to_percent(value: float) -> float:
    """A fraction as the percent the JSON holds (``value * 100``, as the evaluators always wrote it)."""
    return value * 100.0


def from_percent(value: float) -> float:
    """The fraction whose :func:`to_percent` is exactly ``value`` when one exists.

    ``value / 100`` alone does not always survive the trip back (``0.3 * 100`` is
    ``30.000000000000004``); a neighbour of it does whenever ``value`` was written by
    :func:`to_percent`, so a result read and written again keeps every digit of its file.
    """
    f = value / 100.0
    if not math.isfinite(f) or f * 100.0 == value:
        return f
    lo = hi = f
    for _ in range(2):
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
        for g in (lo, hi):
            if g * 100.0 == value:
                return g
    return f


def json_float(value: float) -> float | None:
    """A float for JSON: NaN (undefined, e.g. no class with ground truth) becomes null."""
    return None if math.isnan(value) else float(value)


def result_header(kind: str, model: str | None, benchmark: str | None) -> dict[str, Any]:
    """The keys every result object starts with: ``kind``, ``version``, ``model``, ``benchmark``
    (the last two only when given)."""
    out: dict[str, Any] = {"kind": kind, "version": SCHEMA_VERSION}
    if model is not None:
        out["model"] = model
    if benchmark is not None:
        out["benchmark"] = benchmark
    return out


def _type_name(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class Fields:
    """Typed access to one JSON object; every failure names the file, the record and the field.

    ``where`` prefixes field names of a nested object (``ci.full``). A key that is absent or
    null counts as missing; readers that accept null as "undefined" say so (``null=True``).
    """

    def __init__(self, d: Any, *, file: object = None, record: object = None, where: str = "") -> None:
        self.file = file
        self.record = record
        self.where = where
        if not isinstance(d, dict):
            raise FormatError(f"expected a JSON object, got {_type_name(d)}", file=file, record=record,
                              field=where or None)
        self.d: dict[str, Any] = d

    # ------------------------------------------------------------------ basics
    def name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str | None, problem: str) -> FormatError:
        return FormatError(problem, file=self.file, record=self.record,
                           field=self.name(key) if key is not None else (self.where or None))

    def has(self, key: str) -> bool:
        return self.d.get(key) is not None

    def _get(self, key: str, default: Any) -> Any:
        v = self.d.get(key)
        if v is None:
            if default is _MISSING:
                raise self.error(key, "missing")
            return default
        return v

    def sub(self, key: str) -> Fields:
        """A nested object (required)."""
        return Fields(self._get(key, _MISSING), file=self.file, record=self.record, where=self.name(key))

    def optional_sub(self, key: str) -> Fields | None:
        """A nested object, ``None`` when absent or null."""
        return self.sub(key) if self.has(key) else None

    def check_kind(self, kinds: str | tuple[str, ...]) -> str:
        """The object's ``kind`` (absent: the first of ``kinds``, the caller chose the type) and
        its schema ``version`` (absent: 1)."""
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        kind = self.d.get("kind", kinds[0])
        if kind not in kinds:
            want = kinds[0] if len(kinds) == 1 else f"one of {list(kinds)}"
            raise self.error("kind", f"expected {want!r}, got {kind!r}")
        version = self.d.get("version", 1)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise self.error("version", f"expected a positive integer, got {version!r}")
        if version > SCHEMA_VERSION:
            raise self.error("version", f"schema version {version} is newer than this hoibench reads "
                                        f"({SCHEMA_VERSION}); upgrade hoibench")
        return str(kind)

    # ------------------------------------------------------------------ scalars
    def number(self, key: str, *, default: Any = _MISSING, null: bool = False, lo: float | None = None,
               hi: float | None = None, unit: str = "") -> float:
        """A finite number (``null=True``: null is NaN, "undefined"), optionally in ``[lo, hi]``."""
        if null and key in self.d and self.d[key] is None:
            return math.nan
        v = self._get(key, default)
        if v is default and default is not _MISSING:
            return v
        if not _is_number(v):
            raise self.error(key, f"expected a number{' or null' if null else ''}, got {_type_name(v)}")
        if not math.isfinite(v):
            raise self.error(key, f"expected a finite number, got {v}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.error(key, f"expected {unit or 'a number'} in [{lo}, {hi}], got {v}")
        return float(v)

    def integer(self, key: str, *, default: Any = _MISSING, lo: int | None = None) -> int:
        v = self._get(key, default)
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.error(key, f"expected an integer, got {v!r}")
        if lo is not None and v < lo:
            raise self.error(key, f"expected an integer >= {lo}, got {v}")
        return v

    def string(self, key: str, *, default: Any = _MISSING) -> str:
        v = self._get(key, default)
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, str):
            raise self.error(key, f"expected a string, got {_type_name(v)}")
        return v

    def boolean(self, key: str, *, default: Any = _MISSING) -> bool:
        v = self._get(key, default)
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, bool):
            raise self.error(key, f"expected true or false, got {v!r}")
        return v

    def mapping(self, key: str, *, default: Any = _MISSING) -> dict[str, Any]:
        """A nested object as a plain dict (its values unchecked)."""
        v = self._get(key, default)
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, dict):
            raise self.error(key, f"expected an object, got {_type_name(v)}")
        return v

    def counts(self, key: str, *, default: Any = _MISSING) -> dict[str, int]:
        """``{reason: count}`` with non-negative integer counts."""
        raw = self.mapping(key, default=default)
        if raw is default and default is not _MISSING:
            return raw
        for k, v in raw.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise self.error(f"{key}.{k}", f"expected a count, got {v!r}")
        return {str(k): int(v) for k, v in raw.items()}

    def interval(self, key: str, *, scale: Any = None) -> tuple[float, float] | None:
        """``[low, high]`` with ``low <= high`` (null: undefined, ``None``); ``scale`` converts each end."""
        v = self.d.get(key)
        if v is None:
            return None
        if not isinstance(v, (list, tuple)) or len(v) != 2 or not all(_is_number(x) and math.isfinite(x) for x in v):
            raise self.error(key, f"expected [low, high], got {v!r}")
        lo, hi = float(v[0]), float(v[1])
        if lo > hi:
            raise self.error(key, f"low {lo} above high {hi}")
        return (scale(lo), scale(hi)) if scale is not None else (lo, hi)

    # ------------------------------------------------------------------ lists
    def _list(self, key: str, n: int | None, default: Any) -> list[Any] | None:
        v = self._get(key, default)
        if v is default and default is not _MISSING:
            return None
        if not isinstance(v, list):
            raise self.error(key, f"expected a list, got {_type_name(v)}")
        if n is not None and len(v) != n:
            raise self.error(key, f"expected {n} entries, got {len(v)}")
        return v

    def _bad_entry(self, key: str, v: list[Any], ok: Any, what: str) -> FormatError:
        i = next(i for i, x in enumerate(v) if not ok(x))
        return self.error(key, f"entry {i}: expected {what}, got {v[i]!r}")

    def numbers(self, key: str, *, n: int | None = None, null: bool = False, lo: float | None = None,
                hi: float | None = None, default: Any = _MISSING, unit: str = "") -> np.ndarray:
        """A list of finite numbers as float64 (``null=True``: null entries are NaN)."""
        v = self._list(key, n, default)
        if v is None:
            return default
        types = set(map(type, v))
        allowed = {int, float, type(None)} if null else {int, float}
        what = f"a number{' or null' if null else ''}"
        if not types <= allowed:
            raise self._bad_entry(key, v, lambda x: type(x) in allowed, what)
        nulls = np.array([x is None for x in v], dtype=bool) if type(None) in types else np.zeros(len(v), bool)
        arr = np.array([math.nan if x is None else x for x in v] if nulls.any() else v, dtype=np.float64)
        bad = ~np.isfinite(arr) & ~nulls
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise self.error(key, f"entry {i}: expected a finite number, got {v[i]!r}")
        ok = arr[~np.isnan(arr)]
        if (lo is not None and (ok < lo).any()) or (hi is not None and (ok > hi).any()):
            bad = ~np.isnan(arr) & (((arr < lo) if lo is not None else False) | ((arr > hi) if hi is not None else False))
            i = int(np.flatnonzero(bad)[0])
            raise self.error(key, f"entry {i}: expected {unit or 'a number'} in [{lo}, {hi}], got {v[i]!r}")
        return arr

    def integers(self, key: str, *, n: int | None = None, lo: int | None = None, hi: int | None = None,
                 default: Any = _MISSING) -> np.ndarray:
        """A list of integers as int64, optionally in ``[lo, hi)``."""
        v = self._list(key, n, default)
        if v is None:
            return default
        if not set(map(type, v)) <= {int}:
            raise self._bad_entry(key, v, lambda x: type(x) is int, "an integer")
        arr = np.array(v, dtype=np.int64) if v else np.zeros(0, dtype=np.int64)
        bad = np.zeros(len(arr), dtype=bool)
        if lo is not None:
            bad |= arr < lo
        if hi is not None:
            bad |= arr >= hi
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            rng = f">= {lo}" if hi is None else f"in [{lo if lo is not None else '-inf'}, {hi})"
            raise self.error(key, f"entry {i}: expected an integer {rng}, got {v[i]}")
        return arr

    def booleans(self, key: str, *, n: int | None = None, default: Any = _MISSING) -> np.ndarray:
        v = self._list(key, n, default)
        if v is None:
            return default
        if not set(map(type, v)) <= {bool}:
            raise self._bad_entry(key, v, lambda x: type(x) is bool, "true or false")
        return np.array(v, dtype=bool) if v else np.zeros(0, dtype=bool)

    def strings(self, key: str, *, n: int | None = None, default: Any = _MISSING) -> tuple[str, ...]:
        v = self._list(key, n, default)
        if v is None:
            return default
        if not set(map(type, v)) <= {str}:
            raise self._bad_entry(key, v, lambda x: type(x) is str, "a string")
        return tuple(v)

    def number_map(self, key: str, *, null: bool = False, default: Any = _MISSING,
                   scale: Any = None, lo: float | None = None, hi: float | None = None,
                   unit: str = "") -> dict[str, float]:
        """``{name: number}`` (``null=True``: null is NaN); ``scale`` converts every value."""
        raw = self.mapping(key, default=default)
        if raw is default and default is not _MISSING:
            return raw
        sub = Fields(raw, file=self.file, record=self.record, where=self.name(key))
        out = {}
        for k in raw:
            x = sub.number(k, null=null, lo=lo, hi=hi, unit=unit)
            out[str(k)] = scale(x) if scale is not None and not math.isnan(x) else x
        return out

