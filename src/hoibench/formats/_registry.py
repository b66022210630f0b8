"""Format detection and the one list of annotation formats hoibench reads and writes."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import read_bytes, read_json, refuses_deep_nesting
from hoibench.data import HOIDataset
from hoibench.formats import hake, hico_mat, hicodet, ppdm, vcoco
from hoibench.vocab import LabelSpace

__all__ = [
    "FORMATS",
    "AnnotationFormat",
    "detect_format",
    "read_dataset",
    "read_dataset_and_format",
    "write_dataset",
]


@dataclass(frozen=True)
class AnnotationFormat:
    """One annotation format: how to recognise, read and (optionally) write it."""

    name: str
    description: str
    sniff: Callable[[Any], bool] | None
    read: Callable[..., HOIDataset]
    write: Callable[[HOIDataset, str | os.PathLike[str]], None] | None = None
    aliases: tuple[str, ...] = ()


FORMATS: dict[str, AnnotationFormat] = {
    f.name: f
    for f in (
        AnnotationFormat("hicodet", "hicodet toolkit instances_*.json (HICO-DET, 1-based boxes)",
                         hicodet.looks_like_hicodet, hicodet.read_hicodet, hicodet.write_hicodet,
                         ("instances", "hicodet-toolkit")),
        AnnotationFormat("ppdm", "PPDM/QPIC trainval_hico.json / test_hico.json and V-COCO variant",
                         ppdm.looks_like_ppdm, ppdm.read_ppdm, ppdm.write_ppdm, ("qpic", "hoi-sg")),
        AnnotationFormat("hake", "HAKE instance-level JSON (or its .tar.gz)", hake.looks_like_hake,
                         hake.read_hake),
        AnnotationFormat("hico-mat", "HICO-DET anno_bbox.mat (split chosen with split=)", None,
                         hico_mat.read_hico_mat, aliases=("mat", "anno_bbox")),
        AnnotationFormat("vcoco", "vcoco toolkit instances_vcoco_*.json", vcoco.looks_like_vcoco,
                         vcoco.read_vcoco, aliases=("v-coco", "instances-vcoco")),
    )
}


def _lookup(name: str) -> AnnotationFormat:
    key = name.lower()
    for f in FORMATS.values():
        if key == f.name or key in f.aliases:
            return f
    names = sorted(FORMATS)
    close = difflib.get_close_matches(key, names + [a for f in FORMATS.values() for a in f.aliases], n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"format must be one of {names}; got {name!r}.{hint}")


_NO_IMAGES = "holds no images: an annotation file must annotate at least one image"


def _sniff(path: Path) -> tuple[str, Any]:
    if path.suffix.lower() == ".mat":
        return "hico-mat", None
    raw_head = read_bytes(path)[:512] if path.name.endswith((".tar.gz", ".tgz", ".tar")) else b""
    if raw_head[257:262] == b"ustar":
        return "hake", hake.read_hake_json(path)
    data = read_json(path)
    if data == [] or data == {}:  # every format's empty file: no format can be told from it
        raise FormatError(_NO_IMAGES, file=path)
    for f in FORMATS.values():
        if f.sniff is not None and f.sniff(data):
            return f.name, data
    raise FormatError("unknown annotation format (expected hicodet instances, PPDM/QPIC, HAKE, "
                      "vcoco instances JSON or anno_bbox.mat)", file=path)


def detect_format(path: str | os.PathLike[str]) -> str:
    """Name of the format of an annotation file, by extension and content."""
    return _sniff(Path(path))[0]


def read_dataset(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    vocab: LabelSpace | None = None,
    validate: bool = True,
    **kwargs: Any,
) -> HOIDataset:
    """Read any supported annotation file into an :class:`HOIDataset`.

    Parameters
    ----------
    path:
        The file (``.gz`` compression is handled transparently).
    format:
        One of :data:`FORMATS` (or an alias); detected from the content when omitted.
    vocab:
        Label space for formats shared by datasets (PPDM/QPIC); guessed when omitted.
    validate:
        Raise :class:`~hoibench.FormatError` on the first structural problem (NaN or inverted
        boxes, ids out of range). ``hoibench data validate`` turns it off to list them all.
    """
    return read_dataset_and_format(path, format=format, vocab=vocab, validate=validate, **kwargs)[0]


@refuses_deep_nesting
def read_dataset_and_format(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    vocab: LabelSpace | None = None,
    validate: bool = True,
    **kwargs: Any,
) -> tuple[HOIDataset, str]:
    """:func:`read_dataset` and the name of the format it read (detected or given), parsing the
    file once."""
    p = Path(path)
    if not p.exists():
        raise FormatError("no such file", file=p)
    if format is None:
        name, data = _sniff(p)
    else:
        name, data = _lookup(format).name, None
    fmt = FORMATS[name]
    if name == "ppdm":
        ds = ppdm.read_ppdm(p, vocab=vocab, data=data, validate=validate)
    elif name == "hico-mat":
        ds = hico_mat.read_hico_mat(p, validate=validate, **kwargs)
    else:
        ds = fmt.read(p, data=data, validate=validate)
    if ds.n_images == 0:  # scored, split or counted, it would give 0s that blame something else
        raise FormatError(_NO_IMAGES, file=p)
    return ds, name


def write_dataset(ds: HOIDataset, path: str | os.PathLike[str], *, format: str) -> None:
    """Write ``ds`` in a format that supports writing (hicodet, ppdm); atomic."""
    fmt = _lookup(format)
    if fmt.write is None:
        writable = sorted(f.name for f in FORMATS.values() if f.write is not None)
        raise ConfigError(f"format {fmt.name!r} is read-only; write one of {writable}")
    fmt.write(ds, path)
