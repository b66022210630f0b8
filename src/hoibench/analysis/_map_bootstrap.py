"""Bootstrap confidence intervals for HICO-DET mAP, paired model comparison and rank stability.

The test images are resampled with replacement. Under every protocol of
:mod:`hoibench.evaluation._hico_map`, whether a detection is a TP depends only on the detections
of its own image and class (greedy matching inside an image in score order; QPIC's top-100 cap,
CDN's pair-NMS, Known-Object and the "images without pairs" rule are per image). A copy of an
image therefore repeats its detections with the same TP flags, and the ranked TP/FP sequence of
:func:`~hoibench.evaluation.match_hico_detections` stays valid: a resample is a *weight* (how
many times each image was drawn), a class's AP is the AP of the weighted ranked sequence
(:func:`~hoibench.evaluation.weighted_voc11_ap`) with the weighted number of ground-truth pairs.
``tests/test_map_bootstrap.py`` proves that this equals re-running the evaluator on physically
resampled data (duplicated images renamed).

Tied scores: each detection's copies sit next to each other in the weighted sequence. That is
also the order of the physically resampled data unless two detections of the same class and
the same image have exactly the same score (stable ranking), or any two detections of a class
tie under ``ranking="numpy"`` (QPIC's unstable sort, whose tie order is arbitrary anyway).

The engine (:class:`WeightedHICOMap`) evaluates a chunk of replicates at once with numpy only:
gather the image weights along the ranked FP and TP sequences, cumulative sums, and, since only
TP run ends can carry the maximum precision of a recall level, per-(replicate, class, recall
bucket) maxima over the TPs with one ``np.maximum.reduceat``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench._progress import make_progress
from hoibench.analysis._ranking import RankStability, competition_ranks
from hoibench.data import HOIDataset, HOIPredictions
from hoibench.evaluation import (
    HICOMapCI,
    HICOMatches,
    HICOProtocol,
    match_hico_detections,
    recall_thresholds,
)
from hoibench.evaluation._bootstrap import (
    CI_METHOD_OF,
    MAP_CI_METHOD,
    SE_METHOD,
    bootstrap_ci,
    bootstrap_interval,
    bootstrap_se,
    check_random_state,
    reportable_interval,
)

__all__ = [
    "MapBootstrapResult",
    "ModelComparison",
    "WeightedHICOMap",
    "compare_hico_models",
    "hico_map_bootstrap",
]

#: elements of a (replicates x detections) block evaluated at once (memory: ~8 bytes each, x3)
_BLOCK_ELEMENTS = 1 << 23

#: ``percentile``: quantiles of the replicates; ``basic``: reflected about the estimate
#: (``2*estimate - quantiles``), which corrects for the bootstrap's estimate of the bias
def _bias(samples: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(samples, axis=0) - estimate


def _metric_classes(target: HOIDataset, class_subsets: Mapping[str, Sequence[int] | np.ndarray] | None
                    ) -> dict[str, np.ndarray]:
    """Full / rare / non_rare (as :class:`~hoibench.evaluation.HICOMapResult`) plus subsets."""
    vocab = target.vocab
    all_cls = np.arange(vocab.n_hois)
    rare = vocab.rare_classes() if vocab.name == "hico-det" else np.zeros(0, dtype=np.int64)
    out = {"full": all_cls, "rare": rare, "non_rare": np.setdiff1d(all_cls, rare)}
    for name, cls in (class_subsets or {}).items():
        cls = np.asarray(cls, dtype=np.int64)
        if name in out:  # e.g. --classes rare: the same metric under the same name
            if not np.array_equal(np.unique(cls), out[name]):
                raise ConfigError(f"class subset {name!r} differs from the built-in {name} classes")
            continue
        if len(cls) and (cls.min() < 0 or cls.max() >= vocab.n_hois):
            raise ConfigError(f"class subset {name!r} has ids outside 0..{vocab.n_hois - 1}")
        out[name] = cls
    return out


class WeightedHICOMap:
    """Per-class AP and mAP of one model's matches under image weights, many replicates at once.

    Parameters
    ----------
    matches:
        :func:`~hoibench.evaluation.match_hico_detections` of the model on ``target``.
    target:
        The ground truth the matches were computed on (gives per-image pair counts per class).
    class_subsets:
        Extra class sets (name -> HOI ids) besides ``full``, ``rare`` and ``non_rare``.
    """

    def __init__(self, matches: HICOMatches, target: HOIDataset, *,
                 class_subsets: Mapping[str, Sequence[int] | np.ndarray] | None = None) -> None:
        n_cls = matches.n_classes
        if n_cls != target.vocab.n_hois:
            raise ValidationError(f"matches have {n_cls} classes, the ground truth {target.vocab.n_hois}")
        self.protocol: HICOProtocol = matches.protocol
        self.n_images = target.n_images
        self.n_classes = n_cls
        self.metric_classes = _metric_classes(target, class_subsets)
        self.thresholds = recall_thresholds(self.protocol.recall_thresholds)
        # ground-truth pairs per (class, image): sorted by class for one reduceat per chunk
        hoi, img = target.pair_hoi, target.pair_image
        valid = hoi >= 0
        key, cnt = np.unique(hoi[valid] * self.n_images + img[valid], return_counts=True)
        self._gt_class = key // self.n_images
        self._gt_image = key % self.n_images
        self._gt_count = cnt.astype(np.float64)
        n_gt = np.bincount(self._gt_class, weights=self._gt_count, minlength=n_cls)
        if not np.array_equal(n_gt, matches.n_gt):
            raise ValidationError("matches and ground truth disagree on the number of pairs per class "
                                  "(were the matches computed on this dataset?)")
        self._gt_starts = np.flatnonzero(np.r_[True, self._gt_class[1:] != self._gt_class[:-1]])
        # ranked sequence split into TPs (where the maxima live) and FPs (only counted)
        cls_of = np.repeat(np.arange(n_cls), np.diff(matches.class_offsets))
        tp = matches.tp.astype(bool)
        image = matches.image_index.astype(np.int64)
        is_fp = ~tp
        n_rows = len(tp)
        fp_cum = np.r_[0, np.cumsum(is_fp)]  # fp_cum[i]: FPs in ranked rows < i (all classes)
        tp_cum = np.r_[0, np.cumsum(tp)]
        start = matches.class_offsets[:-1]
        self._fp_image = image[is_fp]
        self._tp_image = image[tp]
        self._tp_class = cls_of[tp]
        self._tp_fp_before = fp_cum[np.flatnonzero(tp)]
        self._tp_fp_class_start = fp_cum[start][self._tp_class]
        self._tp_tp_class_start = tp_cum[start][self._tp_class]
        # per-replicate cumulative counts are exact integers: int32 unless they could overflow
        self._max_per_image = int(np.bincount(image).max(initial=0)) if n_rows else 0

    # --------------------------------------------------------------------- per-class AP
    def n_gt(self, weights: np.ndarray) -> np.ndarray:
        """``(B, n_classes)`` weighted number of ground-truth pairs."""
        w = np.asarray(weights, dtype=np.float64)
        out = np.zeros((len(w), self.n_classes))
        if len(self._gt_count):
            sums = np.add.reduceat(w[:, self._gt_image] * self._gt_count, self._gt_starts, axis=1)
            out[:, self._gt_class[self._gt_starts]] = sums
        return out

    def class_ap(self, weights: np.ndarray) -> np.ndarray:
        """``(B, n_classes)`` per-class AP (fractions; NaN where the weighted n_gt is 0)."""
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if w.ndim != 2 or w.shape[1] != self.n_images:
            raise ValidationError(f"weights must have shape (B, {self.n_images}); got {w.shape}")
        if len(w) and (w.min() < 0 or not np.array_equal(w, np.rint(w))):
            raise ValidationError("weights must be non-negative whole numbers (how often each image is drawn)")
        n = max(len(self._fp_image) + len(self._tp_image), 1)
        step = max(1, _BLOCK_ELEMENTS // n)
        return np.concatenate([self._class_ap_block(w[i:i + step]) for i in range(0, len(w), step)])

    def _class_ap_block(self, weights: np.ndarray) -> np.ndarray:
        b, n_cls = len(weights), self.n_classes
        bound = float(weights.sum(axis=1).max(initial=0.0)) * self._max_per_image
        wi = weights.astype(np.int32 if bound < np.iinfo(np.int32).max else np.int64)
        ng = self.n_gt(weights)
        n_fp, n_tp = len(self._fp_image), len(self._tp_image)
        cf = np.zeros((b, n_fp + 1), dtype=wi.dtype)
        np.cumsum(wi[:, self._fp_image], axis=1, out=cf[:, 1:])
        ct = np.zeros((b, n_tp + 1), dtype=wi.dtype)
        np.cumsum(wi[:, self._tp_image], axis=1, out=ct[:, 1:])
        ctp = (ct[:, 1:] - ct[:, self._tp_tp_class_start]).astype(np.float64)
        cfp = (cf[:, self._tp_fp_before] - cf[:, self._tp_fp_class_start]).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            rec = ctp / ng[:, self._tp_class]
            denom = cfp + ctp
            prec = np.divide(ctp, denom, out=np.zeros_like(ctp), where=denom > 0)
        # recall bucket: how many thresholds are <= recall (NaN recall -> its class is NaN anyway)
        bucket = np.searchsorted(self.thresholds, np.nan_to_num(rec, nan=0.0), side="right")
        n_b = len(self.thresholds) + 1
        key = ((np.arange(b)[:, None] * n_cls + self._tp_class[None, :]) * n_b + bucket).ravel()
        best = np.zeros(b * n_cls * n_b)
        if len(key):
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            best[key[starts]] = np.maximum.reduceat(prec.ravel(), starts)
        best = best.reshape(b, n_cls, n_b)
        # precision at threshold k: max over the points whose bucket exceeds k
        suffix = np.maximum.accumulate(best[:, :, ::-1], axis=2)[:, :, ::-1]
        ap = np.zeros((b, n_cls))
        for k in range(len(self.thresholds)):
            ap = ap + suffix[:, :, k + 1] / 11.0  # same accumulation order as voc11_ap
        ap[ng == 0] = np.nan
        return ap

    # --------------------------------------------------------------------- mAP
    def mean_ap(self, weights: np.ndarray) -> np.ndarray:
        """``(B, n_metrics)`` mAP (fractions), columns in :attr:`metric_names` order."""
        ap = self.class_ap(weights)
        cols = []
        for cls in self.metric_classes.values():
            vals = ap[:, cls]
            if self.protocol.mean_over == "with_gt":
                k = (~np.isnan(vals)).sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    cols.append(np.where(k > 0, np.nansum(vals, axis=1) / k, np.nan))
            elif len(cls):  # classes without ground truth count as 0; a mean over none is undefined
                scored = (~np.isnan(vals)).any(axis=1)
                cols.append(np.where(scored, np.nan_to_num(vals, nan=0.0).mean(axis=1), np.nan))
            else:
                cols.append(np.full(len(ap), np.nan))
        return np.stack(cols, axis=1)

    @property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(self.metric_classes)


# ------------------------------------------------------------------------- results
@dataclass(frozen=True)
class MapBootstrapResult:
    """Bootstrap of one model's mAP (fractions), one entry per metric.

    ``se``: standard deviation of the replicates; ``bias``: their mean minus the estimate (see
    :func:`bootstrap_interval`). ``method`` ``"se"`` (the default): no intervals (``low`` and
    ``high`` NaN), because none passed the coverage check for one model's mAP; an interval method
    asked for by name gives its interval, which is no confidence interval for mAP.
    """

    metrics: tuple[str, ...]
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float
    n_resamples: int
    seed: int | None
    samples: np.ndarray  # (n_resamples, n_metrics)
    method: str = CI_METHOD_OF["map"]

    @property
    def bias(self) -> np.ndarray:
        return _bias(self.samples, self.estimate)

    @property
    def se(self) -> np.ndarray:
        return bootstrap_se(self.samples)

    def ci(self, metric: str = "full") -> tuple[float, float]:
        """``(low, high)`` of a metric (an interval method asked for by name only)."""
        try:
            k = self.metrics.index(metric)
        except ValueError:
            raise ConfigError(f"no metric {metric!r}; have {', '.join(self.metrics)}") from None
        if self.method == SE_METHOD:
            raise ConfigError("no interval: none passed the coverage check for one model's mAP "
                              "(docs/evaluation.md, 'Which interval'); read .se, or compare models "
                              "with compare_hico_models")
        return float(self.low[k]), float(self.high[k])

    def to_ci(self) -> HICOMapCI:
        """The intervals as a :class:`~hoibench.evaluation.HICOMapCI`, what a ``hico_map``
        result holds (and its file writes as ``"ci"``, in percent)."""
        se_only = self.method == SE_METHOD
        intervals = {} if se_only else {m: None if np.isnan(lo) or np.isnan(hi) else (float(lo), float(hi))
                                        for m, lo, hi in zip(self.metrics, self.low, self.high)}
        return HICOMapCI(intervals=intervals, bias={m: float(b) for m, b in zip(self.metrics, self.bias)},
                         confidence=None if se_only else self.confidence, n_resamples=self.n_resamples,
                         seed=self.seed, method=self.method,
                         se={m: float(v) for m, v in zip(self.metrics, self.se)})


def _progress(enabled: bool) -> Any:
    if not enabled:
        return None

    return make_progress(transient=True)  # on stderr: stdout may carry ``--json -`` output


def _bootstrap_engines(engines: Sequence[WeightedHICOMap], *, n_resamples: int, confidence: float,
                       random_state: int | np.random.Generator | None, progress: bool,
                       description: str) -> Any:
    """One :func:`bootstrap_ci` over every engine: the same resamples for every model."""
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ConfigError(f"n_resamples must be a positive integer; got {n_resamples!r}")
    n_img = engines[0].n_images
    if any(e.n_images != n_img for e in engines):
        raise ValidationError("models must be evaluated on the same ground truth")
    bar = _progress(progress)

    def statistic(w: np.ndarray) -> np.ndarray:
        out = np.concatenate([e.mean_ap(w) for e in engines], axis=1)
        if bar is not None and len(w) and not (len(w) == 1 and np.all(w == 1)):
            bar.update(task, advance=len(w))
        return out

    rng = check_random_state(random_state)
    if bar is None:
        return bootstrap_ci(statistic, n_img, n_resamples=n_resamples, confidence=confidence,
                            random_state=rng, batch_size=100)
    with bar:
        task = bar.add_task(description, total=n_resamples)
        return bootstrap_ci(statistic, n_img, n_resamples=n_resamples, confidence=confidence,
                            random_state=rng, batch_size=100)


def _seed_of(random_state: Any) -> int | None:
    return int(random_state) if isinstance(random_state, (int, np.integer)) else None


def hico_map_bootstrap(preds: HOIPredictions | HICOMatches, target: HOIDataset, *,
                       protocol: str | HICOProtocol = "official", known_object: bool = False,
                       image_labels: Mapping[str, Iterable[int]] | None = None,
                       class_subsets: Mapping[str, Sequence[int] | np.ndarray] | None = None,
                       n_resamples: int = 1000, confidence: float = 0.95,
                       random_state: int | np.random.Generator | None = 0,
                       method: str = CI_METHOD_OF["map"], lenient: bool = False,
                       progress: bool = False) -> MapBootstrapResult:
    """Bootstrap standard errors (and, asked for, intervals) of Full / Rare / Non-rare (and
    subset) mAP by resampling test images.

    ``preds`` may also be precomputed matches (then the matching options are not used). The
    point estimate equals :func:`~hoibench.evaluation.hico_mean_ap`'s numbers. ``method``:
    ``"se"`` (the default: no interval passed the coverage check for one model's mAP), or
    ``"percentile"``, ``"basic"``, ``"normal"`` (:func:`bootstrap_interval`).
    """
    if method != SE_METHOD:
        bootstrap_interval(np.zeros(1), 0.0, confidence=confidence, method=method)  # validate early
    matches = preds if isinstance(preds, HICOMatches) else match_hico_detections(
        preds, target, protocol=protocol, known_object=known_object, image_labels=image_labels,
        lenient=lenient)
    engine = WeightedHICOMap(matches, target, class_subsets=class_subsets)
    r = _bootstrap_engines([engine], n_resamples=n_resamples, confidence=confidence,
                           random_state=random_state, progress=progress,
                           description="bootstrapping mAP")
    if method == SE_METHOD:
        lo = hi = np.full(len(r.estimate), np.nan)
    else:
        lo, hi = bootstrap_interval(r.samples, r.estimate, confidence=confidence, method=method)
    return MapBootstrapResult(engine.metric_names, r.estimate, lo, hi, confidence,
                              n_resamples, _seed_of(random_state), r.samples, method)


@dataclass(frozen=True)
class ModelComparison:
    """Several models scored on the same bootstrap resamples of the test images.

    ``samples[b, m, k]``: mAP (fraction) of model ``m`` for metric ``k`` in replicate ``b``;
    ``estimate[m, k]`` on the original test set.
    """

    models: tuple[str, ...]
    metrics: tuple[str, ...]
    estimate: np.ndarray
    samples: np.ndarray
    confidence: float
    n_resamples: int
    seed: int | None

    def _k(self, metric: str) -> int:
        if metric not in self.metrics:
            raise ConfigError(f"no metric {metric!r}; have {', '.join(self.metrics)}")
        return self.metrics.index(metric)

    def _m(self, model: str) -> int:
        if model not in self.models:
            raise ConfigError(f"no model {model!r}; have {', '.join(self.models)}")
        return self.models.index(model)

    def map_ci(self, *, method: str = CI_METHOD_OF["map"]) -> list[dict[str, Any]]:
        """Per model: each metric's estimate, bootstrap SE (``<metric>_se``) and bias (fractions);
        with an interval method asked for by name also its interval (``<metric>_low/_high``),
        which is no confidence interval for one model's mAP (docs/evaluation.md)."""
        bias, se = _bias(self.samples, self.estimate), bootstrap_se(self.samples)
        lo = hi = None
        if method != SE_METHOD:
            lo, hi = bootstrap_interval(self.samples, self.estimate, confidence=self.confidence, method=method)
        out = []
        for m, model in enumerate(self.models):
            rec: dict[str, Any] = {"model": model}
            for k, name in enumerate(self.metrics):
                rec.update({name: float(self.estimate[m, k]), f"{name}_se": float(se[m, k]),
                            f"{name}_bias": float(bias[m, k])})
                if lo is not None and hi is not None:
                    rec.update({f"{name}_low": float(lo[m, k]), f"{name}_high": float(hi[m, k])})
            out.append(rec)
        return out

    def paired_difference(self, a: str, b: str, metric: str = "full", *,
                          method: str = MAP_CI_METHOD) -> dict[str, Any]:
        """mAP(a) − mAP(b) (fractions): observed, CI over the shared resamples, P(a > b), bias, SE.

        The CI is checked to hold the observed difference; where it does not (a difference biased
        under resampling), ``ci_low``/``ci_high`` are NaN and ``ci_method`` is ``"se"``."""
        k, i, j = self._k(metric), self._m(a), self._m(b)
        d = self.samples[:, i, k] - self.samples[:, j, k]
        observed = float(self.estimate[i, k] - self.estimate[j, k])
        lo, hi = bootstrap_interval(d, observed, confidence=self.confidence, method=method)
        how, lo, hi = reportable_interval(observed, float(lo), float(hi), method)
        ok = ~np.isnan(d)
        return {"model_a": a, "model_b": b, "metric": metric,
                "map_a": float(self.estimate[i, k]), "map_b": float(self.estimate[j, k]),
                "difference": observed, "ci_low": lo, "ci_high": hi, "ci_method": how,
                "se": float(bootstrap_se(d)),
                "bias": float(_bias(d, np.float64(observed))),
                "p_a_better": float(np.mean(d[ok] > 0)) if ok.any() else float("nan"),
                "p_tie": float(np.mean(d[ok] == 0)) if ok.any() else float("nan")}

    def paired_differences(self, metric: str = "full", *, reference: str | None = None,
                           method: str = MAP_CI_METHOD) -> list[dict[str, Any]]:
        """Every pair (or every model against ``reference``), best observed model first."""
        k = self._k(metric)
        order = sorted(range(len(self.models)), key=lambda m: (-self.estimate[m, k], self.models[m]))
        names = [self.models[m] for m in order]
        if reference is not None:
            self._m(reference)
            return [self.paired_difference(reference, m, metric, method=method) for m in names if m != reference]
        return [self.paired_difference(a, b, metric, method=method)
                for n, a in enumerate(names) for b in names[n + 1:]]

    def ranks(self, metric: str = "full") -> np.ndarray:
        """``(n_resamples, n_models)`` competition ranks (1 = highest mAP) per replicate."""
        v = self.samples[:, :, self._k(metric)]
        if np.isnan(v).any():
            raise ValidationError(f"some replicates have no {metric} mAP (no class with ground truth)")
        return (v[:, None, :] > v[:, :, None]).sum(axis=2) + 1

    def rank_distribution(self, metric: str = "full") -> np.ndarray:
        """``(n_models, n_models)``: share of replicates in which model ``m`` has rank ``r + 1``."""
        r = self.ranks(metric)
        n = len(self.models)
        return np.stack([np.bincount(r[:, m] - 1, minlength=n)[:n] / len(r) for m in range(n)])

    def rank_stability(self, metric: str = "full", *, benchmark: str = "") -> list[RankStability]:
        """Per model: observed rank, mean rank, rank interval, P(same rank), P(first)."""
        k = self._k(metric)
        observed = competition_ranks(self.estimate[:, k])
        r = self.ranks(metric)
        a = (1.0 - self.confidence) / 2.0
        out = []
        for m, name in enumerate(self.models):
            lo, hi = np.quantile(r[:, m], [a, 1 - a], method="inverted_cdf")
            out.append(RankStability(model=name, benchmark=benchmark, map=float(self.estimate[m, k]),
                                     rank=int(observed[m]), mean_rank=float(r[:, m].mean()),
                                     rank_low=int(lo), rank_high=int(hi),
                                     p_same_rank=float(np.mean(r[:, m] == observed[m])),
                                     p_first=float(np.mean(r[:, m] == 1))))
        return sorted(out, key=lambda s: (s.rank, s.model))


def compare_hico_models(preds: Mapping[str, HOIPredictions | HICOMatches], target: HOIDataset, *,
                        protocol: str | HICOProtocol = "official", known_object: bool = False,
                        image_labels: Mapping[str, Iterable[int]] | None = None,
                        class_subsets: Mapping[str, Sequence[int] | np.ndarray] | None = None,
                        n_resamples: int = 1000, confidence: float = 0.95,
                        random_state: int | np.random.Generator | None = 0, lenient: bool = False,
                        progress: bool = False) -> ModelComparison:
    """Bootstrap several models on the same image resamples (paired differences, rank stability)."""
    if len(preds) < 2:
        raise ValidationError("a comparison needs at least two models")
    engines = []
    for p in preds.values():
        m = p if isinstance(p, HICOMatches) else match_hico_detections(
            p, target, protocol=protocol, known_object=known_object, image_labels=image_labels,
            lenient=lenient)
        engines.append(WeightedHICOMap(m, target, class_subsets=class_subsets))
    r = _bootstrap_engines(engines, n_resamples=n_resamples, confidence=confidence,
                           random_state=random_state, progress=progress,
                           description=f"bootstrapping {len(engines)} models")
    n_m, metrics = len(engines), engines[0].metric_names
    return ModelComparison(tuple(preds), metrics, r.estimate.reshape(n_m, len(metrics)),
                           r.samples.reshape(n_resamples, n_m, len(metrics)), confidence, n_resamples,
                           _seed_of(random_state))


