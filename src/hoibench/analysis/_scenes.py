"""Multiple-choice metrics by scene type (``001_*.txt`` Finding 2, Figures 5–6).

The paper finds that VLMs fail most in multi-person and occluded scenes. Here each question's
scene is read from the annotations of its image (no VLM): people are subject boxes merged at
IoU ≥ ``person_iou`` (:func:`hoibench.benchmarks.image_people`, the rule the question builder
uses), and the question falls into one of three exclusive *layout* bins

- ``single person`` — one annotated person;
- ``several people, different interactions`` — no HOI class is done by every person;
- ``several people, same interaction`` — some HOI class is done by every person;

and, independently, into ``occluded or truncated`` when its target person (every person for a
setting-1 question, which has no target) has a box within ``border_margin`` pixels of the image
border or is covered by another annotated person's box over more than ``overlap`` of its area. That is as
much as the boxes tell about occlusion; a person hidden behind an object is not seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench.benchmarks import image_people, people_share_hoi
from hoibench.data import HOIDataset, MCAnswer, MCQuestion
from hoibench.evaluation import MCQResult, box_iou, mcq_metrics

__all__ = [
    "SCENE_BINS",
    "SceneBreakdown",
    "SceneType",
    "mcq_scene_breakdown",
    "question_scene_types",
]

SINGLE = "single person"
DIFFERENT = "several people, different interactions"
SAME = "several people, same interaction"
OCCLUDED = "occluded or truncated"
#: the bins in the order tables and figures show them (the first three partition the questions)
SCENE_BINS = (SINGLE, DIFFERENT, SAME, OCCLUDED)


@dataclass(frozen=True)
class SceneType:
    """What the annotations say about one question's scene."""

    question_id: str
    n_people: int
    layout: str | None  # one of the first three bins; None when the image is not annotated
    truncated: bool
    occluded: bool

    @property
    def bins(self) -> tuple[str, ...]:
        out = () if self.layout is None else (self.layout,)
        return out + ((OCCLUDED,) if self.truncated or self.occluded else ())


def _coverage(target: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Share of ``target``'s area (xyxy) covered by each of ``others``."""
    if len(others) == 0:
        return np.zeros(0)
    w = np.clip(np.minimum(target[2], others[:, 2]) - np.maximum(target[0], others[:, 0]), 0, None)
    h = np.clip(np.minimum(target[3], others[:, 3]) - np.maximum(target[1], others[:, 1]), 0, None)
    area = max((target[2] - target[0]) * (target[3] - target[1]), 1e-9)
    return w * h / area


def _touches_border(box: np.ndarray, width: float, height: float, margin: float) -> bool:
    return bool(box[0] <= margin or box[1] <= margin or
                (width > 0 and box[2] >= width - margin) or (height > 0 and box[3] >= height - margin))


def question_scene_types(questions: Sequence[MCQuestion], dataset: HOIDataset, *, person_iou: float = 0.5,
                         border_margin: float = 2.0, overlap: float = 0.3) -> list[SceneType]:
    """The scene type of every question (in order), from the annotations of ``dataset``.

    ``border_margin``: pixels from the border within which a box counts as truncated;
    ``overlap``: share of the target's box another person's box must cover to count as occluding.
    The target is the question's person box; the other people are the annotated ones whose box
    overlaps it below ``person_iou`` (IoU).
    """
    if not 0 < person_iou <= 1:
        raise ConfigError(f"person_iou must be in (0, 1]; got {person_iou}")
    if not 0 < overlap <= 1:
        raise ConfigError(f"overlap must be in (0, 1]; got {overlap}")
    if border_margin < 0:
        raise ConfigError(f"border_margin must be >= 0; got {border_margin}")
    out = []
    for q in questions:
        try:
            i = dataset.index_of(q.file_name)
        except KeyError:
            out.append(SceneType(q.id, 0, None, False, False))
            continue
        im = dataset.image(i)
        person, _, hoi = image_people(dataset, i, iou_threshold=person_iou)
        ok = hoi >= 0
        ids = np.unique(person[ok])
        if len(ids) == 0:
            out.append(SceneType(q.id, 0, None, False, False))
            continue
        # one box per person: the first subject box of its cluster (as the question builder)
        boxes = np.stack([im.boxes[im.pairs[int(np.flatnonzero(ok & (person == p))[0]), 0]] for p in ids])
        n = len(ids)
        layout = SINGLE if n == 1 else (SAME if people_share_hoi(person[ok], hoi[ok]) else DIFFERENT)
        width = float(q.width or im.width)
        height = float(q.height or im.height)
        if q.person_box is not None:
            # the question's own box; the others are the annotated people that are not it
            target = np.asarray(q.person_box, dtype=float)
            pairs = [(target, boxes[box_iou(target[None], boxes)[0] < person_iou])]
        else:
            pairs = [(boxes[t], np.delete(boxes, t, axis=0)) for t in range(n)]
        truncated = occluded = False
        for box, others in pairs:
            truncated |= _touches_border(box, width, height, border_margin)
            occluded |= bool((_coverage(box, others) > overlap).any())
        out.append(SceneType(q.id, n, layout, truncated, occluded))
    return out


@dataclass(frozen=True)
class SceneBreakdown:
    """Metrics of each model per scene bin, with the number of questions in each bin.

    ``results[model][bin]`` is the :class:`~hoibench.evaluation.MCQResult` over the bin's
    questions; a bin without questions has no entry (its metrics are undefined, not zero).
    """

    bins: tuple[str, ...]
    counts: Mapping[str, int]
    results: Mapping[str, Mapping[str, MCQResult]]
    not_annotated: int
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(self.results)

    def value(self, model: str, bin_name: str, metric: str) -> float | None:
        """A metric (fraction) of a model in a bin; None when the bin has no question."""
        r = self.results.get(model, {}).get(bin_name)
        return None if r is None else float(getattr(r, metric))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "mcq_scene_breakdown", "bins": list(self.bins), "counts": dict(self.counts),
                "not_annotated": self.not_annotated, "params": dict(self.params),
                "results": {m: {b: {**r.metrics(), **({"ci": {k: list(v) for k, v in r.ci.items()}}
                                                     if r.ci else {})}
                                for b, r in by_bin.items()} for m, by_bin in self.results.items()}}


def mcq_scene_breakdown(answers: Mapping[str, Mapping[str, MCAnswer] | Iterable[MCAnswer]],
                        questions: Sequence[MCQuestion], dataset: HOIDataset, *, protocol: str = "paper",
                        person_iou: float = 0.5, border_margin: float = 2.0, overlap: float = 0.3,
                        n_bootstrap: int = 0, random_state: int | None = 0) -> SceneBreakdown:
    """Score each model's answers (``answers[model]``) separately on the questions of each scene
    bin (:func:`question_scene_types`), with ``mcq_metrics`` and its options."""
    if not answers:
        raise ConfigError("a scene breakdown needs the answers of at least one model")
    types = question_scene_types(questions, dataset, person_iou=person_iou, border_margin=border_margin,
                                 overlap=overlap)
    members: dict[str, list[MCQuestion]] = {b: [] for b in SCENE_BINS}
    for q, t in zip(questions, types):
        for b in t.bins:
            members[b].append(q)
    results: dict[str, dict[str, MCQResult]] = {}
    for model, ans in answers.items():
        by_id = ans if isinstance(ans, Mapping) else {a.question_id: a for a in ans}
        results[model] = {}
        for b, qs in members.items():
            if not qs:
                continue
            sub = {q.id: by_id[q.id] for q in qs if q.id in by_id}
            results[model][b] = mcq_metrics(sub, qs, protocol=protocol, n_bootstrap=n_bootstrap,
                                            random_state=random_state)
    return SceneBreakdown(SCENE_BINS, {b: len(qs) for b, qs in members.items()}, results,
                          sum(t.layout is None for t in types),
                          {"person_iou": person_iou, "border_margin": border_margin, "overlap": overlap,
                           "protocol": protocol, "n_bootstrap": n_bootstrap})
