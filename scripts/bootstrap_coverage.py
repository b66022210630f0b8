"""Measure how often the bootstrap intervals cover the number they claim to cover.

What an interval claims: it covers the metric of *this model on an unlimited test set drawn from
the same distribution*, over the classes the benchmark scores. A simulation can only check that
claim if its truth is exactly that number, so a simulated world here is

* a **population** ``F``: the real test set tiled ``--copies`` times, each copy scored by a fresh
  draw of a planted model (so the copies are distinct units: same ground truth, other
  answers / detections), ``copies x`` larger than a benchmark;
* a **benchmark**: as many units as the real one (1,056 questions; 9,658 images), drawn i.i.d.
  from ``F`` (with replacement, so it is an exact i.i.d. sample of ``F``: no finite-population
  correction; with ``copies`` ≥ 10 only ~1/(2·copies) of its units repeat another);
* the **truth**: the metric under ``F`` itself, which is the metric of the population with unit
  weights (an unlimited i.i.d. test set from ``F`` converges to it), averaged over the classes
  the benchmark scores: for macro-F1 the classes present in the benchmark (those it averages
  over); for mAP every class of the test set, because a benchmark is redrawn until it holds every
  class the real test set holds (the real one does by construction; a missing class would score
  AP 0 under the official protocol, a different estimand).

Each benchmark is then bootstrapped exactly as a user's would be, and each method of
:data:`hoibench.evaluation.CI_METHODS` either contains the truth or not.

* ``macro_f1`` / ``exact_match`` (MCQ): the setting-1 questions built from the bundled HICO-DET
  test set; the planted answerer picks the train prior's top 2 on ``--prior-share`` of the
  questions and a random subset on the rest (a fresh draw per copy). ``exact_match`` is a mean
  over questions (a linear statistic): every method must cover it at ~95%, the check of the
  harness itself.
* ``map`` (HICO-DET Full mAP, official protocol): the bundled test set with the synthetic noisy
  detector of ``tests/hico_synth.py`` (``--per-image`` detections per image, fresh noise per copy);
  ``map_difference``: mAP of that detector minus a noisier one's (``--versus``) on the same
  images, as ``analyze compare`` bootstraps it.

The numbers in docs/evaluation.md ("Which interval: measured coverage") come from the commands
listed there. Not part of the test suite (a run takes minutes); tests/test_bootstrap_methods.py
runs it tiny.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hoibench.evaluation import CI_METHODS, bootstrap_ci, bootstrap_interval
from hoibench.evaluation._bootstrap import REPLICATE_METHODS

ROOT = Path(__file__).resolve().parents[1]

#: a benchmark's statistic (a function of ``(B, n_benchmark)`` resampling weights, first column
#: used) and its truth, or ``None`` when the draw is rejected
Benchmark = tuple[Callable[[np.ndarray], np.ndarray], float] | None


@dataclass(frozen=True)
class Simulation:
    """A population of ``n_population`` units and how a drawn benchmark is scored."""

    name: str
    n_population: int
    n_benchmark: int
    benchmark: Callable[[np.ndarray], Benchmark]  # drawn population rows -> statistic, truth
    population_value: float


def passes(result: dict[str, object], method: str, confidence: float = 0.95) -> bool:
    """The coverage check an interval must pass to be printed as a confidence interval: its
    measured coverage at the nominal level or short of it by at most two of its Monte-Carlo
    standard errors (the "± x" of docs/evaluation.md's table); ``CI_METHOD_OF`` in
    hoibench.evaluation records the outcome."""
    reps = int(result["reps"])  # type: ignore[call-overload]
    got = float(result[method]["coverage"])  # type: ignore[index]
    return got >= confidence or confidence - got <= 2.0 * float(np.sqrt(got * (1.0 - got) / reps))


def coverage(sim: Simulation, *, reps: int, resamples: int, seed: int, confidence: float = 0.95,
             methods: tuple[str, ...] = CI_METHODS, max_rejections: int = 10_000,
             progress: bool = False) -> dict[str, object]:
    """Coverage (with its Monte-Carlo standard error), mean width and share of intervals
    excluding their estimate per method, over ``reps`` benchmarks drawn from ``sim``."""
    rng = np.random.default_rng(seed)
    hits: dict[str, list[bool]] = {m: [] for m in methods}
    widths: dict[str, list[float]] = {m: [] for m in methods}
    excl: dict[str, list[bool]] = {m: [] for m in methods}
    lows: dict[str, list[float]] = {m: [] for m in methods}
    errors, truths, estimates, rejected = [], [], [], 0
    t0 = time.perf_counter()
    while len(errors) < reps:
        drawn = rng.integers(0, sim.n_population, size=sim.n_benchmark)
        got = sim.benchmark(drawn)
        if got is None:
            rejected += 1
            if rejected > max_rejections:
                raise RuntimeError(f"{sim.name}: {rejected} draws rejected (a class is rarely held)")
            continue
        statistic, truth = got
        seed_r = int(rng.integers(2**31))
        est, shared = float("nan"), None
        for m in methods:
            if m in REPLICATE_METHODS and shared is not None:
                # the same resamples (same seed, drawn before any jackknife): only the interval differs
                low, high = bootstrap_interval(shared.samples, shared.estimate, confidence=confidence, method=m)
                lo, hi = float(low[0]), float(high[0])
            else:
                r = bootstrap_ci(statistic, sim.n_benchmark, n_resamples=resamples, confidence=confidence,
                                 random_state=seed_r, method=m)
                lo, hi, est = float(r.low[0]), float(r.high[0]), float(r.estimate[0])
                shared = r if m != "studentized" else shared
            hits[m].append(lo <= truth <= hi)
            lows[m].append(lo)
            widths[m].append(hi - lo)
            excl[m].append(not lo <= est <= hi)
        errors.append(est - truth)
        truths.append(truth)
        estimates.append(est)
        if progress:
            print(f"{sim.name}: {len(errors)}/{reps} benchmarks, {time.perf_counter() - t0:.0f} s, coverage so far "
                  + ", ".join(f"{m} {np.mean(hits[m]):.3f}" for m in methods), file=sys.stderr, flush=True)
    err = np.asarray(errors)
    out: dict[str, object] = {
        "population_value": sim.population_value, "n_population": sim.n_population,
        "n_benchmark": sim.n_benchmark, "reps": reps, "resamples": resamples,
        "rejected_draws": rejected,
        # how far a benchmark's estimate is from its truth: bias against spread
        "estimate_minus_truth": {"mean": float(err.mean()), "sd": float(err.std(ddof=1)) if reps > 1 else 0.0},
    }
    for m in methods:
        p = float(np.mean(hits[m]))
        out[m] = {"coverage": p, "mc_se": float(np.sqrt(p * (1 - p) / reps)),
                  "mean_width": float(np.mean(widths[m])), "excludes_estimate": float(np.mean(excl[m]))}
        out[m]["passes"] = passes(out, m, confidence)
    # per benchmark, so that coverage of another target can be computed afterwards
    out["per_benchmark"] = {"truth": truths, "estimate": estimates,
                            **{m: [[lo, lo + wd] for lo, wd in zip(lows[m], widths[m])] for m in methods}}
    return out


# ----------------------------------------------------------------------------- MCQ
@functools.lru_cache(maxsize=2)
def _mcq_population(copies: int, seed: int, prior_share: float, test_images: int | None):
    """Metric arrays of ``copies`` tiles of the setting-1 questions (of the first
    ``test_images`` test images; ``None``: all), each answered afresh."""
    from hoibench.benchmarks.mcq import build_mcq_benchmark
    from hoibench.datasets import load_dataset
    from hoibench.evaluation._mcq_metrics import MCQMetrics
    from hoibench.runners import PriorAnswerer, RandomAnswerer

    train, test = load_dataset("hico-det:train"), load_dataset("hico-det:test")
    if test_images is not None:
        test = test.subset(np.arange(min(test_images, test.n_images)))
    questions = build_mcq_benchmark(test, random_state=0, settings=(1,)).questions
    if len({q.file_name for q in questions}) != len(questions):  # else MCQ bootstraps images
        raise RuntimeError("setting-1 questions share images; the simulation resamples questions")
    rng = np.random.default_rng(seed)
    m = MCQMetrics()
    for c in range(copies):
        qs = [replace(q, id=f"{q.id}#{c}") for q in questions]
        prior = PriorAnswerer(k=2, seed=c).fit(train).answer(qs)
        rand = RandomAnswerer(random_state=seed * 100_003 + c).answer(qs)
        use_prior = rng.random(len(qs)) < prior_share
        m.update([p if u else r for p, r, u in zip(prior, rand, use_prior)], qs)
    return m._arrays(), len(questions)  # the weights form of the metrics (what MCQMetrics bootstraps)


def mcq_simulation(column: str = "macro_f1", *, copies: int = 20, seed: int = 0, prior_share: float = 0.7,
                   n_benchmark: int | None = None, test_images: int | None = None) -> Simulation:
    """Macro-F1 (truth over the benchmark's classes) or exact match (a mean) of the MCQ population."""
    from hoibench.evaluation._mcq_metrics import MCQ_METRIC_NAMES

    arr, n_real = _mcq_population(copies, seed, prior_share, test_images)
    k = MCQ_METRIC_NAMES.index(column)
    n_pop = len(arr.tp)
    pop = arr.metrics(np.ones((1, n_pop)))[0]
    rows = {f: getattr(arr, f) for f in ("tp", "pred", "gt", "f1", "prec", "rec", "exact", "image_share")}
    mats = {f: sp.csr_matrix(getattr(arr, f)) for f in ("m_tp", "m_pred", "m_gt")}
    c_tp = np.asarray(mats["m_tp"].sum(axis=0)).ravel()
    c_den = np.asarray(mats["m_pred"].sum(axis=0)).ravel() + np.asarray(mats["m_gt"].sum(axis=0)).ravel()
    class_f1 = np.divide(2 * c_tp, c_den, out=np.zeros_like(c_tp), where=c_den > 0)  # under F

    def benchmark(drawn: np.ndarray) -> Benchmark:
        sub = replace(arr, **{f: v[drawn] for f, v in rows.items()},
                      **{f: v[drawn].tocsc() for f, v in mats.items()})
        if column == "macro_f1":
            present = np.asarray((mats["m_pred"][drawn] + mats["m_gt"][drawn]).sum(axis=0)).ravel() > 0
            truth = float(class_f1[present].mean())
        else:
            truth = float(pop[k])
        return (lambda w: sub.metrics(w)[:, k:k + 1]), truth

    return Simulation(column, n_pop, n_benchmark or n_real, benchmark, float(pop[k]))


# ----------------------------------------------------------------------------- mAP
def _restrict_matches(matches, keep_images: np.ndarray, target):
    """The matches of some images only, re-indexed: what matching those images alone gives,
    because a detection's TP/FP status depends only on its own image (docs/evaluation.md)."""
    from hoibench.evaluation import HICOMatches

    n_cls = matches.n_classes
    pos = np.full(int(matches.image_index.max(initial=-1)) + 1 if len(matches.image_index) else 0, -1)
    pos[keep_images[keep_images < len(pos)]] = np.flatnonzero(keep_images < len(pos))
    new_img = pos[matches.image_index]
    keep = new_img >= 0
    cls_of = np.repeat(np.arange(n_cls), np.diff(matches.class_offsets))
    offsets = np.r_[0, np.cumsum(np.bincount(cls_of[keep], minlength=n_cls))].astype(matches.class_offsets.dtype)
    valid = target.pair_hoi >= 0
    n_gt = np.bincount(target.pair_hoi[valid], minlength=n_cls).astype(matches.n_gt.dtype)
    return HICOMatches(matches.protocol, offsets, matches.scores[keep], matches.tp[keep],
                       matches.det_index[keep], new_img[keep], matches.gt_pair[keep], n_gt,
                       class_names=matches.class_names)


def _tile(ds, copies: int):
    """``copies`` renamed copies of a dataset, one after the other (``subset`` with repeated rows
    would point every copy's pairs at the last copy's boxes)."""
    from hoibench.data import HOIDataset

    fields = ("widths", "heights", "image_ids", "box_offsets", "boxes", "box_labels", "pair_offsets",
              "pair_subject", "pair_object", "pair_verb")
    return HOIDataset.concat([HOIDataset(vocab=ds.vocab, name=ds.name, **{f: getattr(ds, f) for f in fields},
                                         file_names=[f"{f}#copy{c}" for f in ds.file_names])
                              for c in range(copies)])


def map_simulation(*, copies: int = 10, seed: int = 0, per_image: tuple[int, int] = (12, 20),
                   n_benchmark: int | None = None, versus: tuple[int, int] | None = None) -> Simulation:
    """Full mAP (official protocol) of the tiled test set with a noisy planted detector; with
    ``versus`` (detections per image of a second, noisier detector) the paired difference
    mAP(first) - mAP(second) on the same benchmark images, as ``analyze compare`` reports it."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from hoibench.analysis._map_bootstrap import WeightedHICOMap
    from hoibench.datasets import load_dataset
    from hoibench.evaluation import match_hico_detections
    from hoibench.testing import noisy_predictions

    test = load_dataset("hico-det:test")
    pop = _tile(test, copies)
    models = [(seed, per_image)] + ([(seed + 1000, versus)] if versus else [])
    matches = [match_hico_detections(noisy_predictions(pop, seed=s, per_image=k), pop) for s, k in models]
    ones = np.ones((1, pop.n_images))
    values = [float(WeightedHICOMap(m, pop).mean_ap(ones)[0, 0]) for m in matches]
    truth = values[0] - values[1] if versus else values[0]
    valid = pop.pair_hoi >= 0
    pair_img, pair_cls = pop.pair_image[valid], pop.pair_hoi[valid]
    needed = np.unique(pair_cls)

    def benchmark(drawn: np.ndarray) -> Benchmark:
        distinct, inv = np.unique(drawn, return_inverse=True)
        held = np.zeros(pop.n_images, bool)
        held[distinct] = True
        if len(np.unique(pair_cls[held[pair_img]])) < len(needed):
            return None  # a class of the test set is missing: redraw
        sub = pop.subset(distinct)
        engines = [WeightedHICOMap(_restrict_matches(m, distinct, sub), sub) for m in matches]
        to_distinct = sp.csr_matrix((np.ones(len(drawn)), (np.arange(len(drawn)), inv)),
                                    shape=(len(drawn), len(distinct)))

        def statistic(w: np.ndarray) -> np.ndarray:
            wd = np.asarray(w @ to_distinct)
            full = [e.mean_ap(wd)[:, :1] for e in engines]
            return full[0] - full[1] if versus else full[0]

        return statistic, truth

    return Simulation("map_difference" if versus else "map", pop.n_images, n_benchmark or test.n_images,
                      benchmark, truth)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["macro_f1", "instance_f1", "micro_f1", "exact_match", "avg_precision",
                                       "avg_recall", "map", "map_difference"], required=True)
    ap.add_argument("--reps", type=int, default=200, help="simulated benchmarks")
    ap.add_argument("--resamples", type=int, default=400, help="bootstrap resamples per benchmark")
    ap.add_argument("--copies", type=int, default=None, help="population = copies x the test set "
                    "(default 20 for MCQ, 10 for mAP)")
    ap.add_argument("--n-benchmark", type=int, default=None, help="units per benchmark (default: the real size)")
    ap.add_argument("--per-image", type=int, nargs=2, default=(12, 20), help="mAP: detections per image")
    ap.add_argument("--versus", type=int, nargs=2, default=(20, 40),
                    help="map_difference: detections per image of the second (noisier) detector")
    ap.add_argument("--prior-share", type=float, default=0.7,
                    help="MCQ: share of questions the planted answerer answers with the train prior's top 2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="bca,percentile,basic,studentized",
                    help="comma-separated interval methods (percentile and basic reuse an earlier "
                         "method's resamples)")
    ap.add_argument("--progress", action="store_true", help="one line per benchmark on stderr")
    ap.add_argument("--out", default=None, help="write the result as JSON here")
    args = ap.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    if args.only in ("map", "map_difference"):
        sim = map_simulation(copies=args.copies or 10, seed=args.seed, per_image=tuple(args.per_image),
                             n_benchmark=args.n_benchmark,
                             versus=tuple(args.versus) if args.only == "map_difference" else None)
    else:
        sim = mcq_simulation(args.only, copies=args.copies or 20, seed=args.seed, n_benchmark=args.n_benchmark,
                             prior_share=args.prior_share)
    setup = time.perf_counter() - t0
    out = {args.only: {**coverage(sim, reps=args.reps, resamples=args.resamples, seed=args.seed,
                                  methods=tuple(args.methods.split(",")), progress=args.progress),
                       "setup_seconds": round(setup, 1),
                       "seconds": round(time.perf_counter() - t0, 1),
                       "cpu_seconds": round(time.process_time() - c0, 1)}}
    print(json.dumps({k: {f: v for f, v in r.items() if f != "per_benchmark"} for k, r in out.items()},
                     indent=1), flush=True)
    if args.out:
        from hoibench._io import atomic_write_json

        atomic_write_json(args.out, out, indent=True)


if __name__ == "__main__":
    main()
