"""HAKE's HICO-DET instance-level JSON (``hico-det-training-set-instance-level.json``,
DirtyHarryLYL/HAKE), as the JSON itself or inside its ``.tar.gz``.

Layout: ``{file_name: {dataset, path_prefix, labels: [{hoi_id (1-based), human_bbox,
object_bbox, width, height, action_labels?}]}}``. Boxes are 1-based like HICO-DET's MATLAB
annotations and are shifted by −1. Images without pairs carry no size (width/height 0 here).
HAKE's train file lacks 217 of the official 117,871 train pairs, all ``no_interaction``.
"""

from __future__ import annotations

import io
import os
import tarfile
from typing import Any

from hoibench._exceptions import FormatError
from hoibench._io import parse_json, read_bytes
from hoibench.data import DatasetBuilder, HOIDataset
from hoibench.formats._common import RecordReader, check_dataset
from hoibench.vocab import hico_det

__all__ = ["looks_like_hake", "read_hake", "read_hake_json"]


def looks_like_hake(data: Any) -> bool:
    """True for a HAKE instance-level file (``{file_name: {labels: [...]}}``, first entry checked)."""
    if not isinstance(data, dict) or not data:
        return False
    first = next(iter(data.values()))
    return isinstance(first, dict) and "labels" in first and isinstance(first["labels"], list)


def read_hake_json(path: str | os.PathLike[str]) -> Any:
    """The parsed JSON of a HAKE file or of the first ``.json`` inside a HAKE ``.tar.gz``."""
    raw = read_bytes(path)
    if raw[257:262] == b"ustar":
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            member = next((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".json")), None)
            if member is None:
                raise FormatError("the archive holds no .json file", file=path)
            extracted = tar.extractfile(member)
            assert extracted is not None
            raw = extracted.read()
    return parse_json(raw, path)


def read_hake(path: str | os.PathLike[str], *, data: Any = None, validate: bool = True) -> HOIDataset:
    """Read HAKE's instance-level HICO-DET annotations."""
    if data is None:
        data = read_hake_json(path)
    if not looks_like_hake(data):
        raise FormatError("not a HAKE instance-level file (needs {file_name: {labels: [...]}})", file=path)
    vocab = hico_det()
    hv = vocab.hoi_verb_object.tolist()
    person = vocab.person
    r = RecordReader(path)
    b = DatasetBuilder(vocab)
    for i, (name, entry) in enumerate(data.items()):
        labels_in = r.get(entry, "labels", i, kind=list)
        boxes: list[list[float]] = []
        labels: list[int] = []
        verbs: list[int] = []
        width = height = 0
        for k, lab in enumerate(labels_in):
            where = f"labels[{k}]"
            hoi = r.integer(r.get(lab, "hoi_id", i, where=where), i, f"{where}.hoi_id")
            if not 1 <= hoi <= len(hv):
                raise r.error(i, f"{where}.hoi_id", f"{hoi} outside 1..{len(hv)}")
            h = r.box(r.get(lab, "human_bbox", i, where=where), i, f"{where}.human_bbox")
            o = r.box(r.get(lab, "object_bbox", i, where=where), i, f"{where}.object_bbox")
            boxes.append([h[0] - 1.0, h[1] - 1.0, h[2] - 1.0, h[3] - 1.0])
            boxes.append([o[0] - 1.0, o[1] - 1.0, o[2] - 1.0, o[3] - 1.0])
            v, obj = hv[hoi - 1]
            labels.append(person)
            labels.append(obj)
            verbs.append(v)
            width = r.integer(lab.get("width") or width, i, f"{where}.width")
            height = r.integer(lab.get("height") or height, i, f"{where}.height")
        n = len(verbs)
        b.add_image(name, boxes, labels, list(range(0, 2 * n, 2)), list(range(1, 2 * n, 2)), verbs,
                    width=width, height=height)
    ds = b.build(name=str(path))
    return check_dataset(ds, path) if validate else ds
