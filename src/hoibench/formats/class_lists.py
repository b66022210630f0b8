"""Lists of HOI class ids given on the command line (``--classes FILE``).

One reader serves every command that takes such a file (``hoibench eval hico --classes``,
``hoibench analyze class-ap --classes``), so they accept the same layouts: a JSON list of
0-based ids, a Python list literal of them in a ``.txt`` or ``.json`` (how other repositories
write their zero-shot splits, e.g. HOICLIP's ``UC_HOI_IDX['uc0']``: trailing commas and
comments allowed), a ``classes.json`` written by ``hoibench split balanced``, or a text file
of ids separated by newlines, commas or spaces (``#`` starts a comment).
"""

from __future__ import annotations

import ast
import os
from typing import Any

import numpy as np
import orjson

from hoibench._exceptions import FormatError
from hoibench._io import check_json_start, read_bytes, refuses_deep_nesting

__all__ = ["read_class_list"]


def _python_list(text: bytes) -> list[Any] | None:
    """A Python list literal (other repos' class lists copied from source: trailing commas,
    comments), evaluated with ``ast.literal_eval`` (literals only, nothing runs)."""
    try:
        value = ast.literal_eval(text.decode("utf-8"))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        return None
    return list(value) if isinstance(value, (list, tuple)) else None


@refuses_deep_nesting
def read_class_list(path: str | os.PathLike[str], *, n_classes: int | None = None) -> np.ndarray:
    """Sorted unique 0-based class ids read from ``path``.

    Parameters
    ----------
    n_classes:
        Size of the label space; ids outside ``0..n_classes-1`` are an error naming the entry.
        ``None`` checks only that ids are non-negative integers.
    """
    data = read_bytes(check_json_start(path, also=b"#", what="a class list (JSON, a Python list or ids as text)"))
    stripped = data.strip()
    if stripped[:1] in (b"[", b"{"):
        try:
            items = orjson.loads(stripped)
        except orjson.JSONDecodeError as exc:
            items = _python_list(stripped)
            if items is None:
                raise FormatError(f"neither JSON nor a Python list of ids ({exc})", file=path) from None
        if isinstance(items, dict) and items.get("kind") == "balanced_classes":
            classes = items.get("classes")
            if not isinstance(classes, list):
                raise FormatError("expected a list", file=path, field="classes")
            items = [c.get("hoi") if isinstance(c, dict) else c for c in classes]
        elif not isinstance(items, list):
            raise FormatError("expected a JSON list of 0-based HOI class ids or a balanced classes.json "
                              "(kind 'balanced_classes')", file=path)
    else:
        text = data.decode("utf-8", errors="replace")
        items = [x for ln in text.splitlines() for x in ln.split("#")[0].replace(",", " ").split()]
    expected = "a non-negative integer" if n_classes is None else f"0..{n_classes - 1}"
    ids = []
    for k, x in enumerate(items):
        try:
            v = None if isinstance(x, bool) or (isinstance(x, float) and not x.is_integer()) else int(x)
        except (TypeError, ValueError):
            v = None
        if v is None or v < 0 or (n_classes is not None and v >= n_classes):
            raise FormatError(f"expected a 0-based HOI class id ({expected}), got {x!r}", file=path, record=k)
        ids.append(v)
    if not ids:
        raise FormatError("no class ids", file=path)
    return np.unique(np.asarray(ids, dtype=np.int64))
