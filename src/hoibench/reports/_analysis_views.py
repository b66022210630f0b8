"""Tables and figures of the analyses (:mod:`hoibench.analysis`): the presentation side of the
class-AP spread, ranking shifts, TP->FP sensitivity and the bootstrap model comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hoibench.analysis import (
    HeadToTailRecall,
    ModelComparison,
    RankShift,
    SensitivityResult,
    class_ap_spreads,
    class_ap_values,
    ideal_sensitivity,
    variance_reduction,
)
from hoibench.evaluation import MAP_CI_METHOD
from hoibench.reports._figures import Figure, _pyplot, _render, class_ap_boxplot
from hoibench.reports._tables import Table

__all__ = [
    "class_ap_boxplot_figure",
    "class_ap_spread_table",
    "head_to_tail_figure",
    "paired_difference_table",
    "rank_distribution_figure",
    "rank_distribution_table",
    "ranking_shift_figure",
    "ranking_shift_markdown",
    "ranking_shift_table",
    "sensitivity_figure",
    "sensitivity_table",
]


def class_ap_spread_table(results: Sequence[Any], *, classes: Sequence[int] | None = None,
                          reference: str | None = None, other: str | None = None) -> Any:
    """A :class:`~hoibench.reports.Table` of :class:`ClassAPSpread` rows, one per result.

    With ``reference`` and ``other`` benchmark names, a ``variance_ratio`` column gives each
    model's variance on ``other`` relative to ``reference``.
    """

    spreads = class_ap_spreads(results, classes=classes)
    ratio = variance_reduction(spreads, reference=reference, other=other) if reference and other else {}
    cols = ("model", "benchmark", "classes", "mean", "median", "variance", "std", "q1", "q3", "iqr",
            "min", "max", "zero_ap_share")
    rows = []
    for s in spreads:  # fractions -> percent (variance: percent points squared)
        row = (s.model, s.benchmark, s.n_classes, 100 * s.mean, 100 * s.median, 1e4 * s.variance,
               100 * s.std, 100 * s.q1, 100 * s.q3, 100 * s.iqr, 100 * s.min, 100 * s.max,
               100 * s.zero_ap_share)
        if ratio:
            row = (*row, ratio.get(s.model) if s.benchmark == other else None)
        rows.append(row)
    if ratio:
        cols = (*cols, f"variance_ratio_vs_{reference}")
    return Table("class-ap-spread", "Class-AP spread (%)", cols, tuple(rows),
                 caption="AP in percent over the classes with ground truth; variance is the "
                         "population variance (percent points squared); zero_ap_share is the "
                         "percentage of classes with AP 0.")


def class_ap_boxplot_figure(results: Sequence[Any], *, classes: Sequence[int] | None = None,
                            title: str = "Class-AP distribution per model", name: str = "class-ap-boxplot") -> Any:
    """Box plots of class AP, one box per (model, benchmark), like Figure 6 (PNG via reports)."""

    data: dict[str, dict[str, np.ndarray]] = {}
    for r in results:
        data.setdefault(r.model, {})[r.benchmark] = 100 * class_ap_values(r.result, classes=classes,
                                                                          name=r.source or r.model)
    return class_ap_boxplot(name, title, data=data,
                            caption="Median (line), interquartile range (box), outliers (dots).")


def ranking_shift_markdown(rows: Sequence[RankShift], *, reference: str, other: str,
                           decimals: int = 2, zero_shot: Mapping[str, Mapping[str, float]] | None = None) -> str:
    """Table 3 in Markdown: ``| model | mAP | rank | mAP | rank (arrow) |`` (mAP in percent).

    ``zero_shot``: Table 3's zero-shot columns, benchmark -> model -> unseen mAP (fraction); a
    model without a score there shows ``–``, as in the paper.
    """
    zs = dict(zero_shot or {})
    lines = [f"| Model | {reference} mAP | {reference} rank | {other} mAP | {other} rank |"
             + "".join(f" {b} zero-shot (unseen) mAP |" for b in zs),
             "| --- | ---: | ---: | ---: | ---: |" + " ---: |" * len(zs)]
    for r in rows:
        arrow = f" ({r.arrow})" if r.shift or r.tie_only else ""
        lines.append(f"| {r.model} | {100 * r.map_reference:.{decimals}f} | {r.rank_reference} | "
                     f"{100 * r.map_other:.{decimals}f} | {r.rank_other}{arrow} |"
                     + "".join(f" {_zero_shot_cell(col.get(r.model), decimals)} |" for col in zs.values()))
    return "\n".join(lines) + "\n"


def _zero_shot_cell(value: float | None, decimals: int) -> str:
    """A zero-shot mAP (fraction) in percent; ``–`` where the model has none, ``n/a`` where undefined."""
    if value is None:
        return "–"
    return "n/a" if value != value else f"{100 * value:.{decimals}f}"


def ranking_shift_table(rows: Sequence[RankShift], *, reference: str, other: str,
                        name: str = "ranking-shift", zero_shot: Mapping[str, Mapping[str, float]] | None = None,
                        ) -> Table:
    """B-RIGHT Table 3 as a :class:`~hoibench.reports.Table` (for CSV/JSON output and reports;
    mAP in percent); ``zero_shot`` adds its zero-shot columns (as :func:`ranking_shift_markdown`;
    empty where a model has no score)."""
    zs = dict(zero_shot or {})

    def pct(v: float | None) -> float | None:
        return None if v is None else 100 * v

    return Table(name, f"Ranking shift: {reference} → {other}",
                 ("model", f"map_{reference}", f"rank_{reference}", f"map_{other}", f"rank_{other}",
                  "shift", "arrow", *(f"map_zero_shot_unseen_{b}" for b in zs)),
                 tuple((r.model, 100 * r.map_reference, r.rank_reference, 100 * r.map_other, r.rank_other,
                        r.shift, r.arrow, *(pct(col.get(r.model)) for col in zs.values())) for r in rows),
                 caption=f"Rank 1 = highest mAP; shift > 0 (↑): the model ranks higher on {other}; "
                         "'=': the ranks differ only because models tie (equal mAP), which is no "
                         "change (shift 0)."
                         + (" Zero-shot columns: the mean AP over each benchmark's unseen classes "
                            "(results scored with --classes rf-uc or zero-shot:DIR)." if zs else ""))


def ranking_shift_figure(rows: Sequence[RankShift], *, reference: str, other: str,
                         spread: Mapping[tuple[str, str], float] | None = None,
                         name: str = "ranking-shift") -> Any:
    """Bump chart of the two rankings like Figure 1b; circle area ~ class-AP variance.

    ``spread[(model, benchmark)]`` is the class-AP variance drawn as the circle size (optional).
    """

    plt = _pyplot()
    n = len(rows)
    fig, ax = plt.subplots(figsize=(5.5, 0.45 * n + 1.5))
    var = [v for v in (spread or {}).values() if v == v]
    vmax = max(var) if var else 1.0
    slot: dict[tuple[int, int], int] = {}  # tied models share a rank: stack their labels
    for r in rows:
        colour = "#31a354" if r.shift > 0 else ("#e6550d" if r.shift < 0 else "#636363")
        ax.plot([0, 1], [r.rank_reference, r.rank_other], color=colour, linewidth=1.2, zorder=1)
        for x, bench, rank in ((0, reference, r.rank_reference), (1, other, r.rank_other)):
            v = (spread or {}).get((r.model, bench))
            size = 40 + 400 * (v / vmax) if v is not None and vmax > 0 else 60
            ax.scatter([x], [rank], s=size, color=colour, alpha=0.55, edgecolor="black", linewidth=0.4,
                       zorder=2)
        k0 = slot.setdefault((0, r.rank_reference), 0)
        slot[(0, r.rank_reference)] += 1
        k1 = slot.setdefault((1, r.rank_other), 0)
        slot[(1, r.rank_other)] += 1
        ax.annotate(f"{r.rank_reference}. {r.model} {100 * r.map_reference:.2f}", (0, r.rank_reference),
                    xytext=(-12, -11 * k0), textcoords="offset points", ha="right", va="center", fontsize=8)
        ax.annotate(f"{r.rank_other}. {r.model} {100 * r.map_other:.2f}"
                    + (f" ({r.arrow})" if r.shift or r.tie_only else ""),
                    (1, r.rank_other), xytext=(12, -11 * k1), textcoords="offset points", ha="left",
                    va="center", fontsize=8)
    ax.set_xlim(-0.9, 1.9)
    ax.set_ylim(n + 0.7, 0.3)
    ax.set_xticks([0, 1])
    ax.set_xticklabels([reference, other])
    ax.set_yticks([])  # the rank is in each label: tick labels would collide with them
    ax.spines["left"].set_visible(False)
    ax.set_title(f"Ranking shift: {reference} → {other} (rank 1 = highest mAP)", fontsize=10)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    caption = ("Lines join each model's rank on the two benchmarks (green: up, orange: down, grey: "
               "no change; '=': a change that only a tie explains).")
    if spread:
        caption += " Circle area grows with the model's class-AP variance on that benchmark."
    return Figure(name, f"Ranking shift: {reference} → {other}", _render(fig), caption)


def sensitivity_table(result: SensitivityResult, *, name: str = "tp-fp-sensitivity") -> Any:
    """Per-class rows as a :class:`~hoibench.reports.Table` (AP in percent)."""

    rows = tuple((r["class"], r["name"], r["n_gt"], 100 * r["ap"], 100 * r["ap_flipped"], 100 * r["drop"],
                  100 * r["relative_drop"]) for r in result.records())
    return Table(name, "TP→FP sensitivity per class",
                 ("class", "name", "n_gt", "ap", "ap_flipped", "drop", "relative_drop"), rows,
                 caption="AP (%) before and after the highest-scoring true positive of the class "
                         "becomes a false positive; relative_drop in percent of the AP.")


def sensitivity_figure(result: SensitivityResult, *, ideal: bool = True, name: str = "tp-fp-sensitivity",
                       title: str = "AP drop when the top true positive becomes a false positive",
                       ap_method: str = "voc11", thresholds: str = "matlab") -> Any:
    """Scatter of relative AP drop against test instances per class (log x), like Figure 3.

    With ``ideal``, the curve of a class whose detections are all correct is drawn for reference.
    """

    plt = _pyplot()
    rel = 100 * result.relative_drop
    ok = ~np.isnan(rel)
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    ax.scatter(result.n_gt[ok], rel[ok], s=10, alpha=0.6, color="#08519c", label="classes")
    if ideal and ok.any():
        hi = int(result.n_gt[ok].max())
        ns = np.unique(np.geomspace(1, max(hi, 2), num=60).astype(np.int64))
        ax.plot(ns, 100 * ideal_sensitivity(ns, ap_method=ap_method, thresholds=thresholds), color="#e6550d",
                linewidth=1.2, label="all detections correct")
    ax.set_xscale("log")
    ax.set_xlabel("test instances of the class")
    ax.set_ylabel("relative AP drop (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return Figure(name, title, _render(fig),
                  "Each dot is a class: the percentage of its AP lost when its highest-scoring true "
                  "positive is counted as a false positive.")


# ------------------------------------------------------------------------- tables and plot
def paired_difference_table(cmp: ModelComparison, metric: str = "full", *,
                            reference: str | None = None, method: str = MAP_CI_METHOD) -> Any:
    """Paired differences as a :class:`~hoibench.reports.Table` (Markdown / CSV)."""

    points = ("map_a", "map_b", "difference", "ci_low", "ci_high", "se", "bias")  # fractions -> percent
    rows = [{k: 100 * v if k in points else v for k, v in r.items()}
            for r in cmp.paired_differences(metric, reference=reference, method=method)]
    level = f"{cmp.confidence * 100:g}%"
    return Table.from_records(
        f"paired-difference-{metric.replace('_', '-')}",
        f"Paired mAP differences ({metric}, {cmp.n_resamples} image-bootstrap replicates)",
        rows, columns=["model_a", "model_b", "map_a", "map_b", "difference", "ci_low", "ci_high",
                       "se", "p_a_better", "bias"],
        caption=f"difference = mAP(a) − mAP(b) in points; ci_low/ci_high: {level} {method} CI over the "
                "same resamples of test images for both models (empty where it would not hold the "
                "difference: read se); se: bootstrap standard error; p_a_better: share of replicates "
                f"where a scores higher; bias: mean replicate difference − difference (seed {cmp.seed}).")


def rank_distribution_table(cmp: ModelComparison, metric: str = "full") -> Any:
    """Rank stability per model plus the share of replicates at each rank."""

    stab = cmp.rank_stability(metric)
    dist = cmp.rank_distribution(metric)
    recs = []
    for s in stab:
        m = cmp.models.index(s.model)
        rec = {k: 100 * v if k == "map" else v for k, v in s.to_dict().items() if k != "benchmark"}
        rec.update({f"p_rank_{r + 1}": float(dist[m, r]) for r in range(len(cmp.models))})
        recs.append(rec)
    level = f"{cmp.confidence * 100:g}%"
    return Table.from_records(
        f"rank-stability-{metric.replace('_', '-')}",
        f"Rank stability ({metric}, {cmp.n_resamples} image-bootstrap replicates)", recs,
        caption=f"rank_low/rank_high: {level} interval of the rank over replicates; p_rank_r: share "
                f"of replicates with rank r (1 = highest mAP) (seed {cmp.seed}).")


def rank_distribution_figure(cmp: ModelComparison, metric: str = "full") -> Any:
    """Stacked bars: for each model, how often it takes each rank over the replicates."""

    plt = _pyplot()
    k = cmp._k(metric)
    order = sorted(range(len(cmp.models)), key=lambda m: (-cmp.estimate[m, k], cmp.models[m]))
    dist = cmp.rank_distribution(metric)[order]
    n = len(cmp.models)
    fig, ax = plt.subplots(figsize=(6.5, 0.45 * n + 1.6))
    cmap = plt.get_cmap("viridis", max(n, 2))
    left = np.zeros(n)
    y = np.arange(n)
    for r in range(n):
        ax.barh(y, 100 * dist[:, r], left=left, color=cmap(r), edgecolor="white", linewidth=0.5,
                label=f"rank {r + 1}")
        for i in np.flatnonzero(dist[:, r] >= 0.08):
            ax.text(left[i] + 50 * dist[i, r], y[i], f"{dist[i, r] * 100:.0f}%", ha="center", va="center",
                    fontsize=7, color="white" if r < n / 2 else "black")
        left += 100 * dist[:, r]
    ax.set_yticks(y)
    ax.set_yticklabels([f"{cmp.models[m]} ({100 * cmp.estimate[m, k]:.2f})" for m in order], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of bootstrap replicates (%)")
    ax.set_title(f"Rank distribution ({metric} mAP, {cmp.n_resamples} replicates)", fontsize=10)
    ax.legend(ncol=min(n, 6), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25 - 0.02 * n),
              frameon=False)
    fig.tight_layout()
    return Figure(f"rank-distribution-{metric.replace('_', '-')}",
                  f"Rank distribution ({metric} mAP)", _render(fig),
                  "Each bar splits the bootstrap replicates (test images resampled with replacement, "
                  "the same resamples for every model) by the rank the model takes; models in "
                  "observed order, observed mAP in brackets.")


def head_to_tail_figure(result: HeadToTailRecall, *, title: str = "",
                        name: str = "head-to-tail-recall") -> Figure:
    """Bar chart of recall per frequency bin, head to tail (the multiple-choice paper's Figure 3)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    xs = [b.index for b in result.bins]
    ys = [100 * (b.recall or 0.0) for b in result.bins]
    ax.bar(xs, ys, color="tab:red")
    ax.set_xticks(xs, [f"{b.max_count}\n–{b.min_count}" for b in result.bins], fontsize=7)
    ax.set_xlabel("training count of the classes in the bin (head → tail)")
    ax.set_ylabel("recall (%)")
    ax.set_ylim(0, 100)
    title = title or "Recall by class frequency"
    ax.set_title(title)
    fig.tight_layout()
    return Figure(name, title, _render(fig),
                  "Recall of the correct choices of the classes in each bin; bins from the most to "
                  "the least frequent classes in train.")
