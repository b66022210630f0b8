"""The ``hoi_matches`` file (``hoibench eval hico --matches``): every detection of a HICO-DET
evaluation with its class, score and whether it matched, for the TP->FP sensitivity analysis
(contract in ``docs/interfaces.md``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hoibench._exceptions import FormatError
from hoibench._io import read_json

__all__ = ["read_matches"]


def read_matches(path: Any) -> dict[str, Any]:
    """Read a ``hoi_matches`` file (contract in ``docs/interfaces.md``): matched detections.

    Returns ``{"hoi", "score", "tp", "n_gt", "class_names"}`` as arrays (names a tuple, maybe empty).
    """

    d = read_json(path)
    if not isinstance(d, dict) or d.get("kind") != "hoi_matches":
        raise FormatError("expected a JSON object with kind 'hoi_matches'", file=path, field="kind")

    def column(key: str, kind: type, n: int | None = None) -> np.ndarray:
        v = d.get(key)
        if not isinstance(v, list):
            raise FormatError("expected a list", file=path, field=key)
        if n is not None and len(v) != n:
            raise FormatError(f"expected {n} entries, got {len(v)}", file=path, field=key)
        for i, x in enumerate(v):
            ok = isinstance(x, (int, float)) and not isinstance(x, bool) if kind is float else (
                isinstance(x, int) and not isinstance(x, bool) if kind is int else isinstance(x, (bool, int)))
            if not ok or (kind is float and not np.isfinite(x)):
                raise FormatError(f"entry {i}: expected {kind.__name__}, got {x!r}", file=path, field=key)
        return np.asarray(v, dtype={int: np.int64, float: np.float64, bool: bool}[kind])

    n_gt = column("n_gt", int)
    hoi = column("hoi", int)
    score = column("score", float, len(hoi))
    tp = column("tp", bool, len(hoi))
    if (n_gt < 0).any():
        raise FormatError("ground-truth counts must be >= 0", file=path, field="n_gt")
    if len(hoi) and (hoi.min() < 0 or hoi.max() >= len(n_gt)):
        bad = int(np.flatnonzero((hoi < 0) | (hoi >= len(n_gt)))[0])
        raise FormatError(f"entry {bad}: class {hoi[bad]} outside [0, {len(n_gt)})", file=path, field="hoi")
    names = d.get("class_names") or []
    if not isinstance(names, list) or (names and len(names) != len(n_gt)):
        raise FormatError(f"expected {len(n_gt)} names", file=path, field="class_names")
    return {"hoi": hoi, "score": score, "tp": tp, "n_gt": n_gt, "class_names": tuple(str(x) for x in names)}
