"""Plots of a report as PNG bytes (matplotlib's Agg backend, imported lazily).

Each function returns a :class:`Figure` record; :class:`~hoibench.reports.Report` embeds the PNG in
the HTML page (base64) and writes it to ``figures/<name>.png``. PNGs carry no timestamp, so the same
numbers give the same bytes.
"""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.evaluation import VCOCOResult
from hoibench.reports._style import (
    EXCLUDES_MARK,
    FIGURE_DPI,
    NOT_AVAILABLE,
    benchmark_color,
    interval_excludes,
)

__all__ = [
    "Figure",
    "binned_head_to_tail",
    "class_ap_boxplot",
    "grouped_bars",
    "head_to_tail_recall_plot",
    "vcoco_ap_figure",
]

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
#: neutral colours for what is neither a benchmark nor a model (train counts, V-COCO scenarios)
_NEUTRAL = ("#7f7f7f", "#4477AA", "#EE6677", "#228833", "#CCBB44", "#AA3377")


@dataclass(frozen=True)
class Figure:
    """A rendered plot: file-name stem, title, PNG bytes (at :data:`FIGURE_DPI`, i.e. 2×), a
    caption and ``colors``, the colour of each named benchmark or model it draws (the report's
    HTML and JSON carry it, so a reader or a test can check that a name keeps its colour)."""

    name: str
    title: str
    png: bytes
    caption: str = ""
    colors: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _SLUG.match(self.name):
            raise ValidationError(f"figure name must match {_SLUG.pattern}; got {self.name!r}")
        if not self.png.startswith(b"\x89PNG\r\n\x1a\n"):
            raise ValidationError(f"figure {self.name!r}: png is not PNG data")
        object.__setattr__(self, "colors", dict(self.colors))

    @property
    def size(self) -> tuple[int, int]:
        """Width and height of the PNG in pixels (from its IHDR header)."""
        w, h = struct.unpack(">II", self.png[16:24])
        return int(w), int(h)

    @property
    def display_size(self) -> tuple[int, int]:
        """The size to show it at: the layout size, half the 2× raster."""
        w, h = self.size
        scale = FIGURE_DPI / 100
        return round(w / scale), round(h / scale)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _render(fig: Any) -> bytes:
    plt = _pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=FIGURE_DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _value_text(v: float) -> str:
    return f"{v:,.1f}" if abs(v) >= 1 or v == 0 else f"{v:.2f}"


def grouped_bars(
    name: str,
    title: str,
    *,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    errors: Mapping[str, Sequence[tuple[float, float] | None]] | None = None,
    ylabel: str = "mAP (%)",
    caption: str = "",
    colors: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    note: str = "",
) -> Figure:
    """Bars per group (model), one bar per series (benchmark), like the SG paper's Figure 2.

    ``errors[series][i]`` is an interval ``(low, high)`` drawn as an error bar (a bootstrap
    confidence interval or mean ± std); one that leaves out its bar's value is drawn dashed and
    its label marked †. Undefined values (None/NaN) get no bar and an "n/a" label; a value of 0
    gets a short stroke, so that it is not mistaken for a missing bar. ``colors[series]`` fixes a
    series' colour (:func:`~hoibench.reports._style.benchmark_color`), ``labels[series]`` its
    legend text; ``note`` is printed on the figure (e.g. that the bars use different class sets).
    The caption should mention error bars only when some are given; the legend sits outside the
    axes.
    """
    plt = _pyplot()
    groups = list(groups)
    if not groups or not series:
        raise ValidationError(f"figure {name!r}: nothing to plot")
    for s, vals in series.items():
        if len(vals) != len(groups):
            raise ValidationError(f"figure {name!r}: series {s!r} has {len(vals)} values for "
                                  f"{len(groups)} groups")
    n = len(series)
    width = 0.8 / n
    x = np.arange(len(groups))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(groups) * max(1, n / 2) + 2), 3.8))
    used: dict[str, str] = {}
    top = 0.0
    for k, (label, vals) in enumerate(series.items()):
        colour = (colors or {}).get(label) or _NEUTRAL[k % len(_NEUTRAL)]
        used[label] = colour
        v = np.array([np.nan if a is None else float(a) for a in vals])
        pos = x - 0.4 + width * (k + 0.5)
        ax.bar(pos, np.nan_to_num(v), width, label=(labels or {}).get(label, label), color=colour,
               edgecolor="black", linewidth=0.4)
        label_y = np.nan_to_num(v).copy()
        excluded = np.zeros(len(groups), dtype=bool)
        errs = (errors or {}).get(label)
        if errs is not None:
            for i, e in enumerate(errs):
                if e is None or np.isnan(v[i]):
                    continue
                excluded[i] = interval_excludes(v[i], e[0], e[1])
                lo, hi = min(e[0], v[i]), max(e[1], v[i])
                ax.errorbar([pos[i]], [v[i]], yerr=[[v[i] - lo], [hi - v[i]]], fmt="none",
                            ecolor="#b2182b" if excluded[i] else "black", capsize=3, linewidth=0.8,
                            linestyle="--" if excluded[i] else "-")
                label_y[i] = max(label_y[i], hi)  # the value label goes above the cap
        for i in range(len(groups)):
            if np.isnan(v[i]):
                ax.annotate(NOT_AVAILABLE, (pos[i], 0), ha="center", va="bottom", fontsize=7,
                            color="#555555", xytext=(0, 2), textcoords="offset points")
                continue
            if v[i] == 0:
                ax.plot([pos[i] - width * 0.45, pos[i] + width * 0.45], [0, 0], color=colour,
                        linewidth=3, solid_capstyle="butt", zorder=3)
            ax.annotate(_value_text(v[i]) + (EXCLUDES_MARK if excluded[i] else ""), (pos[i], label_y[i]),
                        ha="center", va="bottom", fontsize=7, xytext=(0, 3), textcoords="offset points")
            top = max(top, float(label_y[i]))
    ax.set_ylim(0, max(top * 1.15, 1.0))
    ax.set_xticks(x)
    ax.set_xticklabels(groups, rotation=15 if len(groups) > 3 else 0, ha="right" if len(groups) > 3 else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if note:
        ax.text(0.0, -0.2 if len(groups) > 3 else -0.14, note, transform=ax.transAxes, fontsize=7,
                color="#555555", va="top", ha="left")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return Figure(name, title, _render(fig), caption, colors=used)


def class_ap_boxplot(
    name: str,
    title: str,
    *,
    data: Mapping[str, Mapping[str, Sequence[float]]],
    ylabel: str = "class AP (%)",
    caption: str = "",
) -> Figure:
    """Box plots of per-class AP, one box per (model, benchmark), like B-RIGHT's Figure 6.

    ``data[model][benchmark]`` holds the APs of the classes with ground truth (NaN dropped).
    """
    plt = _pyplot()
    models = list(data)
    benches: list[str] = []
    for m in models:
        benches += [b for b in data[m] if b not in benches]
    if not models or not benches:
        raise ValidationError(f"figure {name!r}: nothing to plot")
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(models) * max(1, len(benches) / 2) + 2), 4.0))
    width = 0.8 / len(benches)
    used: dict[str, str] = {}
    for k, b in enumerate(benches):
        pos, vals = [], []
        for i, m in enumerate(models):
            if b in data[m]:
                a = np.asarray(data[m][b], dtype=float)
                pos.append(i - 0.4 + width * (k + 0.5))
                vals.append(a[~np.isnan(a)])
        if not pos:
            continue
        bp = ax.boxplot(vals, positions=pos, widths=width * 0.85, patch_artist=True,
                        flierprops={"markersize": 2, "alpha": 0.5}, medianprops={"color": "black"})
        used[b] = benchmark_color(b)
        for patch in bp["boxes"]:
            patch.set_facecolor(used[b])
        for med, a in zip(bp["medians"], vals):  # a box without height: its median in its colour
            if len(a) and np.percentile(a, 75) == np.percentile(a, 25):
                med.set_color(used[b])
                med.set_linewidth(3)
        bp["boxes"][0].set_label(b)
    ax.set_xticks(np.arange(len(models)))
    ax.set_xticklabels(models)
    ax.set_xlim(-0.6, len(models) - 0.4)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return Figure(name, title, _render(fig), caption, colors=used)


def binned_head_to_tail(train_counts: Sequence[float], recall: Sequence[float], *,
                        n_bins: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Order classes from head to tail by train count and cut them into ``n_bins`` equal groups.

    Returns, per bin, the mean train count, the mean recall over the bin's classes (NaN
    recalls, i.e. classes never asked about, are left out) and the number of classes. Ties in the
    train count keep the class order (stable sort), so the binning is deterministic.
    """
    counts = np.asarray(train_counts, dtype=float)
    rec = np.asarray(recall, dtype=float)
    if counts.shape != rec.shape or counts.ndim != 1:
        raise ValidationError(f"train_counts and recall must be 1-d of one length; got "
                              f"{counts.shape} and {rec.shape}")
    if n_bins < 1:
        raise ValidationError(f"n_bins must be >= 1; got {n_bins}")
    keep = ~np.isnan(rec)
    counts, rec = counts[keep], rec[keep]
    order = np.argsort(-counts, kind="stable")
    bins = [b for b in np.array_split(order, min(n_bins, max(len(order), 1))) if len(b)]
    mean_count = np.array([counts[b].mean() for b in bins])
    mean_recall = np.array([rec[b].mean() for b in bins])
    sizes = np.array([len(b) for b in bins])
    return mean_count, mean_recall, sizes


def head_to_tail_recall_plot(
    name: str,
    title: str,
    *,
    panels: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    n_bins: int = 10,
    value_label: str = "recall",
    caption: str = "",
    benchmark: str | None = None,
) -> Figure:
    """Head-to-tail recall histograms, one panel per model, like the multiple-choice paper's
    Figure 3.

    ``panels[model] = (train_counts, recall)`` per class (recall a fraction, drawn in percent);
    classes are ordered by train count (head first) and binned; grey bars give the bin's mean train
    count (left axis), coloured bars its mean recall (right axis, in the colour of ``benchmark``).
    ``value_label`` names another per-class fraction (e.g. class AP).
    """
    plt = _pyplot()
    if not panels:
        raise ValidationError(f"figure {name!r}: nothing to plot")
    colour = benchmark_color(benchmark) if benchmark else "#de2d26"
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (model, (counts, recall)) in zip(axes[0], panels.items()):
        mean_count, mean_recall, _ = binned_head_to_tail(counts, recall, n_bins=n_bins)
        x = np.arange(len(mean_count))
        ax.bar(x - 0.2, mean_count, 0.4, color=_NEUTRAL[0], label="train count")
        ax.set_ylabel("mean train instances per class", fontsize=8)
        ax.set_xlabel("class bins, head → tail", fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels([str(i + 1) for i in x], fontsize=7)
        ax2 = ax.twinx()
        ax2.bar(x + 0.2, 100 * mean_recall, 0.4, color=colour, label=value_label)
        ax2.set_ylim(0, 105)
        ax2.set_ylabel(f"{value_label} (%)", fontsize=8)
        ax.set_title(model, fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return Figure(name, title, _render(fig), caption, colors={benchmark: colour} if benchmark else {})


def vcoco_ap_figure(result: VCOCOResult, *, name: str = "vcoco-ap", title: str = "V-COCO AP per class",
                    caption: str = "") -> Figure:
    """Horizontal bars: agent AP per action, role AP per (action, role) class and scenario."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 8), gridspec_kw={"width_ratios": [1, 1.2]})
    names = list(result.action_names)
    y = np.arange(len(names))
    axes[0].barh(y, 100 * np.nan_to_num(result.agent_ap), color="tab:gray")
    axes[0].set_yticks(y, names, fontsize=8)
    axes[0].set_title(f"agent AP (mean {100 * result.agent_map:.1f})")
    roles = list(result.role_class_names)
    y = np.arange(len(roles))
    scen = result.scenarios
    height = 0.8 / len(scen)
    for k, s in enumerate(scen):
        axes[1].barh(y + k * height, 100 * np.nan_to_num(result.role_ap[s]), height=height,
                     color=_NEUTRAL[1 + k % (len(_NEUTRAL) - 1)],
                     label=f"scenario {s} (24-pair mean {100 * result.role_map(s):.1f})")
    axes[1].set_yticks(y + 0.4 - height / 2, roles, fontsize=8)
    axes[1].set_title("role AP")
    axes[1].legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    for i in np.flatnonzero(np.isnan(np.asarray(result.agent_ap, dtype=float))):
        axes[0].text(1, i, NOT_AVAILABLE, va="center", fontsize=7, color="#555555")
    undefined = np.all([np.isnan(np.asarray(result.role_ap[s], dtype=float)) for s in scen], axis=0)
    for i in np.flatnonzero(undefined):  # no positives: undefined, not a bar of 0
        axes[1].text(1, i + 0.4 - height / 2, NOT_AVAILABLE, va="center", fontsize=7, color="#555555")
    for ax in axes:
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("AP (%)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return Figure(name, title, _render(fig),
                  caption or "Bars: AP (%) of each class; classes without positives have no bar (n/a).")
