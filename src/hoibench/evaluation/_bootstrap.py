"""Bootstrap confidence intervals, vectorised through resampling *weights*.

A bootstrap resample of ``n`` items is represented by how often each item is drawn: a row of a
``(B, n)`` count matrix (multinomial with equal probabilities). A statistic written as a function
of such weights (sums become ``W @ x``, means ``W @ x / W.sum(1)``) is evaluated for all ``B``
resamples in a few matrix products instead of ``B`` Python loops. Every metric built from
per-item counts (F1 variants, precision, recall, accuracy, mAP-style ratios) fits this form.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from types import MappingProxyType

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench._random import check_random_state

__all__ = [
    "CI_METHODS",
    "CI_METHOD_OF",
    "MAP_CI_METHOD",
    "MCQ_CI_METHOD",
    "SE_METHOD",
    "BootstrapResult",
    "bootstrap_ci",
    "bootstrap_interval",
    "bootstrap_se",
    "bootstrap_weights",
    "interval_excludes_estimate",
    "reportable_interval",
]


def bootstrap_weights(n_items: int, n_resamples: int, random_state: int | np.random.Generator | None = None,
                      ) -> np.ndarray:
    """``(n_resamples, n_items)`` float64 draw counts of ``n_items`` items resampled with replacement."""
    if n_items <= 0:
        raise ConfigError(f"n_items must be positive; got {n_items}")
    if n_resamples <= 0:
        raise ConfigError(f"n_resamples must be positive; got {n_resamples}")
    rng = check_random_state(random_state)
    return rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_resamples).astype(np.float64)


#: interval methods. ``percentile`` and ``basic`` need only the replicates; ``bca`` (bias-corrected
#: and accelerated) and ``studentized`` (bootstrap-t) also re-evaluate the statistic on grouped
#: jackknife deletions (:data:`JACKKNIFE_GROUPS` groups of units). Their measured coverage is in
#: docs/protocols.md ("Bootstrap intervals: measured coverage"; scripts/bootstrap_coverage.py).
CI_METHODS = ("percentile", "basic", "normal", "bca", "studentized")
#: the methods computed from the replicates alone (:func:`bootstrap_interval`)
REPLICATE_METHODS = ("percentile", "basic", "normal")
#: printed instead of an interval where no method passed the coverage check: the bootstrap
#: standard error (``±x.xx (bootstrap SE)``), and recorded as the method in result files
SE_METHOD = "se"
#: what each statistic gets as its "95% CI": a method whose simulated coverage passed the check
#: of scripts/bootstrap_coverage.py (``passes``: short of the nominal level by at most two of its
#: Monte-Carlo standard errors; docs/evaluation.md, "Which interval"), or :data:`SE_METHOD` where
#: none did. Macro-F1 and one model's mAP are biased by several standard errors at the
#: benchmarks' sizes, which no bootstrap interval corrects (best coverage 5-85% and 0%); the
#: means over questions (92-96%) and the paired mAP difference (percentile 90.7% and 93.3%) pass.
CI_METHOD_OF: Mapping[str, str] = MappingProxyType({
    "macro_f1": SE_METHOD, "instance_f1": "percentile", "micro_f1": "percentile",
    "exact_match": "percentile", "avg_precision": "percentile", "avg_recall": "percentile",
    "map": SE_METHOD, "map_difference": "percentile",
})
#: the interval method of the multiple-choice bootstrap (metrics and ``mcq compare``'s differences)
MCQ_CI_METHOD = "percentile"
#: the interval of paired mAP differences (``analyze compare``); one model's mAP gets its SE
MAP_CI_METHOD = CI_METHOD_OF["map_difference"]
JACKKNIFE_GROUPS = 20


def bootstrap_se(samples: np.ndarray) -> np.ndarray:
    """Standard deviation of the replicates along axis 0 (NaN-aware; NaN with under two values):
    the bootstrap standard error, what is printed where no interval passed the coverage check."""
    x = np.asarray(samples, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanstd(x, axis=0, ddof=1)


def reportable_interval(estimate: float, low: float, high: float, method: str) -> tuple[str, float, float]:
    """``(method, low, high)`` when the interval may be printed as a confidence interval, else
    ``(SE_METHOD, nan, nan)``: a method that did not pass the coverage check (:data:`SE_METHOD`),
    a NaN end, or an interval that excludes its own estimate is no confidence interval. An
    interval off by rounding only (a constant statistic: every replicate within 1e-12) is
    stretched to hold the estimate exactly."""
    if method == SE_METHOD or low != low or high != high or \
            interval_excludes_estimate(estimate, low, high, rtol=1e-12):
        return SE_METHOD, float("nan"), float("nan")
    return method, float(min(low, estimate)), float(max(high, estimate))


def interval_excludes_estimate(estimate: float | None, low: float | None, high: float | None, *,
                               rtol: float = 0.0) -> bool:
    """True when a bootstrap interval does not contain its own point estimate (a sign that the
    statistic is strongly biased under resampling: such an interval must be flagged, not printed
    as an answer). A missing or NaN value is no interval: no flag. ``rtol``: a relative margin for
    values that went through a unit conversion (the reports' percent)."""
    if estimate is None or low is None or high is None:
        return False
    vals = (float(estimate), float(low), float(high))
    if not all(v == v for v in vals):
        return False
    tol = rtol * max(1.0, abs(vals[0]))
    return vals[0] < vals[1] - tol or vals[0] > vals[2] + tol


def _jackknife_values(statistic: Callable[[np.ndarray], np.ndarray], weights: np.ndarray,
                      n_groups: int, rng: np.random.Generator) -> np.ndarray:
    """``(m, G, k)`` values of the statistic on each weight row with one of ``G`` equal groups
    of its drawn units deleted (a unit drawn twice is two members; groups are random), in
    chunks that keep ``m·G·n`` floats bounded."""
    m, n = weights.shape
    rows_per_chunk = max(1, int(1_000_000 // max(n_groups * n, 1)))
    out = []
    for a in range(0, m, rows_per_chunk):
        block = []
        for w in weights[a:a + rows_per_chunk]:
            copies = np.repeat(np.arange(n), np.rint(w).astype(np.int64))
            removed = np.zeros((n_groups, n))
            np.add.at(removed, (rng.permutation(len(copies)) % n_groups, copies), 1.0)
            block.append(w[None, :] - removed)
        rows = np.concatenate(block, axis=0)
        out.append(np.asarray(statistic(rows), dtype=np.float64).reshape(len(block), n_groups, -1))
    return np.concatenate(out, axis=0)


def _jackknife_se(values: np.ndarray) -> np.ndarray:
    """``(m, k)`` grouped-jackknife standard errors from ``(m, G, k)`` deletion values."""
    g = values.shape[1]
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(values, axis=1, keepdims=True)
        return np.sqrt((g - 1) / g * np.nansum((values - mean) ** 2, axis=1))


def _column_quantiles(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``x[:, j]``'s ``q[j]`` quantile for each column (NaN-aware; NaN where ``q`` is NaN)."""
    out = np.full(x.shape[1], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for j in range(x.shape[1]):
            if q[j] == q[j] and np.isfinite(x[:, j]).any():
                out[j] = np.nanquantile(x[:, j], min(max(q[j], 0.0), 1.0))
    return out


def _bca(samples: np.ndarray, estimate: np.ndarray, jack: np.ndarray, confidence: float
         ) -> tuple[np.ndarray, np.ndarray]:
    """Efron's BCa interval: bias correction ``z0`` from the replicates, acceleration from the
    grouped jackknife values ``jack`` (``(G, k)``)."""
    nd = NormalDist()
    a_lo = (1.0 - confidence) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ok = np.isfinite(samples)
        below = np.where(ok, samples < estimate, False).sum(0) + 0.5 * np.where(ok, samples == estimate, False).sum(0)
        share = below / np.maximum(ok.sum(0), 1)
        d = np.nanmean(jack, axis=0) - jack
        accel = np.nansum(d ** 3, axis=0) / (6.0 * np.nansum(d ** 2, axis=0) ** 1.5)
    accel = np.where(np.isfinite(accel), accel, 0.0)
    qs = []
    for z_a in (nd.inv_cdf(a_lo), nd.inv_cdf(1.0 - a_lo)):
        q = np.full(len(estimate), np.nan)
        for j in range(len(estimate)):
            if 0.0 < share[j] < 1.0:
                z0 = nd.inv_cdf(float(share[j]))
                q[j] = nd.cdf(z0 + (z0 + z_a) / (1.0 - accel[j] * (z0 + z_a)))
            elif ok[:, j].any():  # every replicate on one side: the interval's end at that side
                q[j] = 0.0 if share[j] <= 0.0 else 1.0
        qs.append(q)
    return _column_quantiles(samples, qs[0]), _column_quantiles(samples, qs[1])


def bootstrap_interval(samples: np.ndarray, estimate: np.ndarray | float, *, confidence: float,
                       method: str = MAP_CI_METHOD) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of replicates ``samples`` (axis 0) around ``estimate`` (NaN-aware).

    mAP is biased upward under image resampling (the 11-point envelope is a maximum of noisy
    precisions; fewer distinct images give a higher mAP), so on HICO-DET the percentile interval
    can lie entirely above the observed value; ``basic`` reflects it about the estimate. Neither
    covers mAP on an unlimited test set (docs/protocols.md, "Bootstrap intervals: measured coverage").
    """
    if method not in CI_METHODS:
        raise ConfigError(f"CI method must be one of {list(CI_METHODS)}; got {method!r}")
    if method not in REPLICATE_METHODS:
        raise ConfigError(f"CI method {method!r} re-evaluates the statistic (bootstrap_ci(method="
                          f"{method!r})); from the replicates alone: {', '.join(REPLICATE_METHODS)}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1); got {confidence!r}")
    x = np.asarray(samples, dtype=np.float64)
    a = (1.0 - confidence) / 2.0
    if method == "normal":  # symmetric about the estimate: it contains it by construction
        est = np.asarray(estimate, dtype=np.float64)
        half = NormalDist().inv_cdf(1.0 - a) * bootstrap_se(x)
        return est - half, est + half
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN
        lo, hi = np.nanquantile(x, [a, 1.0 - a], axis=0)
    if method == "basic":
        est = np.asarray(estimate, dtype=np.float64)
        lo, hi = 2.0 * est - hi, 2.0 * est - lo
    return lo, hi


@dataclass(frozen=True, repr=False)
class BootstrapResult:
    """Point estimate and percentile interval of each statistic (arrays of shape ``(k,)``)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float
    n_resamples: int
    samples: np.ndarray  # (n_resamples, k)

    def __repr__(self) -> str:
        """Sizes, not the ``(n_resamples, k)`` replicates."""
        return (f"BootstrapResult(n_statistics={len(self.estimate)}, confidence={self.confidence}, "
                f"n_resamples={self.n_resamples})")


def bootstrap_ci(
    statistic: Callable[[np.ndarray], np.ndarray],
    n_items: int,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    batch_size: int = 250,
    method: str = "percentile",
) -> BootstrapResult:
    """Bootstrap interval of statistics computed from resampling weights.

    Parameters
    ----------
    statistic:
        Maps a ``(B, n_items)`` weight matrix to ``(B,)`` or ``(B, k)`` values. Called once with
        all-ones weights for the point estimate, then on batches of resamples.
    n_items:
        Number of resampled units (questions, images).
    random_state:
        Seed or Generator; the same seed gives the same interval.
    batch_size:
        Resamples evaluated per call (bounds memory: ``batch_size × n_items`` floats).
    method:
        ``"percentile"`` (replicate quantiles), ``"basic"`` (reflected about the estimate; see
        :func:`bootstrap_interval`), ``"bca"`` (bias-corrected and accelerated) or
        ``"studentized"`` (bootstrap-t with grouped-jackknife standard errors; evaluates the
        statistic :data:`JACKKNIFE_GROUPS` more times per resample). Which covers best is
        measured in docs/protocols.md.

    Examples
    --------
    >>> x = np.arange(10.0)
    >>> r = bootstrap_ci(lambda w: w @ x / w.sum(1), 10, n_resamples=200, random_state=0)
    >>> float(r.estimate[0])
    4.5
    """
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1); got {confidence!r}")
    if batch_size <= 0:
        raise ConfigError(f"batch_size must be positive; got {batch_size}")
    if method not in CI_METHODS:
        raise ConfigError(f"CI method must be one of {list(CI_METHODS)}; got {method!r}")
    rng = check_random_state(random_state)
    point = np.asarray(statistic(np.ones((1, n_items))), dtype=np.float64).reshape(1, -1)[0]
    n_groups = min(JACKKNIFE_GROUPS, n_items)
    chunks, t_chunks = [], []
    done = 0
    while done < n_resamples:
        b = min(batch_size, n_resamples - done)
        w = bootstrap_weights(n_items, b, rng)
        vals = np.asarray(statistic(w), dtype=np.float64).reshape(b, -1)
        chunks.append(vals)
        if method == "studentized":
            se_b = _jackknife_se(_jackknife_values(statistic, w, n_groups, rng))
            with np.errstate(invalid="ignore", divide="ignore"):
                t_chunks.append(np.where(se_b > 0, (vals - point) / se_b, np.nan))
        done += b
    samples = np.concatenate(chunks, axis=0)
    if method in REPLICATE_METHODS:
        low, high = bootstrap_interval(samples, point, confidence=confidence, method=method)
    else:
        jack = _jackknife_values(statistic, np.ones((1, n_items)), n_groups, rng)[0]  # (G, k)
        if method == "bca":
            low, high = _bca(samples, point, jack, confidence)
        else:
            se = _jackknife_se(jack[None])[0]
            t = np.concatenate(t_chunks, axis=0)
            a = (1.0 - confidence) / 2.0
            t_lo, t_hi = (_column_quantiles(t, np.full(len(point), q)) for q in (a, 1.0 - a))
            low, high = point - t_hi * se, point - t_lo * se
            # no spread to studentize (every replicate's standard error 0: a constant statistic,
            # such as an exact match of 0 everywhere): the replicates' own interval
            flat = ~np.isfinite(low) | ~np.isfinite(high)
            if flat.any():
                p_lo, p_hi = bootstrap_interval(samples, point, confidence=confidence, method="percentile")
                low, high = np.where(flat, p_lo, low), np.where(flat, p_hi, high)
    return BootstrapResult(point, low, high, confidence, n_resamples, samples)
