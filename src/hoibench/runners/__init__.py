"""Systems under test: the multiple-choice task for VLMs (:mod:`hoibench.runners.mcq`) on the
resumable loop that any chat-model task can run on (:func:`run_resumable`), the external person
detector of setting 3 on the same loop (:func:`detect_people`), and the built-in
baselines (an oracle-box object-prior HOI detector, prior and random answerers).

The chat backends they call live one floor down, in :mod:`hoibench.models`.
"""

from hoibench.runners._detect import DetectSummary, detect_people, list_images
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
    "DetectSummary",
    "LoopResult",
    "MCQRunner",
    "ObjectPriorDetector",
    "PriorAnswerer",
    "RandomAnswerer",
    "RecordStore",
    "RunSummary",
    "detect_people",
    "list_images",
    "run_resumable",
    "verb_object_counts",
]
