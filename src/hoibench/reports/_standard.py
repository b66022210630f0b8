"""The standard hoibench report from typed results: the tables and plots of the three papers.

:func:`build_report` is what ``hoibench report`` and ``hoibench demo`` call. Given any mix of
results (several models, several benchmarks) it adds the sections the results allow:

- mAP table and the SG paper's Figure 2 (bars per model, one per benchmark; several results of a
  (model, benchmark), e.g. three SG splits, give mean ± std);
- class-AP spread table and box plots (B-RIGHT Figure 6), and the ranking-shift table between two
  benchmarks (B-RIGHT Table 3);
- multiple-choice metrics with bootstrap confidence intervals;
- head-to-tail recall histograms (the multiple-choice paper's Figure 3);
- benchmark statistics (each paper's Table 1), passed in as tables.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.analysis import RankShift, ranking_shift
from hoibench.reports._analysis_views import (
    class_ap_boxplot_figure,
    class_ap_spread_table,
    ranking_shift_table,
)
from hoibench.reports._figures import (
    Figure,
    binned_head_to_tail,
    grouped_bars,
    head_to_tail_recall_plot,
)
from hoibench.reports._report import Report
from hoibench.reports._results import (
    MCQ_METRICS,
    ClassRecall,
    MapResult,
    MCQMetricsResult,
    Result,
    StatsResult,
)
from hoibench.reports._tables import Table

__all__ = [
    "build_report",
    "class_ap_head_to_tail",
    "head_to_tail_table",
    "map_bars_figure",
    "map_table",
    "mcq_figures",
    "mcq_summary_table",
    "mcq_table",
    "ranking_shift_rows",
    "stats_table",
]


#: name of HICO-DET's first HOI class, to recognise its 600-class results
_HICO_FIRST = "board airplane"


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "x"


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


# ---------------------------------------------------------------------- mAP
def map_table(results: Sequence[MapResult]) -> Table:
    """One row per result: model, benchmark, protocol, Full/Rare/Non-rare and every subset."""
    subsets = _unique([k for r in results for k in r.subsets])
    with_ci = any(r.headline_ci is not None for r in results)
    columns = ["model", "benchmark", "protocol", "mAP", *(("ci_low", "ci_high") if with_ci else ()),
               "classes", "full", "rare", "non_rare", *subsets]
    rows = []
    for r in results:
        ci = r.headline_ci or (None, None)
        rows.append((r.model, r.benchmark, r.protocol + (" (known object)" if r.known_object else ""),
                     r.headline, *(ci if with_ci else ()), r.headline_name, r.full, r.rare, r.non_rare,
                     *(r.subsets.get(s) for s in subsets)))
    return Table("map", "HICO-DET mAP (%)", tuple(columns), tuple(rows),
                 caption="mAP: the benchmark's main number, over the classes named in 'classes' "
                         "(full = all classes of the label space)"
                         + ("; ci_low/ci_high: its bootstrap interval (images resampled)" if with_ci else "")
                         + ". Full, Rare, Non-rare and the subset columns are as the evaluator reports them.")


def _aggregate(results: Sequence[MapResult]) -> tuple[list[str], list[str], dict[tuple[str, str], list[float]]]:
    models = _unique([r.model for r in results])
    benches = _unique([r.benchmark for r in results])
    values: dict[tuple[str, str], list[float]] = {}
    for r in results:
        values.setdefault((r.model, r.benchmark), []).append(r.headline)
    return models, benches, values


def map_bars_figure(results: Sequence[MapResult], *, name: str = "map-bars",
                    title: str = "mAP per model and benchmark") -> Figure:
    """The SG paper's Figure 2: per model, a bar per benchmark (its headline mAP); repeated
    results give mean ± std."""
    models, benches, values = _aggregate(results)
    cis = {(r.model, r.benchmark): r.headline_ci for r in results if r.headline_ci is not None}
    series: dict[str, list[float | None]] = {}
    errors: dict[str, list[tuple[float, float] | None]] = {}
    for b in benches:
        series[b], errors[b] = [], []
        for m in models:
            v = values.get((m, b))
            if not v:
                series[b].append(None)
                errors[b].append(None)
                continue
            mean = float(np.mean(v))
            series[b].append(mean)
            if len(v) > 1:
                sd = float(np.std(v))
                errors[b].append((mean - sd, mean + sd))
            else:
                errors[b].append(cis.get((m, b)))
    return grouped_bars(name, title, groups=models, series=series, errors=errors,
                        caption="Bars: each benchmark's mAP (see the table's 'classes' column); error "
                                "bars: standard deviation over repeated results of a model on a "
                                "benchmark (e.g. several SG splits), else the bootstrap interval when "
                                "the evaluator computed one.")


def ranking_shift_rows(results: Sequence[MapResult], *, reference: str, other: str) -> list[RankShift]:
    """B-RIGHT Table 3's rows: models ranked by headline mAP on two benchmarks, with the shift in
    rank (:func:`hoibench.analysis.ranking_shift`). Repeated results of a (model, benchmark) are
    averaged; only models with results on both benchmarks are ranked.
    """
    models, _, values = _aggregate(results)
    ref = {m: float(np.mean(values[(m, reference)])) for m in models if (m, reference) in values}
    oth = {m: float(np.mean(values[(m, other)])) for m in models if (m, other) in values}
    return ranking_shift(ref, oth)


# ---------------------------------------------------------------------- multiple choice
def mcq_table(results: Sequence[MCQMetricsResult]) -> Table:
    """Long format: one row per (model, benchmark, metric) with the value and its CI (percent)."""
    rows = []
    for r in results:
        for k in MCQ_METRICS:
            if k in r.metrics:
                lo, hi = r.ci.get(k, (None, None))
                rows.append((r.model, r.benchmark, r.protocol, k, 100 * r.metrics[k],
                             None if lo is None else 100 * lo, None if hi is None else 100 * hi))
    level = next((r.confidence for r in results if r.confidence), None)
    ci_text = f"{100 * level:.0f}% bootstrap confidence interval" if level else "bootstrap confidence interval"
    return Table("mcq-metrics", "Multiple-choice metrics (%)",
                 ("model", "benchmark", "protocol", "metric", "value", "ci_low", "ci_high"),
                 tuple(rows), caption=f"Metrics as the scorer defines them; ci_low/ci_high: the "
                                      f"{ci_text} (empty when not computed).")


def mcq_summary_table(results: Sequence[MCQMetricsResult], *, decimals: int = 1) -> Table:
    """One row per (model, benchmark): each metric as ``value [low, high]`` in percent (display
    table; :func:`mcq_table` has the raw numbers)."""
    metrics = [k for k in MCQ_METRICS if any(k in r.metrics for r in results)]

    def cell(r: MCQMetricsResult, k: str) -> str | None:
        if k not in r.metrics:
            return None
        text = f"{100 * r.metrics[k]:.{decimals}f}"
        if k in r.ci:
            lo, hi = r.ci[k]
            text += f" [{100 * lo:.{decimals}f}, {100 * hi:.{decimals}f}]"
        return text

    rows = tuple((r.model, r.benchmark, *(cell(r, k) for k in metrics)) for r in results)
    return Table("mcq-summary", "Multiple-choice metrics (%) with confidence intervals",
                 ("model", "benchmark", *metrics), rows,
                 caption="value [CI low, CI high]; the raw numbers are in the next table.")


def mcq_figures(results: Sequence[MCQMetricsResult]) -> list[Figure]:
    """Per benchmark, bars per metric with one bar per model and CI error bars."""
    figs = []
    for bench in _unique([r.benchmark for r in results]):
        rs = [r for r in results if r.benchmark == bench]
        metrics = [k for k in MCQ_METRICS if any(k in r.metrics for r in rs)]
        series: dict[str, list[float | None]] = {}
        errors: dict[str, list[tuple[float, float] | None]] = {}
        for r in rs:
            label = r.model if list(x.model for x in rs).count(r.model) == 1 else f"{r.model} ({r.protocol})"
            series[label] = [100 * r.metrics[k] if k in r.metrics else None for k in metrics]
            errors[label] = [(100 * r.ci[k][0], 100 * r.ci[k][1]) if k in r.ci else None for k in metrics]
        figs.append(grouped_bars(f"mcq-{_slug(bench)}", f"Multiple-choice metrics on {bench}",
                                 groups=metrics, series=series, errors=errors, ylabel="%",
                                 caption="Error bars: bootstrap confidence intervals."))
    return figs


def head_to_tail_table(results: Sequence[ClassRecall], *, n_bins: int = 10) -> Table:
    """Mean recall per head-to-tail bin (classes ordered by train count), one row per result."""
    rows = []
    for r in results:
        _, rec, sizes = binned_head_to_tail(r.train_counts, r.recall, n_bins=n_bins)
        cells = [100 * x for x in rec] + [None] * (n_bins - len(rec))
        rows.append((r.model, r.benchmark, int(sizes.sum()), *cells))
    return Table("head-to-tail-recall", "Recall from head to tail classes (%)",
                 ("model", "benchmark", "classes", *(f"bin {i + 1}" for i in range(n_bins))),
                 tuple(rows), caption="Classes asked about are ordered by train count (bin 1 = "
                                      "most frequent) and cut into equal bins; cells are mean "
                                      "per-class recall.")


def _ap_by_frequency(results: Sequence[MapResult], train_counts: np.ndarray) -> list[ClassRecall]:
    """Per-class AP (fraction) with each class's train count, for the classes with ground truth."""
    out = []
    for r in results:
        if r.per_class_ap is None or len(r.per_class_ap) != len(train_counts):
            continue
        keep = ~np.isnan(r.per_class_ap) if r.n_gt is None else (r.n_gt > 0) & ~np.isnan(r.per_class_ap)
        out.append(ClassRecall(model=r.model, benchmark=r.benchmark, train_counts=train_counts[keep],
                               recall=np.clip(r.per_class_ap[keep], 0.0, 1.0), source=r.source))
    return out


def class_ap_head_to_tail(results: Sequence[MapResult], train_counts: np.ndarray, *,
                          n_bins: int = 10) -> tuple[Table, list[Figure]]:
    """Class AP from head to tail classes (by train count): a table of bin means and one figure
    per benchmark. A falling profile is a head-class bias of the detector."""
    recs = _ap_by_frequency(results, np.asarray(train_counts, dtype=float))
    if not recs:
        raise ValidationError("no result has per-class AP for the given train counts")
    base = head_to_tail_table(recs, n_bins=n_bins)
    table = Table("class-ap-head-to-tail", "Class AP from head to tail classes (%)", base.columns,
                  base.rows, caption="Classes with ground truth ordered by train count (bin 1 = most "
                                     "frequent) and cut into equal bins; cells are mean class AP.")
    figs = [head_to_tail_recall_plot(
        f"class-ap-head-to-tail-{_slug(b)}", f"Class AP from head to tail on {b}",
        panels={r.model: (r.train_counts, r.recall) for r in recs if r.benchmark == b},
        n_bins=n_bins, value_label="class AP",
        caption="Blue: mean train instances per class in each bin; red: mean class AP.")
        for b in _unique([r.benchmark for r in recs])]
    return table, figs


def stats_table(stats: Sequence[StatsResult]) -> list[Table]:
    """One table per benchmark statistics record."""
    return [Table.from_records(f"stats-{_slug(s.benchmark)}", f"Statistics: {s.benchmark}",
                               list(s.rows), decimals=3) for s in stats]


# ---------------------------------------------------------------------- the whole report
def build_report(
    results: Sequence[Result],
    *,
    title: str = "hoibench report",
    intro: str = "",
    meta: dict[str, Any] | None = None,
    stats_tables: Sequence[Table] = (),
    reference_benchmark: str | None = None,
    n_bins: int = 10,
    train_counts: np.ndarray | None = None,
) -> Report:
    """A report with every section the given results allow.

    Parameters
    ----------
    results:
        Any mix of :class:`MapResult`, :class:`MCQMetricsResult`, :class:`ClassRecall` and
        :class:`StatsResult`.
    stats_tables:
        Extra statistics tables (Table 1 of each benchmark), shown first.
    reference_benchmark:
        Benchmark the ranking shifts are measured from (default: the first mAP benchmark).
    n_bins:
        Bins of the head-to-tail histograms.
    train_counts:
        Per-class train counts for the class-AP head-to-tail plot (default: HICO-DET's official
        counts when the mAP results are HICO-DET's 600 classes).
    """
    if not results and not stats_tables:
        raise ValidationError("a report needs at least one result")
    report = Report(title=title, intro=intro, meta=meta)
    maps = [r for r in results if isinstance(r, MapResult)]
    mcqs = [r for r in results if isinstance(r, MCQMetricsResult)]
    recalls = [r for r in results if isinstance(r, ClassRecall)]
    stats = [r for r in results if isinstance(r, StatsResult)]

    tables = list(stats_tables) + stats_table(stats)
    if tables:
        report.add_section("Benchmark statistics",
                           "Each benchmark's Table 1: images, pairs (triplets) and classes.",
                           tables=tables)
    if maps:
        report.add_section(
            "HOI detection mAP",
            "mAP of every model on every benchmark. A drop from the original split to an SG "
            "split measures how badly a model generalises to unseen verb-object combinations.",
            tables=[map_table(maps)], figures=[map_bars_figure(maps)])
        with_ap = [r for r in maps if len(r.class_ap_percent)]
        if with_ap:
            section = report.add_section(
                "Class-AP distribution and ranking shifts",
                "Box plots of per-class AP show how unevenly a model performs across classes; the "
                "ranking tables show how model rankings change between benchmarks.",
                tables=[class_ap_spread_table(with_ap)],
                figures=[class_ap_boxplot_figure(with_ap, title="Class AP per model and benchmark")])
            counts = train_counts
            if counts is None and all(r.per_class_ap is not None and len(r.per_class_ap) == 600
                                      and r.class_names[:1] in ((), (_HICO_FIRST,)) for r in with_ap):
                from hoibench.vocab import hico_det

                counts = hico_det().train_counts_official()
            if counts is not None:
                try:
                    t, figs = class_ap_head_to_tail(with_ap, counts, n_bins=n_bins)
                    section.tables.append(t)
                    section.figures.extend(figs)
                except ValidationError:
                    pass  # no result matches the train counts' classes
            benches = _unique([r.benchmark for r in maps])
            ref = reference_benchmark or benches[0]
            for other in benches:
                if other == ref:
                    continue
                try:
                    section.tables.append(ranking_shift_table(
                        ranking_shift_rows(maps, reference=ref, other=other), reference=ref,
                        other=other, name=f"ranking-shift-{_slug(ref)}-vs-{_slug(other)}"))
                except ValidationError:
                    continue  # fewer than two models on both: nothing to rank
    if mcqs:
        report.add_section(
            "Multiple-choice HOI recognition",
            "Set metrics of each answerer with bootstrap confidence intervals.",
            tables=[mcq_summary_table(mcqs), mcq_table(mcqs)], figures=mcq_figures(mcqs))
    if recalls:
        report.add_section(
            "Head-to-tail recall",
            "Recall of the correct choices per HOI class, classes ordered from the most to the "
            "least frequent in train: a falling profile is a head-class bias.",
            tables=[head_to_tail_table(recalls, n_bins=n_bins)],
            figures=[head_to_tail_recall_plot(
                f"head-to-tail-{_slug(b)}", f"Head-to-tail recall on {b}",
                panels={r.model: (r.train_counts, r.recall) for r in recalls if r.benchmark == b},
                n_bins=n_bins,
                caption="Blue: mean train instances per class in each bin; red: mean recall.")
                for b in _unique([r.benchmark for r in recalls])])
    return report
