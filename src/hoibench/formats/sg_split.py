"""Files of a split folder that other packages read back: ``test_combinations.json`` (the
unseen (verb, object) combinations of the test set), for the unseen-class mAP and the audit, and
the box conventions ``split sg`` recorded in ``stats.json`` (for ``data convert``).

Written by the SG splits (``hoibench split sg``) and the zero-shot splits (``hoibench split
zero-shot``) through :func:`combinations_record`, the one writer of the layout."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import check_folder, file_sha256, read_folder_provenance, read_json
from hoibench.vocab import get_label_space

__all__ = ["COMBINATIONS_FILE", "STATS_FILE", "combinations_record", "recorded_box_conventions",
           "unseen_combinations", "unseen_hoi_classes"]


COMBINATIONS_FILE = "test_combinations.json"
STATS_FILE = "stats.json"


# --------------------------------------------------------------------------- the layout
def combinations_record(vocab: Any, combinations: np.ndarray, **header: Any) -> dict[str, Any]:
    """``test_combinations.json``: ``header`` (kind, name, ...) then the ``(n, 2)`` (verb, object)
    ``combinations`` as entries of names, label-space indices, file ids and the HOI class."""
    combinations = np.asarray(combinations, dtype=np.int64).reshape(-1, 2)
    base = 0 if vocab.name == "v-coco" else 1
    hois = vocab.hoi_index(combinations[:, 0], combinations[:, 1]).tolist()
    coco91 = vocab.object_to_coco91(combinations[:, 1]).tolist()
    return {
        **header,
        "combinations": [
            {
                "verb": vocab.verbs[v],
                "object": vocab.objects[o],
                "verb_index": v,
                "object_index": o,
                "verb_id": v + base,
                "object_coco91": coco91[k],
                "hoi": hois[k] if vocab.name == "hico-det" and hois[k] >= 0 else None,
            }
            for k, (v, o) in enumerate(combinations.tolist())
        ],
    }


# --------------------------------------------------------------------------- split directories
def _read_combinations(split_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Path]:
    path = Path(split_dir)
    if path.is_dir():
        check_folder(path)  # a folder that mixes two splits is refused, not read
        path = path / COMBINATIONS_FILE
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("combinations"), list):
        raise FormatError("expected an object with a 'combinations' list", file=path)
    return data, path


def unseen_combinations(split_dir: str | os.PathLike[str]) -> np.ndarray:
    """The test (unseen) combinations of a split directory as ``(n, 2)`` (verb, object) indices
    of its label space (HICO-DET or V-COCO)."""
    data, path = _read_combinations(split_dir)
    out = []
    for k, c in enumerate(data["combinations"]):
        if not isinstance(c, dict):
            raise FormatError("expected an object", file=path, record=k)
        v, o = c.get("verb_index"), c.get("object_index")
        if not isinstance(v, int) or not isinstance(o, int):
            raise FormatError("expected integer verb_index and object_index", file=path, record=k)
        out.append((v, o))
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


def unseen_hoi_classes(split_dir: str | os.PathLike[str]) -> np.ndarray:
    """0-based HICO-DET HOI classes of a split directory's test combinations (sorted).

    Used by the mAP evaluator for ``--classes unseen:SPLIT_DIR``.
    """
    data, path = _read_combinations(split_dir)
    space = data.get("label_space", "hico-det")
    if space != "hico-det":
        raise ConfigError(f"{path}: unseen HOI classes exist for hico-det splits only; this split is {space!r} "
                          "(use unseen_combinations)")
    combos = unseen_combinations(split_dir)
    vocab = get_label_space("hico-det")
    hoi = vocab.hoi_index(combos[:, 0], combos[:, 1])
    if (hoi < 0).any():
        k = int(np.flatnonzero(hoi < 0)[0])
        raise FormatError("(verb, object) is not a HICO-DET HOI class", file=path, record=k)
    return np.unique(hoi)


# --------------------------------------------------------------------------- box conventions
def recorded_box_conventions(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]] | None:
    """What ``split sg`` recorded about the boxes it wrote into the file ``path`` of its folder:
    ``{file-name prefix: {"entries": n, "convention": "0-based" | "1-based" | "mixed"}}``.

    ``None`` unless the folder's ``provenance.json`` lists ``path`` and ``stats.json`` with their
    present hashes (a file changed since is not what was recorded) and ``stats.json`` holds
    ``box_conventions`` of ``"how": "written"`` (boxes split sg placed itself, not files'
    boxes passed through as read) for that file.
    """
    p = Path(path)
    stats = p.parent / STATS_FILE
    if p.name == STATS_FILE or not stats.is_file() or not p.is_file():
        return None
    prov = read_folder_provenance(p.parent)
    files = (prov or {}).get("files") or {}
    if any(files.get(f.name) != file_sha256(f) for f in (p, stats)):
        return None
    data = read_json(stats)
    rec = data.get("box_conventions") if isinstance(data, dict) else None
    if not isinstance(rec, dict) or rec.get("how") != "written":
        return None
    groups = (rec.get("files") or {}).get(p.name)
    if groups is None:
        return None
    if not isinstance(groups, dict) or not all(
            isinstance(g, dict) and isinstance(g.get("entries"), int)
            and g.get("convention") in ("0-based", "1-based", "mixed") for g in groups.values()):
        raise FormatError("expected {prefix: {entries, convention}} per file", file=stats,
                          field=f"box_conventions.files.{p.name}")
    return groups
