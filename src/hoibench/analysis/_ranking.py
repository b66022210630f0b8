"""Ranking shifts between two benchmarks (B-RIGHT Table 3) and how stable a ranking is.

:func:`ranking_shift` ranks models by mAP on a reference and another benchmark and reports the
shift, printed like the paper (``4 (↓ 3)``). Beyond the paper, :func:`rank_stability` bootstraps
the classes of a benchmark (the same resample for every model) to say how often each model keeps
its rank, and :func:`kendall_tau` measures the agreement of two rankings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench._random import check_random_state
from hoibench.evaluation import bootstrap_weights

__all__ = [
    "RankShift",
    "RankStability",
    "competition_ranks",
    "kendall_tau",
    "rank_stability",
    "ranking_shift",
]


def competition_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Ranks with 1 = highest; ties share the better rank ("1224" ranking)."""
    v = np.asarray(values, dtype=np.float64)
    if np.isnan(v).any():
        raise ValidationError("cannot rank NaN scores")
    return (v[None, :] > v[:, None]).sum(axis=1) + 1


@dataclass(frozen=True)
class RankShift:
    """One model's mAP (fraction) and rank on two benchmarks; ``shift > 0`` means it ranks higher
    on ``other``.

    ``tied_reference`` / ``tied_other``: how many models share the score (1: none tied). A rank
    change that a tie alone explains (the ranks the tie spans on one benchmark include the rank on
    the other) is no change: :attr:`shift` is 0 and :attr:`arrow` is ``=``.
    """

    model: str
    map_reference: float
    rank_reference: int
    map_other: float
    rank_other: int
    tied_reference: int = 1
    tied_other: int = 1

    @property
    def tie_only(self) -> bool:
        """The ranks differ only because of a tie (competition ranks give ties the better rank)."""
        if self.rank_reference == self.rank_other:
            return False
        lo = max(self.rank_reference, self.rank_other)
        hi = min(self.rank_reference + self.tied_reference - 1, self.rank_other + self.tied_other - 1)
        return lo <= hi

    @property
    def shift(self) -> int:
        return 0 if self.tie_only else self.rank_reference - self.rank_other

    @property
    def arrow(self) -> str:
        """``↑ 2``, ``↓ 3`` or ``–`` as in Table 3; ``=`` for a change a tie alone explains."""
        if self.tie_only:
            return "="
        return f"↑ {self.shift}" if self.shift > 0 else (f"↓ {-self.shift}" if self.shift < 0 else "–")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shift": self.shift, "tie_only": self.tie_only}


def ranking_shift(reference: Mapping[str, float], other: Mapping[str, float]) -> list[RankShift]:
    """Rank the models present in both mappings (model -> mAP, a fraction) on each; rows in
    reference-rank order."""
    models = [m for m in reference if m in other]
    missing = sorted(set(reference) ^ set(other))
    if len(models) < 2:
        raise ValidationError(f"ranking shifts need at least two models scored on both benchmarks; "
                              f"common: {models}, only on one: {missing}")
    a = np.array([float(reference[m]) for m in models])
    b = np.array([float(other[m]) for m in models])
    ra, rb = competition_ranks(a), competition_ranks(b)
    rows = [RankShift(m, float(a[i]), int(ra[i]), float(b[i]), int(rb[i]), int((a == a[i]).sum()),
                      int((b == b[i]).sum())) for i, m in enumerate(models)]
    return sorted(rows, key=lambda r: (r.rank_reference, r.model))


def kendall_tau(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b between two score lists over the same models (1: same order)."""
    from scipy.stats import kendalltau

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) != len(b) or len(a) < 2:
        raise ValidationError(f"kendall_tau needs two equally long lists of >= 2 scores; got {len(a)}, {len(b)}")
    return float(kendalltau(a, b).statistic)


@dataclass(frozen=True)
class RankStability:
    """How a model's rank varies when the benchmark's classes are resampled (``map``: fraction)."""

    model: str
    benchmark: str
    map: float
    rank: int
    mean_rank: float
    rank_low: int
    rank_high: int
    p_same_rank: float  # share of replicates with the observed rank
    p_first: float  # share of replicates ranked first

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rank_stability(
    per_class_ap: Mapping[str, np.ndarray],
    *,
    benchmark: str = "",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator = 0,
) -> list[RankStability]:
    """Bootstrap over classes of one benchmark: rank distribution of every model.

    Parameters
    ----------
    per_class_ap:
        model → class APs (fractions) on the same classes (same order; NaN where a class has no ground
        truth, which must agree across models).
    n_resamples, confidence:
        Bootstrap replicates and the coverage of the reported rank interval.
    random_state:
        Seed or generator; the same class resample is used for every model in a replicate.
    """
    if not isinstance(n_resamples, int) or n_resamples < 1:
        raise ConfigError(f"n_resamples must be a positive integer; got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1); got {confidence!r}")
    models = list(per_class_ap)
    if len(models) < 2:
        raise ValidationError("rank stability needs at least two models")
    mat = np.stack([np.asarray(per_class_ap[m], dtype=np.float64) for m in models])
    if len({len(per_class_ap[m]) for m in models}) != 1:
        raise ValidationError("every model needs APs for the same classes")
    valid = ~np.isnan(mat)
    if not (valid == valid[0]).all():
        raise ValidationError("models disagree on which classes have an AP (compare results on the same test set)")
    mat = mat[:, valid[0]]
    n = mat.shape[1]
    if n == 0:
        raise ValidationError("no class has an AP")
    observed = competition_ranks(mat.mean(axis=1))
    weights = bootstrap_weights(n, n_resamples, check_random_state(random_state))  # (B, n) draw counts
    maps = weights @ mat.T / n  # (B, models): mAP of every model in every replicate
    ranks = (maps[:, None, :] > maps[:, :, None]).sum(axis=2) + 1
    alpha = (1 - confidence) / 2
    out = []
    for j, m in enumerate(models):
        r = ranks[:, j]
        lo, hi = np.quantile(r, [alpha, 1 - alpha], method="inverted_cdf")
        out.append(RankStability(model=m, benchmark=benchmark, map=float(mat[j].mean()),
                                 rank=int(observed[j]), mean_rank=float(r.mean()), rank_low=int(lo),
                                 rank_high=int(hi), p_same_rank=float(np.mean(r == observed[j])),
                                 p_first=float(np.mean(r == 1))))
    return sorted(out, key=lambda s: (s.rank, s.model))
