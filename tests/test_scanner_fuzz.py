"""The C scanner against the readers it stands in front of, on randomly damaged files.

Each file is a small valid one with one to three random edits (a token such as ``null``,
``1e400``, ``NaN``, a bracket, a quote or an escape put in place of a few characters). Read with
the scanner and without it, the outcome must be the same: the same arrays, or the same error
line; never an exception that is not a :class:`~hoibench.HOIBenchError`. Seeded, so a failure
reproduces; a longer run found the hicodet reader's OverflowError on a size of ``1e400``.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hoibench.formats._scan as scan
from hoibench._exceptions import HOIBenchError
from hoibench.datasets import load_dataset
from hoibench.datasets._bundled import bundled_path
from hoibench.formats import (
    load_predictions,
    read_hicodet,
    read_vcoco_detections,
    write_predictions,
    write_vcoco_detections,
)
from hoibench.testing import noisy_predictions
from tests.test_eval_vcoco_oracle import make_synthetic
from tests.test_native_predictions import _embedded_gts, cdn_results_json

TOKENS = ["null", "1", "-1", "0.5", "[]", "[", "]", ",", "{", "}", '"x"', "1e400", "NaN", "2.0", " ", "\\u0041",
          '"', "0.0", "true", ""]
EDITS = 120

pytestmark = pytest.mark.skipif(scan._NATIVE is None, reason="the C scanner is not built here")


def _outcome(read: Callable[[Path], Any], path: Path, native: bool) -> tuple[str, Any]:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(scan, "_colscan", scan._NATIVE if native else None)
        try:
            return "ok", read(path)
        except HOIBenchError as exc:
            return "error", str(exc)


def _arrays(obj: Any, names: tuple[str, ...]) -> list[np.ndarray]:
    return [np.asarray(getattr(obj, n)) for n in names]


def _fuzz(tmp_path: Path, text: str, read: Callable[[Path], Any], arrays: Callable[[Any], list[Any]],
          seed: int, wrap: Callable[[str], str] = lambda t: t) -> None:
    """``EDITS`` damaged copies of ``text`` (each written through ``wrap``), read both ways."""
    rng = random.Random(seed)
    for k in range(EDITS):
        t = text
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(t))
            t = t[:i] + rng.choice(TOKENS) + t[i + rng.randint(0, 6):]
        path = tmp_path / f"f{k}.json"
        path.write_text(wrap(t))
        got, want = _outcome(read, path, True), _outcome(read, path, False)
        assert got[0] == want[0], (k, got, want)
        if got[0] == "error":
            assert got[1] == want[1], k
        else:
            for a, b in zip(arrays(got[1]), arrays(want[1])):
                np.testing.assert_array_equal(a, b, err_msg=str(k))


@pytest.fixture(scope="module")
def hico_gt():
    return load_dataset("hico-det:test").subset(np.arange(6))


@pytest.mark.parametrize("fmt", ["hoibench", "generic", "qpic", "cdn"])
def test_damaged_prediction_files_read_alike(tmp_path, hico_gt, fmt: str) -> None:
    wrap = _same_text
    if fmt == "cdn":  # the Python repr inside CDN's results.json is damaged, then written as JSON
        p = noisy_predictions(hico_gt, seed=0, per_image=(3, 5))
        text = json.loads(cdn_results_json(p, _embedded_gts(hico_gt.subset(np.arange(2)))))
        wrap = json.dumps
    elif fmt == "qpic":
        rng = np.random.default_rng(0)
        text = json.dumps([{"file_name": f, "labels": [0, 1, 2], "boxes": rng.uniform(0, 100, (3, 4)).round(2).tolist(),
                            "verb_scores": rng.random((2, 117)).round(3).tolist(), "sub_ids": [0, 0],
                            "obj_ids": [1, 2]} for f in hico_gt.file_names])
    else:
        write_predictions(noisy_predictions(hico_gt, seed=0, per_image=(3, 5)), tmp_path / "p.json", format=fmt)
        text = (tmp_path / "p.json").read_text()

    def read(path: Path) -> Any:
        return load_predictions(path, ground_truth=hico_gt)

    def arrays(loaded: Any) -> list[Any]:
        p = loaded.predictions
        return [loaded.format, p.file_names, *_arrays(p, ("offsets", "boxes_h", "boxes_o", "objects", "verbs", "scores"))]

    _fuzz(tmp_path, text, read, arrays, seed=len(fmt), wrap=wrap)


def _same_text(t: str) -> str:
    return t


@pytest.mark.parametrize("share", [True, False])
def test_damaged_vcoco_files_read_alike(tmp_path, share: bool) -> None:
    _, _, det = make_synthetic(3, n_images=4)
    write_vcoco_detections(det.subset(np.argsort(det.image_ids, kind="stable")), tmp_path / "d.json",
                           share_role_boxes=share)

    def arrays(got: Any) -> list[Any]:
        return [got.records, got.dropped, *_arrays(got.detections, ("image_ids", "person_boxes", "agent_scores",
                                                                     "role_boxes", "role_scores"))]

    _fuzz(tmp_path, (tmp_path / "d.json").read_text(), read_vcoco_detections, arrays, seed=int(share))


def test_damaged_hicodet_files_read_alike(tmp_path) -> None:
    doc = json.loads(gzip.decompress(bundled_path("hico-det", "test").read_bytes()))
    doc = {k: (v[:5] if k in ("annotation", "filenames", "size") else v) for k, v in doc.items()}

    def arrays(ds: Any) -> list[Any]:
        return [ds.file_names, *_arrays(ds, ("widths", "heights", "boxes", "box_labels", "pair_offsets", "pair_verb"))]

    _fuzz(tmp_path, json.dumps(doc), read_hicodet, arrays, seed=5)
