"""Tables and figures of the papers that the standard report did not have: the SG paper's Tables
3/4 and Figure 2 (original vs SG over the splits), the multiple-choice paper's metrics by scene
type (Finding 2, Figures 5–6) and Figure 1b, and B-RIGHT's Figure 2, Figure S6 and Tables S2/S3.

Numbers come from :mod:`hoibench.analysis` (fractions); everything shown is percent, colours come
from :mod:`hoibench.reports._style` (one per benchmark and per model), legends sit outside the
data, and a value that is undefined is printed "n/a" and not drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench._io import slug
from hoibench.analysis import (
    AugmentationCounts,
    ClassSplitCounts,
    MCQvsMap,
    SceneBreakdown,
    SGSplitTable,
    mcq_vs_map,
    sg_split_tables,
)
from hoibench.evaluation import MCQ_METRIC_NAMES
from hoibench.reports._figures import Figure, _pyplot, _render
from hoibench.reports._report import Report
from hoibench.reports._style import benchmark_color, model_color, to_percent
from hoibench.reports._tables import Table
from hoibench.results import ResultRecord

__all__ = [
    "PaperInputs",
    "add_paper_sections",
    "augmentation_tables",
    "class_counts_figure",
    "class_counts_table",
    "mcq_vs_map_figure",
    "mcq_vs_map_table",
    "scene_breakdown_figure",
    "scene_breakdown_table",
    "sg_split_figure",
    "sg_split_table",
]

NA = "n/a"


def _pct(v: float | None) -> float | None:
    return None if v is None or math.isnan(v) else to_percent(v)


def _legend_outside(ax: Any, **kw: Any) -> None:
    """Legends never cover data: to the right of the axes."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8, **kw)


def _figure(width: float, height: float) -> tuple[Any, Any]:
    plt = _pyplot()
    return plt.subplots(figsize=(width, height))


# ---------------------------------------------------------------------- SG Tables 3/4, Figure 2
def sg_split_table(t: SGSplitTable) -> Table:
    """Table 3/4: rows original, SG split 1..n, SG mean, SG std; a column per (model, part)."""
    parts = t.parts()
    cols = [(m, p) for p in parts for m in t.models if (m, p) in t.values]
    rows: list[tuple[Any, ...]] = [("original", *(_pct(t.cell(m, p, 0)) for m, p in cols))]
    rows += [(f"SG split {s}", *(_pct(t.cell(m, p, s)) for m, p in cols)) for s in t.splits]
    rows.append(("SG mean", *(_pct(t.mean(m, p)) for m, p in cols)))
    rows.append(("SG std", *(_pct(t.std(m, p)) for m, p in cols)))
    return Table(f"sg-table-{slug(t.family)}", f"{t.family} and its SG splits: {t.metric} (%) on train "
                 "and test data", ("data split", *(f"{m} ({p})" for m, p in cols)), tuple(rows),
                 caption=f"The SG paper's Tables 3/4: {t.metric} of each model on the train and the test "
                         "data of the original split and of each SG split; SG mean and SG std (population "
                         "standard deviation) over the SG splits present. Empty: no result (std needs two "
                         "splits). Train rows come from results whose benchmark ends in ':train'.")


def sg_split_figure(t: SGSplitTable) -> Figure:
    """Figure 2: per model, the test score on the original split (pale) and the mean over the SG
    splits (dark) with its standard deviation as an error bar."""
    models = [m for m in t.models if (m, "test") in t.values]
    if not models:
        raise ValidationError(f"figure sg-figure-{slug(t.family)}: no test results")
    orig = [_pct(t.cell(m, "test", 0)) for m in models]
    mean = [_pct(t.mean(m, "test")) for m in models]
    std = [_pct(t.std(m, "test")) for m in models]
    fig, ax = _figure(max(5.0, 1.3 * len(models) + 3), 3.8)
    x = np.arange(len(models))
    w = 0.38
    top = max([v for v in orig + mean if v is not None] + [1.0])
    for k, (label, vals, colour) in enumerate((
            (f"{t.family} (original)", orig, benchmark_color(t.family)),
            (f"{t.family}-SG (mean of {len(t.splits)} splits)" if len(t.splits) > 1 else
             f"{t.family}-SG (split {t.splits[0]})", mean, benchmark_color(f"{t.family}-sg1")))):
        pos = x + (k - 0.5) * w
        ok = [i for i, v in enumerate(vals) if v is not None]
        ax.bar(pos[ok], [vals[i] for i in ok], w, color=colour, edgecolor="black", linewidth=0.4, label=label)
        for i, v in enumerate(vals):
            if v is None:
                ax.annotate(NA, (pos[i], 0), ha="center", va="bottom", fontsize=8, xytext=(0, 2),
                            textcoords="offset points", color="#555555")
                continue
            err = std[i] if k == 1 else None
            if err is not None:
                ax.errorbar([pos[i]], [v], yerr=[[min(err, v)], [err]], fmt="none", ecolor="black",
                            capsize=3, linewidth=0.8)
            ax.annotate(f"{v:.1f}", (pos[i], v + (err or 0)), ha="center", va="bottom", fontsize=7,
                        xytext=(0, 4 if err else 2), textcoords="offset points")
    ax.set_xticks(x)
    ax.set_xticklabels(models, rotation=15 if len(models) > 3 else 0, ha="right" if len(models) > 3 else "center")
    ax.set_ylim(0, top * 1.2)
    ax.set_ylabel(f"test {t.metric} (%)")
    ax.set_title(f"Original vs SG splits: {t.family}")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    _legend_outside(ax)
    return Figure(f"sg-figure-{slug(t.family)}", f"Original vs SG splits ({t.family})", _render(fig),
                  f"The SG paper's Figure 2: test {t.metric} (%) on the original split and the mean over "
                  "the SG splits; error bars: standard deviation over the SG splits (drawn with two "
                  "splits or more). n/a: no result.")


# ---------------------------------------------------------------------- scene types
def scene_breakdown_table(bd: SceneBreakdown) -> Table:
    """One row per (model, scene bin): the bin's question count and the six metrics (%)."""
    rows = []
    for m in bd.models:
        for b in bd.bins:
            vals = [_pct(bd.value(m, b, k)) for k in MCQ_METRIC_NAMES]
            rows.append((m, b, bd.counts[b], *vals))
    p = bd.params
    return Table("mcq-scenes", "Multiple-choice metrics by scene type (%)",
                 ("model", "scene", "questions", *MCQ_METRIC_NAMES), tuple(rows),
                 caption="Scene types from the annotations of each question's image: people are "
                         f"subject boxes merged at IoU ≥ {p.get('person_iou')}; 'occluded or truncated' "
                         f"(overlapping the other bins): the target's box within {p.get('border_margin')} px "
                         f"of the border or covered over {p.get('overlap')} of its area by another "
                         f"person's box. Empty: no question in the bin. {bd.not_annotated} questions "
                         "have no annotated image and no layout bin.")


def scene_breakdown_figure(bd: SceneBreakdown, *, metric: str = "instance_f1") -> Figure:
    """Bars per scene bin, one per model (its colour), the bin's question count under its label."""
    if metric not in MCQ_METRIC_NAMES:
        raise ValidationError(f"metric must be one of {list(MCQ_METRIC_NAMES)}; got {metric!r}")
    models = list(bd.models)
    fig, ax = _figure(max(6.0, 1.6 * len(bd.bins) + 3), 3.8)
    x = np.arange(len(bd.bins))
    w = 0.8 / max(len(models), 1)
    for k, m in enumerate(models):
        pos = x - 0.4 + w * (k + 0.5)
        vals = [_pct(bd.value(m, b, metric)) for b in bd.bins]
        ok = [i for i, v in enumerate(vals) if v is not None]
        ax.bar(pos[ok], [vals[i] for i in ok], w, color=model_color(m), edgecolor="black", linewidth=0.4,
               label=m)
        for i, v in enumerate(vals):
            r = bd.results.get(m, {}).get(bd.bins[i])
            ci = None if r is None or not r.ci or metric not in r.ci else r.ci[metric]
            top = v or 0
            if v is not None and ci is not None and not any(math.isnan(c) for c in ci):
                lo, hi = to_percent(ci[0]), to_percent(ci[1])
                ax.errorbar([pos[i]], [v], yerr=[[max(v - lo, 0)], [max(hi - v, 0)]], fmt="none",
                            ecolor="black", capsize=2, linewidth=0.7)
                top = max(v, hi)
            ax.annotate(NA if v is None else f"{v:.1f}", (pos[i], top), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{b}\n(n={bd.counts[b]:,})".replace(", ", ",\n", 1) for b in bd.bins], fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel(f"{metric} (%)")
    ax.set_title(f"{metric} by scene type")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    _legend_outside(ax)
    with_ci = bool(bd.params.get("n_bootstrap"))
    return Figure(f"mcq-scenes-{slug(metric)}", f"{metric} by scene type", _render(fig),
                  "Finding 2 of the multiple-choice paper: each model's score on the questions of each "
                  "scene type (n: questions in the bin; the last bin overlaps the others). n/a: no "
                  "question in the bin."
                  + (f" Error bars: bootstrap confidence intervals ({bd.params['n_bootstrap']} resamples "
                     "of the bin's questions)." if with_ci else ""))


# ---------------------------------------------------------------------- Figure 1b
def mcq_vs_map_table(points: Sequence[MCQvsMap]) -> Table:
    return Table("mcq-vs-map", "Instance-F1 (setting 3) against HICO-DET mAP (%)",
                 ("model", "instance_f1", "hico_det_map", "mcq_benchmark", "map_benchmark"),
                 tuple((p.model, to_percent(p.instance_f1), to_percent(p.hico_map), p.mcq_benchmark,
                        p.map_benchmark) for p in points),
                 caption="Models with both a setting-3 multiple-choice result and a HICO-DET mAP result.")


def mcq_vs_map_figure(points: Sequence[MCQvsMap]) -> Figure:
    """Figure 1b: one point per model, HICO-DET mAP across, Instance-F1 (setting 3) up."""
    if not points:
        raise ValidationError("figure mcq-vs-map: no model has both results")
    fig, ax = _figure(6.0, 4.0)
    for p in points:
        x, y = to_percent(p.hico_map), to_percent(p.instance_f1)
        ax.scatter([x], [y], s=50, color=model_color(p.model), edgecolor="black", linewidth=0.5, label=p.model,
                   zorder=3)
        # the name beside the point: two models never rely on colour alone
        ax.annotate(p.model, (x, y), xytext=(5, 4), textcoords="offset points", fontsize=7)
    right = max(max(to_percent(p.hico_map) for p in points) * 1.25, 1.0)
    ax.set_xlabel("HICO-DET mAP (%)")
    ax.set_ylabel("Instance-F1, setting 3 (%)")
    ax.set_xlim(-0.03 * right, right)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.set_title("Multiple-choice benchmark vs HICO-DET")
    _legend_outside(ax)
    return Figure("mcq-vs-map", "Instance-F1 (setting 3) against HICO-DET mAP", _render(fig),
                  "The multiple-choice paper's Figure 1b: each model's Instance-F1 in setting 3 against "
                  "its HICO-DET mAP, for the models with both results.")


# ---------------------------------------------------------------------- B-RIGHT Figure 2, S6
def class_counts_table(c: ClassSplitCounts, *, name: str, title: str) -> Table:
    """The imbalance summary of train and test counts (all, and seen/unseen for a zero-shot split)."""
    rows = []
    for group, parts in c.summary().items():
        for part, s in parts.items():
            rows.append((group, part, s["classes"], s["instances"], s["min"], s["median"], s["max"],
                         s["max_over_min"], s["cv"]))
    return Table(name, title, ("classes", "data", "n_classes", "instances", "min", "median", "max",
                               "max_over_min", "cv"), tuple(rows),
                 caption="Instances per HOI class; max_over_min: largest over smallest class (empty when "
                         "a class has none); cv: standard deviation over mean. Equal numbers are a "
                         "balanced split.")


def class_counts_figure(c: ClassSplitCounts, *, name: str, title: str, train_label: str = "train",
                        test_label: str = "test") -> Figure:
    """Classes head → tail by train count: train and test instances (log scale) and the per-class
    train/test ratio on the right axis; unseen classes of a zero-shot split are hatched."""
    if len(c.classes) == 0:
        raise ValidationError(f"figure {name!r}: no class to plot")
    fig, ax = _figure(9.0, 3.8)
    x = np.arange(len(c.classes))
    seen = ~c.unseen
    ax.bar(x[seen], np.maximum(c.train[seen], 0), 1.0, color="#0072B2", alpha=0.8, label=f"{train_label} instances")
    if c.unseen.any():
        ax.bar(x[c.unseen], np.maximum(c.train[c.unseen], 0), 1.0, color="#D55E00", alpha=0.8,
               label=f"{train_label} instances (unseen class)")
        ax.scatter(x[c.unseen], np.maximum(c.test[c.unseen], 0.8), s=6, color="#D55E00", marker="x",
                   label=f"{test_label} instances (unseen class)", zorder=3)
    ax.scatter(x[seen], np.maximum(c.test[seen], 0.8), s=4, color="#000000", label=f"{test_label} instances",
               zorder=3)
    ax.set_yscale("log")
    ax.set_xlabel("HOI classes, most frequent in train first")
    ax.set_ylabel("instances per class (log)")
    ax2 = ax.twinx()
    ratio = c.ratio
    ok = ~np.isnan(ratio)
    ax2.plot(x[ok], ratio[ok], color="#009E73", lw=0.8, label=f"{train_label}/{test_label} ratio")
    ax2.set_ylabel(f"{train_label}/{test_label} ratio", color="#009E73")
    ax2.set_ylim(0, max(float(ratio[ok].max()) * 1.1, 1.0) if ok.any() else 1.0)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper left", bbox_to_anchor=(1.08, 1.0), frameon=False, fontsize=8)
    ax.set_title(title)
    return Figure(name, title, _render(fig),
                  "Instances per HOI class (log scale; a class without test instances sits on the axis), "
                  "classes ordered by train count, and the train/test ratio per class (right axis, "
                  "undefined where a class has no test instance).")


def augmentation_tables(a: AugmentationCounts) -> list[Table]:
    """Tables S2 (images) and S3 (HOI instances): generated, crawled and total per split; the
    caption says which splits were counted in their balanced train set (after the per-class cap)
    and which before it (no split folder given)."""
    untrimmed = a.untrimmed
    if not untrimmed:
        where = "in the train set"
        caption = ("Augmentation images in the balanced train set and the instances the per-class cap "
                   "left them (the split folder's extra_train.json).")
    else:
        named = f"split{'s' if len(untrimmed) > 1 else ''} {', '.join(untrimmed)}"
        where = ("kept by the augmentation, before trimming" if len(untrimmed) == len(a.splits)
                 else f"in the train set ({named}: before trimming)")
        caption = (f"{named[0].upper()}{named[1:]}: counted before the balanced split's trimming (no split "
                   f"folder given): images the augmentation pipeline kept (last verdict per image) and the "
                   f"pairs of their pseudo-labels; add SPLIT=<split balanced --extra-train folder> to "
                   f"count what the train set holds.")
    out = []
    for what, label in (("images", "Table S2: generated and crawled images"),
                        ("instances", "Table S3: HOI instances of generated and crawled images")):
        out.append(Table.from_records(f"augmentation-{what}", f"{label} {where}", a.rows(what),
                                      columns=("split", "generated", "crawled", "total"), caption=caption))
    return out


# ---------------------------------------------------------------------- report sections
@dataclass(frozen=True)
class PaperInputs:
    """What the papers' extra sections need beyond result files (each part optional)."""

    scenes: SceneBreakdown | None = None
    class_counts: tuple[tuple[str, ClassSplitCounts], ...] = ()
    augmentation: AugmentationCounts | None = None
    qualitative: tuple[Any, ...] = field(default_factory=tuple)  # Sections of the qualitative pages


def add_paper_sections(report: Report, records: Sequence[ResultRecord[Any]],
                       inputs: PaperInputs | None = None) -> None:
    """Append the sections whose inputs are present: SG Tables 3/4 and Figure 2 and Figure 1b
    from the records; scene types, class counts and augmentation counts from ``inputs``."""
    try:
        sg_tables = sg_split_tables(records)
    except ValidationError as exc:  # two results of one model on one split: no silent choice
        sg_tables = []
        report.add_section("Systematic generalization: SG splits",
                           f"Tables 3/4 are left out: {exc}. `hoibench analyze sg-tables` on one result "
                           "per model, split and part gives them.")
    for t in sg_tables:
        report.add_section(
            f"Systematic generalization: {t.family} and its SG splits",
            "Train and test scores on the original split and each SG split (the SG paper's Tables "
            "3/4); the figure sets the original split against the mean over the SG splits (its "
            "Figure 2).", tables=[sg_split_table(t)], figures=[sg_split_figure(t)])
    try:
        points = mcq_vs_map(records)
    except ConfigError as exc:
        points = []
        report.add_section("Multiple-choice benchmark against HICO-DET mAP",
                           f"Figure 1b is left out: {exc}.")
    if points:
        report.add_section(
            "Multiple-choice benchmark against HICO-DET mAP",
            "Each model's Instance-F1 in setting 3 against its HICO-DET mAP (the multiple-choice "
            "paper's Figure 1b).", tables=[mcq_vs_map_table(points)], figures=[mcq_vs_map_figure(points)])
    if inputs is None:
        return
    if inputs.scenes is not None:
        report.add_section(
            "Multiple-choice metrics by scene type",
            "Scores on single-person, multi-person and occluded or truncated scenes (the "
            "multiple-choice paper's Finding 2).", tables=[scene_breakdown_table(inputs.scenes)],
            figures=[scene_breakdown_figure(inputs.scenes)])
    for name, counts in inputs.class_counts:
        name_slug = slug(name)
        zero_shot = bool(counts.unseen.any())
        report.add_section(
            f"Class counts of {name}",
            ("Seen and unseen classes of a zero-shot split (B-RIGHT Figure S6)." if zero_shot else
             "The long tail of the train split and the varying train/test ratio (B-RIGHT Figure 2)."),
            tables=[class_counts_table(counts, name=f"class-counts-{name_slug}", title=f"Class imbalance of {name}")],
            figures=[class_counts_figure(counts, name=f"class-counts-{name_slug}", title=f"Instances per class: {name}")])
    if inputs.augmentation is not None:
        report.add_section("Generated and crawled training images",
                           "What the augmentation pipeline added to each split (B-RIGHT Tables S2/S3).",
                           tables=augmentation_tables(inputs.augmentation))
    for section in inputs.qualitative:
        report.sections.append(section)
