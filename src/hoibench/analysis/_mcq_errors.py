"""Error analyses of multiple-choice answers (``001_*.txt``): Finding 1, the share of false
positives that are interactions of *other* people in the image, and head-to-tail recall by class
frequency (Figure 3). Pure functions over questions, answers and a dataset; no file I/O except
the CSV/plot writers.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench._io import atomic_write
from hoibench.data import HOIDataset, MCAnswer, MCQuestion
from hoibench.datasets import resolve_dataset
from hoibench.evaluation import box_iou, mcq_class_recall
from hoibench.vocab import hico_det

__all__ = [
    "HeadToTailBin",
    "HeadToTailRecall",
    "Misattribution",
    "head_to_tail_recall",
    "misattribution_share",
    "train_class_counts",
]


def _answers_by_id(answers: Iterable[MCAnswer] | Mapping[str, MCAnswer]) -> dict[str, MCAnswer]:
    if isinstance(answers, Mapping):
        return dict(answers)
    return {a.question_id: a for a in answers}


@dataclass(frozen=True)
class Misattribution:
    """Finding 1. ``share = misattributed / false_positives``; ``per_question`` lists, for each
    question with a misattributed choice, those choice texts."""

    false_positives: int
    misattributed: int
    questions: int
    questions_with_others: int
    questions_not_in_dataset: int
    iou_threshold: float
    per_question: Mapping[str, tuple[str, ...]]

    @property
    def share(self) -> float:
        return self.misattributed / self.false_positives if self.false_positives else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["share"] = self.share
        d["per_question"] = {k: list(v) for k, v in self.per_question.items()}
        return d


def misattribution_share(questions: Sequence[MCQuestion], answers: Iterable[MCAnswer] | Mapping[str, MCAnswer],
                         dataset: HOIDataset, *, iou_threshold: float = 0.5) -> Misattribution:
    """Share of false positives that are annotated interactions of another person.

    For each question with a target person (settings 2–3), a selected choice that is not correct
    is *misattributed* when the dataset annotates, in the same image, a pair with that choice's
    (verb, object) whose subject box overlaps the target person with IoU below ``iou_threshold``
    (another person). Choices outside the label space (``verb``/``object`` of -1) cannot match.
    """
    if not 0 < iou_threshold <= 1:
        raise ConfigError(f"iou_threshold must be in (0, 1]; got {iou_threshold}")
    by_id = _answers_by_id(answers)
    fp = mis = n_q = n_others = n_missing = 0
    per_q: dict[str, tuple[str, ...]] = {}
    for q in questions:
        if q.person_box is None:
            continue
        a = by_id.get(q.id)
        if a is None:
            continue
        n_q += 1
        wrong = [c for c in q.choices if c.text in a.selected and c.text not in q.correct_texts]
        fp += len(wrong)
        try:
            img = dataset.image(dataset.index_of(q.file_name))
        except KeyError:
            n_missing += 1
            continue
        if len(img.pairs) == 0:
            continue
        other = box_iou(np.asarray([q.person_box]), img.subject_boxes)[0] < iou_threshold
        if other.any():
            n_others += 1
        others = {(int(v), int(o)) for v, o, k in zip(img.pairs[:, 2], img.object_labels, other) if k}
        hits = tuple(c.text for c in wrong if c.verb >= 0 and c.object >= 0 and (c.verb, c.object) in others)
        if hits:
            mis += len(hits)
            per_q[q.id] = hits
    return Misattribution(fp, mis, n_q, n_others, n_missing, iou_threshold, per_q)


@dataclass(frozen=True)
class HeadToTailBin:
    index: int
    min_count: int
    max_count: int
    n_classes: int
    n_gt: int
    n_tp: int
    recall: float | None
    mean_class_recall: float | None


@dataclass(frozen=True)
class HeadToTailRecall:
    """Recall per frequency bin, head (most frequent training classes) first."""

    bins: tuple[HeadToTailBin, ...]
    per_class: Mapping[int, tuple[int, int, int]]  # hoi -> (train count, gt, tp)

    def as_dict(self) -> dict[str, Any]:
        return {"bins": [asdict(b) for b in self.bins],
                "per_class": {str(k): {"train_count": v[0], "gt": v[1], "tp": v[2]}
                              for k, v in sorted(self.per_class.items())}}

    def write_csv(self, path: str | Path) -> None:
        with atomic_write(path, "w") as fh:
            w = csv.writer(fh)
            w.writerow(["bin", "min_train_count", "max_train_count", "classes", "gt", "tp", "recall",
                        "mean_class_recall"])
            for b in self.bins:
                w.writerow([b.index, b.min_count, b.max_count, b.n_classes, b.n_gt, b.n_tp,
                            "" if b.recall is None else f"{b.recall:.6f}",
                            "" if b.mean_class_recall is None else f"{b.mean_class_recall:.6f}"])


def head_to_tail_recall(questions: Sequence[MCQuestion], answers: Iterable[MCAnswer] | Mapping[str, MCAnswer],
                        train_counts: np.ndarray, *, n_bins: int = 10) -> HeadToTailRecall:
    """Recall of correct choices grouped by their class's training frequency (Figure 3).

    Classes that occur as a correct choice are sorted by ``train_counts`` (descending, ties by
    class id) and split into ``n_bins`` groups of (nearly) equal numbers of classes. A missing answer
    counts as selecting nothing.
    """
    if n_bins < 1:
        raise ConfigError(f"n_bins must be >= 1; got {n_bins}")
    counts = np.asarray(train_counts)
    per = mcq_class_recall(answers, questions, train_counts=counts)
    assert per.classes is not None and per.n_gt is not None and per.n_tp is not None  # computed, not read
    gt = dict(zip(per.classes.tolist(), per.n_gt.tolist()))
    tp = dict(zip(per.classes.tolist(), per.n_tp.tolist()))
    classes = sorted(gt, key=lambda h: (-int(counts[h]), h))
    bins = []
    for k, group in enumerate(np.array_split(np.asarray(classes, dtype=np.int64), min(n_bins, max(len(classes), 1)))):
        if len(group) == 0:
            continue
        g = sum(gt[int(h)] for h in group)
        t = sum(tp[int(h)] for h in group)
        rec = [tp[int(h)] / gt[int(h)] for h in group]
        bins.append(HeadToTailBin(k, int(counts[group].min()), int(counts[group].max()), len(group), g, t,
                                  t / g if g else None, float(np.mean(rec)) if rec else None))
    per_class = {h: (int(counts[h]), gt[h], tp[h]) for h in classes}
    return HeadToTailRecall(tuple(bins), per_class)


def train_class_counts(source: str = "official") -> np.ndarray:
    """Per-class training frequency: ``official`` HICO-DET counts, or a dataset's pair counts."""
    if source == "official":
        return np.asarray(hico_det().train_counts_official())

    return resolve_dataset(source).hoi_counts()


