"""The C scanner (``hoibench.formats._colscan`` through ``_scan``): exact numbers, what it refuses,
the columns it gives, the QPIC reduction, and that the readers using it give what the other
paths give (tests/test_predictions.py's ``_by_every_reader`` also compares it on every file
there)."""

from __future__ import annotations

import contextlib
import json
import math
import random
import shutil
import struct
import sys
from decimal import Decimal, getcontext

import numpy as np
import pytest

from hoibench._exceptions import FormatError
from hoibench.datasets import load_dataset
from hoibench.formats import _scan as S
from hoibench.formats import load_predictions, write_predictions
from hoibench.formats._scan import NUM, NUMS, OBJECT, RECORDS, ROWS, ROWS3, STR, STRS, field
from hoibench.testing import noisy_predictions
from tests.test_native_predictions import (
    REPR_VARIANTS,
    _embedded_gts,
    _same_loaded,
    cdn_results_json,
    head,
)
from tests.test_predictions import _qpic_doc, sample

pytestmark = pytest.mark.skipif(not S.AVAILABLE, reason="the C scanner is not built in this install")


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler here")
def test_the_scanner_is_built_where_a_compiler_is():
    """``pip install`` builds the extension where a C compiler exists: a silent fallback would lose
    the reading speed without a word."""
    assert S.BUILT and S._NATIVE is not None


# ----------------------------------------------------------------------------- numbers
def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _same_as_python(token: str, literal: bool = False) -> None:
    # an integer token is the integer (json.loads, orjson and Python's literals read "-0" as 0,
    # so +0.0), anything else Python's float()
    want = float(int(token)) if token.lstrip("-").isdigit() and len(token) < 300 else float(token)
    got = S.parse_float(token.encode(), literal=literal)
    if not math.isfinite(want):
        assert got is None, token  # refused: the careful reader decides
    else:
        assert got is not None and _bits(got) == _bits(want), (token, got, want)


def test_numbers_are_correctly_rounded():
    """Every path (integers, Clinger's, the verified and the exact 128-bit division, strtod) gives
    Python's float() to the bit, on reprs of random doubles and float32s, random digit strings
    with exponents, and exact midpoints between neighbouring doubles (ties to even)."""
    rng = random.Random(7)
    for _ in range(40_000):
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(x):
            _same_as_python(repr(x))
        _same_as_python(repr(float(np.float32(rng.uniform(-5000, 5000)))))
        _same_as_python(repr(rng.random()))
        d = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25))).lstrip("0") or "0"
        k = rng.randint(0, len(d))
        s = (d[:k] or "0") + ("." + d[k:] if d[k:] else "")
        _same_as_python(s)
        _same_as_python(f"-{s}e{rng.randint(-30, 30)}")
    getcontext().prec = 1000
    for _ in range(3000):
        x = rng.uniform(1e-6, 1e6)
        mid = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
        for text in (format(mid, ".18e"), format(mid, ".16e"), format(mid, "f")[:40]):
            _same_as_python(text)
    for token in ["0", "-0", "-0.0", "1e5", "1E-5", "9007199254740993", "18446744073709551615",
                  "18446744073709551616", "123456789012345678901234", "0.000000000000000000000000001",
                  "2.2250738585072014e-308", "4.9e-324", "1.7976931348623157e308", "1e400", "1e-400"]:
        _same_as_python(token)


def test_numbers_in_lists_are_python_floats():
    """The list loop's own paths (a "0.0" read at once, digits taken in runs of up to eight,
    a number ending at the buffer's last bytes) give float() of each token, whatever follows."""
    rng = random.Random(11)
    makers = [lambda: "0.0", lambda: "0", lambda: "-0.0", lambda: "0.05", lambda: "0.0e5", lambda: "10.0",
              lambda: repr(rng.random()), lambda: repr(float(np.float32(rng.uniform(-700, 700)))),
              lambda: str(np.float32(rng.random())), lambda: str(rng.randint(0, 10**rng.randint(1, 19))),
              lambda: "0." + "0" * rng.randint(0, 12) + str(rng.randint(1, 10**rng.randint(1, 21))),
              lambda: str(rng.randint(1, 10**9)) + "." + str(rng.randint(0, 10**rng.randint(1, 12)))]
    for _ in range(300):
        tokens = [rng.choice(makers)() for _ in range(rng.randint(1, 40))]
        seps = [rng.choice([",", ", ", " ,", ",\n  "]) for _ in tokens[1:]]
        body = tokens[0] + "".join(sep + tok for sep, tok in zip(seps, tokens[1:]))
        for text in (f'{{"a": [{body}]}}', f'{{"a": [{body}  ]}}'):
            got = S.scan(text.encode(), 0, field("", OBJECT, field("a", NUMS)))
            assert got is not None, text
            assert [_bits(v) for v in got["a"].values.tolist()] == [_bits(float(t)) for t in tokens], text


@pytest.mark.parametrize("token", ["01", "1.", ".5", "+1", "1e", "-", "nan", "inf", "NaN", "1..2", "0x10",
                                   "1 ", "1e+", "--1"])
def test_what_json_does_not_allow_is_refused(token):
    assert S.parse_float(token.encode()) is None


def test_literal_mode_reads_numpy_1_floats():
    assert S.parse_float(b"2.", literal=True) == 2.0
    assert S.parse_float(b"1.e-05", literal=True) == 1e-05


# ----------------------------------------------------------------------------- the scanner
ROOT = field("", OBJECT, field("name", STR),
             field("images", RECORDS, field("file_name", STR), field("boxes", ROWS), field("ids", NUMS),
                   field("score", NUM)))


def _scan(doc: object | str, root=ROOT, **kw) -> S.Scanned | None:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return S.scan(text.encode(), 0, root, **kw)


def test_columns_count_per_image():
    doc = {"name": "x", "extra": [{"a": [1, [2]]}, None, True, "s"],
           "images": [{"file_name": "a\\u00e9.jpg", "boxes": [[1, 2, 3, 4], [5, 6, 7, 8]], "ids": [1, 2], "score": 0.5},
                      {"file_name": "b.jpg", "boxes": [], "ids": [], "score": 1}]}
    got = _scan(json.dumps(doc).replace("\\\\u00e9", "\\u00e9"))
    assert got is not None and got.n_slots == 3
    assert got["images"].items.tolist() == [2, 0, 0]
    assert got["images.boxes"].items.tolist() == [0, 2, 0] and got["images.boxes"].width == (4, 4)
    np.testing.assert_array_equal(got["images.boxes"].values, np.arange(1, 9))
    assert got["images.ids"].nums.tolist() == [0, 2, 0] and not got["images.ids"].fractional
    assert got["images.score"].fractional and got["images.score"].values.tolist() == [0.5, 1.0]
    assert got["images.file_name"].strings(json.dumps(doc).replace("\\\\u00e9", "\\u00e9").encode()) == \
        ["a\u00e9.jpg", "b.jpg"]
    assert got["name"].occ.tolist() == [1, 0, 0]


def test_lists_of_strings():
    root = field("", OBJECT, field("names", STRS), field("images", RECORDS, field("tags", STRS)))
    text = '{"names": ["a", "b\\u00e9", ""], "images": [{"tags": []}, {"tags": [ "x" , "y"]}]}'
    got = S.scan(text.encode(), 0, root)
    assert got is not None and got["names"].strings(text.encode()) == ["a", "b\u00e9", ""]
    assert got["names"].items.tolist() == [3, 0, 0] and got["names"].escaped
    assert got["images.tags"].items.tolist() == [0, 0, 2] and got["images.tags"].strings(text.encode()) == ["x", "y"]
    for bad in ('{"names": ["a", 1]}', '{"names": ["a",]}', '{"names": "a"}', '{"names": [["a"]]}',
                '{"names": ["a" "b"]}', '{"names": [null]}'):
        assert S.scan(bad.encode(), 0, root) is None, bad


def test_lists_of_rows_and_nulls():
    """``ROWS3`` (V-COCO's role boxes: per detection a list of boxes or null), and ``null`` read
    as NaN only where a field opts in: as a number (``nulls``), as a row (``null_row``)."""
    root = field("", OBJECT, field("boxes", ROWS3, nulls=True, null_row=4), field("scores", ROWS, nulls=True),
                 field("ids", NUMS))
    text = ('{"boxes": [[[1, 2, 3, 4], null], [null, [5, null, 7, 8]], []], "scores": [[1, null], [2, 3]], '
            '"ids": [1, 2]}')
    got = S.scan(text.encode(), 0, root)
    assert got is not None
    b = got["boxes"]
    np.testing.assert_array_equal(b.values, [1, 2, 3, 4] + [np.nan] * 8 + [5, np.nan, 7, 8])
    assert b.items.tolist() == [3] and b.nums.tolist() == [16] and b.width == (4, 4) and b.middle == (0, 2)
    assert b.nulls and got["scores"].nulls and not got["ids"].nulls and not got["scores"].fractional
    np.testing.assert_array_equal(got["scores"].values, [1, np.nan, 2, 3])
    assert got["scores"].middle == (-1, -1)
    for bad in ('{"ids": [1, null]}', '{"scores": [null]}', '{"boxes": [null]}', '{"boxes": [[[1, [2]]]]}',
                '{"boxes": [[[1], nul]]}', '{"scores": [[nullx]]}'):
        assert S.scan(bad.encode(), 0, root) is None, bad


def test_float32_columns_round_as_numpy():
    """An ``f32`` field keeps each number as float32, rounded from the exact double as numpy's
    ``astype(np.float32)`` rounds it (ties to even, beyond the range to inf, null to NaN)."""
    rng = random.Random(5)
    tokens = [repr(rng.uniform(-1e4, 1e4)) for _ in range(2000)] + [repr(float(np.float32(rng.random())))
                                                                     for _ in range(500)]
    tokens += ["0.0", "-0.0", "1e39", "-1e39", "1e-50", "3.4028235677973366e38", "1.0000000596046448",
               "null", "16777217", "0.1"]
    text = '{"a": [' + ", ".join(tokens) + '], "b": [[1.5, null], null]}'
    root = field("", OBJECT, field("a", NUMS, nulls=True, f32=True), field("b", ROWS, nulls=True, null_row=2, f32=True))
    with np.errstate(over="ignore"):
        want = np.array([float("nan") if t == "null" else float(t) for t in tokens]).astype(np.float32)
    got = S.scan(text.encode(), 0, root)
    assert got is not None and got["a"].values.dtype == np.float32
    assert got["a"].values.tobytes() == want.tobytes()
    np.testing.assert_array_equal(got["b"].values, np.array([1.5, np.nan, np.nan, np.nan], dtype=np.float32))
    with pytest.raises(ValueError, match="float64"):  # the QPIC reduction reads its columns as doubles
        S.scan(b"[]", 0, field("", RECORDS, field("s", ROWS, f32=True), field("p", NUMS), field("l", NUMS),
                                  field("b", ROWS)),
               select=S.Select("s", "p", "l", "b", np.zeros(1, np.int64), np.ones((1, 1), bool), 1))


@pytest.mark.parametrize(("what", "text"), [
    ("duplicate key", '{"images": [{"ids": [1], "ids": [2]}]}'),
    ("escaped key", '{"images": [{"i\\u0064s": [1]}]}'),
    ("boolean number", '{"images": [{"ids": [true]}]}'),
    ("nested row", '{"images": [{"boxes": [[[1]]]}]}'),
    ("row of a list", '{"images": [{"ids": [[1]]}]}'),
    ("string number", '{"images": [{"score": "1"}]}'),
    ("trailing comma", '{"images": [{"ids": [1,]}]}'),
    ("unterminated", '{"images": [{"ids": [1]}'),
    ("NaN", '{"images": [{"score": NaN}]}'),
    ("bad UTF-8 skipped", '{"other": "\xff", "images": []}'),
    ("control character", '{"other": "a\tb", "images": []}'),
    ("bad escape", '{"other": "\\x", "images": []}'),
    ("images not a list", '{"images": {}}'),
    ("a list of numbers as records", '{"images": [1]}'),
])
def test_what_the_scanner_does_not_prove_is_refused(what, text):
    assert S.scan(text.encode("latin-1"), 0, ROOT) is None, what


def test_literal_mode_reads_python_reprs():
    root = field("", RECORDS, field("filename", STR), field("bbox", NUMS), field("id", NUM), strict=True)
    text = ("[{'filename': 'a.jpg', 'bbox': array([1.5, 2., 3.e-01,\\n       4.], dtype=float32), "
            "'id': np.int64(3)}, {'filename': 'b.jpg', 'bbox': [np.float32(1.0), 2, 3, 4], 'id': 4}]")
    got = S.scan(text.encode(), 0, root, literal=True)
    assert got is not None and not got.float64
    np.testing.assert_array_equal(got["bbox"].values, [1.5, 2, 0.3, 4, 1, 2, 3, 4])
    assert got["id"].integers().tolist() == [3, 4]
    assert S.scan(text.replace("float32)", "float64)").encode(), 0, root, literal=True).float64
    assert S.scan(text.replace("'b.jpg'", "'b\\'.jpg'").encode(), 0, root, literal=True) is None
    assert S.scan(text.replace("'id': 4", "'id': 4, 'x': 1").encode(), 0, root, literal=True) is None  # strict


@pytest.mark.parametrize(("text", "read"), [
    ("'id': np.float32(2)", True), ("'id': np.fNaN2(2)", False), ("'id': np.random.rand(2)", False),
    ("'id': np.uint16(2)", True), ("'id': np.float128(2)", False),
    ("'bbox': array([1, 2], dtype=float64)", True), ("'bbox': array([1, 2], dtype=complex)", False),
    ("'x': array([1], dtype=np.int32)", True), ("'x': numpy.float_(1)", True), ("'x': eval('1')", False),
    ("'x': array(1, 2)", False), ("'x': array()", False), ("'x': array([1], order='C')", False),
    ("'x': float32(1, dtype=int8)", True), ("'x': np.array([1], dtype=foo)", False),
    # numpy 2's wrappers, read at once (float32, int64) or by name, spaces or not
    ("'id': np.float32( 2.5 )", True), ("'id': np.float32 (2.5)", True), ("'id': np.int64(7)", True),
    ("'id': np.float32(x)", False), ("'id': np.float32()", False), ("'id': np.float32(2", False),
    ("'id': np.float32x(2)", False), ("'id': np.int64(2)(3)", False), ("'bbox': [np.float32(1), np.int64(2)]", True),
])
def test_literal_mode_takes_the_calls_the_careful_reader_takes(text, read):
    """Only array(x) and numpy-type calls with one literal and ``dtype=<numpy type>`` (as
    formats/_literal.py reads them), in a field or in a skipped value; anything else is refused."""
    root = field("", RECORDS, field("filename", STR), field("bbox", NUMS), field("id", NUM))
    entries = {"filename": "'filename': 'a.jpg'", "bbox": "'bbox': [1, 2]", "id": "'id': 1"}
    entries[text.split("'")[1]] = text  # the field itself, or another key (skipped)
    doc = "[{" + ", ".join(entries.values()) + "}]"
    assert (S.scan(doc.encode(), 0, root, literal=True) is not None) == read, text


@pytest.mark.parametrize("sep", [",", ", ", " ,"])
@pytest.mark.parametrize("f32", [False, True])
def test_runs_of_zeros_read_as_every_other_number(sep, f32):
    """Runs of ``0.0`` (QPIC's verb scores: four compact or two spaced at once) of every length,
    broken by other numbers, ``0``, ``-0.0``, ``0.05``, at a list's end, and long enough to grow
    the column: the same values as json.loads gives, rounded as float32 where asked."""
    rng = np.random.default_rng(5)
    others = ["1.5", "0", "-0.0", "0.05", "0.0e0", "00.0"[1:]]
    rows = []
    for n in [*range(40), 20_000]:
        row = ["0.0"] * n
        for _ in range(int(rng.integers(0, 3))):
            if row:
                row[int(rng.integers(0, len(row)))] = str(rng.choice(others))
        rows.append("[" + sep.join(row) + "]")
    text = '{"name": "x", "images": [{"rows": [' + ",".join(rows) + "]}]}"
    root = field("", OBJECT, field("images", RECORDS, field("rows", ROWS, f32=f32)))
    got = S.scan(text.encode(), 0, root)
    want = np.array([v for r in json.loads(text)["images"][0]["rows"] for v in r], dtype=np.float64)
    assert got is not None
    values = got["images.rows"].values
    np.testing.assert_array_equal(values, want.astype(np.float32) if f32 else want)
    assert np.array_equal(np.signbit(values), np.signbit(want))  # -0.0 kept where written
    assert got["images.rows"].fractional and got["images.rows"].nums.tolist() == [0, len(want)]


def test_records_read_in_batches_equal_one_pass():
    doc = [{"file_name": f"{i}.jpg", "boxes": [[i, 1, 2, 3]] * (i % 3), "ids": list(range(i % 4)), "score": i}
           for i in range(10)]
    root = field("", RECORDS, *ROOT[2][1][1][2][1])
    text = json.dumps(doc).encode()
    whole = S.scan(text, 0, root)
    parts, pos, resume = [], 0, False
    while True:
        got = S.scan(text, pos, root, limit=3, resume=resume)
        parts.append(got)
        pos, resume = got.stop, True
        if got.done:
            break
    assert len(parts) == 4 and whole.done
    for path in ("boxes", "ids", "score"):
        np.testing.assert_array_equal(np.concatenate([p[path].values for p in parts]), whole[path].values)
        np.testing.assert_array_equal(np.concatenate([p[path].items[1:] for p in parts]), whole[path].items[1:])


# ----------------------------------------------------------------------------- the QPIC reduction
def _stable_top(scores, rows, valid, per_image, k):
    out_cells, out_kept = [], []
    start = 0
    for n in per_image:
        s = scores[start:start + n]
        cand = np.flatnonzero(valid[rows[start:start + n]])
        order = cand[np.argsort(-s.reshape(-1)[cand], kind="stable")][:k]
        out_cells.append(order)
        out_kept.append(len(order))
        start += n
    return np.concatenate(out_cells), np.array(out_kept)


@pytest.mark.parametrize("k", [None, 0, 1, 5, 1000])
def test_top_valid_keeps_what_a_stable_argsort_keeps(k):
    """Ties (scores rounded to a few values), NaN last, -0.0 equal to 0.0, images without pairs."""
    rng = np.random.default_rng(3)
    per_image = rng.integers(0, 6, 40)
    scores = np.round(rng.random((per_image.sum(), 9)), 1)
    scores[rng.random(scores.shape) < 0.05] = np.nan
    scores[rng.random(scores.shape) < 0.05] = -0.0
    valid = rng.random((5, 9)) < 0.5
    rows = rng.integers(0, 5, per_image.sum())
    cells, chosen, kept = S.top_valid(scores, rows, valid, per_image, k)
    want_cells, want_kept = _stable_top(scores, rows, valid, per_image, 10**9 if k is None else k)
    np.testing.assert_array_equal(kept, want_kept)
    np.testing.assert_array_equal(cells, want_cells)
    img = np.repeat(np.arange(len(per_image)), kept)
    start = np.cumsum(per_image) - per_image
    np.testing.assert_array_equal(chosen, scores.reshape(-1)[(start[img] * 9) + cells])


# ----------------------------------------------------------------------------- the readers
def _read(path, monkeypatch, native: bool, **kw):
    with monkeypatch.context() as m:
        m.setattr(S, "_colscan", S._NATIVE if native else None)
        m.setattr(S, "AVAILABLE", native)
        try:
            return load_predictions(path, **kw)
        except FormatError as exc:
            return str(exc)


def test_rows_of_counts_rows_that_are_all_empty():
    root = field("", OBJECT, field("b", ROWS))
    assert S.scan(b'{"b": [[1, 2, 3, 4], [5, 6, 7, 8]]}', 0, root)["b"].rows_of(4)
    assert S.scan(b'{"b": []}', 0, root)["b"].rows_of(4)
    for text in (b'{"b": [[]]}', b'{"b": [[], []]}', b'{"b": [[1, 2, 3], [4, 5, 6, 7, 8]]}', b'{"b": [[1, 2, 3, 4], []]}'):
        assert not S.scan(text, 0, root)["b"].rows_of(4), text


@pytest.mark.parametrize("fmt", ["hoibench", "qpic", "cdn"])
def test_boxes_that_are_all_empty_are_named_as_without_the_scanner(tmp_path, monkeypatch, fmt):
    """Rows that are all ``[]`` leave the scanner no width to compare; it must still stand aside
    (it had read no boxes at all: an IndexError, or boxes of 0 rows), so the careful reader
    names record and field."""
    doc = {"hoibench": {"format": "hoibench-predictions", "version": 1, "label_space": "hico-det",
                        "images": [{"file_name": "a.jpg", "boxes_h": [[]], "boxes_o": [[]], "objects": [1],
                                    "verbs": [2], "scores": [0.5]}]},
           "qpic": [{"file_name": "a.jpg", "labels": [0, 1], "boxes": [[], []], "verb_scores": [[0.5] * 117],
                     "sub_ids": [0], "obj_ids": [1]}],
           "cdn": "{'preds': [{'filename': 'a.jpg', 'predictions': [{'bbox': [], 'category_id': 0}, "
                  "{'bbox': [], 'category_id': 1}], 'hoi_prediction': [{'subject_id': 0, 'object_id': 1, "
                  "'category_id': 3, 'score': 0.5}]}]}"}[fmt]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    got, want = _read(path, monkeypatch, native=True), _read(path, monkeypatch, native=False)
    assert isinstance(want, str) and "record 0" in want and got == want


@pytest.mark.parametrize("fmt", ["hoibench", "generic"])
def test_columnar_files_are_read_by_the_scanner_alone(tmp_path, monkeypatch, fmt):
    import hoibench.formats.predictions as mod

    write_predictions(sample(), tmp_path / "p.json", format=fmt)
    other = _read(tmp_path / "p.json", monkeypatch, native=False)
    for name in ("_columns", "_parse_json"):
        monkeypatch.setattr(mod, name, lambda *a, name=name: pytest.fail(f"{name} ran"))
    _same_loaded(_read(tmp_path / "p.json", monkeypatch, native=True), other)


def _qpic_file(tmp_path, edit=None):
    doc = _qpic_doc(n_images=6)
    if edit is not None:
        edit(doc)
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc))
    return path


def test_qpic_files_are_read_by_the_scanner_alone(tmp_path, monkeypatch):
    import hoibench.formats.predictions as mod

    path = _qpic_file(tmp_path)
    others = {k: _read(path, monkeypatch, native=False, max_per_image=k) for k in (None, 7, 100)}
    for name in ("_qpic_columns", "_parse_json"):
        monkeypatch.setattr(mod, name, lambda *a, name=name: pytest.fail(f"{name} ran"))
    for k, other in others.items():
        _same_loaded(_read(path, monkeypatch, native=True, max_per_image=k), other)


def test_a_triplet_file_is_not_scanned_whole_by_the_qpic_reduction(tmp_path, monkeypatch):
    """GEN-VLKT's triplet outputs (no verb_scores) go to the careful reader; the scanner looks at
    the first image only before leaving them to it."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_qpic_doc(n_images=4, triplet=True)))
    other = _read(path, monkeypatch, native=False)
    calls = []
    scan = S.scan
    monkeypatch.setattr(S, "scan", lambda *a, **kw: calls.append(kw.get("limit", -1)) or scan(*a, **kw))
    _same_loaded(_read(path, monkeypatch, native=True), other)
    assert calls == [1]


def _set(doc, image, key, value, index=None):
    if index is None:
        doc[image][key] = value
    else:
        doc[image][key][index] = value


@pytest.mark.parametrize(("what", "edit"), [
    ("object index outside the boxes", lambda d: _set(d, 2, "obj_ids", 10**6, 0)),
    ("negative subject index", lambda d: _set(d, 3, "sub_ids", -1, 0)),
    ("label outside COCO-80", lambda d: _set(d, 3, "labels", 80, -1)),
    ("a label no pair uses outside COCO-80", lambda d: _set(d, 3, "labels", 80, 0)),
    ("a fractional index", lambda d: _set(d, 2, "obj_ids", 1.5, 0)),
    ("no verb scores in an image", lambda d: d[4].pop("verb_scores")),
    ("a row of the wrong width", lambda d: _set(d, 2, "verb_scores", [0.1, 0.2], 0)),
    ("an image without detections", lambda d: [_set(d, 2, k, []) for k in ("verb_scores", "sub_ids", "obj_ids")]),
])
def test_qpic_refusals_end_where_the_other_paths_end(tmp_path, monkeypatch, what, edit):
    """A file the reduction refuses goes to the careful reader: the same predictions, or the same
    error line naming the record and field."""
    path = _qpic_file(tmp_path, edit)
    _same_loaded(_read(path, monkeypatch, native=True), _read(path, monkeypatch, native=False))


@pytest.fixture(scope="module")
def repr_case():
    gt = load_dataset("hico-det:test").subset(np.arange(0, 200, 25))
    return gt, noisy_predictions(gt, seed=4, per_image=(110, 130))


@pytest.mark.parametrize("variant", ["cdn numpy 2", "numpy 1 arrays and 2.", "keys reordered in one record",
                                     "an extra key", "a list where a number belongs", "a wrapper in a file name",
                                     "a parenthesis in a file name", "an unknown call", "a float id", "nan score",
                                     "a quote in a file name", "bbox of 3 numbers", "box index out of range",
                                     "label in image 1, box index in image 2", "hoi id 600 in image 2"])
def test_repr_results_read_by_the_scanner_equal_the_careful_reader(repr_case, tmp_path, monkeypatch, variant):
    gt, p = repr_case
    edit, _ = REPR_VARIANTS[variant]
    text = edit(json.loads(cdn_results_json(head(p, 3), _embedded_gts(gt.subset(np.arange(2))))))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(text))
    _same_loaded(_read(path, monkeypatch, native=True, ground_truth=gt),
           _read(path, monkeypatch, native=False, ground_truth=gt))
    if variant in ("cdn numpy 2", "numpy 1 arrays and 2.", "a wrapper in a file name",
                   "a parenthesis in a file name"):
        import hoibench.formats._repr_results as mod

        monkeypatch.setattr(mod, "repr_images_careful", lambda *a: pytest.fail("the careful reader ran"))
        with contextlib.suppress(FormatError):
            _read(path, monkeypatch, native=True, ground_truth=gt)


# ----------------------------------------------------------------------------- two threads
#: the second thread exists on every platform but Windows (the same columns either way)
HALVES = sys.platform != "win32"


def _same_scan(a: S.Scanned | None, b: S.Scanned | None) -> None:
    """Everything one scan gives equal to the other's, to the byte (NaN included)."""
    assert (a is None) == (b is None)
    if a is None or b is None:
        return
    assert (a.stop, a.done, a.n_slots, a.float64) == (b.stop, b.done, b.n_slots, b.float64)
    assert a.columns.keys() == b.columns.keys()
    for path, ca in a.columns.items():
        cb = b.columns[path]
        for name in ("occ", "items", "nums", "values"):
            x, y = getattr(ca, name), getattr(cb, name)
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), (path, name)
        assert (ca.width, ca.fractional, ca.escaped, ca.nulls, ca.middle) == \
            (cb.width, cb.fractional, cb.escaped, cb.nulls, cb.middle), path
    assert (a.selection is None) == (b.selection is None)
    for x, y in zip(a.selection or (), b.selection or ()):
        assert x.tobytes() == y.tobytes()


def _every_split(text: bytes, pos: int, root, **kw) -> int:
    """Scans ``text`` with every byte offset as ``split``: each equal to the one-thread scan.
    Returns how many used the second thread's columns."""
    one = S.scan(text, pos, root, **kw)
    used = 0
    for split in range(len(text) + 1):
        got = S.scan(text, pos, root, split=split, **kw)
        _same_scan(got, one)
        used += got is not None and got.halves
    return used


def _images_doc(n: int = 7) -> dict:
    """Images whose first key is repeated in nested objects and strings, and elements the first
    thread must read past (unknown nested lists of objects, an empty image, escapes, nulls)."""
    images = []
    for i in range(n):
        im = {"file_name": f"{i}}}, {{\"file_name\": \u00e9.jpg", "boxes": [[i, 1.5, 2, 3e-3]] * (i % 3),
              "ids": list(range(i % 4)), "score": i / 7,
              "extra": [{"file_name": 1}, {"file_name": [2]}, {"x": [{"file_name": "y"}, {"file_name": "z"}]}]}
        if i == 4:
            im = {"file_name": "empty.jpg", "score": 0}
        images.append(im)
    return {"name": "x", "images": images, "after": [{"file_name": "z"}, {"file_name": "w"}]}


def test_every_split_of_a_document_gives_the_one_thread_columns():
    """Wherever the second thread starts (inside a string, a number, a nested list of objects
    whose elements open with the same key, the list after the images, past the end), the
    columns are those of one thread; at a real boundary they are its."""
    text = json.dumps(_images_doc(), indent=1).encode()
    used = _every_split(text, 0, ROOT)
    assert used >= 6 if HALVES else used == 0  # one boundary after each image but the last


def test_every_split_of_a_list_root_with_the_qpic_reduction():
    """A list root with the per-image reduction: the second thread's kept cells, scores and
    counts appended to the first's, for every offset."""
    doc = _qpic_doc(n_images=6)
    text = json.dumps(doc).encode()
    root = field("", RECORDS, *(field(k, NUMS) for k in ("labels", "sub_ids", "obj_ids")),
                 field("boxes", ROWS), field("verb_scores", ROWS), field("file_name", STR))
    valid = np.random.default_rng(0).random((81, 117)) < 0.6
    for k in (None, 3):
        select = S.Select("verb_scores", "obj_ids", "labels", "boxes", np.arange(81), valid, k)
        used = _every_split(text, 0, root, select=select)
        assert used >= 5 if HALVES else used == 0


def test_every_split_of_a_python_repr():
    """Literal mode: ``'...'`` keys, ``\\n`` between tokens, nested lists of objects under each
    image (their boundaries are never taken for the images')."""
    text = json.dumps(str({"preds": [
        {"filename": f"{i}.jpg",
         "predictions": [{"bbox": [1.0, 2, 3, 4], "category_id": 1}] * 2,
         "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": i, "score": 0.5}]}
        for i in range(5)]}).replace("}, {'filename'", "},\n {'filename'")).encode()
    assert text.count(b"},\\n {'filename'") == 4
    head = b"{'preds': "
    at = text.index(head) + len(head)
    from hoibench.formats._repr_results import REPR_ROOT as _REPR_ROOT

    assert S.scan(text, at, _REPR_ROOT, literal=True) is not None
    used = _every_split(text, at, _REPR_ROOT, literal=True)
    assert used >= 4 if HALVES else used == 0


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_bad_element_on_either_side_of_the_split_is_refused_as_by_one_thread(where):
    doc = _images_doc(12)
    doc["images"][2 if where == "before" else 9]["ids"] = [1, True]
    text = json.dumps(doc).encode()
    assert S.scan(text, 0, ROOT) is None
    assert all(S.scan(text, 0, ROOT, split=s) is None for s in range(0, len(text), 7))


def test_large_columns_are_joined_as_one():
    """Columns of several MiB on both sides (the second thread's pages moved, not copied, on
    Linux) hold every value in order."""
    rng = np.random.default_rng(1)
    images = [{"file_name": f"{i}.jpg", "boxes": np.round(rng.random((50, 4)) * 640, 2).tolist(),
               "ids": rng.integers(0, 600, 50).tolist(), "score": float(i)} for i in range(4000)]
    text = json.dumps({"name": "big", "images": images}).encode()
    one = S.scan(text, 0, ROOT)
    two = S.scan(text, 0, ROOT, split=len(text) // 3)
    _same_scan(two, one)
    assert two.halves == HALVES and one["images.boxes"].values.nbytes > 4 << 20
    np.testing.assert_array_equal(two["images.boxes"].values.reshape(-1, 4)[-50:], images[-1]["boxes"])


def test_halfway_shares_only_a_large_text(monkeypatch):
    assert S.halfway(b"x" * 100) is None
    monkeypatch.setattr(S, "SPLIT_MIN_BYTES", 10)
    assert S.halfway(b"x" * 100, 20) == 60
    monkeypatch.setattr(S.os, "cpu_count", lambda: 1)
    assert S.halfway(b"x" * 100) is None


@pytest.mark.parametrize("fmt", ["hoibench", "qpic", "cdn"])
def test_the_readers_share_a_file_between_two_threads(tmp_path, monkeypatch, fmt):
    """Each reader of large files passes ``split``; what it reads is the same with one thread."""
    gt = load_dataset("hico-det:test").subset(np.arange(0, 120, 6))
    p = noisy_predictions(gt, seed=2, per_image=(20, 40))
    path = tmp_path / "p.json"
    if fmt == "hoibench":
        write_predictions(p, path)
    elif fmt == "qpic":
        path = _qpic_file(tmp_path)
    else:
        path.write_text(cdn_results_json(p, _embedded_gts(gt)))
    kw = {"ground_truth": gt} if fmt == "cdn" else {}
    one = _read(path, monkeypatch, native=True, **kw)
    seen = []
    scan = S.scan
    monkeypatch.setattr(S, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(S, "scan", lambda *a, **k: (lambda got: seen.append(got and got.halves) or got)(scan(*a, **k)))
    _same_loaded(_read(path, monkeypatch, native=True, **kw), one)
    assert any(seen) == HALVES
