"""The C scanner and the careful readers agree on every file, and neither fails inside.

The careful path (no scanner: the JSON parsed whole and checked field by field) is the oracle.
Each format's small valid file is mutated by a seeded mutator (a byte replaced, digits put into
a number, a number replaced by a huge one or by ``-0``, a control byte or a quote put in, the
text cut short); every mutant is read both ways and must be refused by
both (a :class:`~hoibench.HOIBenchError`, never another exception) or give bit-identical arrays
(``-0.0`` and ``+0.0`` told apart). Numpy's floating-point warnings are errors here: a huge box
must not leak an overflow warning. Also the single cases behind these rules: numbers beyond 64
bits or beyond float64 in every integer and score field, ``-0``, raw control bytes and quotes
inside a ``results.json`` string, and :func:`~hoibench.formats._scan.top_valid`'s input checks.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hoibench.formats._scan as scan
from hoibench._exceptions import HOIBenchError
from hoibench.data import HOIPredictions
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
from tests.test_native_predictions import _embedded_gts, cdn_results_json, gen_vlkt_results_json

pytestmark = pytest.mark.skipif(scan._NATIVE is None, reason="the C scanner is not built here")

MUTANTS = 200  # per format; every one read twice
HUGE = ["9" * 400, str(2**80), str(2**64), str(2**63), str(-(2**63) - 1), str(2**53 + 1), "1e30", "1e308",
        "-1e308", "1e400", "-0", "-0.0", "-0e0", "0.0000000000000000000000000000001"]
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def mutate(text: str, rng: random.Random) -> str:
    """One to two edits of ``text``, each of one kind chosen at random."""
    for _ in range(rng.randint(1, 2)):
        kind = rng.randrange(7)
        numbers = [m.span() for m in NUMBER.finditer(text)]
        i = rng.randrange(len(text))
        if kind in (0, 1) and numbers:  # a number replaced by a huge one, or by -0
            a, b = rng.choice(numbers)
            text = text[:a] + rng.choice(HUGE) + text[b:]
        elif kind == 2 and numbers:  # digits put into a number
            a, b = rng.choice(numbers)
            at = rng.randint(a, b)
            text = text[:at] + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25))) + text[at:]
        elif kind == 3:  # a raw control byte (or white space other than a space)
            text = text[:i] + rng.choice("\x00\x01\x1f\t\n\r") + text[i:]
        elif kind == 4:  # a quote, inside a name when there is one
            names = [m.start() + 1 for m in re.finditer(r"['\"](?:HICO|COCO|a|[a-z_]+)", text)]
            at = rng.choice(names) if names and rng.random() < 0.7 else i
            text = text[:at] + rng.choice(['"', "'", '\\"', "\\'"]) + text[at:]
        elif kind == 5:  # a byte replaced
            text = text[:i] + rng.choice("{}[](),:.-e0 x\\'\"") + text[i + 1:]
        else:  # cut short
            text = text[:i]
    return text


def _outcome(read: Callable[[Path], Any], path: Path, native: bool) -> tuple[str, Any]:
    with pytest.MonkeyPatch.context() as m:
        if not native:  # the careful readers alone
            m.setattr(scan, "_colscan", None)
            m.setattr(scan, "AVAILABLE", False)
        with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
            warnings.simplefilter("error", RuntimeWarning)
            try:
                return "ok", read(path)
            except HOIBenchError as exc:
                return "error", str(exc)
            except Exception as exc:
                return "internal", f"{type(exc).__name__}: {exc}"[:300]


def _same_bits(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return bool(a == b)


def agree(read: Callable[[Path], Any], arrays: Callable[[Any], list[Any]], path: Path) -> tuple[str, Any]:
    """Read ``path`` with the scanner and with the careful readers: both refuse, or give the
    same values to the bit; neither fails inside. Returns the careful outcome."""
    got, want = _outcome(read, path, True), _outcome(read, path, False)
    assert "internal" not in (got[0], want[0]), (path.name, got, want)
    assert got[0] == want[0], (path.name, got, want)
    if got[0] == "ok":
        for k, (a, b) in enumerate(zip(arrays(got[1]), arrays(want[1]), strict=True)):
            assert _same_bits(a, b), (path.name, k, a, b)
    return want


# ----------------------------------------------------------------------------- the formats
@pytest.fixture(scope="module")
def hico_gt():
    return load_dataset("hico-det:test").subset(np.arange(3))


def _prediction_arrays(loaded: Any) -> list[Any]:
    p = loaded.predictions
    return [loaded.format, list(p.file_names), loaded.warnings, loaded.detection, dict(loaded.dropped),
            *(getattr(p, k) for k in ("offsets", "boxes_h", "boxes_o", "objects", "verbs", "scores"))]


def _vcoco_arrays(got: Any) -> list[Any]:
    d = got.detections
    return [got.records, got.dropped, d.image_ids, d.person_boxes, d.agent_scores, d.role_boxes, d.role_scores]


def _hicodet_arrays(ds: Any) -> list[Any]:
    return [list(ds.file_names), ds.widths, ds.heights, ds.boxes, ds.box_labels, ds.pair_offsets, ds.pair_verb]


def _prediction_text(fmt: str, gt: Any, tmp_path: Path) -> str:
    p = noisy_predictions(gt, seed=1, per_image=(2, 3))
    if fmt == "cdn":
        return cdn_results_json(p, _embedded_gts(gt.subset(np.arange(1))))
    if fmt == "gen-vlkt":  # (HOI classes only: its ids are HOI class ids)
        keep = p.hois >= 0
        counts = np.bincount(p.image_index[keep], minlength=p.n_images)
        q = HOIPredictions.from_arrays(p.vocab, p.file_names, counts, p.boxes_h[keep], p.boxes_o[keep],
                                       p.objects[keep], p.verbs[keep], p.scores[keep])
        return gen_vlkt_results_json(q, _embedded_gts(gt.subset(np.arange(1))))
    if fmt == "qpic":
        rng = np.random.default_rng(0)
        xy = rng.uniform(0, 50, (len(gt.file_names), 3, 2)).round(2)
        boxes = np.concatenate([xy, xy + rng.uniform(1, 50, xy.shape).round(2)], axis=2)
        return json.dumps([{"file_name": f, "labels": [0, 1, 2], "boxes": b.tolist(),
                            "verb_scores": rng.random((2, 117)).round(2).tolist(), "sub_ids": [0, 0],
                            "obj_ids": [1, 2]} for f, b in zip(gt.file_names, boxes)])
    write_predictions(p, tmp_path / "p.json", format=fmt)
    return (tmp_path / "p.json").read_text()


def _vcoco_text(share: bool, tmp_path: Path) -> str:
    _, _, det = make_synthetic(3, n_images=2)
    write_vcoco_detections(det.subset(np.argsort(det.image_ids, kind="stable")[:4]), tmp_path / "d.json",
                           share_role_boxes=share)
    return (tmp_path / "d.json").read_text()


def _hicodet_text() -> str:
    doc = json.loads(gzip.decompress(bundled_path("hico-det", "test").read_bytes()))
    return json.dumps({k: (v[:3] if k in ("annotation", "filenames", "size") else v) for k, v in doc.items()
                       if k not in ("correspondence", "rare", "non_rare", "empty")})


def _mutants(tmp_path: Path, text: str, read: Callable[[Path], Any], arrays: Callable[[Any], list[Any]],
             seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    seen = {"ok": 0, "error": 0}
    for k in range(MUTANTS):
        path = tmp_path / f"m{k}.json"
        path.write_bytes(mutate(text, rng).encode("utf-8", "surrogatepass"))
        seen[agree(read, arrays, path)[0]] += 1
    return seen


@pytest.mark.parametrize("fmt", ["hoibench", "generic", "qpic", "cdn", "gen-vlkt"])
def test_mutated_prediction_files_read_alike(tmp_path, hico_gt, fmt: str) -> None:
    text = _prediction_text(fmt, hico_gt, tmp_path)
    seen = _mutants(tmp_path, text, lambda p: load_predictions(p, ground_truth=hico_gt), _prediction_arrays,
                    seed=sum(map(ord, fmt)))
    assert seen["ok"] and seen["error"], seen  # the mutants reach both outcomes


@pytest.mark.parametrize("share", [True, False])
def test_mutated_vcoco_files_read_alike(tmp_path, share: bool) -> None:
    seen = _mutants(tmp_path, _vcoco_text(share, tmp_path), read_vcoco_detections, _vcoco_arrays, seed=11 + share)
    assert seen["ok"] and seen["error"], seen


def test_mutated_hicodet_files_read_alike(tmp_path) -> None:
    seen = _mutants(tmp_path, _hicodet_text(), read_hicodet, _hicodet_arrays, seed=13)
    assert seen["ok"] and seen["error"], seen


# ----------------------------------------------------------------------------- the single cases
def _both(read: Callable[[Path], Any], path: Path) -> tuple[str, Any]:
    """The careful outcome, once :func:`agree` has checked the scanner's against it."""
    return agree(read, lambda got: [], path)


@pytest.mark.parametrize("value", [str(2**80), "9" * 400, str(2**63), "1e30"])
def test_a_huge_vcoco_image_id_is_refused_with_record_and_field(tmp_path, value: str) -> None:
    text = _vcoco_text(True, tmp_path)
    path = tmp_path / "huge.json"
    path.write_text(re.sub(r'"image_id": ?\d+', f'"image_id": {value}', text, count=1))
    kind, line = _both(read_vcoco_detections, path)
    assert kind == "error" and "huge.json: record 0: image_id: expected an integer within 64 bits" in line, line
    assert len(line) < 200, line  # a 400-digit number is cut short


@pytest.mark.parametrize("fmt", ["gen-vlkt", "cdn"])
def test_a_400_digit_score_in_a_results_file_is_refused_with_record_and_field(tmp_path, hico_gt, fmt) -> None:
    text = json.loads(_prediction_text(fmt, hico_gt, tmp_path))
    path = tmp_path / "results.json"
    path.write_text(json.dumps(re.sub(r"'score': np\.float32\([^)]*\)", "'score': " + "9" * 400, text, count=1)))
    kind, line = _both(lambda p: load_predictions(p, ground_truth=hico_gt), path)
    assert kind == "error" and re.search(r"results\.json: record 0: hoi_prediction\[\d+\]\.score: expected a number",
                                         line), line


@pytest.mark.parametrize("size", ["1e30", str(10**30), str(2**63), str(2**53 + 1)])
def test_a_huge_hicodet_image_size_is_refused_or_read_exactly(tmp_path, size: str) -> None:
    doc = json.loads(_hicodet_text())
    text = json.dumps(doc).replace(json.dumps(doc["size"][0]), f"[{size}, {doc['size'][0][1]}]", 1)
    path = tmp_path / "instances.json"
    path.write_text(text)
    kind, got = agree(read_hicodet, _hicodet_arrays, path)
    if size == str(2**53 + 1):  # within 64 bits: read exactly (a double would round it to 2**53)
        assert kind == "ok" and int(got.widths[0]) == 2**53 + 1
    else:
        assert kind == "error" and "instances.json: record 0: size: expected an integer within 64 bits" in got, got


@pytest.mark.parametrize("fmt", ["hoibench", "qpic", "cdn"])
def test_huge_finite_boxes_leak_no_overflow_warning(tmp_path, hico_gt, fmt: str) -> None:
    text = _prediction_text(fmt, hico_gt, tmp_path)
    path = tmp_path / "p.json"
    at = _a_box_number(text)
    path.write_text(NUMBER.sub(lambda m: "1e308" if m.start() == at else m.group(), text))
    assert "1e308" in path.read_text()
    agree(lambda p: load_predictions(p, ground_truth=hico_gt), _prediction_arrays, path)


def _a_box_number(text: str) -> int:
    """Where the third number of the first box lies (an x2, so the box stays valid)."""
    at = re.search(r"""['"](?:boxes_h|boxes|bbox)['"]: ?(?:array\()?\[+""", text).end()
    return [m.start() for m in NUMBER.finditer(text, at)][2]


def test_minus_zero_is_plus_zero_as_the_careful_reader_reads_it(tmp_path, hico_gt) -> None:
    text = _prediction_text("hoibench", hico_gt, tmp_path)
    path = tmp_path / "p.json"
    path.write_text(re.sub(r'"boxes_h": ?\[\[[^,]+,', '"boxes_h": [[-0,', text, count=1))
    assert '[[-0,' in path.read_text()
    kind, got = agree(lambda p: load_predictions(p, ground_truth=hico_gt), _prediction_arrays, path)
    assert kind == "ok" and not np.signbit(got.predictions.boxes_h[0, 0])
    assert scan.parse_float(b"-0") == 0.0 and not np.signbit(scan.parse_float(b"-0"))
    assert np.signbit(scan.parse_float(b"-0.0")) and np.signbit(scan.parse_float(b"-0e0"))


@pytest.mark.parametrize("edit", [
    ("'predictions': ", "'predictions':\t"),  # a raw tab inside the JSON string
    ("'predictions': ", "'predictions':\n"),  # a raw newline
    ("'filename': 'HICO_", "'filename': '\"HICO_"),  # an unescaped double quote in a name
])
@pytest.mark.parametrize("fmt", ["cdn", "gen-vlkt"])
def test_raw_control_bytes_and_quotes_in_a_results_string_are_refused(tmp_path, hico_gt, fmt, edit) -> None:
    text = _prediction_text(fmt, hico_gt, tmp_path)
    path = tmp_path / "results.json"
    path.write_text(text.replace(*edit, 1))
    kind, line = _both(lambda p: load_predictions(p, ground_truth=hico_gt), path)
    assert kind == "error" and "results.json: not valid JSON" in line, line


@pytest.mark.parametrize("counts", [[2, -1, 1], [-1, 2], [3, -1], [2**62, 2**62, 0]])
def test_top_valid_refuses_counts_that_are_not_counts(counts: list[int]) -> None:
    rng = np.random.default_rng(0)
    scores = rng.random((2, 3))
    with pytest.raises(ValueError, match="pairs_per_image"):
        scan.top_valid(scores, np.zeros(2, np.int64), np.ones((1, 3), bool), np.array(counts, np.int64), None)
    cells, _, kept = scan.top_valid(scores, np.zeros(2, np.int64), np.ones((1, 3), bool), np.array([1, 1]), None)
    assert kept.tolist() == [3, 3] and len(cells) == 6  # proper counts still work
