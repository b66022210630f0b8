"""The multiple-choice HOI benchmark of ``001_*.txt``: builder, negative-filtering judges, and
the statistics of a question set (the loader lives in :mod:`hoibench.formats.crosshoi`, the metrics
in :mod:`hoibench.evaluation`)."""

from hoibench.benchmarks.mcq._builder import (
    MCQBuild,
    build_mcq_benchmark,
    build_mcq_training_set,
    class_counts,
    similar_verbs,
    time_sensitive_classes,
)
from hoibench.benchmarks.mcq._detections import answers_from_detections
from hoibench.benchmarks.mcq._judges import DEFAULT_JUDGE_PROMPT, NegativeFilter
from hoibench.benchmarks.mcq._stats import (
    PAPER_REFERENCE,
    correct_class_counts,
    question_statistics,
)

__all__ = [
    "DEFAULT_JUDGE_PROMPT",
    "PAPER_REFERENCE",
    "MCQBuild",
    "NegativeFilter",
    "answers_from_detections",
    "build_mcq_benchmark",
    "build_mcq_training_set",
    "class_counts",
    "correct_class_counts",
    "question_statistics",
    "similar_verbs",
    "time_sensitive_classes",
]
