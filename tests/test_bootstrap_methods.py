"""Bootstrap interval methods (issue 13, finding 8): BCa and studentized intervals, the flag for an
interval that excludes its own estimate, and a tiny run of the coverage simulation."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import click
import numpy as np
import pytest

from hoibench._exceptions import ConfigError
from hoibench.analysis import WeightedHICOMap
from hoibench.evaluation import (
    CI_METHODS,
    bootstrap_ci,
    bootstrap_interval,
    hico_mean_ap,
    interval_excludes_estimate,
    match_hico_detections,
)
from hoibench.testing import noisy_predictions
from tests.test_map_bootstrap import synthetic_ground_truth

X = np.random.default_rng(0).exponential(size=300)


def _mean(w: np.ndarray) -> np.ndarray:
    return w @ X / w.sum(axis=1)


@pytest.mark.parametrize("method", CI_METHODS)
def test_every_method_brackets_a_mean_with_about_the_normal_width(method: str) -> None:
    r = bootstrap_ci(_mean, len(X), n_resamples=600, random_state=1, method=method)
    se = X.std(ddof=1) / np.sqrt(len(X))
    assert r.low[0] < X.mean() < r.high[0]
    assert r.high[0] - r.low[0] == pytest.approx(2 * 1.96 * se, rel=0.3)
    again = bootstrap_ci(_mean, len(X), n_resamples=600, random_state=1, method=method)
    assert (again.low, again.high) == (r.low, r.high)  # seeded


def test_skewed_data_move_bca_and_studentized_to_the_long_tail() -> None:
    """The mean of exponential data has a right-skewed distribution: both corrected intervals
    reach further right of the estimate than left (percentile and basic are about symmetric)."""
    for method in ("bca", "studentized"):
        r = bootstrap_ci(_mean, len(X), n_resamples=2000, random_state=2, method=method)
        est = r.estimate[0]
        assert r.high[0] - est > est - r.low[0], method


def test_methods_that_reevaluate_the_statistic_need_bootstrap_ci() -> None:
    with pytest.raises(ConfigError, match="bootstrap_ci"):
        bootstrap_interval(np.zeros((10, 1)), 0.0, confidence=0.95, method="bca")
    with pytest.raises(ConfigError, match="CI method"):
        bootstrap_ci(_mean, len(X), method="jackknife")


def test_an_interval_that_excludes_its_estimate_is_flagged() -> None:
    assert interval_excludes_estimate(0.0236, 0.0165, 0.0231)  # analyze compare's 2.36 [1.65, 2.31]
    assert not interval_excludes_estimate(0.02, 0.01, 0.03)
    assert not interval_excludes_estimate(float("nan"), 0.01, 0.03)  # no interval, no flag


def _coverage_script():
    """scripts/bootstrap_coverage.py as a module (registered: it defines dataclasses)."""
    if "bootstrap_coverage" in sys.modules:
        return sys.modules["bootstrap_coverage"]
    path = Path(__file__).resolve().parents[1] / "scripts" / "bootstrap_coverage.py"
    spec = importlib.util.spec_from_file_location("bootstrap_coverage", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["bootstrap_coverage"] = mod
    spec.loader.exec_module(mod)
    return mod


def _mean_of(x: np.ndarray):
    """The mean of ``x`` as a statistic of resampling weights."""
    return lambda w: (w @ x / w.sum(axis=1))[:, None]


def _mean_simulation(mod, pop: np.ndarray, n: int, *, shift: float = 0.0):
    """A benchmark of ``n`` i.i.d. draws of ``pop``; its statistic is a mean, the truth pop's mean
    (plus ``shift``: a truth that is not the benchmark's estimand)."""
    return mod.Simulation("mean", len(pop), n, lambda d: (_mean_of(pop[d]), float(pop.mean()) + shift),
                          float(pop.mean()))


def test_coverage_simulation_runs_tiny() -> None:
    mod = _coverage_script()
    pop = np.random.default_rng(3).normal(size=400)
    out = mod.coverage(_mean_simulation(mod, pop, 100), reps=4, resamples=60, seed=0)
    assert out["population_value"] == pytest.approx(pop.mean())
    assert set(CI_METHODS) <= set(out)
    assert all(0.0 <= out[m]["coverage"] <= 1.0 and out[m]["mean_width"] > 0 for m in CI_METHODS)
    assert len(out["per_benchmark"]["truth"]) == 4 and len(out["per_benchmark"]["bca"]) == 4


def test_harness_covers_a_linear_statistic_at_the_nominal_level() -> None:
    """The check of the harness itself: for a mean (accuracy) the bootstrap is first-order exact,
    so if the simulated truth is the benchmark's estimand every method covers ~95%. A truth that
    is not the estimand (another population, a shifted value) would show up as under-coverage."""
    mod = _coverage_script()
    pop = (np.random.default_rng(4).random(20_000) < 0.3).astype(float)  # right/wrong answers
    out = mod.coverage(_mean_simulation(mod, pop, 200), reps=150, resamples=100, seed=1)
    for m in CI_METHODS:  # Monte-Carlo standard error of a 95% coverage over 150 benchmarks: 1.8%
        assert 0.88 <= out[m]["coverage"] <= 0.995, (m, out[m])
    shifted = mod.coverage(_mean_simulation(mod, pop, 200, shift=0.05), reps=60, resamples=100, seed=1,
                           methods=("percentile",))
    assert shifted["percentile"]["coverage"] < 0.8  # the harness can fail: a wrong truth is seen


def test_mcq_simulation_truth_is_the_estimand_of_its_benchmarks() -> None:
    """The MCQ simulation as the docs' numbers use it: exact match (a mean over questions) is
    covered at ~95% by every method, and macro-F1's truth is the population's per-class F1
    averaged over the classes a benchmark scores (the whole population: the population's own)."""
    mod = _coverage_script()
    em = mod.mcq_simulation("exact_match", copies=4, test_images=2000)
    out = mod.coverage(em, reps=120, resamples=150, seed=2, methods=("bca", "percentile", "basic"))
    for m in ("percentile", "basic", "bca"):  # Monte-Carlo standard error 2.0%
        assert 0.87 <= out[m]["coverage"] <= 1.0, (m, out[m])
    f1 = mod.mcq_simulation("macro_f1", copies=4, test_images=2000)
    statistic, truth = f1.benchmark(np.arange(f1.n_population))
    assert truth == pytest.approx(f1.population_value) == pytest.approx(statistic(np.ones((1, f1.n_population)))[0, 0])
    some = np.arange(0, f1.n_population, 7)
    assert f1.benchmark(some)[1] != pytest.approx(truth)  # fewer classes, another estimand


def test_map_simulation_scores_a_benchmark_as_the_evaluator_would() -> None:
    """The mAP simulation's shortcut (restricting the population's matches to the drawn images)
    gives what matching the drawn images from scratch gives; tiling keeps each copy's boxes."""
    mod = _coverage_script()
    gt = synthetic_ground_truth(n_images=40)
    pop = mod._tile(gt, 3)
    assert pop.n_images == 120 and np.array_equal(pop.pair_hoi[: gt.n_pairs], gt.pair_hoi)
    assert np.array_equal(pop.boxes[pop.pair_subject[-gt.n_pairs:]], gt.boxes[gt.pair_subject])
    preds = noisy_predictions(pop, seed=5, per_image=(6, 12))
    matches = match_hico_detections(preds, pop)
    keep = np.sort(np.random.default_rng(0).choice(pop.n_images, 50, replace=False))
    sub = pop.subset(keep)
    engine = WeightedHICOMap(mod._restrict_matches(matches, keep, sub), sub)
    names = set(sub.file_names)
    ref = hico_mean_ap(preds.select(np.array([preds.file_names[i] in names for i in preds.image_index])),
                       sub, lenient=True)
    np.testing.assert_allclose(engine.mean_ap(np.ones((1, sub.n_images)))[0], [ref.full, ref.rare, ref.non_rare],
                               rtol=0, atol=1e-12, equal_nan=True)


def test_mcq_intervals_stay_fractions_on_a_tiny_benchmark() -> None:
    """A studentized interval can reach past 0 or 1 on a few questions; the metrics are fractions
    (a result file with such an interval would not even be readable)."""
    from hoibench.data import Choice, MCAnswer, MCQuestion
    from hoibench.evaluation import mcq_metrics

    texts = ["ride horse", "feed horse", "hold cup"]
    rng = np.random.default_rng(0)
    qs = [MCQuestion(f"q{k}", f"{k}.jpg", 1, tuple(Choice(t, hoi=h) for h, t in enumerate(texts)),
                     frozenset({int(rng.integers(3))})) for k in range(8)]
    ans = [MCAnswer(q.id, frozenset({texts[int(rng.integers(3))]})) for q in qs]
    r = mcq_metrics(ans, qs, n_bootstrap=50, random_state=0)
    assert r.ci is not None and all(0.0 <= lo <= hi <= 1.0 for lo, hi in r.ci.values() if lo == lo)


def test_studentized_interval_of_a_constant_statistic_is_the_point() -> None:
    """Every replicate equal (an exact match of 0 everywhere): no standard error to divide by, so
    the interval is the replicates' own, not NaN (which a result file cannot hold)."""
    r = bootstrap_ci(lambda w: np.zeros((len(w), 1)), 30, n_resamples=50, random_state=0, method="studentized")
    assert (r.low[0], r.high[0]) == (0.0, 0.0)


def test_commands_default_to_the_measured_intervals() -> None:
    """One place decides each family's interval (docs/evaluation.md, "Which interval"): the mAP
    commands' --ci-method default and the MCQ metrics read it from there."""
    from hoibench.analysis import hico_map_bootstrap
    from hoibench.cli import cli
    from hoibench.evaluation import CI_METHOD_OF, MAP_CI_METHOD, MCQ_CI_METHOD

    ctx = click.Context(cli)
    for group, name in (("eval", "hico"), ("analyze", "compare")):
        sub = cli.get_command(ctx, group)
        cmd = sub.get_command(click.Context(sub), name)
        opt = next(p for p in cmd.params if p.name == "ci_method")
        assert opt.default == MAP_CI_METHOD == CI_METHOD_OF["map_difference"]
    assert inspect.signature(hico_map_bootstrap).parameters["method"].default == CI_METHOD_OF["map"]
    assert MAP_CI_METHOD in CI_METHODS and MCQ_CI_METHOD in CI_METHODS
