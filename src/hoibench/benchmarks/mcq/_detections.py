"""Answers of HOI-specific detectors by top-k matching (``001_*.txt`` sec. 3.1), two rules.

``paper`` (:func:`answers_from_detections`), the paper's text: for each question the detector's
scored triplets of the question's image are ranked by score; in settings 2–3 only triplets whose
subject box overlaps the target person (IoU ≥ 0.5; ``strict=True`` for IoU > 0.5) are kept. The
choices among the ``k`` best *distinct* classes (k = 5, "as ImageNet's top-5") are selected.

``released`` (:func:`answers_released_rule`), what ``script_eval_32B_newbench_HOI.py``
(ChelsieLei/CrossHOI-Bench, ``--pred_select question_rank``, the default) does and what produced
the published numbers: the threshold is the ``k``-th best score of *all* the image's triplets
(ties kept); every triplet scoring at least that is kept if, in settings 2–3, its human box
overlaps the target person with IoU > 0.5 (and, when the question gives an object box, its
object box overlaps it with IoU > 0.5 and its object is the object of the question's first
correct choice); in setting 1 every triplet is a candidate. Each kept triplet whose text is one
of the choices adds that text, repeats kept, so one answer may pick a text several times (only
the ``crosshoi`` scoring protocol counts the repeats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.data import HOIPredictions, MCAnswer, MCQuestion
from hoibench.data._choices import ARTICLE, choice_text
from hoibench.evaluation import box_iou
from hoibench.formats.crosshoi_predictions import TextDetections

__all__ = ["DETECTION_RULES", "answers_from_detections", "answers_released_rule", "text_detections"]

#: ``mcq from-detections --rule`` -> what it does (the first is the default)
DETECTION_RULES = {
    "released": "the released script: the image's k-th best score as threshold, every matched triplet "
                "at or above it, repeats kept",
    "paper": "the paper's text: the k best distinct classes among the target person's triplets",
}


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
    _check_coverage(questions, set(predictions.file_names), predictions.name)
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


def _check_coverage(questions: Sequence[MCQuestion], known: set[str], name: str) -> None:
    """Predictions that cover none of the question images are an error, not empty answers."""
    if questions and not any(q.file_name in known for q in questions):
        raise ValidationError(f"{name or 'predictions'}: no detections for any of the "
                              f"{len({q.file_name for q in questions})} question images (e.g. "
                              f"{questions[0].file_name!r}); predictions for another image set?")


def text_detections(predictions: HOIPredictions) -> dict[str, TextDetections]:
    """A detector's triplets named by the question files' choice texts (``"hold a/an elephant"``,
    ``"no_interaction with a/an cow"``), for the released rule; triplets of no class are left out."""
    vocab = predictions.vocab
    names = [choice_text(vocab.verbs[v], vocab.objects[o]) for v, o in vocab.hoi_verb_object.tolist()]
    hois = predictions.hois
    out: dict[str, TextDetections] = {}
    for i, file_name in enumerate(predictions.file_names):
        sl = predictions.image_slice(i)
        keep = np.flatnonzero(hois[sl] >= 0) + sl.start
        out[file_name] = TextDetections(predictions.boxes_h[keep], predictions.boxes_o[keep],
                                        predictions.scores[keep], tuple(names[h] for h in hois[keep].tolist()),
                                        hois[keep])
    return out


def answers_released_rule(
    questions: Sequence[MCQuestion],
    detections: Mapping[str, TextDetections],
    *,
    top_k: int = 5,
    iou_threshold: float = 0.5,
    name: str = "",
) -> list[MCAnswer]:
    """One answer per question by the released script's rule (see the module docstring).

    As in the script, scores are compared in single precision (``float32``: two scores equal
    there tie), overlaps must exceed ``iou_threshold``, the texts are checked against the
    choices of the image's first question (``QA_0``) and SWiG-HOI triplets are named by their
    first word. An image without an entry gives an empty answer (the script skips such images:
    it scores only images its prediction file holds). Settings 2–3 give status
    ``no_person_match`` when no triplet overlaps the prompted boxes.
    """
    if top_k < 1:
        raise ConfigError(f"top_k must be >= 1; got {top_k}")
    if not 0.0 <= iou_threshold <= 1.0:
        raise ConfigError(f"iou_threshold must be in [0, 1]; got {iou_threshold!r}")
    _check_coverage(questions, set(detections), name)
    first: dict[str, MCQuestion] = {}
    for q in questions:
        if q.file_name not in first or q.id.endswith("#QA_0"):
            first[q.file_name] = q
    meta = {"rule": "released", "top_k": top_k, "iou_threshold": iou_threshold}
    out: list[MCAnswer] = []
    for q in questions:
        det = detections.get(q.file_name)
        if det is None:
            out.append(MCAnswer(q.id, frozenset(), raw="no detections for this image", meta=meta))
            continue
        if not len(det):
            out.append(MCAnswer(q.id, frozenset(), raw="no triplets", meta=meta))
            continue
        scores = det.scores.astype(np.float32)
        threshold = np.sort(scores)[::-1][min(top_k, len(scores)) - 1]
        swig = q.meta.get("dataset") == "swig-hoi" or q.label_space == "swig-hoi"
        texts = [t.split(" ")[0] for t in det.texts] if swig else list(det.texts)
        match = np.ones(len(det), dtype=bool)
        status = "ok"
        if q.setting in (2, 3) and q.person_box is not None:
            match = _overlaps(q.person_box, det.boxes_h, iou_threshold)
            if q.object_box is not None:
                match &= _overlaps(q.object_box, det.boxes_o, iou_threshold)
                target = _first_correct_object(q)
                match &= np.array([target is not None and _object_of(t) == target for t in det.texts], dtype=bool)
            if not match.any():
                status = "no_person_match"
        shown = first[q.file_name].choices
        if det.hois is None:  # texts compared as they are, as the script does
            choice_of = {c.text: c.text for c in shown}
            keys: list[object] = list(texts)
        else:  # a class detector: its class names the choice, in the question file's spelling
            choice_of = {}
            for c in shown:
                if c.hoi >= 0:
                    choice_of.setdefault(c.hoi, c.text)
            keys = det.hois.tolist()
        kept = [i for i in np.flatnonzero(match & (scores >= threshold)).tolist() if keys[i] in choice_of]
        picks = [choice_of[keys[i]] for i in kept]
        raw = f"threshold {float(threshold):.6g}: " + "; ".join(
            f"{t} ({float(scores[i]):.3f})" for t, i in zip(picks, kept, strict=True))
        out.append(MCAnswer.from_picks(q.id, picks, raw=raw, status=status, meta=meta))
    return out


def _overlaps(target: Sequence[float], boxes: np.ndarray, iou_threshold: float) -> np.ndarray:
    """IoU > threshold with the prompted box (the released ``match_gtbox``)."""
    return np.nan_to_num(box_iou(np.asarray([target]), boxes)[0], nan=0.0) > iou_threshold


def _object_of(text: str) -> str:
    """A text's object as the released code compares it: after the last " a/an ", underscored."""
    return text.split(ARTICLE)[-1].replace(" ", "_")


def _first_correct_object(q: MCQuestion) -> str | None:
    """The object of the question's first correct choice (``"person"`` for a bare verb), ``None``
    when it has no correct choice: what the released code checks detected objects against."""
    if not q.correct:
        return None
    text = q.choices[min(q.correct)].text
    return _object_of(text) if ARTICLE in text else "person"
