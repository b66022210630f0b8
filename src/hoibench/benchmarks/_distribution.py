"""Class-distribution statistics of HOI benchmarks (``001_*.txt`` sec. 2.1–2.2, Table 1).

- :func:`kl_divergence` — KL(train ‖ benchmark) of two class-count vectors. On HICO-DET, official
  train counts vs test pairs give 0.0876 (the paper's 0.088).
- :func:`head_tail_ratio` — benchmark instances in the ``k`` most frequent *train* classes over
  those in the ``k`` least frequent. Classes are ranked by train count, descending, ties kept in
  class-index order (a stable sort), so the tail is the last ``k`` of that ranking; this is the
  tie rule that gives the paper's 80.2 on the HICO-DET test set (80.19). Ranking ties the other
  way (lowest indices in the tail) gives 71.6.
- :func:`scene_composition` — per image, how many people and objects take part in annotated
  interactions and whether the people do different things: Table 1's "single person, single
  object" and "multi-person, different HOIs" shares. On the HICO-DET test set (people = subject
  boxes merged at IoU ≥ 0.5) this gives 60.7% and 9.8% (paper: 60.2% and 7.5%, people counted
  by a VLM).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench.data import HOIDataset
from hoibench.evaluation import box_iou

__all__ = [
    "SceneComposition",
    "distinct_boxes",
    "head_tail_ratio",
    "image_people",
    "kl_divergence",
    "people_share_hoi",
    "scene_composition",
]


def kl_divergence(p_counts: np.ndarray | Sequence[float], q_counts: np.ndarray | Sequence[float], *,
                  epsilon: float = 0.0, support: str = "all") -> float:
    """``KL(p ‖ q) = Σ p log(p / q)`` (natural log) of two count vectors, normalised here.

    Classes where ``p`` is 0 contribute nothing. Classes where ``q`` is 0 but ``p`` is not make the
    divergence infinite, unless ``epsilon`` > 0 is added to every ``q`` count first, or
    ``support="q"`` restricts both distributions to the classes ``q`` covers (renormalising ``p``).
    The HICO-DET test set and the released benchmark cover all 600 classes, where all three agree.
    """
    if support not in ("all", "q"):
        raise ConfigError(f"support must be one of ['all', 'q']; got {support!r}")
    p = np.asarray(p_counts, dtype=np.float64)
    q = np.asarray(q_counts, dtype=np.float64)
    if p.shape != q.shape or p.ndim != 1:
        raise ConfigError(f"expected two count vectors of the same length; got {p.shape} and {q.shape}")
    if (p < 0).any() or (q < 0).any() or epsilon < 0:
        raise ConfigError("counts and epsilon must be non-negative")
    q = q + epsilon
    if support == "q":
        p = np.where(q > 0, p, 0.0)
    if p.sum() <= 0 or q.sum() <= 0:
        raise ConfigError("both count vectors need a positive total")
    p = p / p.sum()
    q = q / q.sum()
    on = p > 0
    if (q[on] == 0).any():
        return float("inf")
    return float(np.sum(p[on] * np.log(p[on] / q[on])))


def head_tail_ratio(train_counts: np.ndarray | Sequence[float], counts: np.ndarray | Sequence[float], *,
                    k: int = 20) -> float:
    """Instances of ``counts`` in the ``k`` most frequent train classes divided by those in the
    ``k`` least frequent (see the module docstring for ties); ``inf`` when the tail is empty."""
    train = np.asarray(train_counts, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    if train.shape != c.shape or train.ndim != 1:
        raise ConfigError(f"expected two count vectors of the same length; got {train.shape} and {c.shape}")
    if not 0 < 2 * k <= len(train):
        raise ConfigError(f"k must be in 1..{len(train) // 2}; got {k}")
    order = np.argsort(-train, kind="stable")
    head = c[order[:k]].sum()
    tail = c[order[-k:]].sum()
    return float(head / tail) if tail > 0 else float("inf")


def distinct_boxes(boxes: np.ndarray, *, iou_threshold: float = 0.5) -> np.ndarray:
    """Cluster id of each box: boxes overlapping an earlier cluster's first box with IoU ≥
    ``iou_threshold`` join it (HICO-DET repeats one person's box, slightly moved, across pairs)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    n = len(b)
    ids = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return ids

    iou = np.nan_to_num(box_iou(b, b), nan=1.0)  # two empty boxes count as one
    heads: list[int] = []
    for i in range(n):
        for h in heads:
            if iou[i, h] >= iou_threshold:
                ids[i] = ids[h]
                break
        else:
            ids[i] = len(heads)
            heads.append(i)
    return ids


@dataclass(frozen=True)
class SceneComposition:
    """Per-image scene counts and Table 1's shares (over images with at least one pair)."""

    n_people: np.ndarray  # (n_images,)
    n_objects: np.ndarray  # (n_images,)
    people_differ: np.ndarray  # (n_images,) bool: no HOI class common to all people
    n_images: int

    @property
    def single_person_single_object(self) -> float:
        ok = self.n_people > 0
        return float(np.mean((self.n_people[ok] == 1) & (self.n_objects[ok] == 1))) if ok.any() else 0.0

    @property
    def multi_person_different(self) -> float:
        ok = self.n_people > 0
        return float(np.mean((self.n_people[ok] >= 2) & self.people_differ[ok])) if ok.any() else 0.0

    @property
    def multi_person(self) -> float:
        ok = self.n_people > 0
        return float(np.mean(self.n_people[ok] >= 2)) if ok.any() else 0.0

    @property
    def same_hoi_within_multi_person(self) -> float:
        multi = self.n_people >= 2
        return float(np.mean(~self.people_differ[multi])) if multi.any() else 0.0

    def as_dict(self) -> dict[str, float]:
        return {"single_person_single_object": self.single_person_single_object,
                "multi_person_different_hoi": self.multi_person_different,
                "multi_person": self.multi_person,
                "same_hoi_within_multi_person": self.same_hoi_within_multi_person,
                "n_images": self.n_images}


def image_people(ds: HOIDataset, i: int, *, iou_threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For image ``i``: person cluster of each pair, object cluster of each pair (−1: none), and
    the HOI class of each pair; clusters merge near-identical boxes (IoU ≥ ``iou_threshold``)."""
    im = ds.image(i)
    pairs = im.pairs
    if len(pairs) == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e
    subj = pairs[:, 0]
    person_of_box = np.full(len(im.boxes), -1, dtype=np.int64)
    uniq_s = np.unique(subj)
    person_of_box[uniq_s] = distinct_boxes(im.boxes[uniq_s], iou_threshold=iou_threshold)
    obj = pairs[:, 1]
    has = obj >= 0
    object_of_box = np.full(len(im.boxes), -1, dtype=np.int64)
    uniq_o = np.unique(obj[has])
    if len(uniq_o):
        # objects cluster per category only
        cl = np.full(len(uniq_o), -1, dtype=np.int64)
        base = 0
        for lab in np.unique(im.labels[uniq_o]):
            sel = im.labels[uniq_o] == lab
            cl[sel] = distinct_boxes(im.boxes[uniq_o[sel]], iou_threshold=iou_threshold) + base
            base = cl.max() + 1
        object_of_box[uniq_o] = cl
    hoi = ds.vocab.hoi_index(pairs[:, 2], np.where(has, im.labels[np.where(has, obj, 0)], -1))
    return person_of_box[subj], np.where(has, object_of_box[np.where(has, obj, 0)], -1), hoi


def people_share_hoi(person: np.ndarray, hoi: np.ndarray) -> bool:
    """True when some HOI class is done by every person (``person``/``hoi``: one entry per pair)."""
    people = np.unique(person)
    common: set[int] | None = None
    for p in people:
        s = set(hoi[person == p].tolist())
        common = s if common is None else common & s
    return bool(common)


def scene_composition(ds: HOIDataset, *, iou_threshold: float = 0.5,
                      images: Sequence[int] | np.ndarray | None = None) -> SceneComposition:
    """People, objects and whether people differ, per image, from the annotations.

    People are distinct subject boxes (near-duplicates merged), objects distinct object boxes per
    category. People "differ" when no HOI class is common to all of them (closest to the paper's
    HICO-DET row of Table 1 among the rules we tried; see docs/mcq-paper.md). Only annotated people
    count: the paper counted people with a VLM, which also sees unannotated bystanders.
    """
    idx = np.arange(ds.n_images) if images is None else np.asarray(images, dtype=np.int64)
    n_people = np.zeros(len(idx), dtype=np.int64)
    n_objects = np.zeros(len(idx), dtype=np.int64)
    differ = np.zeros(len(idx), dtype=bool)
    for k, i in enumerate(idx):
        person, obj, hoi = image_people(ds, int(i), iou_threshold=iou_threshold)
        if len(person) == 0:
            continue
        n_people[k] = len(np.unique(person))
        n_objects[k] = len(np.unique(obj[obj >= 0]))
        differ[k] = not people_share_hoi(person, hoi)
    return SceneComposition(n_people, n_objects, differ, len(idx))
