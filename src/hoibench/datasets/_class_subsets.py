"""The class subsets a HICO-DET mAP is reported on, from the one string the CLI, the demo and the
analyses accept (``--classes``): rare / non-rare, an SG split's unseen classes, a zero-shot
setting, or a class-list file. Reads files, so it lives here and not in the pure evaluator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import read_json
from hoibench.formats import (
    COMBINATIONS_FILE,
    balanced_zero_shot_dir,
    read_balanced_zero_shot,
    read_class_list,
    unseen_hoi_classes,
)
from hoibench.vocab import ZERO_SHOT_ALIASES, hico_det

__all__ = ["hico_class_subsets", "is_zero_shot_setting", "zero_shot_classes"]


# ----------------------------------------------------------------------------- zero-shot classes
def is_zero_shot_setting(spec: str) -> bool:
    """Whether ``spec`` names a zero-shot setting (``rf-uc``, ``rare_first``, ``zero-shot:uo``)."""
    low = spec.strip().lower()
    return low.startswith("zero-shot:") or low in ZERO_SHOT_ALIASES or low in ZERO_SHOT_ALIASES.values()


def zero_shot_classes(spec: str, *, vocab: Any = None) -> np.ndarray:
    """The unseen (0-based, sorted) HOI classes of a zero-shot protocol.

    ``spec`` is a setting (``rf-uc`` / ``nf-uc`` / ``uo`` / ``uv``, their long names, or
    ``zero-shot:NAME``: the lists of YueLiao/gen-vlkt, ``hoibench.vocab``), ``zero-shot:DIR`` (the
    zero-shot classes of a ``split balanced --zero-shot`` folder), a split folder or its
    ``test_combinations.json`` (the unseen classes it lists), or a class-list file of 0-based ids
    (:func:`hoibench.formats.read_class_list`). A balanced ``classes.json`` is refused: it lists
    the classes B-RIGHT *trains* on, not unseen ones.
    """
    vocab = vocab or hico_det()
    key = spec.strip()
    folder = balanced_zero_shot_dir(key)
    if folder is not None:
        return read_balanced_zero_shot(folder, n_classes=vocab.n_hois)[0]
    if is_zero_shot_setting(key):
        low = key.lower()
        return vocab.zero_shot_unseen(low.split(":", 1)[1] if ":" in low else low)
    path = Path(key)
    if path.is_dir() or path.name == COMBINATIONS_FILE:
        return np.asarray(unseen_hoi_classes(path), dtype=np.int64)
    if not path.exists():
        raise ConfigError(f"the zero-shot protocol must be one of {sorted(ZERO_SHOT_ALIASES)}, a split folder "
                          f"or a file of 0-based HOI ids; got {spec!r}")
    data = read_json(path) if path.suffix == ".json" else None
    if isinstance(data, dict) and data.get("kind") == "balanced_classes":
        raise FormatError("is a balanced classes.json (the classes B-RIGHT trains on), not a list of unseen "
                          "classes", file=path)
    return read_class_list(path, n_classes=vocab.n_hois)


# ----------------------------------------------------------------------------- class subsets
def hico_class_subsets(spec: str, *, vocab: Any = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Class subsets to report for a ``--classes`` value, and the selection itself.

    ``rare`` / ``non-rare``; ``unseen:SPLIT_DIR`` (an SG split directory: its unseen classes and
    the other, seen, ones); a zero-shot setting ``rf-uc`` / ``nf-uc`` / ``uo`` / ``uv`` (or
    ``zero-shot:NAME``; reported as unseen and seen, as those papers do); ``zero-shot:DIR`` (B-RIGHT's
    balanced zero-shot protocol: the zero-shot classes of a ``split balanced --zero-shot`` folder as
    unseen, its balanced classes, the ones trained on, as seen); or a file with
    0-based HOI ids (see :func:`hoibench.formats.read_class_list`: a JSON list, a balanced
    ``classes.json`` or one id per line, e.g. B-RIGHT's 351 classes) -> ``selected``.
    """

    vocab = vocab or hico_det()
    everything = np.arange(vocab.n_hois)
    key = spec.strip()
    low = key.lower()
    if low in ("rare", "non-rare", "non_rare", "nonrare"):
        rare = vocab.rare_classes()
        if low == "rare":
            return {"rare": rare}, rare
        nr = np.setdiff1d(everything, rare)
        return {"non_rare": nr}, nr
    unseen = None
    folder = balanced_zero_shot_dir(key)
    if folder is not None:
        unseen, trained = read_balanced_zero_shot(folder, n_classes=vocab.n_hois)
        return {"unseen": unseen, "seen": trained}, unseen
    if low.startswith("unseen:"):
        unseen = np.asarray(unseen_hoi_classes(key.split(":", 1)[1]), dtype=np.int64)
    elif is_zero_shot_setting(low):
        unseen = zero_shot_classes(low, vocab=vocab)
    if unseen is not None:
        return {"unseen": unseen, "seen": np.setdiff1d(everything, unseen)}, unseen
    path = Path(key)
    if not path.exists():
        raise ConfigError(f"--classes must be rare, non-rare, unseen:SPLIT_DIR, zero-shot:BALANCED_DIR, one of "
                          f"{sorted(ZERO_SHOT_ALIASES)} or an existing list file; got {spec!r}")

    sel = read_class_list(path, n_classes=vocab.n_hois)
    return {"selected": sel}, sel
