"""CrossHOI-Bench question files (the released multiple-choice benchmark of ``001_*.txt``).

Layout (read from the released files, ChelsieLei/CrossHOI-Bench)::

    {file_name: {"gt_choices": [...], "wrong_choices": [...], "boxes": {...}}}          # HICO-DET
    {file_name: {"QA_0": {"gt_choices": [...], "wrong_choices": [...], "boxes": {...}},
                 "QA_1": {...}}}                                                      # V-COCO, SWiG-HOI

Choice texts read ``"<verb> a/an <object>"`` with HICO-DET's underscores (``"hop_on a/an
elephant"``, ``"no_interaction with a/an cow"``); V-COCO uses spaces (``"look at a/an frisbee"``)
and SWiG-HOI gives bare verbs (``"adjusting"``). ``boxes`` holds ``human`` (settings 2–3) and
optionally ``object`` (and ``object_class``).

What the reader does
--------------------
- HICO-DET choices are mapped to HICO-DET classes where ``(verb, object)`` is one; other texts
  (negatives such as ``"carry a/an giraffe"``) become explicit out-of-vocabulary choices
  (``hoi == -1``, verb/object kept where they are names of the label space). V-COCO and SWiG-HOI
  questions keep their texts as out-of-vocabulary choices of label spaces ``"v-coco"`` /
  ``"swig-hoi"`` (their verbs are not V-COCO's action-role classes).
- Question ids: the image file name, or ``<file_name>#QA_k`` when an image holds several questions.
- HICO-DET boxes are the original 1-based pixel boxes (they equal ``instances_test2015.json``'s);
  they are shifted by −1 into hoibench's 0-based convention. V-COCO and SWiG-HOI boxes are COCO-style
  0-based already.
- Oddities are kept and recorded in ``meta["oddities"]`` instead of failing: a question with fewer
  than four choices, no correct choice, a text listed twice or as both correct and wrong (kept once,
  as correct; the raw lists stay in ``meta["raw_gt"]``/``meta["raw_wrong"]`` so that the
  ``crosshoi`` scoring protocol counts exactly like the released script).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import read_json
from hoibench.data import ChoiceParser, MCQuestion
from hoibench.data._choices import ARTICLE
from hoibench.vocab import hico_det

__all__ = [
    "CROSSHOI_DATASETS",
    "looks_like_crosshoi",
    "read_crosshoi",
]

#: dataset name → label space name of its questions
CROSSHOI_DATASETS = {"hico-det": "hico-det", "v-coco": "v-coco", "swig-hoi": "swig-hoi"}
HICO_BOX_SHIFT = 1.0


def looks_like_crosshoi(data: Any) -> bool:
    """True for a CrossHOI-Bench question file (checked on its first entry)."""
    if not isinstance(data, dict) or not data:
        return False
    first = next(iter(data.values()))
    if not isinstance(first, dict):
        return False
    if "QA_0" in first or any(str(k).startswith("QA_") for k in first):
        first = next(v for k, v in first.items() if str(k).startswith("QA_"))
    return isinstance(first, dict) and "gt_choices" in first and "wrong_choices" in first


def _detect_dataset(data: Mapping[str, Any]) -> str:
    first = next(iter(data.values()))
    if not any(str(k).startswith("QA_") for k in first):
        return "hico-det"
    for entry in data.values():
        for qa in entry.values():
            if isinstance(qa, dict):
                for t in list(qa.get("gt_choices", [])) + list(qa.get("wrong_choices", [])):
                    if isinstance(t, str) and ARTICLE in t:
                        return "v-coco"
    return "swig-hoi"


def read_crosshoi(
    path: str | os.PathLike[str],
    *,
    setting: int | None = None,
    dataset: str | None = None,
    data: Any = None,
) -> list[MCQuestion]:
    """Read a CrossHOI-Bench question file into :class:`~hoibench.data.MCQuestion` objects.

    Parameters
    ----------
    path:
        The JSON file.
    setting:
        1, 2 or 3. Default: 1 for files without boxes, 2 for files with a person box (use 3 for
        the detection setting, which shares setting 2's questions).
    dataset:
        ``"hico-det"``, ``"v-coco"`` or ``"swig-hoi"``; detected from the layout and texts when omitted.
    data:
        Already parsed content (format detection passes it on).
    """
    p = Path(path)
    if data is None:
        data = read_json(p)
    if not looks_like_crosshoi(data):
        raise FormatError("not a CrossHOI-Bench question file (expected {file_name: {gt_choices, "
                          "wrong_choices[, boxes]}})", file=p)
    name = dataset if dataset is not None else _detect_dataset(data)
    if name not in CROSSHOI_DATASETS:
        raise ConfigError(f"dataset must be one of {sorted(CROSSHOI_DATASETS)}; got {name!r}")
    if setting is not None and setting not in (1, 2, 3):
        raise ConfigError(f"setting must be 1, 2 or 3; got {setting!r}")
    parser = ChoiceParser(hico_det() if name == "hico-det" else None)
    shift = HICO_BOX_SHIFT if name == "hico-det" else 0.0
    out: list[MCQuestion] = []
    for record, (file_name, entry) in enumerate(data.items()):
        if not isinstance(entry, dict):
            raise FormatError(f"expected an object, got {type(entry).__name__}", file=p, record=record,
                              field=str(file_name))
        nested = any(str(k).startswith("QA_") for k in entry)
        qas = [(k, v) for k, v in entry.items() if str(k).startswith("QA_")] if nested else [("QA_0", entry)]
        for key, qa in qas:
            qid = file_name if len(qas) == 1 else f"{file_name}#{key}"
            where = f"{file_name}.{key}" if nested else str(file_name)
            out.append(_question(p, record, where, qid, str(file_name), qa, parser, setting, shift,
                                 CROSSHOI_DATASETS[name], name))
    return out


def _texts(p: Path, record: int, where: str, qa: Mapping[str, Any], key: str) -> list[str]:
    value = qa.get(key)
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise FormatError(f"expected a list of strings, got {value!r}", file=p, record=record,
                          field=f"{where}.{key}")
    return list(value)


def _box(p: Path, record: int, field: str, value: Any, shift: float) -> tuple[float, float, float, float]:
    if (not isinstance(value, (list, tuple)) or len(value) != 4
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
        raise FormatError(f"expected a box of 4 numbers, got {value!r}", file=p, record=record, field=field)
    x1, y1, x2, y2 = (float(v) - shift for v in value)
    if not (x2 >= x1 and y2 >= y1):
        raise FormatError(f"inverted box {list(value)!r}", file=p, record=record, field=field)
    return (x1, y1, x2, y2)


def _question(p: Path, record: int, where: str, qid: str, file_name: str, qa: Any,
              parser: ChoiceParser, setting: int | None, shift: float, label_space: str,
              dataset: str) -> MCQuestion:
    if not isinstance(qa, dict):
        raise FormatError(f"expected an object, got {type(qa).__name__}", file=p, record=record, field=where)
    gt = _texts(p, record, where, qa, "gt_choices")
    wrong = _texts(p, record, where, qa, "wrong_choices")
    oddities: list[str] = []
    texts: list[str] = []
    for t in gt:
        if t in texts:
            oddities.append(f"correct choice {t!r} listed twice")
        else:
            texts.append(t)
    n_correct = len(texts)
    for t in wrong:
        if t in texts[:n_correct]:
            oddities.append(f"choice {t!r} is both correct and wrong (kept as correct)")
        elif t in texts:
            oddities.append(f"wrong choice {t!r} listed twice")
        else:
            texts.append(t)
    if not texts:
        raise FormatError("no choices", file=p, record=record, field=where)
    if n_correct == 0:
        oddities.append("no correct choice")
    if len(texts) != 4:
        oddities.append(f"{len(texts)} choices")
    boxes = qa.get("boxes") or {}
    if not isinstance(boxes, dict):
        raise FormatError(f"expected an object, got {boxes!r}", file=p, record=record, field=f"{where}.boxes")
    person = _box(p, record, f"{where}.boxes.human", boxes["human"], shift) if "human" in boxes else None
    obj = _box(p, record, f"{where}.boxes.object", boxes["object"], shift) if "object" in boxes else None
    s = setting if setting is not None else (1 if person is None else 2)
    if s in (2, 3) and person is None:
        raise FormatError(f"setting {s} needs a person box", file=p, record=record, field=f"{where}.boxes.human")
    meta: dict[str, Any] = {"source": "crosshoi-bench", "dataset": dataset, "file": p.name}
    if obj is not None and isinstance(boxes.get("object_class"), str):
        meta["object_class"] = boxes["object_class"]
    if oddities:
        meta["oddities"] = oddities
    if len(texts) != len(gt) + len(wrong):
        meta["raw_gt"] = gt
        meta["raw_wrong"] = wrong
    return MCQuestion(
        id=qid,
        file_name=file_name,
        setting=s,
        choices=tuple(parser(t) for t in texts),
        correct=frozenset(range(n_correct)),
        person_box=person if s in (2, 3) else None,
        object_box=obj if s in (2, 3) else None,
        label_space=label_space,
        meta=meta,
    )
