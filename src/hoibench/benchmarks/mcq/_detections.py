"""Answers of HOI-specific detectors by top-k matching (``001_*.txt`` sec. 3.1).

For each question the detector's scored triplets of the question's image are ranked by score;
in settings 2–3 only triplets whose subject box overlaps the target person (IoU ≥ 0.5, the paper;
``strict=True`` for the reference code's IoU > 0.5) are kept. The HOI classes of the ``k`` best
distinct classes (k = 5, "as ImageNet's top-5") that are among the question's choices are selected.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.data import HOIPredictions, MCAnswer, MCQuestion
from hoibench.evaluation import box_iou

__all__ = ["answers_from_detections"]


def answers_from_detections(
    questions: Sequence[MCQuestion],
    predictions: HOIPredictions,
    *,
    top_k: int = 5,
    iou_threshold: float = 0.5,
    strict: bool = False,
) -> list[MCAnswer]:
    """One answer per question from a detector's scored triplets.

    An image without detections gives an empty answer (status ``ok``); in settings 2–3 a target
    person no detection overlaps gives status ``no_person_match``. ``raw`` lists the top-k classes
    with their best scores. Predictions that cover none of the questions' images (another
    benchmark's, or renamed files) are an error rather than a set of empty answers.
    """
    if top_k < 1:
        raise ConfigError(f"top_k must be >= 1; got {top_k}")
    if not 0.0 <= iou_threshold <= 1.0:
        raise ConfigError(f"iou_threshold must be in [0, 1]; got {iou_threshold!r}")
    vocab = predictions.vocab
    known = set(predictions.file_names)
    if questions and not any(q.file_name in known for q in questions):
        raise ValidationError(f"{predictions.name or 'predictions'}: no detections for any of the "
                              f"{len({q.file_name for q in questions})} question images (e.g. "
                              f"{questions[0].file_name!r}); predictions for another image set?")
    hois_all = predictions.hois
    out: list[MCAnswer] = []
    for q in questions:
        if q.label_space != vocab.name:
            raise ConfigError(f"question {q.id!r} uses label space {q.label_space!r}, the predictions "
                              f"{vocab.name!r}")
        try:
            sl = predictions.image_slice(predictions.index_of(q.file_name))
        except KeyError:
            out.append(MCAnswer(q.id, frozenset(), raw="no detections for this image"))
            continue
        scores = predictions.scores[sl]
        hois = hois_all[sl]
        keep = hois >= 0
        status = "ok"
        if q.setting in (2, 3) and q.person_box is not None and len(scores):
            iou = box_iou(predictions.boxes_h[sl], np.asarray([q.person_box]))[:, 0]
            match = iou > iou_threshold if strict else iou >= iou_threshold
            if not match.any():
                status = "no_person_match"
            keep &= match
        order = np.argsort(-scores[keep], kind="stable")
        ranked_hois = hois[keep][order]
        ranked_scores = scores[keep][order]
        top: list[tuple[int, float]] = []
        seen: set[int] = set()
        for h, s in zip(ranked_hois.tolist(), ranked_scores.tolist(), strict=True):
            if h not in seen:
                seen.add(h)
                top.append((h, s))
                if len(top) == top_k:
                    break
        top_set = {h for h, _ in top}
        selected = frozenset(c.text for c in q.choices if c.hoi >= 0 and c.hoi in top_set)
        raw = "; ".join(f"{vocab.hoi_name(h)} ({s:.3f})" for h, s in top)
        out.append(MCAnswer(q.id, selected, raw=raw, status=status,
                            meta={"top_k": top_k, "iou_threshold": iou_threshold, "strict": strict}))
    return out
