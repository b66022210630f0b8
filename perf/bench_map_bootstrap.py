"""Time bootstrap CIs of HICO-DET mAP on the full test set (9,658 images, ~1M noisy detections).

    python perf/bench_map_bootstrap.py [--replicates 1000] [--naive 5] [--per-image 100]

Target: 1,000 replicates in well under a minute. Printed, all measured in this run:

* matching once (:func:`hoibench.evaluation.match_hico_detections`) and building the weighted
  engine (:class:`hoibench.analysis.WeightedHICOMap`);
* :func:`hoibench.analysis.hico_map_bootstrap` with ``--replicates`` resamples, per protocol;
* a paired comparison (:func:`hoibench.analysis.compare_hico_models`) of two prediction sets
  drawn from the same noise process with different seeds, and how the bias of the image
  bootstrap compares with mAP on random halves of the test set (drawn without replacement);
* the naive baseline on ``--naive`` of the same resamples: build the resampled test set and
  detections (drawn images duplicated and renamed) and re-run :func:`hoibench.evaluation.hico_mean_ap`;
  its time per replicate is extrapolated to ``--replicates`` and compared, and the largest
  difference between the naive and the weighted mAPs is printed (it must be ~1e-14).

Wall-clock and CPU seconds are printed: on a shared machine the wall time also measures the
neighbours.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _timing import Timer  # noqa: E402  (perf/_timing.py)

from hoibench._random import check_random_state  # noqa: E402
from hoibench.analysis import WeightedHICOMap, compare_hico_models, hico_map_bootstrap  # noqa: E402
from hoibench.datasets import load_dataset  # noqa: E402
from hoibench.evaluation import bootstrap_weights, hico_mean_ap, match_hico_detections  # noqa: E402
from hoibench.testing import noisy_predictions  # noqa: E402
from tests.test_map_bootstrap import physical_resample  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--naive", type=int, default=5, help="replicates re-evaluated the naive way")
    ap.add_argument("--per-image", type=int, default=100)
    ap.add_argument("--protocols", default="official,qpic")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    gt = load_dataset("hico-det:test")
    with Timer() as t:
        preds = noisy_predictions(gt, seed=0, per_image=(args.per_image, args.per_image + 30))
    print(f"ground truth: {gt.n_images:,} images, {gt.n_pairs:,} pairs; {len(preds):,} detections "
          f"generated in {t.wall:.1f} s")
    naive_w = bootstrap_weights(gt.n_images, args.naive, check_random_state(args.seed))
    for protocol in args.protocols.split(","):
        print(f"\n== protocol {protocol}")
        with Timer() as t_match:
            matches = match_hico_detections(preds, gt, protocol=protocol)
        print(f"match once                        {t_match}  ({len(matches.tp):,} ranked detections, "
              f"{int(matches.tp.sum()):,} TPs)")
        with Timer() as t_engine:
            engine = WeightedHICOMap(matches, gt)
        print(f"build weighted engine             {t_engine}")
        with Timer() as t_boot:
            res = hico_map_bootstrap(matches, gt, n_resamples=args.replicates, random_state=args.seed)
        per_fast = t_boot.wall / args.replicates
        print(f"bootstrap {args.replicates:5d} replicates        {t_boot}  ({per_fast * 1e3:.1f} ms per replicate)")
        for k, name in enumerate(res.metrics):
            lo, hi = res.ci(name)
            mean = float(np.nanmean(res.samples[:, k]))
            below = float(np.mean(res.samples[:, k] < res.estimate[k]))
            print(f"  {name:9s} {100 * res.estimate[k]:6.2f}  95% CI [{100 * lo:6.2f}, {100 * hi:6.2f}]  "
                  f"width {100 * (hi - lo):5.2f}  replicate mean {100 * mean:6.2f}  "
                  f"replicates below the mAP {below:.1%}")
        # naive: physically resample, re-evaluate
        worst = 0.0
        with Timer() as t_naive:
            for w in naive_w:
                g2, p2 = physical_resample(gt, preds, w.astype(np.int64))
                r = hico_mean_ap(p2, g2, protocol=protocol)
                got = engine.mean_ap(w[None])[0]
                worst = max(worst, 100 * float(np.max(np.abs(got - [r.full, r.rare, r.non_rare]))))
        per_naive = t_naive.wall / args.naive
        print(f"naive {args.naive} replicates (build + evaluate) {t_naive}  ({per_naive:.2f} s per replicate)")
        print(f"  extrapolated to {args.replicates}: {per_naive * args.replicates:8.0f} s; weighted bootstrap "
              f"is {per_naive / per_fast:,.0f}x faster per replicate; "
              f"max |naive - weighted| mAP = {worst:.1e} points")

        if protocol == "official":
            half_bias(engine, gt.n_images, args.seed)
    paired(gt, preds, args)


def half_bias(engine: WeightedHICOMap, n_images: int, seed: int) -> None:
    """Is the bootstrap's upward bias real? mAP on random halves (no duplicates) vs the full set."""
    ap_boot = engine.class_ap(bootstrap_weights(n_images, 1000, check_random_state(seed)))
    ap_one = engine.class_ap(np.ones((1, n_images)))[0]
    n_gt = engine.n_gt(np.ones((1, n_images)))[0]
    with np.errstate(invalid="ignore"):
        bias = np.nanmean(ap_boot, axis=0) - ap_one
    for lo, hi in ((1, 5), (5, 10), (10, 50), (50, None)):
        sel = (n_gt >= lo) & (n_gt < (hi or np.inf))
        if sel.any():
            print(f"  classes with {lo}-{hi - 1 if hi else 'more'} test pairs ({int(sel.sum())}): mean per-class "
                  f"bootstrap bias {np.nanmean(bias[sel]) * 100:+.2f} AP points")
    rng = np.random.default_rng(seed)
    full = engine.mean_ap(np.ones((1, n_images)))[0, 0]
    w = np.zeros((50, n_images))
    for row in w:
        row[rng.choice(n_images, n_images // 2, replace=False)] = 1.0
    ap = engine.class_ap(w)
    keep = ~np.isnan(ap).any(axis=0)  # classes with ground truth in every half
    ap_full = engine.class_ap(np.ones((1, n_images)))[0]
    print(f"  random halves of the test set (50, without replacement), over the {int(keep.sum())} classes "
          f"present in all: mean mAP {ap[:, keep].mean() * 100:.2f} vs {ap_full[keep].mean() * 100:.2f} on "
          f"all images (full-set Full mAP {full * 100:.2f})")


def paired(gt, preds, args) -> None:
    print("\n== paired comparison, official protocol: noise seed 0 vs seed 1 (the same process)")
    other = noisy_predictions(gt, seed=1, per_image=(args.per_image, args.per_image + 30))
    with Timer() as t:
        cmp = compare_hico_models({"seed0": preds, "seed1": other}, gt, n_resamples=args.replicates,
                                  random_state=args.seed)
    d = cmp.paired_difference("seed0", "seed1")
    one = hico_map_bootstrap(preds, gt, n_resamples=args.replicates, random_state=args.seed)
    print(f"match both + bootstrap {args.replicates} replicates {t}")
    pct = {k: 100 * d[k] for k in ("map_a", "map_b", "difference", "ci_low", "ci_high", "bias")}
    print(f"  Full mAP {pct['map_a']:.2f} vs {pct['map_b']:.2f}: difference {pct['difference']:+.2f}, 95% CI "
          f"[{pct['ci_low']:+.2f}, {pct['ci_high']:+.2f}] (width {pct['ci_high'] - pct['ci_low']:.2f}; a single "
          f"model's interval is {100 * (one.high[0] - one.low[0]):.2f} wide), P(seed0 > seed1) = "
          f"{d['p_a_better']:.2f}, bias of the difference {pct['bias']:+.3f}")


if __name__ == "__main__":
    main()
