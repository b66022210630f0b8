"""Result files: one reader and one writer for every kind.

A file holds one result object, a JSON list of them, or JSON lines (``*.jsonl``), as
``hoibench report`` accepts them. Writes are atomic (:mod:`hoibench._io`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from hoibench._exceptions import FormatError
from hoibench._io import (
    PathLike,
    atomic_write_json,
    check_json_start,
    read_bytes,
    read_json,
    refuses_deep_nesting,
)
from hoibench.results._record import ResultRecord

__all__ = ["read_result", "read_results", "write_record", "write_result"]


@refuses_deep_nesting
def _records(path: PathLike) -> list[ResultRecord[Any]]:
    p = Path(path)
    if p.name.endswith((".jsonl", ".jsonl.gz")):
        out = []
        for i, line in enumerate(read_bytes(check_json_start(p)).splitlines()):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise FormatError(f"not valid JSON ({exc})", file=p, record=i) from None
            out.append(ResultRecord.from_json(obj, file=p, record=i))
        return out
    data = read_json(p)
    if isinstance(data, list):
        return [ResultRecord.from_json(x, file=p, record=i) for i, x in enumerate(data)]
    return [ResultRecord.from_json(data, file=p)]


def read_results(paths: PathLike | Iterable[PathLike]) -> list[ResultRecord[Any]]:
    """Every result of the files, in order (each file: an object, a JSON list or JSON lines)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [r for p in paths for r in _records(p)]


def read_result(path: PathLike) -> ResultRecord[Any]:
    """The one result of a file (a file of several is an error: use :func:`read_results`)."""
    records = _records(path)
    if len(records) != 1:
        raise FormatError(f"expected one result, found {len(records)} (read it with read_results)", file=path)
    return records[0]


def write_record(record: ResultRecord[Any], path: PathLike) -> ResultRecord[Any]:
    """Write a record as one indented JSON object, atomically; returns it with ``source`` set."""
    atomic_write_json(path, record.to_json(), indent=True)
    return ResultRecord(record.result, record.model, record.benchmark, record.extra, source=str(path))


def write_result(result: Any, path: PathLike, *, model: str = "", benchmark: str = "",
                 **extra: Any) -> ResultRecord[Any]:
    """Write ``result`` with its model, benchmark and ``extra`` keys (JSON-ready) to ``path``."""
    return write_record(ResultRecord(result, model, benchmark, extra), path)


#: the key of a result file naming the ground truth it was scored on (:func:`hoibench.datasets.ground_truth_id`)
GROUND_TRUTH_KEY = "ground_truth_id"

