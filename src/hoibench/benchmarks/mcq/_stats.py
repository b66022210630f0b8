"""Statistics of a question set (``hoibench mcq stats``): size, classes, correct-answer histogram,
Table 1's scene composition and the class distribution against the train split (its figure is
:func:`hoibench.reports.class_distribution_figure`); and the same figures of a whole annotated
split (``mcq stats --dataset hico-det:test``: the HICO-DET row of Table 1, KL 0.088, 80.2).

The class-distribution figures count the correct choices of *one* setting
(:func:`class_distribution`): setting 2 when the file has it (the paper's 0.629 and 7.1 are those
of the released setting-2 file), else 3, else 1. ``mcq build`` reports the same function's
output for the file it writes, so the two commands cannot disagree.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from hoibench.benchmarks._distribution import head_tail_ratio, kl_divergence, scene_composition
from hoibench.data import HOIDataset, MCQuestion

__all__ = [
    "PAPER_REFERENCE",
    "class_counts",
    "class_distribution",
    "correct_class_counts",
    "dataset_statistics",
    "distribution_setting",
    "question_statistics",
]

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


def class_counts(questions: Sequence[MCQuestion], n_hois: int, *, correct_only: bool = True) -> np.ndarray:
    """How often each in-vocabulary class is a correct choice (or, with ``correct_only=False``,
    any choice); choices outside ``0..n_hois-1`` (free text, other label spaces) are skipped."""
    c = np.zeros(n_hois, dtype=np.float64)
    for q in questions:
        for i, choice in enumerate(q.choices):
            if 0 <= choice.hoi < n_hois and (not correct_only or i in q.correct):
                c[choice.hoi] += 1
    return c


def distribution_setting(questions: Sequence[MCQuestion]) -> int | None:
    """The setting whose correct choices the class-distribution figures count: 2 (one target
    person per image, as in the paper's figures), else 3, else 1; None without questions."""
    present = {q.setting for q in questions}
    return next((s for s in (2, 3, 1) if s in present), None)


def class_distribution(questions: Sequence[MCQuestion], n_hois: int, *,
                       train_counts: np.ndarray | None = None,
                       label_space: str = "hico-det") -> dict[str, Any]:
    """Classes among the correct choices of :func:`distribution_setting`'s questions and, with
    ``train_counts``, KL(train ‖ them) over the classes they cover (train renormalised there),
    the same with full support (``None`` when a class is missing: infinite) and the top-20/bottom-20
    head/tail ratio. The one definition ``mcq build`` and ``mcq stats`` both report."""
    kept = [q for q in questions if q.label_space == label_space]
    setting = distribution_setting(kept)
    counts = class_counts([q for q in kept if q.setting == setting], n_hois)
    out: dict[str, Any] = {"distribution_setting": setting, "classes_correct": int((counts > 0).sum())}
    if train_counts is not None and counts.sum() > 0:
        out["kl_train_benchmark"] = kl_divergence(train_counts, counts, support="q")
        full = kl_divergence(train_counts, counts)
        # infinite when a class has no train instance: None (JSON has no inf, and a number that
        # round-trips differently from what was printed would be a silent change)
        out["kl_train_benchmark_full_support"] = full if np.isfinite(full) else None
        out["head_tail_ratio"] = head_tail_ratio(train_counts, counts)
    return out


def dataset_statistics(dataset: HOIDataset, *, train_counts: np.ndarray | None = None,
                       person_iou: float = 0.5) -> dict[str, Any]:
    """Table 1's scene shares of every image of an annotated split and, with ``train_counts``,
    KL(train ‖ split) and the head/tail ratio of its pairs (``hico-det:test``: the paper's
    HICO-DET row, 60.2% / 7.5% / 76.0%, KL 0.088, 80.2)."""
    counts = np.asarray(dataset.hoi_counts(), dtype=np.float64)
    out: dict[str, Any] = {"dataset": dataset.name, "images": dataset.n_images, "pairs": dataset.n_pairs,
                           "classes": int((counts > 0).sum()),
                           "scene_composition": scene_composition(dataset, iou_threshold=person_iou).as_dict()}
    if train_counts is not None and counts.sum() > 0:
        out["kl_train_test"] = kl_divergence(train_counts, counts, support="q")
        out["kl_train_test_full_support"] = kl_divergence(train_counts, counts)
        out["head_tail_ratio"] = head_tail_ratio(train_counts, counts)
    return out


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
        Per-class train counts for KL(train ‖ benchmark) and the top-20/bottom-20 head/tail ratio
        of :func:`class_distribution` (the correct choices of one setting, named in
        ``distribution_setting``; ``classes_correct_all_settings`` pools every setting).
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
    space = "hico-det" if dataset is None else dataset.vocab.name
    counts, all_choice = correct_class_counts(questions, n_hois, label_space=space)
    if all_choice.sum() > 0:
        out.update(class_distribution(questions, n_hois, train_counts=train_counts, label_space=space))
        out["classes_correct_all_settings"] = int((counts > 0).sum())
        out["classes_any_choice"] = int((all_choice > 0).sum())
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
