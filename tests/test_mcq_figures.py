"""The class-distribution figure of ``hoibench mcq stats --plot`` (a report Figure builder)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from hoibench._exceptions import ValidationError
from hoibench.reports import Figure, class_distribution_figure

TRAIN = np.array([50, 0, 7, 300, 1, 12])
COUNTS = np.array([3, 1, 2, 4, 0, 2])


def test_png_figure_same_numbers_same_bytes() -> None:
    fig = class_distribution_figure(TRAIN, COUNTS, title="q.jsonl")
    assert isinstance(fig, Figure) and fig.name == "class-distribution" and fig.title == "q.jsonl"
    with Image.open(io.BytesIO(fig.png)) as im:
        assert im.format == "PNG" and im.width > im.height > 100
    assert class_distribution_figure(TRAIN, COUNTS, title="q.jsonl").png == fig.png
    assert class_distribution_figure(TRAIN, COUNTS[::-1], title="q.jsonl").png != fig.png
    assert class_distribution_figure(TRAIN, COUNTS).title == "class distribution"


@pytest.mark.parametrize(("train", "counts", "match"), [
    (TRAIN, COUNTS[:-1], r"one length; got \(6,\) and \(5,\)"),
    (np.zeros(6), COUNTS, "train counts are all zero"),
])
def test_bad_counts_are_named(train: np.ndarray, counts: np.ndarray, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        class_distribution_figure(train, counts)
