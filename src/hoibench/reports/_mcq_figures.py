"""Figures of a multiple-choice question set (``hoibench mcq stats --plot``): the class
distribution of the correct choices against the train split's."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.reports._figures import Figure, _pyplot, _render
from hoibench.reports._style import benchmark_color

__all__ = ["class_distribution_figure"]


def class_distribution_figure(train_counts: Sequence[float] | np.ndarray, counts: Sequence[float] | np.ndarray,
                              *, title: str = "", name: str = "class-distribution") -> Figure:
    """Class shares, classes sorted by train frequency (stable): the train split's as a line, the
    benchmark's correct choices as bars, on a log scale (the gap is the benchmark's rebalancing)."""
    train = np.asarray(train_counts, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    if train.ndim != 1 or train.shape != c.shape:
        raise ValidationError(f"figure {name!r}: train_counts and counts must be 1-d of one length; "
                              f"got {train.shape} and {c.shape}")
    if train.sum() <= 0:
        raise ValidationError(f"figure {name!r}: the train counts are all zero")
    plt = _pyplot()
    order = np.argsort(-train, kind="stable")
    x = np.arange(len(order))
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.bar(x, 100 * c[order] / max(c.sum(), 1), width=1.0, color=benchmark_color("mcq"), alpha=0.6,
           label="benchmark (correct choices)")
    ax.plot(x, 100 * train[order] / train.sum(), color="#7f7f7f", lw=1.2, label="train")
    ax.set_yscale("log")
    ax.set_xlabel("HOI classes, most frequent in train first")
    ax.set_ylabel("share of instances (%)")
    title = title or "class distribution"
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return Figure(name, title, _render(fig), colors={"mcq": benchmark_color("mcq")}, caption=
                  "Share of each class among the train instances (line) and among the benchmark's "
                  "correct choices (bars); classes from the most to the least frequent in train.")
