"""Statistics of a question set (``hoibench mcq stats``): size, classes, correct-answer histogram,
Table 1's scene composition and the class distribution against the train split (its figure is
:func:`hoibench.reports.class_distribution_figure`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from hoibench.benchmarks._distribution import head_tail_ratio, kl_divergence, scene_composition
from hoibench.benchmarks.mcq._builder import class_counts
from hoibench.data import HOIDataset, MCQuestion

__all__ = ["PAPER_REFERENCE", "correct_class_counts", "question_statistics"]

#: the paper's numbers for its benchmark (001_*.txt Table 1, sec. 2.1-2.2)
PAPER_REFERENCE = {
    "images": 1274,
    "single_person_single_object": 0.333,
    "multi_person_different_hoi": 0.389,
    "same_hoi_within_multi_person": 0.288,
    "kl_train_benchmark": 0.629,
    "head_tail_ratio": 7.1,
    "hico_det_test": {"single_person_single_object": 0.602, "multi_person_different_hoi": 0.075,
                      "same_hoi_within_multi_person": 0.760, "kl_train_test": 0.088, "head_tail_ratio": 80.2},
}


def question_statistics(
    questions: Sequence[MCQuestion],
    *,
    dataset: HOIDataset | None = None,
    train_counts: np.ndarray | None = None,
    person_iou: float = 0.5,
) -> dict[str, Any]:
    """Counts and distribution statistics of ``questions``.

    Parameters
    ----------
    dataset:
        Annotations of the questions' images (matched by file name) for Table 1's scene shares.
    train_counts:
        Per-class train counts for KL(train ‖ benchmark) and the top-20/bottom-20 head/tail ratio;
        the benchmark's class counts are its correct choices (in-vocabulary ones).
    """
    settings = Counter(q.setting for q in questions)
    n_correct = Counter(len(q.correct) for q in questions)
    n_choices = Counter(len(q.choices) for q in questions)
    oddities = Counter(re.sub(r"'[^']*'", "…", o) for q in questions for o in q.meta.get("oddities", []))
    out: dict[str, Any] = {
        "questions": len(questions),
        "images": len({q.file_name for q in questions}),
        "settings": {str(k): v for k, v in sorted(settings.items())},
        "correct_answers_histogram": {str(k): v for k, v in sorted(n_correct.items())},
        "choices_histogram": {str(k): v for k, v in sorted(n_choices.items())},
        "out_of_vocabulary_choices": sum(1 for q in questions for c in q.choices if not c.in_vocabulary),
        "distinct_correct_texts": len({q.choices[i].text for q in questions for i in q.correct}),
        "distinct_choice_texts": len({c.text for q in questions for c in q.choices}),
        "oddities": dict(oddities),
    }
    n_hois = 600 if dataset is None else dataset.vocab.n_hois
    counts, all_choice = correct_class_counts(questions, n_hois, label_space=None if dataset is None
                                              else dataset.vocab.name)
    if all_choice.sum() > 0:
        out["classes_correct"] = int((counts > 0).sum())
        out["classes_any_choice"] = int((all_choice > 0).sum())
        if train_counts is not None and counts.sum() > 0:
            out["kl_train_benchmark"] = kl_divergence(train_counts, counts, support="q")
            out["kl_train_benchmark_full_support"] = kl_divergence(train_counts, counts)
            out["head_tail_ratio"] = head_tail_ratio(train_counts, counts)
    if dataset is not None:
        names = sorted({q.file_name for q in questions})
        idx = []
        for f in names:
            try:
                idx.append(dataset.index_of(f))
            except KeyError:
                continue
        out["images_matched_to_annotations"] = len(idx)
        if idx:
            sc = scene_composition(dataset, images=np.asarray(idx), iou_threshold=person_iou)
            out["scene_composition"] = sc.as_dict()
    return out


def correct_class_counts(questions: Sequence[MCQuestion], n_hois: int, *,
                         label_space: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(correct, any choice)`` counts per in-vocabulary class of HICO-DET (or ``label_space``)
    questions."""
    space = label_space or "hico-det"
    kept = [q for q in questions if q.label_space == space]
    return class_counts(kept, n_hois), class_counts(kept, n_hois, correct_only=False)
