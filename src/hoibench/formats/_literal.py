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

Both return plain Python lists, dicts, strings and numbers (the dtype is dropped).

For files of hundreds of MB, :func:`repr_as_json_lists` rewrites the raw bytes of such a file
(the JSON string itself) into JSON a parser that builds no Python objects can read: every dict
becomes a list ``[code, value, code, value, ...]`` with a number code per known key, so that
numeric records export as flat arrays; the reader checks every code where it belongs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import orjson

from hoibench._exceptions import FormatError

__all__ = ["key_codes", "parse_numpy_repr", "repr_as_json_lists", "repr_chunk_as_json_lists"]

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


#: numpy wrappers removed by :func:`repr_as_json_lists` (each with its ``)``)
_BYTE_WRAPPERS = (b"np.float32(", b"np.int64(")
_RARE_WRAPPERS = (b"np.float64(", b"np.int32(", b"array(")
_BYTE_DTYPES = tuple(b", dtype=" + d + b")" for d in (b"float32", b"float64", b"int64", b"int32"))
# quotes become JSON's, dicts lists; '"', backslashes and control bytes become NUL, which no JSON
# parser accepts: a string that needed escapes is never reinterpreted, the file goes the careful way
_TO_JSON = bytes.maketrans(b"'{}\"\\" + bytes(range(32)), b'"[]' + b"\x00" * 34)


def key_codes(keys: tuple[str, ...]) -> dict[str, int]:
    """The number :func:`repr_as_json_lists` writes for each of ``keys`` (no data value is near)."""
    return {k: -(7_310_000_000 + i) for i, k in enumerate(keys)}


def repr_as_json_lists(raw: bytes, keys: tuple[str, ...], *,
                       numpy1_floats: bool = False) -> tuple[bytes, int, int] | None:
    """``raw`` (a JSON string holding a Python repr) rewritten as JSON by
    :func:`repr_chunk_as_json_lists`. Returns ``(json, start, stop)`` (the document is
    ``json[start:stop]``), or ``None`` when the text is not safe to rewrite: a backslash (an
    escape), a call other than the wrappers, parentheses that do not pair up."""
    head, tail = raw[:64].lstrip(), raw[-64:].rstrip()
    if not head.startswith(b'"') or not tail.endswith(b'"') or b"\\" in raw:
        return None
    start = len(raw[:64]) - len(head)
    stop_from_end = len(raw[-64:]) - len(tail) + 1  # bytes after the document, its closing quote included
    t = repr_chunk_as_json_lists(raw, keys, numpy1_floats=numpy1_floats)
    return None if t is None else (t, start + 1, len(t) - stop_from_end)


def repr_chunk_as_json_lists(t: bytes, keys: tuple[str, ...], *, numpy1_floats: bool = False) -> bytes | None:
    """Python repr text (all of it, or one dict of it: the rewrite is local, so the rewrite of a
    list is its elements' rewrites joined) as JSON: numpy wrappers removed, ``'key': `` replaced
    by ``<key_codes(keys)[key]>, `` and braces by brackets, so every dict is a list of codes and
    values; with ``numpy1_floats`` (six more passes over the text, so only when the JSON parser
    refused the text without) numpy 1's ``2.`` becomes ``2.0``. ``None`` when the text is not
    safe to rewrite: a backslash, a call other than the wrappers, parentheses that do not pair
    up. Keys outside ``keys`` leave invalid JSON. Strings are not protected here: a wrapper or
    ``2. `` inside a file name is changed, so the caller compares the names it reads with the
    original text. Per 46 KB image this is about twice as fast as on a 443 MB text (each pass
    stays in the cache)."""
    if b"\\" in t:
        return None
    opened = 0
    for w in _BYTE_WRAPPERS:
        n = len(t)
        t = t.replace(w, b"")
        opened += (n - len(t)) // len(w)
    if b"(" in t:  # numpy 1 arrays, other scalar types
        for w in _RARE_WRAPPERS:
            n = len(t)
            t = t.replace(w, b"")
            opened += (n - len(t)) // len(w)
        for d in _BYTE_DTYPES:
            t = t.replace(d, b")")
        if b"(" in t or b"dtype=" in t:
            return None
    for k, code in key_codes(keys).items():
        t = t.replace(b"'" + k.encode() + b"': ", b"%d, " % code)
    for end in (b" ", b",", b"]", b"}", b")", b"e", b"E") if numpy1_floats else ():
        t = t.replace(b"." + end, b".0" + end)
    out = t.translate(_TO_JSON, b")")  # the wrappers' closing parentheses deleted in the same pass
    return out if len(t) - len(out) == opened else None


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
