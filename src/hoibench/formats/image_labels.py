"""Image-level object labels for HICO-DET's Known-Object setting: HICO's ``anno.mat`` or a JSON
object ``{file_name: [object index or name, ...]}``. Read here, at the format boundary; the
evaluator receives the parsed mapping."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import read_json, read_mat
from hoibench.vocab import hico_det

__all__ = ["read_image_labels"]


def read_image_labels(path: str | os.PathLike[str], *, split: str = "test",
                      vocab: Any = None) -> dict[str, frozenset[int]]:
    """Image-level object labels for Known-Object evaluation: file name -> object indices.

    Reads HICO's ``anno.mat`` (``list_<split>`` and ``anno_<split>``, 600 HOI labels per image;
    an image has an object when any of its HOI classes is labelled 1, as ``eval_one.m``
    decides) or a JSON object ``{file_name: [object index or name, ...]}``.
    """
    vocab = vocab or hico_det()
    p = Path(path)
    if not p.exists():
        raise FormatError("no such file", file=p)
    if p.suffix.lower() == ".mat":
        m = read_mat(p, variable_names=[f"list_{split}", f"anno_{split}"])
        for key in (f"list_{split}", f"anno_{split}"):
            if key not in m:
                raise FormatError(f"missing variable {key!r} (expected HICO's anno.mat)", file=p)
        names = [str(np.asarray(x).ravel()[0]) for x in np.asarray(m[f"list_{split}"]).ravel()]
        anno = np.asarray(m[f"anno_{split}"], dtype=np.float64)
        if anno.shape != (vocab.n_hois, len(names)):
            raise FormatError(f"anno_{split} has shape {anno.shape}, expected ({vocab.n_hois}, {len(names)})",
                              file=p)
        obj_of_hoi = vocab.hoi_verb_object[:, 1]
        out: dict[str, frozenset[int]] = {}
        for j, fn in enumerate(names):
            out[fn] = frozenset(int(o) for o in np.unique(obj_of_hoi[anno[:, j] == 1]))
        return out
    data = read_json(p)
    if not isinstance(data, dict):
        raise FormatError("expected an object {file_name: [objects]}", file=p)
    out = {}
    for fn, objs in data.items():
        if not isinstance(objs, list):
            raise FormatError("expected a list of objects", file=p, record=fn)
        ids = set()
        for k, o in enumerate(objs):
            if isinstance(o, str):
                try:
                    ids.add(vocab.object_index(o))
                except ConfigError as exc:
                    raise FormatError(str(exc), file=p, record=fn, field=f"[{k}]") from None
            elif isinstance(o, int) and not isinstance(o, bool) and 0 <= o < vocab.n_objects:
                ids.add(o)
            else:
                raise FormatError(f"expected an object index 0..{vocab.n_objects - 1} or name, got {o!r}",
                                  file=p, record=fn, field=f"[{k}]")
        out[fn] = frozenset(ids)
    return out
