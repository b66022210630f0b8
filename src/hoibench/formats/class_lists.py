"""Lists of HOI class ids given on the command line (``--classes FILE``).

One reader serves every command that takes such a file (``hoibench eval hico --classes``,
``hoibench analyze class-ap --classes``), so they accept the same layouts: a JSON list of
0-based ids, a Python list literal of them in a ``.txt`` or ``.json`` (how other repositories
write their zero-shot splits, e.g. HOICLIP's ``UC_HOI_IDX['uc0']``: trailing commas and
comments allowed), a ``classes.json`` written by ``hoibench split balanced``, or a text file
of ids separated by newlines, commas or spaces (``#`` starts a comment). The zero-shot classes a
``split balanced --zero-shot`` folder records (``--classes zero-shot:DIR``) are read here too.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import check_json_start, read_bytes, read_json, refuses_deep_nesting
from hoibench.vocab import ZERO_SHOT_ALIASES

__all__ = ["BALANCED_CLASSES_FILE", "balanced_zero_shot_dir", "read_balanced_zero_shot", "read_class_list"]

#: the file of ``hoibench split balanced`` that lists its classes and its zero-shot classes
BALANCED_CLASSES_FILE = "classes.json"


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
    return _class_ids(items, path, n_classes)


def _class_ids(items: list[Any], path: object, n_classes: int | None, field: str | None = None) -> np.ndarray:
    """Sorted unique ids of ``items``; an entry that is no id in range is an error naming it."""
    expected = "a non-negative integer" if n_classes is None else f"0..{n_classes - 1}"
    ids = []
    for k, x in enumerate(items):
        try:
            v = None if isinstance(x, bool) or (isinstance(x, float) and not x.is_integer()) else int(x)
        except (TypeError, ValueError):
            v = None
        if v is None or v < 0 or (n_classes is not None and v >= n_classes):
            raise FormatError(f"expected a 0-based HOI class id ({expected}), got {x!r}", file=path, record=k,
                              field=field)
        ids.append(v)
    if not ids:
        raise FormatError("no class ids", file=path, field=field)
    return np.unique(np.asarray(ids, dtype=np.int64))


def balanced_zero_shot_dir(spec: str) -> str | None:
    """The folder of a ``zero-shot:DIR`` spec (B-RIGHT's balanced zero-shot protocol); ``None`` for
    anything else, including the named settings ``zero-shot:rf-uc`` / ``zero-shot:unseen_object``
    (write ``zero-shot:./rf-uc`` for a folder of that name)."""
    key = spec.strip()
    if not key.lower().startswith("zero-shot:"):
        return None
    rest = key.split(":", 1)[1]
    named = rest.strip().lower() in ZERO_SHOT_ALIASES or rest.strip().lower() in ZERO_SHOT_ALIASES.values()
    return None if named else rest


def read_balanced_zero_shot(folder: str | os.PathLike[str], *,
                            n_classes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(zero-shot classes, balanced classes)`` recorded in the ``classes.json`` of a
    ``hoibench split balanced --zero-shot`` folder (sorted 0-based ids).

    A folder without that file, or built without ``--zero-shot`` (``zero_shot_classes`` null), or
    with an empty zero-shot set, is one error naming the file and field: a mAP over no unseen
    classes must not become a number.
    """
    path = Path(folder)
    if not path.is_dir():
        raise ConfigError(f"zero-shot:{folder}: not a folder (expected the output folder of "
                          f"`hoibench split balanced --zero-shot`)")
    file = path / BALANCED_CLASSES_FILE
    if not file.is_file():
        raise FormatError(f"no {BALANCED_CLASSES_FILE}: not a folder written by `hoibench split balanced "
                          f"--zero-shot`", file=path)
    data = read_json(file)
    if not isinstance(data, dict) or data.get("kind") != "balanced_classes":
        raise FormatError("expected the classes.json of `hoibench split balanced` (kind 'balanced_classes')",
                          file=file)
    zs = data.get("zero_shot_classes")
    if zs is None:
        raise FormatError("no zero-shot record: the split was built without --zero-shot (rebuild it with "
                          "`hoibench split balanced --zero-shot`)", file=file, field="zero_shot_classes")
    if not isinstance(zs, list) or not isinstance(data.get("classes"), list):
        raise FormatError("expected a list", file=file,
                          field="zero_shot_classes" if not isinstance(zs, list) else "classes")
    if not zs:
        raise FormatError("the zero-shot set has no classes (no class outside the balanced ones has both its "
                          "verb and object among them with enough instances); nothing to score",
                          file=file, field="zero_shot_classes")

    def hoi(items: list[Any]) -> list[Any]:
        return [c.get("hoi") if isinstance(c, dict) else c for c in items]

    return (_class_ids(hoi(zs), file, n_classes, "zero_shot_classes"),
            _class_ids(hoi(data["classes"]), file, n_classes, "classes"))
