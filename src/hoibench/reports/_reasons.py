"""One sentence per striking value of a report section, saying why it is what it is, when the
results record the reason: a model that made no detection of the classes an mAP averages (an SG
split's unseen combinations have no train instance by design), a mean over no class with ground
truth (n/a), classes without ground truth counted as AP 0, tied rankings, V-COCO classes without
positives. Derived from what the result files hold, never from which benchmark the demo builds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hoibench.evaluation import HICOMapResult, MCQResult, VCOCOResult
from hoibench.results import ResultRecord
from hoibench.vocab import hico_det

__all__ = ["HICO_FIRST", "defined_split", "map_reasons", "mcq_reasons", "ranking_reasons", "vcoco_reasons"]

#: name of HICO-DET's first HOI class, to recognise its 600-class results
HICO_FIRST = "board airplane"


def _label(metric: str) -> str:
    """How the report's tables name a mean: ``non_rare`` -> ``non-rare``."""
    return metric.replace("_", "-")


def _names(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(dict.fromkeys(items))
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def _rare_mask(r: HICOMapResult) -> np.ndarray | None:
    """HICO-DET's rare classes as a mask over a 600-class result (None for another label space)."""
    if r.n_gt is None or len(r.n_gt) != 600 or r.class_names[:1] not in ((), (HICO_FIRST,)):
        return None
    rare = np.zeros(600, dtype=bool)
    rare[hico_det().rare_classes()] = True
    return rare


def _class_sets(r: HICOMapResult) -> dict[str, np.ndarray]:
    """The classes of each mean a result knows them for: full, rare, non-rare, the headline's."""
    if r.n_gt is None:
        return {}
    sets = {"full": np.arange(len(r.n_gt))}
    rare = _rare_mask(r)
    if rare is not None:
        sets.update(rare=np.flatnonzero(rare), non_rare=np.flatnonzero(~rare))
    if r.headline != "full" and r.classes is not None:
        sets[r.headline] = r.classes
    return sets


def _zero_means(r: HICOMapResult) -> dict[str, str]:
    """Each mean that is exactly 0, with the reason: ``"none"`` (no detection of its classes
    with ground truth) or ``"no-tp"`` (no detection of them matches a ground-truth pair)."""
    if r.n_detections is None or r.n_gt is None:
        return {}
    out = {}
    for name, cls in _class_sets(r).items():
        scored = cls[r.n_gt[cls] > 0]
        if len(scored) and r.mean_ap(name) == 0.0:
            out[name] = "none" if int(r.n_detections[scored].sum()) == 0 else "no-tp"
    return out


def defined_split(r: HICOMapResult, split: str) -> float | None:
    """HICO-DET's Rare / Non-rare mAP, or None where none of those classes has ground truth in
    the test set (an SG split's test set): a file written before the evaluator made such a mean
    NaN holds the official mean over absent classes, 0.0, which reads as a score."""
    value = getattr(r, split)
    rare = _rare_mask(r)
    if value != value:
        return None
    if rare is None:
        return value
    ids = rare if split == "rare" else ~rare
    return value if (r.n_gt[ids] > 0).any() else None  # type: ignore[index]


def _undefined(r: HICOMapResult) -> list[str]:
    """The means of a result that are n/a because none of their classes has ground truth."""
    if r.n_gt is None:
        return []
    return ([k for k in ("rare", "non_rare") if defined_split(r, k) is None]
            + [k for k, v in r.subsets.items() if v != v])


def map_reasons(records: Sequence[ResultRecord[HICOMapResult]]) -> list[str]:
    """Sentences for the mAP section, one per (benchmark, reason), models named together."""
    out = []
    for bench in dict.fromkeys(r.benchmark for r in records):
        rs = [r for r in records if r.benchmark == bench]
        zero: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # (why, metrics) -> models
        for rec in rs:
            by_why: dict[str, list[str]] = {}
            for name, why in _zero_means(rec.result).items():
                by_why.setdefault(why, []).append(name)
            for why, names in by_why.items():
                zero.setdefault((why, tuple(names)), []).append(rec.model)
        for (why, names), models in zero.items():
            one = len(models) == 1
            sentence = (f"On {bench}, {_names(models)} {'scores' if one else 'score'} 0.00 on "
                        f"{_names([_label(n) for n in names])} because "
                        + (f"{'it makes' if one else 'they make'} no detection of any of "
                           f"{'its' if len(names) == 1 else 'their'} classes with ground truth" if why == "none"
                           else f"none of {'its' if one else 'their'} detections of "
                                f"{'its' if len(names) == 1 else 'their'} classes matches a ground-truth pair"))
            if why == "none" and "unseen" in names and rs[0].result.headline == "unseen":
                sentence += (": an SG split's unseen combinations have no train instance by design, so a "
                             "model that predicts only combinations seen in training cannot score them")
            out.append(sentence + ".")
        undefined = list(dict.fromkeys(k for r in rs for k in _undefined(r.result)))
        if undefined:
            cols = _names([_label(k) for k in undefined])
            out.append(f"On {bench}, {cols} {'is' if len(undefined) == 1 else 'are'} n/a because none of "
                       f"{'its' if len(undefined) == 1 else 'their'} classes has ground truth in the test set "
                       "(a mean over no scored class is undefined, not 0).")
        counted = {(r.result.protocol.name, int((r.result.n_gt == 0).sum()), len(r.result.n_gt)) for r in rs
                   if r.result.n_gt is not None and r.result.protocol.mean_over == "all"
                   and r.result.full == r.result.full}
        for proto, k, n in sorted(counted):
            if k:
                out.append(f"On {bench}, full counts the {k:,} of {n:,} classes without ground truth in "
                           f"the test set as AP 0 ({proto} protocol: a mean over all classes).")
    return out


def ranking_reasons(records: Sequence[ResultRecord[HICOMapResult]]) -> list[str]:
    """Sentences for the ranking tables: a benchmark on which every model scores the same."""
    out = []
    for bench in dict.fromkeys(r.benchmark for r in records):
        values = {r.model: r.result.headline_map for r in records if r.benchmark == bench}
        if len(values) > 1 and len(set(values.values())) == 1:
            v = next(iter(values.values()))
            out.append(f"On {bench} all {len(values)} models score {100 * v:.2f}, so they share one rank "
                       "(= in the ranking tables, never an arrow a tie-break would invent).")
    return out


def vcoco_reasons(records: Sequence[ResultRecord[VCOCOResult]]) -> list[str]:
    """Sentences for the V-COCO section: actions without positives (n/a, left out of the means)."""
    out = []
    for rec in records:
        r = rec.result
        empty = [a for a, n in zip(r.action_names, r.n_positives) if n == 0]
        if empty:
            out.append(f"On {rec.benchmark}, {len(empty)} of {len(r.action_names)} actions "
                       f"({_names(empty[:3])}{', ...' if len(empty) > 3 else ''}) have no positives in the "
                       "ground truth: their AP is n/a and every mean leaves them out, as vsrl_eval.py does.")
    return list(dict.fromkeys(out))


#: the share of empty answers from which a multiple-choice row's value is explained by them
EMPTY_SHARE = 0.1


def mcq_reasons(labelled: Sequence[tuple[str, ResultRecord[MCQResult]]]) -> list[str]:
    """Sentences for the multiple-choice section: a model whose answers are empty for a tenth of
    the questions or more (no answer, a failed request, or setting 3's person not found), which
    every metric scores as empty predictions. ``labelled``: (benchmark label, record) pairs."""
    out = []
    for bench, rec in labelled:
        r = rec.result
        if not r.n_questions or r.n_empty is None or r.n_empty < EMPTY_SHARE * r.n_questions:
            continue
        missing = f", {r.n_missing:,} of them unanswered" if r.n_missing else ""
        out.append(f"On {bench}, {rec.model} selected no choice in {r.n_empty:,} of {r.n_questions:,} "
                   f"questions{missing} (a failed request, an unreadable reply, or in setting 3 no "
                   "detected person matching the target): each is scored as an empty prediction, "
                   "which lowers every metric; `hoibench mcq score` names their statuses.")
    return out
