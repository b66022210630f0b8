"""A safe reader of Python ``repr`` text holding numpy values, e.g. ``str({'a': array([1.5], dtype=float32)})``.

CDN, GEN-VLKT and HOICLIP save their evaluation input as ``json.dumps(str(dict))``: a Python
repr, not data. ``eval`` would run whatever the file holds, and ``ast.literal_eval`` rejects
``array(...)`` and numpy 2's ``np.float32(...)``. Here nothing is ever executed:

* fast path: outside string literals, the numpy wrappers are stripped with regular expressions
  and numpy's ``1.`` becomes ``1.0``; the rest is parsed as JSON (a JSON parser cannot execute
  anything). Taken only when the text holds no ``"`` or backslash (then every ``'`` delimits a
  string and strings are copied verbatim);
* careful path (anything else, e.g. ``nan``, ``True`` or ``None``): ``ast.parse`` and a walk
  that accepts literals, ``array(...)``/``np.<dtype>(...)`` calls with literal arguments and
  nothing else; any other node is an error naming it.

Both return plain Python lists, dicts, strings and numbers (the dtype is dropped). (Large files
are read by the C scanner, :mod:`hoibench.formats._scan`, in place; this parser is the reference.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import orjson

from hoibench._exceptions import FormatError

__all__ = ["parse_numpy_repr"]

_DTYPES = frozenset({f"{k}{b}" for k in ("float", "int", "uint") for b in (8, 16, 32, 64)}
                    | {"float_", "int_", "intc", "longlong", "double", "single", "bool_", "str_"})
# removed outside strings; literal replacements (no groups) keep re.sub at C speed
_DTYPE_ARG = re.compile(r",\s*dtype=(?:np\.|numpy\.)?\w+")
_OPENER = re.compile(r"(?:(?:np\.|numpy\.)?(?:float|u?int)(?:8|16|32|64)|array)\(")


def _as_json(text: str) -> str | None:
    """``text`` rewritten as JSON, touching only what lies outside string literals; ``None``
    when that cannot be done safely (a string that needs escapes or holds a quote)."""
    if '"' in text or "\\" in text or "\x00" in text:
        return None
    parts = text.split("'")  # without '"' and '\\', every "'" delimits a string: odd parts
    if len(parts) % 2 == 0:
        return None
    code = "\x00".join(parts[0::2])
    for common in (", dtype=float32)", ", dtype=int64)", "np.float32(", "np.int64(", "array("):
        code = code.replace(common, ")" if common.startswith(",") else "")  # str.replace: fast
    if "dtype=" in code:
        code = _DTYPE_ARG.sub("", code)
    if "(" in code:
        code = _OPENER.sub("", code)
    if "(" in code:  # a call other than array(...) / np.<number type>(...): the careful path
        return None
    code = code.replace(")", "")
    # outside strings (np. prefixes gone) a dot not followed by a digit ends a number: "1." -> "1.0"
    for tail in (" ", ",", "]", "\n", "e", "E"):
        code = code.replace("." + tail, ".0" + tail)
    pieces = code.split("\x00")
    if len(pieces) != len(parts[0::2]):
        return None
    parts[0::2] = pieces
    return '"'.join(parts)


def parse_numpy_repr(text: str, path: Path) -> Any:
    """The literal value of ``text`` (a Python repr with numpy arrays/scalars); never executes it."""
    js = _as_json(text)
    if js is not None:
        try:
            return orjson.loads(js)
        except orjson.JSONDecodeError:
            pass
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise FormatError(f"not a Python literal ({type(exc).__name__}: {exc})", file=path) from None
    return _value(tree.body, path)


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("np", "numpy"):
        return func.attr
    return None


def _value(node: ast.expr, path: Path) -> Any:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, float, bool))):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e, path) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                break
            out[_value(k, path)] = _value(v, path)
        else:
            return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, path)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Name) and node.id in ("nan", "inf"):
        return float(node.id)
    if isinstance(node, ast.Call):
        name = _call_name(node.func)
        ok_kw = all(k.arg == "dtype" and (_call_name(k.value) in _DTYPES or (
            isinstance(k.value, ast.Constant) and k.value.value in _DTYPES)) for k in node.keywords)
        if (name == "array" or name in _DTYPES) and len(node.args) == 1 and ok_kw:
            return _value(node.args[0], path)
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        raise FormatError("an array was printed truncated ('...'): numpy shortened it, the values are lost",
                          file=path)
    raise FormatError(f"not a literal: {ast.unparse(node)[:80]!r} (only lists, dicts, numbers, strings, "
                      "array(...) and np.<dtype>(...) are read; nothing is executed)", file=path)
