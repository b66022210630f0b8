"""The multiple-choice HOI benchmark of ``001_*.txt``: builder, negative-filtering judges, and
the statistics of a question set (the loader lives in :mod:`hoibench.formats.crosshoi`, the metrics
in :mod:`hoibench.evaluation`)."""

from hoibench.benchmarks.mcq._builder import (
    MCQBuild,
    build_mcq_benchmark,
    build_mcq_training_set,
    similar_verbs,
    temporal_partners,
    time_sensitive_classes,
)
from hoibench.benchmarks.mcq._detections import (
    DETECTION_RULES,
    answers_from_detections,
    answers_released_rule,
    text_detections,
)
from hoibench.benchmarks.mcq._judges import JudgeTemplate, NegativeFilter, load_judge_template
from hoibench.benchmarks.mcq._stats import (
    PAPER_REFERENCE,
    class_counts,
    class_distribution,
    correct_class_counts,
    dataset_statistics,
    distribution_setting,
    question_statistics,
)

__all__ = [
    "DETECTION_RULES",
    "PAPER_REFERENCE",
    "JudgeTemplate",
    "MCQBuild",
    "NegativeFilter",
    "answers_from_detections",
    "answers_released_rule",
    "build_mcq_benchmark",
    "build_mcq_training_set",
    "class_counts",
    "class_distribution",
    "correct_class_counts",
    "dataset_statistics",
    "distribution_setting",
    "load_judge_template",
    "question_statistics",
    "similar_verbs",
    "temporal_partners",
    "text_detections",
    "time_sensitive_classes",
]
