"""One visual language for every figure of a report.

A benchmark (and a model, where models are compared) keeps one colour in every figure, so a reader
who learnt "B-RIGHT is orange" from the bar chart is not misled by the box plot below it. Colours
come from the benchmark's *name*, never from its position in a list, so two reports that hold
different subsets still agree.
"""

from __future__ import annotations

import hashlib

from hoibench.evaluation import interval_excludes_estimate

# Colour-blind-safe palette (Okabe-Ito, then Tol's muted set) for names hoibench defines itself.
_KNOWN_BENCHMARKS: dict[str, str] = {
    "hico-det": "#0072B2",
    "hico-det-sg1": "#56B4E9",
    "hico-det-sg2": "#009E73",
    "hico-det-sg3": "#F0E442",
    "hico-det-sg4": "#CC79A7",
    "b-right": "#E69F00",
    "v-coco": "#D55E00",
    "v-coco-sg1": "#882255",
    "v-coco-sg2": "#44AA99",
    "v-coco-sg3": "#999933",
    "crosshoi": "#332288",
    "mcq": "#332288",
    "mcq-hoi": "#332288",
    "mcq-hoi setting 1": "#332288",
    "mcq-hoi setting 2": "#6699CC",
    "mcq-hoi setting 3": "#661100",
}
_FALLBACK: tuple[str, ...] = (
    "#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB",
    "#117733", "#88CCEE", "#DDCC77", "#CC6677", "#AA4499",
)


def _stable_pick(name: str) -> str:
    digest = hashlib.sha1(name.encode("utf-8")).digest()
    return _FALLBACK[digest[0] % len(_FALLBACK)]


def benchmark_color(name: str) -> str:
    """The one colour of benchmark *name* in every figure (case-insensitive)."""
    key = name.strip().lower()
    return _KNOWN_BENCHMARKS.get(key) or _stable_pick("benchmark:" + key)


def model_color(name: str) -> str:
    """The one colour of model *name* wherever models are compared."""
    return _stable_pick("model:" + name.strip().lower())


def to_percent(value: float) -> float:
    """Fractions (the Python API's unit) to the percent every table and figure shows."""
    return 100.0 * value


#: what a table cell or a figure label says for a value that is undefined (never "0.00")
NOT_AVAILABLE = "n/a"
#: the mark of an interval that does not contain its own estimate (explained in the caption)
EXCLUDES_MARK = "†"
#: resolution of raster figures: twice the 100 dpi a figure is laid out at, shown at half size
FIGURE_DPI = 200


def interval_excludes(value: float | None, low: float | None, high: float | None) -> bool:
    """Whether the interval ``[low, high]`` leaves out its own estimate ``value``
    (:func:`~hoibench.evaluation.interval_excludes_estimate`, with a margin for the rounding of
    values the reports convert)."""
    return interval_excludes_estimate(value, low, high, rtol=1e-12)
