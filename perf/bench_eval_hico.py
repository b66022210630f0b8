"""Time HICO-DET mAP on the full test set (9,658 images) with 100 noisy detections per image.

    python perf/bench_eval_hico.py [--per-image 100] [--skip-loop]

Targets: the evaluation proper under 2 s (at least 30x faster than QPIC's 63 s) and
loading a ~1M-detection prediction file in under 2 s. Printed, all measured in this run:

* reading the generic prediction JSON with :func:`hoibench.formats.read_predictions`, next to
  a baseline (``json.load`` + per-detection Python conversion, the way the reference scripts
  read their inputs);
* :func:`hoibench.evaluation.hico_mean_ap` for each protocol (official, qpic, pocket), next to
  the plain per-class, per-detection loop evaluator (``_hico_loop``) on the same data, with
  the largest per-class AP difference between the two (it must be 0).

Both wall-clock and CPU seconds are printed: on a shared machine the wall time also measures
the neighbours.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _timing import Timer  # noqa: E402  (perf/_timing.py)

from hoibench.datasets import load_dataset  # noqa: E402
from hoibench.evaluation import hico_mean_ap  # noqa: E402
from hoibench.formats import read_dataset, read_predictions, write_predictions  # noqa: E402
from hoibench.testing import hico_average_precision_loop, noisy_predictions  # noqa: E402


def baseline_read(path: Path) -> int:
    """json.load and a Python loop over every detection (what the reference scripts do)."""
    with open(path) as fh:
        data = json.load(fh)
    n = 0
    rows = []
    for im in data["images"]:
        for bh, bo, o, v, s in zip(im["boxes_h"], im["boxes_o"], im["object"], im["verb"], im["scores"]):
            rows.append((im["file_name"], [x - 1 for x in bh], [x - 1 for x in bo], int(o), int(v), float(s)))
            n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-image", type=int, default=100)
    ap.add_argument("--skip-loop", action="store_true", help="skip the slow loop baseline")
    args = ap.parse_args()

    shared = ROOT.parent / "shared" / "data" / "hico-det" / "instances_test2015.json"
    gt = read_dataset(shared) if shared.exists() else load_dataset("hico-det:test")
    with Timer() as t:
        preds = noisy_predictions(gt, seed=0, per_image=(args.per_image, args.per_image))
    print(f"ground truth: {gt.n_images:,} images, {gt.n_pairs:,} pairs; "
          f"{len(preds):,} noisy detections generated in {t}")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "preds.json"
        write_predictions(preds, path, format="generic")
        size = path.stat().st_size / 1e6
        with Timer() as t_fast:
            back = read_predictions(path)
        with Timer() as t_base:
            baseline_read(path)
    assert len(back) == len(preds)
    print(f"\nload {size:.0f} MB generic JSON ({len(back):,} detections)")
    print(f"  read_predictions        {t_fast}")
    print(f"  json.load + loop        {t_base}   ratio {t_base.wall / t_fast.wall:5.1f}x wall, "
          f"{t_base.cpu / t_fast.cpu:5.1f}x cpu")

    print("\nevaluation (full test set)")
    for proto in ("official", "qpic", "pocket"):
        hico_mean_ap(back, gt, protocol=proto)  # warm caches (label lookups)
        with Timer() as t_vec:
            res = hico_mean_ap(back, gt, protocol=proto)
        line = (f"  {proto:8s} Full {100 * res.full:6.2f} Rare {100 * res.rare:6.2f} "
                f"Non-rare {100 * res.non_rare:6.2f}  "
                f"hico_mean_ap {t_vec}")
        if not args.skip_loop:
            with Timer() as t_loop:
                slow = hico_average_precision_loop(back, gt, protocol=proto)
            both = ~np.isnan(slow)
            diff = float(np.max(np.abs(slow[both] - res.per_class_ap[both])))
            line += (f" | loop {t_loop} | speed-up {t_loop.wall / t_vec.wall:5.1f}x wall "
                     f"{t_loop.cpu / t_vec.cpu:5.1f}x cpu | max |dAP| {diff:.1e}")
        print(line)


if __name__ == "__main__":
    main()
