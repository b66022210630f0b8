"""What goes into a result file besides the numbers, assembled in one place for the CLI and the
demo: the headline of a HICO-DET benchmark, every dropped detection, bootstrap intervals, the
scores of several choice orders and their spread."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench.evaluation import HICOMapCI, HICOMapResult, MCQResult, position_sensitivity
from hoibench.formats import balanced_zero_shot_dir
from hoibench.results._record import ResultRecord

__all__ = ["hico_headline", "hico_map_record", "mcq_record"]


def hico_headline(classes_spec: str | None, subsets: Mapping[str, Any]) -> str:
    """The main number of a benchmark evaluated with ``--classes classes_spec``.

    ``selected`` for a class-list file (e.g. a balanced split's classes), ``unseen`` for an SG
    split directory (``unseen:DIR``) and for B-RIGHT's balanced zero-shot set (``zero-shot:DIR``):
    their test sets hold only those classes. Everything else
    (no spec, ``rare``, a zero-shot setting, reported next to the full mAP) keeps ``full``.
    """
    if not classes_spec:
        return "full"
    if "selected" in subsets:
        return "selected"
    if classes_spec.strip().lower().startswith("unseen:") or balanced_zero_shot_dir(classes_spec) is not None:
        return "unseen"
    return "full"


def hico_map_record(result: HICOMapResult, *, model: str = "", benchmark: str = "",
                    classes_spec: str | None = None, dropped: Mapping[str, int] | None = None,
                    ci: HICOMapCI | None = None, class_subsets: Mapping[str, Any] | None = None,
                    **extra: Any) -> ResultRecord[HICOMapResult]:
    """An mAP result as ``hoibench eval hico`` and the demo write it.

    Parameters
    ----------
    classes_spec:
        The ``--classes`` value the subsets came from: sets the headline (:func:`hico_headline`).
    dropped:
        Detections the prediction reader left out (``LoadedPredictions.dropped``), added in
        front of those the evaluator did not count, so ``dropped`` lists every one.
    ci:
        Bootstrap intervals (``hoibench.analysis.MapBootstrapResult.to_ci()``).
    class_subsets:
        The subsets' classes (from ``hico_class_subsets``): a subset none of whose classes has
        ground truth in the test set (an SG test set's "seen" classes) is undefined, NaN (null in
        the file), not the 0.0 a mean over absent classes gives.
    extra:
        Further keys of the file (``prediction_format``, ``evaluate_by_hand``, ...).
    """
    merged = dict(dropped or {})
    for reason, n in result.n_dropped.items():
        merged[reason] = merged.get(reason, 0) + n
    subsets = dict(result.subsets)
    if class_subsets and result.n_gt is not None:
        for name, cls in class_subsets.items():
            ids = np.asarray(cls, dtype=np.int64)
            if name in subsets and not (result.n_gt[ids] > 0).any():
                subsets[name] = math.nan
    res = dataclasses.replace(result, n_dropped=merged, headline=hico_headline(classes_spec, result.subsets),
                              ci=ci if ci is not None else result.ci, subsets=subsets)
    return ResultRecord(res, model, benchmark, extra)


def mcq_record(results: Sequence[tuple[str, MCQResult]], *, model: str = "", benchmark: str = "",
               per_class: bool = False, **extra: Any) -> ResultRecord[MCQResult]:
    """Multiple-choice scores as ``hoibench mcq score`` and the demo write them.

    ``results`` are ``(name, result)`` per choice order, the main one first. With several,
    the file also holds each order's metrics (``permutations``) and their standard deviation
    (``position_sensitivity``, :func:`~hoibench.evaluation.position_sensitivity`).
    ``per_class``: keep the per-class counts.
    """
    if not results:
        raise ConfigError("mcq_record needs at least one result")
    main = results[0][1] if per_class else dataclasses.replace(results[0][1], per_class={})
    head: dict[str, Any] = {}
    if len(results) > 1:
        head["permutations"] = {name: r.metrics() for name, r in results}
        head["position_sensitivity"] = position_sensitivity([r for _, r in results])
    return ResultRecord(main, model, benchmark, {**head, **extra})
