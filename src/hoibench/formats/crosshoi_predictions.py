"""The HOI-method prediction files of the released CrossHOI-Bench evaluation.

``script_eval_32B_newbench_HOI.py`` (ChelsieLei/CrossHOI-Bench) reads one JSON file per method
(``--hoi_pred_json_file``, e.g. ``HOI_pred_hicodet/CMD_SE-test_default_B.json``), loaded with
``json.load`` and indexed by image file name::

    {"HICO_test2015_00000014.jpg": {"h_boxes": [[x1, y1, x2, y2], ...],
                                    "o_boxes": [[x1, y1, x2, y2], ...],
                                    "ho_scores": [float, ...],
                                    "ao_names": ["hold a/an elephant", ...]}, ...}

One entry per scored (human, object, interaction) triplet, the four lists parallel. ``ao_names``
are texts in the question files' form (``"<verb> a/an <object>"``); the script compares them
with the question's choice texts as they are, and takes the object label after the last
``" a/an "``. The boxes are compared with the question file's boxes unconverted, so they are in
the question file's frame: HICO-DET's original 1-based pixels (the frame of
``instances_test2015.json`` the HOI methods evaluate in), V-COCO's and SWiG-HOI's 0-based
COCO-style pixels. The reader moves them into hoibench's 0-based frame exactly as
:mod:`hoibench.formats.crosshoi` moves the question boxes (−1 for HICO-DET), so every IoU is
the script's; ``box_shift`` adds pixels after that for a file written in another frame.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import read_json
from hoibench.data import MCQuestion
from hoibench.formats._frame import FrameHint, reference_frame_hint
from hoibench.formats.crosshoi import CROSSHOI_DATASETS, HICO_BOX_SHIFT

__all__ = ["RELEASED_HOI_KEYS", "TextDetections", "is_released_hoi_file", "looks_like_released_hoi",
           "read_released_hoi", "released_frame_hint"]

#: the four parallel lists of one image
RELEASED_HOI_KEYS = ("h_boxes", "o_boxes", "ho_scores", "ao_names")


@dataclass(frozen=True)
class TextDetections:
    """One image's scored triplets named by text: what the released rule ranks and matches.

    ``boxes_h``/``boxes_o`` are (n, 4) 0-based pixel xyxy, ``scores`` (n,) as read, ``texts``
    the n interaction texts (``"<verb> a/an <object>"``, or a bare verb for SWiG-HOI). ``hois``,
    when the triplets come from a detector of a label space's classes, holds each one's class: a
    choice then matches by class, whichever spelling of it the question file uses."""

    boxes_h: np.ndarray
    boxes_o: np.ndarray
    scores: np.ndarray
    texts: tuple[str, ...]
    hois: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.texts)


def looks_like_released_hoi(data: Any) -> bool:
    """True for a released HOI-method prediction file (checked on its first entry)."""
    if not isinstance(data, dict) or not data:
        return False
    first = next(iter(data.values()))
    return isinstance(first, dict) and all(k in first for k in RELEASED_HOI_KEYS)


def is_released_hoi_file(path: str | os.PathLike[str], head: int = 1 << 16) -> bool:
    """True when a JSON file's first bytes may open a released HOI-method prediction file: an
    object naming one of its four keys (no other detector format uses them; the first image's
    first list may be long, so one is enough), so other formats are not parsed twice."""
    if not os.path.isfile(path):  # a FIFO or device is left to the readers' own refusals
        return False
    try:
        with open(path, "rb") as fh:
            start = fh.read(head)
    except OSError:
        return False
    text = start.lstrip()
    return text[:1] == b"{" and any(f'"{k}"'.encode() in text for k in RELEASED_HOI_KEYS)


def read_released_hoi(path: str | os.PathLike[str], *, dataset: str, box_shift: float = 0.0,
                      data: Any = None) -> dict[str, TextDetections]:
    """Read a released HOI-method prediction file: image file name -> :class:`TextDetections`.

    ``dataset`` (``"hico-det"``, ``"v-coco"``, ``"swig-hoi"``; the questions' dataset) sets the
    frame: HICO-DET boxes are shifted by −1 like its question boxes. Anything malformed (a
    missing list, lists of different lengths, a box that is not 4 finite numbers or is inverted,
    a score that is not a finite number, a text that is not a string) is a :class:`FormatError`
    naming the file, the image and the field.
    """
    p = Path(path)
    if dataset not in CROSSHOI_DATASETS:
        raise ConfigError(f"dataset must be one of {sorted(CROSSHOI_DATASETS)}; got {dataset!r}")
    if data is None:
        data = read_json(p)
    if not isinstance(data, dict):
        raise FormatError("expected an object mapping image file names to {h_boxes, o_boxes, ho_scores, "
                          "ao_names}", file=p)
    shift = (HICO_BOX_SHIFT if dataset == "hico-det" else 0.0) - box_shift
    out: dict[str, TextDetections] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise FormatError(f"expected an object, got {type(entry).__name__}", file=p, record=name)
        missing = [k for k in RELEASED_HOI_KEYS if k not in entry]
        if missing:
            raise FormatError(f"missing {', '.join(missing)}", file=p, record=name)
        for key in RELEASED_HOI_KEYS:
            if not isinstance(entry[key], list):
                raise FormatError(f"expected a list, got {type(entry[key]).__name__}", file=p, record=name,
                                  field=key)
        n = len(entry["ao_names"])
        for key in RELEASED_HOI_KEYS[:3]:
            if len(entry[key]) != n:
                raise FormatError(f"{len(entry[key])} entries, but ao_names has {n}", file=p, record=name,
                                  field=key)
        texts = entry["ao_names"]
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise FormatError(f"expected a string, got {t!r}", file=p, record=name, field=f"ao_names[{i}]")
        scores = np.array([_number(p, name, f"ho_scores[{i}]", s) for i, s in enumerate(entry["ho_scores"])],
                          dtype=np.float64)
        out[str(name)] = TextDetections(_boxes(p, name, "h_boxes", entry["h_boxes"], shift),
                                        _boxes(p, name, "o_boxes", entry["o_boxes"], shift), scores, tuple(texts))
    return out


def _number(p: Path, name: str, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FormatError(f"expected a finite number, got {value!r}", file=p, record=name, field=field)
    return float(value)


def _boxes(p: Path, name: str, key: str, rows: list[Any], shift: float) -> np.ndarray:
    out = np.empty((len(rows), 4), dtype=np.float64)
    for i, box in enumerate(rows):
        field = f"{key}[{i}]"
        if not isinstance(box, list) or len(box) != 4:
            raise FormatError(f"expected a box of 4 numbers, got {box!r}", file=p, record=name, field=field)
        out[i] = [_number(p, name, field, v) for v in box]
        if out[i, 2] < out[i, 0] or out[i, 3] < out[i, 1]:
            raise FormatError(f"inverted box {box!r} (x2 < x1 or y2 < y1)", file=p, record=name, field=field)
    return out - shift


def released_frame_hint(questions: Sequence[MCQuestion], detections: Mapping[str, TextDetections], *,
                        top: int = 5) -> FrameHint | None:
    """Whether the human boxes of each image's ``top`` best triplets fit the questions' target
    people clearly better one pixel off (:mod:`hoibench.formats._frame`'s test): a file written
    in another frame than the one read. ``None`` when not, or with too few matched people."""
    pairs = []
    for q in questions:
        det = detections.get(q.file_name)
        if q.person_box is None or det is None or not len(det):
            continue
        best = np.argsort(-det.scores, kind="stable")[:top]
        pairs.append((q.person_box, det.boxes_h[best]))
    return reference_frame_hint(pairs)
