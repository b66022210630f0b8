"""Systems under test: the multiple-choice task for VLMs (:mod:`hoibench.runners.mcq`) on the
resumable loop that any chat-model task can run on (:func:`run_resumable`), and the built-in
baselines (an oracle-box object-prior HOI detector, prior and random answerers).

The chat backends they call live one floor down, in :mod:`hoibench.models`.
"""

from hoibench.runners._loop import Batch, ChatTask, LoopResult, RecordStore, run_resumable
from hoibench.runners.baselines import (
    ObjectPriorDetector,
    PriorAnswerer,
    RandomAnswerer,
    verb_object_counts,
)
from hoibench.runners.mcq import MCQRunner, RunSummary

__all__ = [
    "Batch",
    "ChatTask",
    "LoopResult",
    "MCQRunner",
    "ObjectPriorDetector",
    "PriorAnswerer",
    "RandomAnswerer",
    "RecordStore",
    "RunSummary",
    "run_resumable",
    "verb_object_counts",
]
