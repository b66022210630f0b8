"""The standard hoibench report from result records: the tables and plots of the three papers.

Results are fractions (:mod:`hoibench.results`); tables and plots show percent.

:func:`build_report` is what ``hoibench report`` and ``hoibench demo`` call. Given any mix of
results (several models, several benchmarks) it adds the sections the results allow:

- mAP table and the SG paper's Figure 2 (bars per model, one per benchmark; several results of a
  (model, benchmark), e.g. three SG splits, give mean ± std);
- V-COCO agent and role AP per model, with per-class bars;
- class-AP spread table and box plots (B-RIGHT Figure 6), and the ranking-shift table between two
  benchmarks (B-RIGHT Table 3);
- multiple-choice metrics with bootstrap confidence intervals;
- head-to-tail recall histograms (the multiple-choice paper's Figure 3);
- benchmark statistics (each paper's Table 1), passed in as tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench._io import slug
from hoibench.analysis import RankShift, ranking_shift
from hoibench.evaluation import MCQ_METRIC_NAMES, ClassRecall, HICOMapResult, MCQResult, VCOCOResult
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
    vcoco_ap_figure,
)
from hoibench.reports._paper_figures import PaperInputs, add_paper_sections
from hoibench.reports._published import compare_published, comparison_table, published_tables
from hoibench.reports._reasons import (
    HICO_FIRST,
    defined_split,
    map_reasons,
    mcq_reasons,
    ranking_reasons,
    vcoco_reasons,
)
from hoibench.reports._report import Report
from hoibench.reports._style import EXCLUDES_MARK, benchmark_color, interval_excludes, model_color
from hoibench.reports._tables import Table
from hoibench.results import GROUND_TRUTH_KEY, BenchmarkStats, ResultRecord
from hoibench.vocab import hico_det

__all__ = [
    "TrainCounts",
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
    "vcoco_figures",
    "vcoco_table",
]


#: (model, benchmark, train counts, per-class fractions): one panel of a head-to-tail plot
_Panel = tuple[str, str, np.ndarray, np.ndarray]


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _pct(v: float | None) -> float | None:
    """A fraction as the percent a table prints (the only place reports scale)."""
    return None if v is None else 100.0 * v


# ---------------------------------------------------------------------- mAP
def map_table(records: Sequence[ResultRecord[HICOMapResult]]) -> Table:
    """One row per result: model, benchmark, protocol, Full/Rare/Non-rare and every subset (%)."""
    subsets = _unique([k for r in records for k in r.result.subsets])
    with_ci = any(r.result.headline_ci is not None for r in records)
    ci_cols = ("ci_low", "ci_high", "ci_excludes_estimate") if with_ci else ()
    columns = ["model", "benchmark", "protocol", "mAP", *ci_cols, "classes", "full", "rare", "non_rare",
               *subsets]
    rows = []
    for rec in records:
        r = rec.result
        ci = r.headline_ci or (None, None)
        flag = interval_excludes(r.headline_map, *ci) if r.headline_ci else None
        rows.append((rec.model, rec.benchmark, r.protocol.name + (" (known object)" if r.known_object else ""),
                     _pct(r.headline_map), *((_pct(ci[0]), _pct(ci[1]), flag) if with_ci else ()),
                     _class_set(r), _pct(r.full), *(_pct(defined_split(r, k)) for k in ("rare", "non_rare")),
                     *(_pct(r.subsets.get(s)) for s in subsets)))
    return Table("map", "HICO-DET mAP (%)", tuple(columns), tuple(rows),
                 caption="mAP: the benchmark's main number, over the classes named in 'classes' "
                         "(full = all classes of the label space)"
                         + ("; ci_low/ci_high: its bootstrap interval (images resampled); "
                            "ci_excludes_estimate: the interval leaves out the mAP itself (a skewed "
                            "bootstrap; read it with care)" if with_ci else "")
                         + ". Full, Rare, Non-rare and the subset columns are as the evaluator reports "
                           "them; n/a: not computed for that benchmark, or none of the column's classes has "
                           "ground truth in its test set (never a score of 0).")


def _class_set(r: HICOMapResult) -> str:
    """The classes a headline mAP averages, e.g. ``selected (351 classes)``."""
    if r.headline == "full":
        n = len(r.per_class_ap) if r.per_class_ap is not None else None
    else:  # the --classes list the subset came from (an SG split's unseen, B-RIGHT's selected)
        n = len(r.classes) if r.classes is not None else None
    return r.headline if n is None else f"{r.headline} ({n:,} classes)"


def _aggregate(records: Sequence[ResultRecord[HICOMapResult]]
               ) -> tuple[list[str], list[str], dict[tuple[str, str], list[float]]]:
    models = _unique([r.model for r in records])
    benches = _unique([r.benchmark for r in records])
    values: dict[tuple[str, str], list[float]] = {}
    for r in records:
        values.setdefault((r.model, r.benchmark), []).append(r.result.headline_map)
    return models, benches, values


def map_bars_figure(records: Sequence[ResultRecord[HICOMapResult]], *, name: str = "map-bars",
                    title: str = "mAP per model and benchmark") -> Figure:
    """The SG paper's Figure 2: per model, a bar per benchmark (its headline mAP, %) in the
    benchmark's colour, the legend naming the classes each averages; repeated results give
    mean ± std."""
    models, benches, values = _aggregate(records)
    cis = {(r.model, r.benchmark): r.result.headline_ci for r in records if r.result.headline_ci is not None}
    class_sets = {b: _unique([_class_set(r.result) for r in records if r.benchmark == b]) for b in benches}
    series: dict[str, list[float | None]] = {}
    errors: dict[str, list[tuple[float, float] | None]] = {}
    kinds: set[str] = set()
    for b in benches:
        series[b], errors[b] = [], []
        for m in models:
            v = values.get((m, b))
            if not v:
                series[b].append(None)
                errors[b].append(None)
                continue
            mean = float(np.mean(v))
            series[b].append(100 * mean)
            if len(v) > 1:
                sd = float(np.std(v))
                errors[b].append((100 * (mean - sd), 100 * (mean + sd)))
                kinds.add("sd")
            else:
                ci = cis.get((m, b))
                errors[b].append(None if ci is None else (100 * ci[0], 100 * ci[1]))
                kinds.update(() if ci is None else ("ci",))
    labels = {b: f"{b}: {' / '.join(class_sets[b])}" for b in benches}
    mixed = len({c for cs in class_sets.values() for c in cs}) > 1
    caption = "Bars: each benchmark's mAP over the classes its legend entry names."
    if mixed:
        caption += " The benchmarks average different class sets, so bars of one model are not a like-for-like comparison."
    if kinds:
        caption += " Error bars: " + "; ".join(
            t for k, t in (("sd", "standard deviation over repeated results of a model on a benchmark "
                                  "(e.g. several SG splits)"),
                           ("ci", "the bootstrap interval of the evaluator (dashed and marked † where "
                                  "it leaves out the mAP itself)")) if k in kinds) + "."
    return grouped_bars(name, title, groups=models, series=series, errors=errors,
                        colors={b: benchmark_color(b) for b in benches}, labels=labels,
                        note="different class sets per benchmark (see legend)" if mixed else "",
                        caption=caption)


def ranking_shift_rows(records: Sequence[ResultRecord[HICOMapResult]], *, reference: str,
                       other: str) -> list[RankShift]:
    """B-RIGHT Table 3's rows: models ranked by headline mAP on two benchmarks, with the shift in
    rank (:func:`hoibench.analysis.ranking_shift`). Repeated results of a (model, benchmark) are
    averaged; only models with results on both benchmarks are ranked.
    """
    models, _, values = _aggregate(records)
    ref = {m: float(np.mean(values[(m, reference)])) for m in models if (m, reference) in values}
    oth = {m: float(np.mean(values[(m, other)])) for m in models if (m, other) in values}
    return ranking_shift(ref, oth)


# ---------------------------------------------------------------------- V-COCO
def vcoco_table(records: Sequence[ResultRecord[VCOCOResult]]) -> Table:
    """One row per result: agent AP and role AP of scenarios 1 and 2 (24-pair means, %)."""
    rows = []
    for rec in records:
        r = rec.result
        role = {s: _pct(r.role_map(s)) if s in r.scenarios else None for s in (1, 2)}
        rows.append((rec.model, rec.benchmark, r.n_images, _pct(r.agent_map), role[1], role[2],
                     "yes" if r.complete_ground_truth else "no (pair annotations)"))
    return Table("vcoco", "V-COCO AP (%)",
                 ("model", "benchmark", "images", "agent_ap", "role_ap_scenario_1", "role_ap_scenario_2",
                  "complete_ground_truth"), tuple(rows),
                 caption="Agent AP: mean over the actions with positives; role AP: mean over the 24 "
                         "(action, role) classes of the literature (vsrl_eval.py prints 25, with "
                         "point_instr). Scenario 1 needs an empty predicted box for an absent role "
                         "object, scenario 2 ignores it. Incomplete ground truth (from pair "
                         "annotations) does not give official numbers.")


def vcoco_figures(records: Sequence[ResultRecord[VCOCOResult]]) -> list[Figure]:
    """Bars of the summary numbers per model, then each result's per-class APs."""
    groups = [f"{r.model} ({r.benchmark})" if [x.model for x in records].count(r.model) > 1 else r.model
              for r in records]
    series: dict[str, list[float | None]] = {"agent AP": [_pct(r.result.agent_map) for r in records]}
    for s in (1, 2):
        series[f"role AP scenario {s}"] = [_pct(r.result.role_map(s)) if s in r.result.scenarios else None
                                           for r in records]
    figs = [grouped_bars("vcoco-summary", "V-COCO AP per model", groups=groups, series=series,
                         ylabel="AP (%)", caption="Agent AP and 24-pair role AP of each model.")]
    figs += [vcoco_ap_figure(r.result, name=f"vcoco-ap-{slug(r.model)}-{slug(r.benchmark)}",
                             title=f"V-COCO AP per class: {r.model} on {r.benchmark}") for r in records]
    return figs


# ---------------------------------------------------------------------- multiple choice
def _mcq_benchmark(rec: ResultRecord[MCQResult]) -> str:
    """The benchmark a multiple-choice result is shown under: its name and the setting its file
    records (``setting``, or ``settings`` when scored together), so settings are never lumped."""
    setting, settings = rec.extra.get("setting"), rec.extra.get("settings")
    label = (f"setting {setting}" if setting is not None else
             "settings " + "+".join(map(str, settings)) if isinstance(settings, list) and settings else "")
    return f"{rec.benchmark} ({label})" if label and label not in rec.benchmark else rec.benchmark


def _mcq_metrics_present(records: Sequence[ResultRecord[MCQResult]]) -> list[str]:
    """The metrics some result reports (all six unless files of published numbers leave some out)."""
    return [k for k in MCQ_METRIC_NAMES if any(not math.isnan(getattr(r.result, k)) for r in records)]


def mcq_table(records: Sequence[ResultRecord[MCQResult]]) -> Table:
    """Long format: one row per (model, benchmark, metric) with the value and its CI (percent)."""
    rows = []
    for rec in records:
        r = rec.result
        ci = r.ci or {}
        se = r.se or {}
        for k, v in r.metrics().items():
            if math.isnan(v):
                continue  # not reported (a file of published numbers)
            lo, hi = ci.get(k, (None, None))
            rows.append((rec.model, _mcq_benchmark(rec), r.protocol, k, _pct(v), _pct(lo), _pct(hi),
                         _pct(se.get(k)), None if lo is None else interval_excludes(v, lo, hi)))
    level = next((r.result.confidence for r in records if r.result.confidence), None)
    ci_text = f"{100 * level:.0f}% bootstrap confidence interval" if level else "bootstrap confidence interval"
    return Table("mcq-metrics", "Multiple-choice metrics (%)",
                 ("model", "benchmark", "protocol", "metric", "value", "ci_low", "ci_high", "se",
                  "ci_excludes_estimate"),
                 tuple(rows), caption=f"Metrics as the scorer defines them; ci_low/ci_high: the "
                                      f"{ci_text}, given only where the method passed the coverage check "
                                      "(n/a otherwise); se: the bootstrap standard error; "
                                      "ci_excludes_estimate: the interval leaves out the value itself.")


def mcq_summary_table(records: Sequence[ResultRecord[MCQResult]], *, decimals: int = 1) -> Table:
    """One row per (model, benchmark): each metric as ``value [low, high]`` in percent (display
    table; :func:`mcq_table` has the raw numbers)."""
    metrics = _mcq_metrics_present(records)

    def cell(r: MCQResult, k: str) -> str | None:
        v = getattr(r, k)
        if math.isnan(v):
            return None
        text = f"{100 * v:.{decimals}f}"
        if r.ci and k in r.ci:
            lo, hi = r.ci[k]
            text += f" [{100 * lo:.{decimals}f}, {100 * hi:.{decimals}f}]"
            if interval_excludes(v, lo, hi):
                text += f" {EXCLUDES_MARK}"
        elif r.se and r.se.get(k) is not None and not math.isnan(r.se[k]):
            text += f" ± {100 * r.se[k]:.{decimals}f} SE"
        return text

    rows = tuple((rec.model, _mcq_benchmark(rec), *(cell(rec.result, k) for k in metrics)) for rec in records)
    marked = any(EXCLUDES_MARK in (c or "") for row in rows for c in row[2:])
    return Table("mcq-summary", "Multiple-choice metrics (%) with confidence intervals",
                 ("model", "benchmark", *metrics), rows,
                 caption="value [CI low, CI high]; value ± SE: the bootstrap standard error, where no "
                         "interval passed the coverage check (macro-F1); "
                         + (f"{EXCLUDES_MARK}: the interval leaves out the value itself (an older result "
                            "file: read it with care); " if marked else "")
                         + "n/a: not reported. The raw numbers are in the next table.")


def mcq_figures(records: Sequence[ResultRecord[MCQResult]]) -> list[Figure]:
    """Per benchmark, bars per metric with one bar per model and CI error bars."""
    figs = []
    for bench in _unique([_mcq_benchmark(r) for r in records]):
        rs = [r for r in records if _mcq_benchmark(r) == bench]
        metrics = _mcq_metrics_present(rs)
        series: dict[str, list[float | None]] = {}
        errors: dict[str, list[tuple[float, float] | None]] = {}
        colors: dict[str, str] = {}
        for rec in rs:
            r = rec.result
            label = rec.model if [x.model for x in rs].count(rec.model) == 1 else f"{rec.model} ({r.protocol})"
            ci = r.ci or {}
            series[label] = [_pct(getattr(r, k)) for k in metrics]
            errors[label] = [(100 * ci[k][0], 100 * ci[k][1]) if k in ci else None for k in metrics]
            colors[label] = model_color(rec.model)
        drawn = any(e is not None for es in errors.values() for e in es)
        figs.append(grouped_bars(f"mcq-{slug(bench)}", f"Multiple-choice metrics on {bench}",
                                 groups=metrics, series=series, errors=errors, ylabel="%", colors=colors,
                                 caption="Bars: each model's metrics, one colour per model in every "
                                         "figure." + (" Error bars: bootstrap confidence intervals "
                                                      f"(dashed and marked {EXCLUDES_MARK} where one "
                                                      "leaves out its value)." if drawn else "")))
    return figs


def _recall_source(records: Sequence[ResultRecord[ClassRecall]], benchmark: str) -> str:
    """Where a benchmark's recall files got their train counts (``train_counts_source``)."""
    names = _unique([str(r.extra.get("train_counts_source") or "the train counts in the recall file")
                     for r in records if r.benchmark == benchmark])
    return " / ".join(names)


def _recall_panels(records: Sequence[ResultRecord[ClassRecall]]) -> list[_Panel]:
    return [(r.model, r.benchmark, r.result.train_counts, r.result.recall) for r in records]


def _head_to_tail_rows(panels: Sequence[_Panel], n_bins: int) -> tuple[tuple[Any, ...], ...]:
    rows = []
    for model, bench, counts, values in panels:
        _, rec, sizes = binned_head_to_tail(counts, values, n_bins=n_bins)
        cells = [100 * x for x in rec] + [None] * (n_bins - len(rec))
        rows.append((model, bench, int(sizes.sum()), *cells))
    return tuple(rows)


def _head_to_tail_columns(n_bins: int) -> tuple[str, ...]:
    return ("model", "benchmark", "classes", *(f"bin {i + 1}" for i in range(n_bins)))


def head_to_tail_table(records: Sequence[ResultRecord[ClassRecall]], *, n_bins: int = 10) -> Table:
    """Mean recall (%) per head-to-tail bin (classes ordered by train count), one row per result."""
    return Table("head-to-tail-recall", "Recall from head to tail classes (%)", _head_to_tail_columns(n_bins),
                 _head_to_tail_rows(_recall_panels(records), n_bins),
                 caption="Classes asked about are ordered by train count (bin 1 = most frequent) and "
                         "cut into equal bins; cells are mean per-class recall. Train counts: "
                         + "; ".join(f"{b}: {_recall_source(records, b)}"
                                     for b in _unique([r.benchmark for r in records])) + ".")


def _head_to_tail_figures(panels: Sequence[_Panel], *, name: str, title: str, n_bins: int,
                          value_label: str, caption: str | Mapping[str, str]) -> list[Figure]:
    """One figure per benchmark; ``caption`` may differ per benchmark (its train split's source)."""
    return [head_to_tail_recall_plot(
        f"{name}-{slug(b)}", f"{title} on {b}",
        panels={m: (c, v) for m, bench, c, v in panels if bench == b},
        n_bins=n_bins, value_label=value_label, benchmark=b,
        caption=caption if isinstance(caption, str) else caption.get(b, ""))
        for b in _unique([p[1] for p in panels])]


def _ap_by_frequency(records: Sequence[ResultRecord[HICOMapResult]], train_counts: np.ndarray) -> list[_Panel]:
    """Per-class AP (fraction) with each class's train count, for the classes with ground truth."""
    out = []
    for rec in records:
        r = rec.result
        if r.per_class_ap is None or len(r.per_class_ap) != len(train_counts):
            continue
        keep = ~np.isnan(r.per_class_ap) if r.n_gt is None else (r.n_gt > 0) & ~np.isnan(r.per_class_ap)
        out.append((rec.model, rec.benchmark, train_counts[keep], np.clip(r.per_class_ap[keep], 0.0, 1.0)))
    return out


def _class_ap_head_to_tail_table(panels: Sequence[_Panel], n_bins: int, source: str) -> Table:
    return Table("class-ap-head-to-tail", "Class AP from head to tail classes (%)",
                 _head_to_tail_columns(n_bins), _head_to_tail_rows(panels, n_bins),
                 caption="Classes with ground truth ordered by train count (bin 1 = most frequent) "
                         f"and cut into equal bins; cells are mean class AP. Train counts: {source}.")


def class_ap_head_to_tail(records: Sequence[ResultRecord[HICOMapResult]], train_counts: np.ndarray, *,
                          n_bins: int = 10, source: str = "as given") -> tuple[Table, list[Figure]]:
    """Class AP from head to tail classes (by train count): a table of bin means and one figure
    per benchmark. A falling profile is a head-class bias of the detector. ``source`` names the
    train split the counts come from (stated in the captions)."""
    panels = _ap_by_frequency(records, np.asarray(train_counts, dtype=float))
    if not panels:
        raise ValidationError("no result has per-class AP for the given train counts")
    figs = _head_to_tail_figures(panels, name="class-ap-head-to-tail", title="Class AP from head to tail",
                                 n_bins=n_bins, value_label="class AP",
                                 caption=f"Grey: mean train instances per class in each bin ({source}); "
                                         "coloured: mean class AP.")
    return _class_ap_head_to_tail_table(panels, n_bins, source), figs


class TrainCounts(NamedTuple):
    """A benchmark's per-class train counts and where they come from (said in the captions)."""

    counts: np.ndarray
    source: str


def _benchmark_train_counts(with_ap: Sequence[ResultRecord[HICOMapResult]],
                            train_counts: np.ndarray | Mapping[str, TrainCounts | np.ndarray] | None,
                            ) -> tuple[dict[str, TrainCounts], list[str]]:
    """Each benchmark's own train counts for the class-AP head-to-tail figure, and a note per
    benchmark left out. Never another benchmark's split: HICO-DET's official counts stand only
    for HICO-DET itself (a B-RIGHT or SG split has its own train set)."""
    benches = _unique([r.benchmark for r in with_ap])
    given: dict[str, TrainCounts] = {}
    if isinstance(train_counts, Mapping):
        for k, v in train_counts.items():
            given[k.lower()] = v if isinstance(v, TrainCounts) else TrainCounts(np.asarray(v, float), "as given")
    elif train_counts is not None:
        return {b: TrainCounts(np.asarray(train_counts, float), "as given") for b in benches}, []
    out: dict[str, TrainCounts] = {}
    notes = []
    for b in benches:
        tc = given.get(b.lower())
        rs = [r for r in with_ap if r.benchmark == b]
        if tc is None and b.lower() == "hico-det" and all(
                r.result.per_class_ap is not None and len(r.result.per_class_ap) == 600
                and r.result.class_names[:1] in ((), (HICO_FIRST,)) for r in rs):
            tc = TrainCounts(hico_det().train_counts_official(), "HICO-DET's official train split")
        if tc is None:
            notes.append(f"{b}: no head-to-tail profile, its train split was not given "
                         f"(hoibench report --train '{b}=TRAIN_FILE').")
            continue
        panels = _ap_by_frequency(rs, tc.counts)
        if panels and all(not np.any(p[2] > 0) for p in panels):
            notes.append(f"{b}: no head-to-tail profile, every test class has 0 train instances in "
                         f"{tc.source} (by design of the split).")
            continue
        out[b] = tc
    return out, notes


def stats_table(records: Sequence[ResultRecord[BenchmarkStats]]) -> list[Table]:
    """One table per benchmark statistics record."""
    return [Table.from_records(f"stats-{slug(r.result.name)}", f"Statistics: {r.result.name}",
                               list(r.result.rows), decimals=3) for r in records]


# ---------------------------------------------------------------------- the whole report
def _check_one_ground_truth(records: Sequence[ResultRecord[Any]]) -> None:
    """Refuse to merge results of one benchmark name scored on different ground truth (two
    unnamed ``eval hico`` runs on different test files are both called after ``test_hico.json``):
    averaged into one bar they would give a number that belongs to neither."""
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for r in records:
        gt = r.extra.get(GROUND_TRUTH_KEY)
        if not isinstance(gt, str):
            continue
        key = (r.kind, r.benchmark)
        first = seen.setdefault(key, (gt, r.source or r.model))
        if first[0] != gt:
            raise ValidationError(
                f"{first[1]} and {r.source or r.model}: both name benchmark {r.benchmark!r} but were "
                f"scored on different ground truth ({_short_id(first[0])} vs {_short_id(gt)}); give each "
                "its own --benchmark")


def _short_id(gt: str) -> str:
    return gt[:19] + "…" if gt.startswith("sha256:") else gt


def build_report(
    records: Sequence[ResultRecord[Any]],
    *,
    title: str = "hoibench report",
    intro: str = "",
    meta: dict[str, Any] | None = None,
    stats_tables: Sequence[Table] = (),
    reference_benchmark: str | None = None,
    n_bins: int = 10,
    train_counts: np.ndarray | Mapping[str, TrainCounts | np.ndarray] | None = None,
    paper_inputs: PaperInputs | None = None,
    published: bool = False,
) -> Report:
    """A report with every section the given results allow.

    Parameters
    ----------
    records:
        Any mix of result records (:func:`hoibench.results.read_results`) of the kinds
        ``hico_map``, ``vcoco_role_ap``, ``mcq_metrics``, ``class_recall`` and benchmark
        statistics; ``hoi_matches`` have no section (analyse them with ``hoibench analyze``).
    stats_tables:
        Extra statistics tables (Table 1 of each benchmark), shown first.
    reference_benchmark:
        Benchmark the ranking shifts are measured from (default: the first mAP benchmark).
    n_bins:
        Bins of the head-to-tail histograms.
    train_counts:
        Per-class train counts for the class-AP head-to-tail plot: per benchmark name
        (:class:`TrainCounts`, the benchmark's *own* train split), or one array for every
        benchmark. HICO-DET's official counts are used for a benchmark named HICO-DET only; a
        benchmark without its train counts gets no profile and a line saying so.
    paper_inputs:
        Inputs of the papers' sections that are not result files (scene types, class counts,
        augmentation counts, qualitative pages); SG Tables 3/4 and Figure 1b need only ``records``.
    published:
        Place the papers' published rows beside comparable results in every table and figure,
        and add a section with the comparison, one line per result that has no comparable row,
        and every published table (``hoibench report --published``).
    """
    if not records and not stats_tables and paper_inputs is None:
        raise ValidationError("a report needs at least one result")
    sections = (HICOMapResult, VCOCOResult, MCQResult, ClassRecall, BenchmarkStats)
    for r in records:
        if not isinstance(r.result, sections):
            raise ValidationError(f"{r.source or r.model}: {r.kind} results have no report section "
                                  "(hoi_matches: see hoibench analyze sensitivity)")
    _check_one_ground_truth(records)
    comparison = compare_published(records) if published else None
    if comparison is not None:
        records = [*records, *comparison.records]
    report = Report(title=title, intro=intro, meta=meta)
    maps = [r for r in records if isinstance(r.result, HICOMapResult)]
    vcocos = [r for r in records if isinstance(r.result, VCOCOResult)]
    mcqs = [r for r in records if isinstance(r.result, MCQResult)]
    recalls = [r for r in records if isinstance(r.result, ClassRecall)]
    stats = [r for r in records if isinstance(r.result, BenchmarkStats)]

    tables = list(stats_tables) + stats_table(stats)
    if tables:
        report.add_section("Benchmark statistics",
                           "Each benchmark's Table 1: images, pairs (triplets) and classes.",
                           tables=tables)
    if maps:
        report.add_section(
            "HOI detection mAP",
            " ".join(["mAP of every model on every benchmark. A drop from the original split to an SG "
                      "split measures how badly a model generalises to unseen verb-object combinations.",
                      *map_reasons(maps)]),
            tables=[map_table(maps)], figures=[map_bars_figure(maps)])
        with_ap = [r for r in maps if len(r.result.class_ap())]
        if with_ap:
            section = report.add_section(
                "Class-AP distribution and ranking shifts",
                "Box plots of per-class AP show how unevenly a model performs across classes; the "
                "ranking tables show how model rankings change between benchmarks.",
                tables=[class_ap_spread_table(with_ap)],
                figures=[class_ap_boxplot_figure(with_ap, title="Class AP per model and benchmark")])
            own, notes = _benchmark_train_counts(with_ap, train_counts)
            panels = [p for b, tc in own.items() for p in _ap_by_frequency(
                [r for r in with_ap if r.benchmark == b], tc.counts)]
            if panels:
                sources = _unique([tc.source for b, tc in own.items()])
                section.tables.append(_class_ap_head_to_tail_table(panels, n_bins, "; ".join(
                    f"{b}: {tc.source}" for b, tc in own.items()) if len(sources) > 1 else sources[0]))
                section.figures.extend(_head_to_tail_figures(
                    panels, name="class-ap-head-to-tail", title="Class AP from head to tail", n_bins=n_bins,
                    value_label="class AP", caption={
                        b: f"Grey: mean train instances per class in each bin, from {tc.source}; "
                           "coloured: mean class AP." for b, tc in own.items()}))
            notes += ranking_reasons(maps)
            if notes:
                section.text += " " + " ".join(notes)
            benches = _unique([r.benchmark for r in maps])
            ref = reference_benchmark or benches[0]
            for other in benches:
                if other == ref:
                    continue
                try:
                    section.tables.append(ranking_shift_table(
                        ranking_shift_rows(maps, reference=ref, other=other), reference=ref,
                        other=other, name=f"ranking-shift-{slug(ref)}-vs-{slug(other)}"))
                except ValidationError:
                    continue  # fewer than two models on both: nothing to rank
    if vcocos:
        report.add_section(
            "V-COCO role AP",
            " ".join(["Agent AP and role AP (scenarios 1 and 2) of every model, as vsrl_eval.py computes "
                      "them.", *vcoco_reasons(vcocos)]),
            tables=[vcoco_table(vcocos)], figures=vcoco_figures(vcocos))
    if mcqs:
        report.add_section(
            "Multiple-choice HOI recognition",
            " ".join(["Set metrics of each answerer with bootstrap confidence intervals.",
                      *mcq_reasons([(_mcq_benchmark(r), r) for r in mcqs])]),
            tables=[mcq_summary_table(mcqs), mcq_table(mcqs)], figures=mcq_figures(mcqs))
    if recalls:
        report.add_section(
            "Head-to-tail recall",
            "Recall of the correct choices per HOI class, classes ordered from the most to the "
            "least frequent in train: a falling profile is a head-class bias.",
            tables=[head_to_tail_table(recalls, n_bins=n_bins)],
            figures=_head_to_tail_figures(
                _recall_panels(recalls), name="head-to-tail", title="Head-to-tail recall", n_bins=n_bins,
                value_label="recall",
                caption={b: "Grey: mean train instances per class in each bin, from "
                            f"{_recall_source(recalls, b)}; coloured: mean recall of the correct choices."
                         for b in _unique([r.benchmark for r in recalls])}))
    add_paper_sections(report, records, paper_inputs)
    if comparison is not None:
        report.add_section(
            "Published results",
            "The papers' published numbers (shipped with hoibench). A published row is comparable with "
            "a result of the same benchmark and part, metric and class set, and, for multiple choice, "
            "setting and --protocol crosshoi; comparable rows are also shown in the tables and figures "
            "above as models named 'MODEL [PAPER TABLE]'. " + " ".join(comparison.notes),
            tables=([comparison_table(comparison)] if comparison.rows else []) + published_tables())
    return report
