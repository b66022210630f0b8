"""Systems under test: the multiple-choice task for VLMs (:mod:`hoibench.runners.mcq`) and the
built-in baselines (an oracle-box object-prior HOI detector, prior and random answerers).

The chat backends they call live one floor down, in :mod:`hoibench.models`.
"""

from hoibench.runners.baselines import (
    ObjectPriorDetector,
    PriorAnswerer,
    RandomAnswerer,
    verb_object_counts,
)
from hoibench.runners.mcq import MCQRunner, RunSummary

__all__ = [
    "MCQRunner",
    "ObjectPriorDetector",
    "PriorAnswerer",
    "RandomAnswerer",
    "RunSummary",
    "verb_object_counts",
]
