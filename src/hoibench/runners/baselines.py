"""Built-in baselines that need no model and no GPU, and show what the benchmarks measure.

- :class:`ObjectPriorDetector` — an oracle-box HOI "detector": every ground-truth
  (person, object) pair of an image, scored for each verb with that verb's train frequency for the
  pair's object, P(verb | object). It sees no pixels, so its mAP is the part of a detector's mAP
  that language priors alone explain: high on the original split, zero on the unseen combinations
  of an SG split (their prior is zero), and drawn towards head classes elsewhere.
- :class:`PriorAnswerer` — answers a multiple-choice question with the ``k`` choices whose
  (verb, object) occurs most often in train.
- :class:`RandomAnswerer` — a uniformly random non-empty subset of the choices: the floor.

Note on ties: within one HOI class every detection of :class:`ObjectPriorDetector` has the same
score, so the evaluator's stable sort orders them as they come (image order). The class's AP is
then that of a ranking without visual information; what the prior decides is which classes get
detections at all (and, under a top-k cap, which survive).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench._random import check_random_state
from hoibench.data import HOIDataset, HOIPredictions, MCAnswer, MCQuestion

__all__ = ["ObjectPriorDetector", "PriorAnswerer", "RandomAnswerer", "verb_object_counts"]


def verb_object_counts(dataset: HOIDataset) -> np.ndarray:
    """``(n_verbs, n_objects + 1)`` pair counts; the last column counts pairs without object."""
    v = dataset.vocab
    obj = dataset.pair_object_label
    col = np.where(obj >= 0, obj, v.n_objects)
    counts = np.zeros((v.n_verbs, v.n_objects + 1), dtype=np.int64)
    np.add.at(counts, (dataset.pair_verb, col), 1)
    return counts


class ObjectPriorDetector:
    """Ground-truth pairs scored with P(verb | object) from a train set.

    Parameters
    ----------
    top_k:
        Keep only the ``k`` most frequent verbs of each object (ties: lower verb index first);
        ``None`` keeps every verb seen with the object in train.
    name:
        Model name carried into predictions and results.

    Examples
    --------
    >>> det = ObjectPriorDetector().fit(load_dataset("hico-det:train"))  # doctest: +SKIP
    >>> preds = det.predict(load_dataset("hico-det:test"))                # doctest: +SKIP
    """

    def __init__(self, *, top_k: int | None = None, name: str = "object-prior") -> None:
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ConfigError(f"top_k must be a positive int or None; got {top_k!r}")
        self.top_k = top_k
        self.name = name
        self.prior_: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"ObjectPriorDetector(top_k={self.top_k!r}, name={self.name!r})"

    def fit(self, train: HOIDataset) -> ObjectPriorDetector:
        """Estimate P(verb | object) from the train pairs (columns: objects, then "no object")."""
        counts = verb_object_counts(train).astype(np.float64)
        totals = counts.sum(axis=0, keepdims=True)
        self.prior_ = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
        self._vocab = train.vocab
        return self

    def _verbs_per_column(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR table per object column: verbs with non-zero prior, most probable first."""
        prior = self.prior_ if self.prior_ is not None else np.zeros((0, 0))
        verbs, scores, counts = [], [], []
        for o in range(prior.shape[1]):
            p = prior[:, o]
            order = np.lexsort((np.arange(len(p)), -p))
            order = order[p[order] > 0]
            if self.top_k is not None:
                order = order[: self.top_k]
            verbs.append(order)
            scores.append(p[order])
            counts.append(len(order))
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return offsets, np.concatenate(verbs).astype(np.int64), np.concatenate(scores)

    def predict(self, dataset: HOIDataset) -> HOIPredictions:
        """Detections for every distinct annotated (person box, object box, object) of each image.

        Pairs annotated several times (one per verb, as HICO-DET does) give one set of detections.
        """
        if self.prior_ is None:
            raise ValidationError("ObjectPriorDetector: call fit(train) before predict()")
        if dataset.vocab.name != self._vocab.name or dataset.vocab.n_verbs != self._vocab.n_verbs:
            raise ValidationError(f"ObjectPriorDetector was fitted on {self._vocab.name!r}, "
                                  f"cannot predict on {dataset.vocab.name!r}")
        n_obj = dataset.vocab.n_objects
        obj = dataset.pair_object_label
        boxes_h = dataset.pair_subject_boxes
        boxes_o = dataset.pair_object_boxes
        key = np.column_stack([dataset.pair_image.astype(np.float64), boxes_h,
                               np.nan_to_num(boxes_o, nan=-1.0), obj.astype(np.float64)])
        if len(key):
            _, first = np.unique(key, axis=0, return_index=True)
            first = np.sort(first)  # keep file order
        else:
            first = np.zeros(0, dtype=np.int64)
        col = np.where(obj[first] >= 0, obj[first], n_obj)
        offsets, verbs, scores = self._verbs_per_column()
        per_pair = offsets[col + 1] - offsets[col]
        rep = np.repeat(np.arange(len(first)), per_pair)
        start = np.repeat(offsets[col] - np.cumsum(per_pair) + per_pair, per_pair)
        slot = np.arange(len(rep)) + start
        src = first[rep]
        counts = np.bincount(dataset.pair_image[src], minlength=dataset.n_images)
        return HOIPredictions.from_arrays(
            dataset.vocab, dataset.file_names, counts, boxes_h[src], boxes_o[src], obj[src],
            verbs[slot], scores[slot], name=self.name)


def _choice_counts(question: MCQuestion, counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(question.choices))
    for i, c in enumerate(question.choices):
        if 0 <= c.verb < counts.shape[0] and 0 <= c.object < counts.shape[1] - 1:
            out[i] = counts[c.verb, c.object]
    return out


class PriorAnswerer:
    """Select the ``k`` choices whose (verb, object) is most frequent in train.

    Choices that are not classes of the train label space count 0. Ties are broken by the
    question's presentation order for ``seed`` (never by the stored order, which may list the
    correct choices first).

    Parameters
    ----------
    k:
        Choices selected per question (fewer when a question has fewer choices).
    seed:
        Seed of the presentation order used to break ties (the runners' default is 0).
    name:
        Model name written into answers and results.
    """

    def __init__(self, *, k: int = 1, seed: int = 0, name: str | None = None) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be a positive int; got {k!r}")
        self.k = k
        self.seed = seed
        self.name = name or f"prior-top{k}"
        self.counts_: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"PriorAnswerer(k={self.k}, seed={self.seed}, name={self.name!r})"

    def fit(self, train: HOIDataset) -> PriorAnswerer:
        """Count the train pairs of every (verb, object)."""
        self.counts_ = verb_object_counts(train)
        return self

    def answer(self, questions: Iterable[MCQuestion]) -> list[MCAnswer]:
        """One answer per question, in the given order."""
        if self.counts_ is None:
            raise ValidationError("PriorAnswerer: call fit(train) before answer()")
        out = []
        for q in questions:
            freq = _choice_counts(q, self.counts_)
            order = np.asarray(q.order(self.seed), dtype=np.int64)
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            pick = np.lexsort((rank, -freq))[: self.k]
            out.append(MCAnswer(q.id, frozenset(q.choices[i].text for i in pick),
                                raw=None, status="ok", meta={"model": self.name}))
        return out


class RandomAnswerer:
    """A uniformly random non-empty subset of each question's choices: the floor.

    Parameters
    ----------
    random_state:
        Seed (int) or generator. With an int seed each question's draw depends only on the seed
        and the question id, so answers do not change when questions are reordered or resumed.
    name:
        Model name written into answers and results.
    """

    def __init__(self, *, random_state: int | np.random.Generator | None = None,
                 name: str = "random") -> None:
        self.random_state = random_state
        self.name = name

    def __repr__(self) -> str:
        return f"RandomAnswerer(random_state={self.random_state!r}, name={self.name!r})"

    def fit(self, train: Any = None) -> RandomAnswerer:
        """Nothing to learn (kept so that every baseline has the same shape)."""
        return self

    def answer(self, questions: Iterable[MCQuestion]) -> list[MCAnswer]:
        """One answer per question, in the given order."""
        shared = None if isinstance(self.random_state, (int, np.integer)) and not isinstance(
            self.random_state, bool) else check_random_state(self.random_state)
        out = []
        for q in questions:
            rng = shared or _question_rng(int(self.random_state), q.id)  # type: ignore[arg-type]
            n = len(q.choices)
            mask = int(rng.integers(1, 2 ** n))
            picked = [i for i in range(n) if mask >> i & 1]
            out.append(MCAnswer(q.id, frozenset(q.choices[i].text for i in picked), raw=None,
                                status="ok", meta={"model": self.name}))
        return out


def _question_rng(seed: int, question_id: str) -> np.random.Generator:
    digest = hashlib.sha256(f"random-answerer\x1f{seed}\x1f{question_id}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))

