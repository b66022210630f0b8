"""VLMEvalKit's files (open-compass/VLMEvalKit): the benchmark TSV its ``ImageMCQDataset``
reads, and the prediction table its inference writes (``{model}_{dataset}.xlsx``, or ``.tsv`` /
``.json`` with ``PRED_FORMAT``): every data column but ``image``, plus ``prediction``.

Only the file layer lives here (cells as strings); what the columns mean for hoibench's questions
is :mod:`hoibench.tasks.vlmevalkit`.
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import atomic_write, read_bytes, read_json

__all__ = ["PREDICTION_SUFFIXES", "read_vlmevalkit_table", "write_vlmevalkit_tsv"]

#: suffixes of VLMEvalKit's prediction files (``PRED_FORMAT``: xlsx by default, tsv, json)
PREDICTION_SUFFIXES = (".xlsx", ".tsv", ".json")


def _big_fields() -> None:
    # base64 images are single cells of a few MB; the csv module's default limit is 128 KiB
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def write_vlmevalkit_tsv(path: str | Path, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> int:
    """Write rows as VLMEvalKit writes its TSVs (tab-separated, every cell quoted, header first;
    ``None`` as an empty cell, which pandas reads as NaN); atomic. Returns the number of rows."""
    n = 0
    with atomic_write(path, "w") as fh:
        writer = csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row.get(c) is None else row.get(c) for c in columns])
            n += 1
    return n


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))  # spreadsheets store an integer index as 3.0
    return str(v)


def _read_xlsx(path: Path) -> tuple[list[str], list[list[Any]]]:
    try:
        import openpyxl
    except ImportError:
        raise ConfigError(f"{path}: reading .xlsx needs openpyxl (pip install openpyxl); or run VLMEvalKit "
                          "with PRED_FORMAT=tsv and score the .tsv") from None
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zipfile/KeyError/InvalidFileException alike
        raise FormatError(f"not a readable .xlsx workbook ({type(exc).__name__}: {exc})", file=path) from None
    try:
        values = [list(r) for r in book.worksheets[0].iter_rows(values_only=True)]
    finally:
        book.close()
    if not values:
        return [], []
    return [_cell(c) for c in values[0]], values[1:]


def read_vlmevalkit_table(path: str | Path, *, required: Sequence[str] = ("index", "prediction")
                          ) -> list[dict[str, str]]:
    """Rows of a VLMEvalKit table (``.tsv``, ``.xlsx``, ``.json`` records) as ``{column: text}``
    (empty cells ``""``); a missing ``required`` column is a :class:`FormatError` naming it."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in PREDICTION_SUFFIXES:
        raise ConfigError(f"{path}: expected a VLMEvalKit table ({', '.join(PREDICTION_SUFFIXES)})")
    if suffix == ".xlsx":
        if not path.is_file():
            raise ConfigError(f"{path}: file not found")
        header, values = _read_xlsx(path)
    elif suffix == ".json":
        data = read_json(path)
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise FormatError("expected a list of records (VLMEvalKit's PRED_FORMAT=json)", file=path)
        header = list(dict.fromkeys(k for r in data for k in r))
        values = [[r.get(k) for k in header] for r in data]
    else:
        _big_fields()
        try:
            text = read_bytes(path).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=path) from None
        table = list(csv.reader(text.splitlines(keepends=True), delimiter="\t"))
        header, values = (table[0], table[1:]) if table else ([], [])
    missing = [c for c in required if c not in header]
    if missing:
        raise FormatError(f"no {', '.join(repr(c) for c in missing)} column (columns: {header[:12]})",
                          file=path, field=missing[0])
    rows = []
    for k, v in enumerate(values, start=2):  # spreadsheet line numbers: the header is line 1
        if len(v) > len(header):
            raise FormatError(f"{len(v)} cells for {len(header)} columns", file=path, record=f"line {k}")
        rows.append({c: _cell(x) for c, x in zip(header, v)})
    return rows
