"""Bootstrap interval methods (issue 13, finding 8): BCa and studentized intervals, the flag for an
interval that excludes its own estimate, and a tiny run of the coverage simulation."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hoibench._exceptions import ConfigError
from hoibench.evaluation import (
    CI_METHODS,
    bootstrap_ci,
    bootstrap_interval,
    interval_excludes_estimate,
)

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
        bootstrap_ci(_mean, len(X), method="normal")


def test_an_interval_that_excludes_its_estimate_is_flagged() -> None:
    assert interval_excludes_estimate(0.0236, 0.0165, 0.0231)  # analyze compare's 2.36 [1.65, 2.31]
    assert not interval_excludes_estimate(0.02, 0.01, 0.03)
    assert not interval_excludes_estimate(float("nan"), 0.01, 0.03)  # no interval, no flag


def test_coverage_simulation_runs_tiny() -> None:
    path = Path(__file__).resolve().parents[1] / "scripts" / "bootstrap_coverage.py"
    spec = importlib.util.spec_from_file_location("bootstrap_coverage", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    pop = np.random.default_rng(3).normal(size=400)
    out = mod.coverage(lambda w: (w @ pop / w.sum(axis=1))[:, None], 400, 100, reps=4, resamples=60, seed=0)
    assert out["truth"]["value"] == pytest.approx(pop.mean())
    assert set(out) == {"truth", *CI_METHODS}
    assert all(0.0 <= out[m]["coverage"] <= 1.0 and out[m]["mean_width"] > 0 for m in CI_METHODS)


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
