"""Measure the coverage of the bootstrap intervals (issue 13, "Honest statistics").

A simulated benchmark draws ``n`` units (questions, images) with replacement from a real test set
scored with a planted model, so the true value is known: the metric on the whole test set. Each
simulated benchmark is bootstrapped like a user's would be and every interval method of
:data:`hoibench.evaluation.CI_METHODS` is checked for whether it contains the true value.

* macro-F1 (MCQ): the multiple-choice questions built from the bundled HICO-DET test set, answered
  by the prior-top-2 baseline (trained on the train set), ``--n-questions`` per benchmark;
* mAP (HICO-DET): the bundled test set with the object-prior detector (top 5 verbs per box,
  trained on train), ``--n-images`` per benchmark.

Both use the weights form of the metrics: a simulated benchmark is a count vector over the test
set and its bootstrap resamples are count vectors over the units it drew. The numbers in
docs/evaluation.md ("Which interval") come from::

    python scripts/bootstrap_coverage.py --reps 200 --resamples 500

Not part of the test suite (a run takes minutes); tests/test_bootstrap_methods.py runs it tiny.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

from hoibench.evaluation import CI_METHODS, bootstrap_ci


def coverage(statistic: Callable[[np.ndarray], np.ndarray], n_population: int, n_draw: int, *,
             reps: int, resamples: int, seed: int, confidence: float = 0.95,
             methods: tuple[str, ...] = CI_METHODS) -> dict[str, dict[str, float]]:
    """Coverage, mean width and share of intervals excluding their estimate, per method, of the
    first column of ``statistic`` (a function of ``(B, n_population)`` weights)."""
    rng = np.random.default_rng(seed)
    truth = float(statistic(np.ones((1, n_population)))[0, 0])
    hits: dict[str, list[bool]] = {m: [] for m in methods}
    widths: dict[str, list[float]] = {m: [] for m in methods}
    excl: dict[str, list[bool]] = {m: [] for m in methods}
    for _ in range(reps):
        drawn = rng.integers(0, n_population, size=n_draw)

        def on_draw(w: np.ndarray, drawn: np.ndarray = drawn) -> np.ndarray:
            """The statistic of the simulated benchmark: weights over its drawn units."""
            b = len(w)
            cells = (np.arange(b)[:, None] * n_population + drawn[None, :]).ravel()
            full = np.bincount(cells, weights=w.ravel(), minlength=b * n_population)
            return statistic(full.reshape(b, n_population))

        seed_r = int(rng.integers(2**31))
        for m in methods:
            r = bootstrap_ci(on_draw, n_draw, n_resamples=resamples, confidence=confidence,
                             random_state=seed_r, method=m)
            lo, hi, est = float(r.low[0]), float(r.high[0]), float(r.estimate[0])
            hits[m].append(lo <= truth <= hi)
            widths[m].append(hi - lo)
            excl[m].append(not lo <= est <= hi)
    return {"truth": {"value": truth}, **{m: {"coverage": float(np.mean(hits[m])),
                                               "mean_width": float(np.mean(widths[m])),
                                               "excludes_estimate": float(np.mean(excl[m]))}
                                           for m in methods}}


def macro_f1_statistic() -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    from hoibench.benchmarks.mcq import build_mcq_benchmark
    from hoibench.datasets import load_dataset
    from hoibench.evaluation._mcq_metrics import MCQMetrics
    from hoibench.runners import PriorAnswerer

    train, test = load_dataset("hico-det:train"), load_dataset("hico-det:test")
    questions = [q for q in build_mcq_benchmark(test, random_state=0, settings=(1,)).questions]
    answers = PriorAnswerer(k=2).fit(train).answer(questions)
    m = MCQMetrics()
    m.update(answers, questions)
    arrays = m._arrays()  # the weights form of the metrics (what MCQMetrics bootstraps)
    return arrays.metrics, len(questions)


def map_statistic() -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    from hoibench.analysis._map_bootstrap import WeightedHICOMap
    from hoibench.datasets import load_dataset
    from hoibench.evaluation import match_hico_detections
    from hoibench.runners import ObjectPriorDetector

    train, test = load_dataset("hico-det:train"), load_dataset("hico-det:test")
    preds = ObjectPriorDetector(top_k=5).fit(train).predict(test)
    engine = WeightedHICOMap(match_hico_detections(preds, test), test)
    return engine.mean_ap, test.n_images


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200, help="simulated benchmarks per metric")
    ap.add_argument("--resamples", type=int, default=500, help="bootstrap resamples per benchmark")
    ap.add_argument("--n-questions", type=int, default=500)
    ap.add_argument("--n-images", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=["macro_f1", "map"], default=None)
    ap.add_argument("--methods", default=",".join(CI_METHODS), help="comma-separated interval methods")
    ap.add_argument("--out", default=None, help="write the table as JSON here")
    args = ap.parse_args()
    out = {}
    for name, make, n in (("macro_f1", macro_f1_statistic, args.n_questions),
                          ("map", map_statistic, args.n_images)):
        if args.only not in (None, name):
            continue
        stat, n_pop = make()
        t0 = time.perf_counter()
        out[name] = {"n_population": n_pop, "n_draw": n, "reps": args.reps, "resamples": args.resamples,
                     **coverage(stat, n_pop, n, reps=args.reps, resamples=args.resamples, seed=args.seed,
                                 methods=tuple(args.methods.split(","))),
                     "seconds": round(time.perf_counter() - t0, 1)}
        print(json.dumps({name: out[name]}, indent=1), flush=True)
    if args.out:
        from hoibench._io import atomic_write_json

        atomic_write_json(args.out, out, indent=True)


if __name__ == "__main__":
    main()
