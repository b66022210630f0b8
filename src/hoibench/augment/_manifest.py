"""The run's manifest: an append-only JSON-lines log of every decision (prompt, seed, model
versions, verdicts per image), from which a stopped run rebuilds its state.

Each record is written with one ``write`` of a complete line followed by ``fsync``; a line cut
short by a crash is the last one of its file and is ignored when reading (the work it described
is simply redone, deterministically). Images are written atomically *before* the record that
names them, so a record never points at a missing or partial image.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from hoibench._exceptions import FormatError
from hoibench._io import iter_jsonl

__all__ = ["Manifest", "manifest_image_name", "manifest_name", "read_manifests"]


def manifest_name(shard: int = 0, n_shards: int = 1) -> str:
    """``manifest.jsonl``, or ``manifest.shard-I-of-N.jsonl`` for one shard of several."""
    return "manifest.jsonl" if n_shards == 1 else f"manifest.shard-{shard}-of-{n_shards}.jsonl"


class Manifest:
    """Append records to one manifest file of an output folder."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def append(self, record: dict[str, Any]) -> None:
        line = orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as fh:
            if fh.tell() > 0:
                _repair_tail(self.path, fh)
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _repair_tail(path: Path, fh: Any) -> None:
    """Terminate a line cut short by a crash so the next record starts on its own line."""
    with open(path, "rb") as rd:
        rd.seek(-1, os.SEEK_END)
        if rd.read(1) != b"\n":
            fh.write(b"\n")


def _records(path: Path) -> Iterator[dict[str, Any]]:
    # a torn line (crash mid-write) is tolerated and skipped; anything else is corruption
    for n, rec in iter_jsonl(path, torn=_only_torn):
        if not isinstance(rec, dict) or "event" not in rec:
            raise FormatError("expected an object with an 'event' field", file=path, record=n + 1)
        yield rec


def _only_torn(lines: Sequence[bytes], n: int) -> bool:
    # a record cut short by a crash (then terminated by the next append): the start of an
    # object without its end
    line = lines[n].strip()
    return line.startswith(b"{") and not line.endswith(b"}")


def manifest_image_name(rec: dict[str, Any]) -> str | None:
    """The file name an image of a manifest record has in the augmented dataset: a generated one
    (event ``attempt``) ``images/NAME`` is ``NAME``, a crawled one (``filtered``) keeps its path;
    None where the record names no image."""
    image = rec.get("image")
    if not isinstance(image, str):
        return None
    return image.split("/", 1)[1] if rec.get("event") == "attempt" and "/" in image else image


def read_manifests(out_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record of every manifest file in ``out_dir`` (all shards), file by file."""
    out: list[dict[str, Any]] = []
    for path in sorted(Path(out_dir).glob("manifest*.jsonl")):
        out.extend(_records(path))
    return out
