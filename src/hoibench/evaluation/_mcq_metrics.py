"""Set metrics of the multiple-answer multiple-choice HOI benchmark (``001_*.txt`` eqs. 1–4).

Two protocols, chosen by name and echoed in the result:

``paper`` — the equations as printed. ``P_q`` = selected choices of question ``q`` (selections
that are not among its choices are ignored and counted), ``G_q`` = its correct choices.

- Macro-F1 (eq. 1): mean over HOI classes ``c`` that occur in some ``P_q`` or ``G_q`` of
  ``2 Σ 1[c∈P∩G] / (Σ 1[c∈P] + Σ 1[c∈G])``.
- Instance-F1 (eq. 2): mean over questions of ``2|P∩G| / (|P|+|G|)``.
- Micro-F1 (eq. 3): ``2 Σ|P∩G| / (Σ|P| + Σ|G|)``.
- Exact match (eq. 4): share of questions with ``P = G``.
- Average precision / recall: means over questions of ``|P∩G|/|P|`` and ``|P∩G|/|G|``.
- An empty denominator (both sets empty, or an empty ``G`` for recall) gives ``zero_division``
  (default 1.0, as scikit-learn's ``zero_division=1``). An empty ``P`` (no answer, an ``error``
  status, an empty selection) has precision 0 when ``G`` is not empty: no answer is not a
  perfect answer (scikit-learn would give it ``zero_division``; an unanswered benchmark would
  score a precision near 100%).

``crosshoi`` — the counting of the released evaluation script (ChelsieLei/CrossHOI-Bench,
``newbench_question_func.py``): per question the picks are walked once, as a list — a text
picked twice (a question that shows one text under two letters; ``MCAnswer.picks``) is walked
twice; a text still in the (raw, possibly duplicated) correct list is a true positive and is
removed from it, a text in the wrong list is a false positive, anything else is ignored. Then

- Instance-F1: per-question F1 from those counts; a question with no answer scores 1 if it has
  no correct choice, else 0; an answer with no true positive scores 0.
- Micro-F1: from precision and recall pooled over all answers; "average precision/recall" are
  those pooled values.
- Macro-F1: choice texts are filed under ``(action, object)`` keys
  (:func:`~hoibench.data.reference_class_key`); only keys of the script's class table for the
  question's label space count (:func:`~hoibench.data.reference_class_keys`: HICO-DET's 600
  classes; for V-COCO those and V-COCO's 236 annotated verb-object pairs; for SWiG-HOI its 407
  actions with ``person``; other label spaces: every text), the padding text ``"None"`` never
  counts; mean F1 over keys with any true positive, false positive or ground truth.
- Exact match: the in-choice picks (a list) equal the correct list in length and as sets
  (non-empty), divided by the number of *images* (the script divides by the number of file
  entries, which differs from the number of questions when an image holds several).

``paper`` counts sets: a text picked twice is one selection (``MCAnswer.selected``).

Class counting, bootstrap resampling and the final numbers share one vectorised path: per-question
counts, and ``(question × class)`` sparse count matrices, combined with resampling weights.

Bootstrap units (``bootstrap_unit``): the questions of one image are not independent (same scene,
same people, often the same distractors), so by default (``"auto"``) the images are resampled, every
question of a drawn image moving with it, whenever an image holds several questions (settings 2–3);
with one question per image, resampling questions is the same thing. ``"question"`` and
``"image"`` force either. The clustering is a change of *which units* are drawn (image weights
expanded to their questions), not of the interval method, which stays
:func:`~hoibench.evaluation.bootstrap_ci`'s.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.data import MCAnswer, MCQuestion, reference_class_key, reference_class_keys
from hoibench.evaluation._bootstrap import (
    CI_METHOD_OF,
    MCQ_CI_METHOD,
    bootstrap_ci,
    bootstrap_se,
    reportable_interval,
)
from hoibench.evaluation._fields import Fields, json_float, result_header
from hoibench.evaluation._metric import Metric
from hoibench.vocab import hico_det

if TYPE_CHECKING:  # scipy.sparse costs ~0.3 s to import: only MCQ scoring needs it
    import scipy.sparse as sp

__all__ = ["MCQ_BOOTSTRAP_UNITS", "MCQ_METRIC_NAMES", "MCQ_PROTOCOLS", "MCQComparison", "MCQMetrics",
           "MCQResult", "all_orders_exact_match", "mcq_compare", "mcq_metrics", "mcq_scores",
           "position_sensitivity"]

MCQ_PROTOCOLS = ("paper", "crosshoi")
#: what the bootstrap resamples: ``auto`` = images when an image holds several questions, else questions
MCQ_BOOTSTRAP_UNITS = ("auto", "question", "image")
#: the six multiple-choice metrics, in the order tables and reports show them
MCQ_METRIC_NAMES = ("macro_f1", "instance_f1", "micro_f1", "exact_match", "avg_precision", "avg_recall")


_COUNTS = ("n_questions", "n_images", "n_classes", "n_answered", "n_missing", "n_empty", "n_out_of_choice",
           "n_unknown_answers")


@dataclass(frozen=True)
class MCQResult:
    """Scores (fractions in [0, 1]) and what went into them.

    A metric is NaN only in a result read from a file of published numbers that leaves it out.

    ``ci`` maps each metric name to its bootstrap ``(low, high)`` interval when requested;
    ``bootstrap_unit`` says what was resampled (``"question"`` or ``"image"``).
    ``per_class`` maps a class name to ``{"tp", "pred", "gt", "f1"}``. The counts are ``None``
    only for a result read from a file that does not record them (published numbers).
    """

    macro_f1: float
    instance_f1: float
    micro_f1: float
    exact_match: float
    avg_precision: float
    avg_recall: float
    protocol: str
    zero_division: float
    n_questions: int | None
    n_images: int | None
    n_classes: int | None
    n_answered: int | None
    n_missing: int | None
    n_empty: int | None
    n_out_of_choice: int | None
    n_unknown_answers: int | None
    missing_ids: tuple[str, ...] = ()
    per_class: Mapping[str, Mapping[str, float]] = field(default_factory=dict, repr=False)
    ci: Mapping[str, tuple[float, float]] | None = None
    confidence: float | None = None
    n_bootstrap: int = 0
    bootstrap_unit: str | None = None
    #: bootstrap standard error of every metric, and per metric what its interval is: the CI
    #: method, or ``"se"`` where no method passed the coverage check (then ``ci`` lacks the metric)
    se: Mapping[str, float] | None = None
    ci_method: Mapping[str, str] | None = None

    kind: ClassVar[str] = "mcq_metrics"
    json_keys: ClassVar[frozenset[str]] = frozenset({
        *MCQ_METRIC_NAMES, "protocol", "zero_division", *_COUNTS, "missing_ids", "ci", "confidence",
        "n_bootstrap", "bootstrap_unit", "per_class", "se", "ci_method"})

    def metrics(self) -> dict[str, float]:
        """The six headline numbers under their JSON keys."""
        return {name: float(getattr(self, name)) for name in MCQ_METRIC_NAMES}

    def to_json(self, *, model: str | None = None, benchmark: str | None = None) -> dict[str, Any]:
        """The ``mcq_metrics`` object of ``docs/interfaces.md`` (fractions); ``per_class`` is
        written when the result holds it (``dataclasses.replace(r, per_class={})`` leaves it out)."""
        out = result_header(self.kind, model, benchmark)
        out.update({k: json_float(v) for k, v in self.metrics().items()})
        out.update(protocol=self.protocol, zero_division=self.zero_division,
                   **{k: getattr(self, k) for k in _COUNTS}, missing_ids=list(self.missing_ids))
        if self.ci is not None:
            # null where undefined (a NaN metric has a NaN interval), as the reader takes it
            out["ci"] = {k: None if math.isnan(lo) or math.isnan(hi) else [float(lo), float(hi)]
                         for k, (lo, hi) in self.ci.items()}
            out["confidence"] = self.confidence
            out["n_bootstrap"] = self.n_bootstrap
            if self.bootstrap_unit is not None:
                out["bootstrap_unit"] = self.bootstrap_unit
            if self.se is not None:
                out["se"] = {k: json_float(v) for k, v in self.se.items()}
            if self.ci_method is not None:
                out["ci_method"] = dict(self.ci_method)
        if self.per_class:
            out["per_class"] = {k: {c: json_float(v) for c, v in row.items()} for k, row in self.per_class.items()}
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, file: object = None, record: object = None) -> MCQResult:
        """Read an ``mcq_metrics`` object: the metrics (fractions; one at least, the others NaN
        when a file of published numbers leaves them out), optional counts and intervals. Each
        problem is a :class:`~hoibench.FormatError` naming the field."""
        f = Fields(d, file=file, record=record)
        f.check_kind(cls.kind)
        frac = {"lo": 0.0, "hi": 1.0, "unit": "a fraction"}
        metrics = {k: f.number(k, null=True, default=math.nan, **frac) for k in MCQ_METRIC_NAMES}
        if all(math.isnan(v) for v in metrics.values()):
            raise f.error(None, f"no metric among {list(MCQ_METRIC_NAMES)}")
        ci_f = f.optional_sub("ci")
        ci = None
        if ci_f is not None:
            ci = {}
            for k in ci_f.d:
                if k not in MCQ_METRIC_NAMES:
                    raise ci_f.error(k, f"expected one of {list(MCQ_METRIC_NAMES)}")
                iv = ci_f.interval(k)
                if iv is not None:
                    if iv[0] < 0.0 or iv[1] > 1.0:
                        raise ci_f.error(k, f"expected fractions in [0, 1], got {list(iv)}")
                    ci[k] = iv
        se = f.number_map("se", null=True, default=None, **frac) if f.has("se") else None
        methods = f.optional_sub("ci_method")
        ci_method = None if methods is None else {k: methods.string(k) for k in methods.d}
        per_class: dict[str, dict[str, float]] = {}
        pc = f.optional_sub("per_class")
        if pc is not None:
            for name in pc.d:
                row = pc.sub(name)
                per_class[str(name)] = {"tp": row.number("tp", lo=0.0), "pred": row.number("pred", lo=0.0),
                                        "gt": row.number("gt", lo=0.0),
                                        "f1": row.number("f1", null=True, **frac)}
        protocol = f.string("protocol", default="paper")
        if protocol not in MCQ_PROTOCOLS:
            raise f.error("protocol", f"expected one of {list(MCQ_PROTOCOLS)}, got {protocol!r}")
        unit = f.string("bootstrap_unit", default=None)
        if unit is not None and unit not in MCQ_BOOTSTRAP_UNITS[1:]:
            raise f.error("bootstrap_unit", f"expected one of {list(MCQ_BOOTSTRAP_UNITS[1:])}, got {unit!r}")
        return cls(
            **metrics, protocol=protocol, zero_division=f.number("zero_division", default=1.0, **frac),
            **{k: f.integer(k, default=None, lo=0) for k in _COUNTS},
            missing_ids=f.strings("missing_ids", default=()), per_class=per_class, ci=ci,
            confidence=f.number("confidence", default=None, lo=0.0, hi=1.0, unit="a fraction"),
            n_bootstrap=f.integer("n_bootstrap", default=0, lo=0), bootstrap_unit=unit, se=se,
            ci_method=ci_method)


def position_sensitivity(results: Sequence[MCQResult]) -> dict[str, float]:
    """How much each metric moves with the order of the choices: the standard deviation over
    results of the same questions under different choice orders (fractions)."""
    if len(results) < 2:
        raise ConfigError(f"position sensitivity needs results under at least two choice orders; got {len(results)}")
    return {m: float(np.std([r.metrics()[m] for r in results])) for m in MCQ_METRIC_NAMES}


# ----------------------------------------------------------------------------- class keys

def _class_name(key: tuple[str, str]) -> str:
    return f"{key[0]} {key[1]}"


class _ClassIndex:
    def __init__(self) -> None:
        self.index: dict[tuple[str, str], int] = {}

    def __call__(self, key: tuple[str, str]) -> int:
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.index)
        return i

    def names(self) -> list[str]:
        return [_class_name(k) for k in self.index]


_KEY_CACHE: dict[tuple[str, int, str], tuple[str, str]] = {}


def _paper_key(q: MCQuestion, i: int) -> tuple[str, str]:
    """Class of a choice: its HOI class (named ``(verb, object)``) when in HICO-DET's vocabulary,
    else the reference key of its text."""
    c = q.choices[i]
    k = (q.label_space, c.hoi, c.text)
    hit = _KEY_CACHE.get(k)
    if hit is None:
        if c.hoi >= 0 and q.label_space == "hico-det":
            v = hico_det()
            verb, obj = v.hoi_verb_object[c.hoi]
            hit = (v.verbs[verb], v.objects[obj])
        else:
            hit = reference_class_key(c.text)
        _KEY_CACHE[k] = hit
    return hit


# ----------------------------------------------------------------------------- counting

@dataclass
class _Rows:
    """Per-question counts of one protocol (lists grown by ``update``)."""

    tp: list[float] = field(default_factory=list)
    pred: list[float] = field(default_factory=list)
    gt: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    prec: list[float] = field(default_factory=list)
    rec: list[float] = field(default_factory=list)
    exact: list[float] = field(default_factory=list)
    image: list[str] = field(default_factory=list)
    # sparse (question, class) triplets
    cq: list[int] = field(default_factory=list)
    cc: list[int] = field(default_factory=list)
    c_tp: list[float] = field(default_factory=list)
    c_pred: list[float] = field(default_factory=list)
    c_gt: list[float] = field(default_factory=list)

    def add_class(self, q: int, c: int, tp: float, pred: float, gt: float) -> None:
        self.cq.append(q)
        self.cc.append(c)
        self.c_tp.append(tp)
        self.c_pred.append(pred)
        self.c_gt.append(gt)


def _ratio(num: float, den: float, zero: float) -> float:
    return num / den if den > 0 else zero


def _count_paper(rows: _Rows, classes: _ClassIndex, q: MCQuestion, selected: frozenset[str],
                 zero: float) -> None:
    qi = len(rows.tp)
    texts = q.choice_texts
    chosen = {i for i, t in enumerate(texts) if t in selected}
    correct = set(q.correct)
    tp = len(chosen & correct)
    rows.tp.append(tp)
    rows.pred.append(len(chosen))
    rows.gt.append(len(correct))
    rows.f1.append(_ratio(2.0 * tp, len(chosen) + len(correct), zero))
    # no answer is not a perfect answer: an empty selection has precision 0 when the question has
    # correct choices (zero_division only where both sets are empty)
    rows.prec.append(_ratio(tp, len(chosen), zero if not correct else 0.0))
    rows.rec.append(_ratio(tp, len(correct), zero))
    rows.exact.append(float(chosen == correct))
    rows.image.append(q.file_name)
    pred_keys = {_paper_key(q, i) for i in chosen}
    gt_keys = {_paper_key(q, i) for i in correct}
    for key in sorted(pred_keys | gt_keys):  # a fixed order: sums must not depend on string hashing
        rows.add_class(qi, classes(key), float(key in pred_keys and key in gt_keys),
                       float(key in pred_keys), float(key in gt_keys))


def _count_crosshoi(rows: _Rows, classes: _ClassIndex, q: MCQuestion, picks: tuple[str, ...],
                    class_keys: frozenset[tuple[str, str]] | None) -> None:
    """The released script's counting of one question; ``picks`` is its list of picked texts
    (a text picked twice is there twice), ``class_keys`` the Macro-F1 table (``None``: every text)."""
    qi = len(rows.tp)
    texts = q.choice_texts
    gt_list = list(q.meta["raw_gt"]) if "raw_gt" in q.meta else [texts[i] for i in sorted(q.correct)]
    wrong_list = (list(q.meta["raw_wrong"]) if "raw_wrong" in q.meta
                  else [t for i, t in enumerate(texts) if i not in q.correct])
    per_text: dict[str, list[float]] = {}

    def bump(text: str, slot: int) -> None:
        per_text.setdefault(text, [0.0, 0.0, 0.0])[slot] += 1.0

    tp = fp = 0
    exact = 0.0
    if not picks:
        f1 = 0.0 if gt_list else 1.0
    else:
        pool = list(gt_list)
        for t in picks:
            if t in pool:
                tp += 1
                pool.remove(t)
                bump(t, 0)
            elif t in wrong_list:
                fp += 1
                bump(t, 1)
        f1 = 2.0 * tp / (tp + fp + len(gt_list)) if tp > 0 else 0.0
        true_pred = [t for t in picks if t in gt_list or t in wrong_list]
        exact = float(bool(true_pred) and len(true_pred) == len(gt_list) and set(true_pred) == set(gt_list))
    for t in gt_list:
        bump(t, 2)
    rows.tp.append(tp)
    rows.pred.append(tp + fp)
    rows.gt.append(len(gt_list))
    rows.f1.append(f1)
    rows.prec.append(0.0)
    rows.rec.append(0.0)
    rows.exact.append(exact)
    rows.image.append(q.file_name)
    for text, (c_tp, c_fp, c_gt) in per_text.items():
        if text == "None":
            continue
        key = reference_class_key(text)
        if class_keys is not None and key not in class_keys:
            continue
        rows.add_class(qi, classes(key), c_tp, c_tp + c_fp, c_gt)


# ----------------------------------------------------------------------------- weighted metrics

def _safe_div(num: np.ndarray, den: np.ndarray, zero: float) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), zero)


@dataclass(frozen=True)
class _Arrays:
    protocol: str
    zero: float
    tp: np.ndarray
    pred: np.ndarray
    gt: np.ndarray
    f1: np.ndarray
    prec: np.ndarray
    rec: np.ndarray
    exact: np.ndarray
    image_share: np.ndarray  # 1 / (questions of the same image)
    m_tp: sp.csc_matrix
    m_pred: sp.csc_matrix
    m_gt: sp.csc_matrix

    def metrics(self, w: np.ndarray) -> np.ndarray:
        """``(B, 6)`` metrics for a ``(B, Q)`` weight matrix (rows: resamples)."""
        zero = self.zero if self.protocol == "paper" else 0.0
        sw = w.sum(axis=1)
        tp, pred, gt = w @ self.tp, w @ self.pred, w @ self.gt
        instance = _safe_div(w @ self.f1, sw, zero)
        micro = _safe_div(2.0 * tp, pred + gt, zero)
        if self.protocol == "paper":
            exact = _safe_div(w @ self.exact, sw, zero)
            prec = _safe_div(w @ self.prec, sw, zero)
            rec = _safe_div(w @ self.rec, sw, zero)
        else:
            exact = _safe_div(w @ self.exact, w @ self.image_share, 0.0)
            prec = _safe_div(tp, pred, 0.0)
            rec = _safe_div(tp, gt, 0.0)
        c_tp = np.asarray((self.m_tp.T @ w.T).T)
        c_den = np.asarray((self.m_pred.T @ w.T).T) + np.asarray((self.m_gt.T @ w.T).T)
        present = c_den > 0
        f1c = _safe_div(2.0 * c_tp, c_den, 0.0)
        n_present = present.sum(axis=1)
        # crosshoi: Macro-F1 over no class is undefined (the released script divides by zero);
        # paper: zero_division, as every other ratio of that protocol
        macro = _safe_div((f1c * present).sum(axis=1), n_present.astype(np.float64),
                          zero if self.protocol == "paper" else np.nan)
        return np.stack([macro, instance, micro, exact, prec, rec], axis=1)


def _check_protocol(protocol: str, zero_division: float) -> None:
    if protocol not in MCQ_PROTOCOLS:
        raise ConfigError(f"protocol must be one of {list(MCQ_PROTOCOLS)}; got {protocol!r}")
    if not isinstance(zero_division, (int, float)) or not 0.0 <= float(zero_division) <= 1.0:
        raise ConfigError(f"zero_division must be a number in [0, 1]; got {zero_division!r}")


def _check_bootstrap(n_bootstrap: int, confidence: float, unit: str) -> None:
    if n_bootstrap < 0:
        raise ConfigError(f"n_bootstrap must be >= 0; got {n_bootstrap}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1); got {confidence!r}")
    if unit not in MCQ_BOOTSTRAP_UNITS:
        raise ConfigError(f"bootstrap_unit must be one of {list(MCQ_BOOTSTRAP_UNITS)}; got {unit!r}")


def _resampling(images: Sequence[str], unit: str, statistic: Callable[[np.ndarray], np.ndarray],
                ) -> tuple[str, int, Callable[[np.ndarray], np.ndarray]]:
    """``(unit, number of units, statistic of unit weights)`` for questions of ``images``:
    image weights are expanded to their questions, so an image's questions are drawn together."""
    _, index = np.unique(np.asarray(images, dtype=object), return_inverse=True)
    n_images = int(index.max()) + 1 if len(index) else 0
    if unit == "auto":
        unit = "image" if n_images < len(images) else "question"
    if unit == "question":
        return unit, len(images), statistic
    return unit, n_images, lambda w: statistic(w[:, index])


class MCQMetrics(Metric[MCQResult]):
    """Macro-F1, Instance-F1, Micro-F1, exact match, average precision and recall of
    multiple-choice answers, optionally with bootstrap confidence intervals (questions resampled).

    Parameters
    ----------
    protocol:
        ``"paper"`` (equations 1–4) or ``"crosshoi"`` (the released script's counting); see the
        module docstring for every difference.
    zero_division:
        Value of a ratio with an empty denominator under ``paper``.
    n_bootstrap:
        Number of bootstrap resamples (0: no intervals).
    confidence:
        Coverage of the intervals.
    bootstrap_unit:
        ``"auto"`` (images when an image holds several questions, else questions), ``"question"``
        or ``"image"``: what one bootstrap draw takes (module docstring).
    random_state:
        Seed or Generator of the resampling.
    class_keys:
        ``crosshoi`` only: the ``(action, object)`` keys Macro-F1 may count, for every question.
        Default: the released script's table of each question's label space
        (:func:`~hoibench.data.reference_class_keys`), so the script's numbers need no option;
        a question with no choice text in its table (e.g. a hoibench-built V-COCO benchmark,
        whose texts name role verbs) gives a warning.

    Examples
    --------
    >>> m = MCQMetrics(protocol="paper")
    >>> m.update(answers, questions)  # doctest: +SKIP
    >>> m.compute().macro_f1  # doctest: +SKIP
    """

    higher_is_better = True

    def __init__(self, *, protocol: str = "paper", zero_division: float = 1.0, n_bootstrap: int = 0,
                 confidence: float = 0.95, random_state: int | np.random.Generator | None = None,
                 class_keys: Iterable[tuple[str, str]] | None = None, bootstrap_unit: str = "auto") -> None:
        super().__init__()
        _check_protocol(protocol, zero_division)
        if class_keys is not None and protocol != "crosshoi":
            raise ConfigError("class_keys only applies to the crosshoi protocol")
        self.class_keys = None if class_keys is None else frozenset(tuple(k) for k in class_keys)
        _check_bootstrap(n_bootstrap, confidence, bootstrap_unit)
        self.bootstrap_unit = bootstrap_unit
        self.protocol = protocol
        self.zero_division = float(zero_division)
        self.n_bootstrap = int(n_bootstrap)
        self.confidence = float(confidence)
        self.random_state = random_state
        self.add_state("_rows", _Rows())  # per-question counts
        self.add_state("_classes", _ClassIndex())  # class key -> column of the count matrices
        self.add_state("_ids", [])  # question ids, in update order
        self.add_state("_missing", [])  # ids of questions without an answer
        self.add_state("_answer_ids", set())  # question ids of every answer given
        self.add_state("_answered", 0)
        self.add_state("_empty", 0)
        self.add_state("_out_of_choice", 0)

    def update(self, answers: Mapping[str, MCAnswer] | Iterable[MCAnswer],
               questions: Iterable[MCQuestion]) -> None:
        """Add answers (predictions) with their questions (ground truth); a question without an
        answer (or with status ``missing``) counts as an empty prediction and is listed in
        ``missing_ids``. Answers are keyed by question id, so their order does not matter."""
        by_id = _answers_by_id(answers)
        questions = list(questions)
        if questions and not isinstance(questions[0], MCQuestion):
            raise _order_error("questions", questions[0], "MCQuestion")
        untabled: dict[str, int] = {}  # label space -> questions with no text in its class table
        for q in questions:
            a = by_id.get(q.id)
            if a is None or a.status == "missing":
                self._missing.append(q.id)
                a = None
            else:
                self._answered += 1
            selected = frozenset() if a is None else a.selected
            if not selected:
                self._empty += 1
            if selected - set(q.choice_texts):
                self._out_of_choice += 1
            if self.protocol == "paper":
                _count_paper(self._rows, self._classes, q, selected, self.zero_division)
            else:
                table = self.class_keys if self.class_keys is not None else reference_class_keys(q.label_space)
                if table is not None and self.class_keys is None and not any(
                        reference_class_key(t) in table for t in q.choice_texts if t != "None"):
                    untabled[q.label_space] = untabled.get(q.label_space, 0) + 1
                _count_crosshoi(self._rows, self._classes, q, () if a is None else a.selections, table)
            self._ids.append(q.id)
        self._answer_ids.update(by_id)
        for space, n in untabled.items():
            warnings.warn(f"crosshoi protocol: {n} {space} questions have no choice text in the released "
                          f"script's class table for {space}; Macro-F1 leaves their texts out, as the script "
                          "does, and is undefined (NaN) when no text of any question counts (pass "
                          "class_keys= to count other texts)", stacklevel=2)

    def _arrays(self) -> _Arrays:
        r = self._rows
        n, c = len(r.tp), max(len(self._classes.index), 1)
        images: dict[str, int] = {}
        for f in r.image:
            images[f] = images.get(f, 0) + 1

        import scipy.sparse as sp

        def mat(values: list[float]) -> sp.csc_matrix:
            return sp.csc_matrix((np.asarray(values, dtype=np.float64), (r.cq, r.cc)), shape=(n, c))

        return _Arrays(self.protocol, self.zero_division,
                       *(np.asarray(getattr(r, k), dtype=np.float64)
                         for k in ("tp", "pred", "gt", "f1", "prec", "rec", "exact")),
                       np.asarray([1.0 / images[f] for f in r.image], dtype=np.float64),
                       mat(r.c_tp), mat(r.c_pred), mat(r.c_gt))

    def compute(self) -> MCQResult:
        """The scores of everything added since the last :meth:`reset` (cached until ``update``)."""
        if not self._ids:
            raise ValidationError("MCQMetrics.compute(): the updates held no questions; there is nothing to score")
        arr = self._arrays()
        point = arr.metrics(np.ones((1, len(self._ids))))[0]
        ci = unit = se = methods = None
        if self.n_bootstrap:
            unit, n_units, statistic = _resampling(self._rows.image, self.bootstrap_unit, arr.metrics)
            boot = bootstrap_ci(statistic, n_units, n_resamples=self.n_bootstrap,
                                confidence=self.confidence, random_state=self.random_state,
                                method=MCQ_CI_METHOD)
            # the metrics are fractions: a studentized interval can reach past 0 or 1, clipped
            lo, hi = np.clip(boot.low, 0.0, 1.0), np.clip(boot.high, 0.0, 1.0)
            spread = bootstrap_se(boot.samples)
            ci, se, methods = {}, {}, {}
            for k, name in enumerate(MCQ_METRIC_NAMES):
                # a confidence interval only where its method passed the coverage check and it
                # holds its own estimate; else the standard error alone (macro-F1: always)
                how, low, high = reportable_interval(point[k], lo[k], hi[k], CI_METHOD_OF[name])
                methods[name], se[name] = how, float(spread[k])
                if how != "se" or point[k] != point[k]:
                    ci[name] = (low, high)
        c_tp = np.asarray(arr.m_tp.sum(axis=0)).ravel()
        c_pred = np.asarray(arr.m_pred.sum(axis=0)).ravel()
        c_gt = np.asarray(arr.m_gt.sum(axis=0)).ravel()
        per_class = {
            name: {"tp": float(c_tp[k]), "pred": float(c_pred[k]), "gt": float(c_gt[k]),
                   "f1": float(2 * c_tp[k] / (c_pred[k] + c_gt[k])) if c_pred[k] + c_gt[k] > 0 else float("nan")}
            for k, name in enumerate(self._classes.names())
        }
        n_classes = int(sum(1 for v in per_class.values() if v["pred"] + v["gt"] > 0))
        return MCQResult(
            *(float(x) for x in point), protocol=self.protocol, zero_division=self.zero_division,
            n_questions=len(self._ids), n_images=len(set(self._rows.image)), n_classes=n_classes,
            n_answered=self._answered, n_missing=len(self._missing), n_empty=self._empty,
            n_out_of_choice=self._out_of_choice, n_unknown_answers=len(self._answer_ids - set(self._ids)),
            missing_ids=tuple(self._missing), per_class=per_class, ci=ci,
            confidence=self.confidence if ci is not None else None,
            n_bootstrap=self.n_bootstrap if ci is not None else 0, bootstrap_unit=unit, se=se,
            ci_method=methods,
        )


def mcq_metrics(
    answers: Mapping[str, MCAnswer] | Iterable[MCAnswer],
    questions: Iterable[MCQuestion],
    *,
    protocol: str = "paper",
    zero_division: float = 1.0,
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    class_keys: Iterable[tuple[str, str]] | None = None,
    bootstrap_unit: str = "auto",
) -> MCQResult:
    """Functional twin of :class:`MCQMetrics` (same parameters, one call): answers first,
    questions second."""
    m = MCQMetrics(protocol=protocol, zero_division=zero_division, n_bootstrap=n_bootstrap,
                   confidence=confidence, random_state=random_state, class_keys=class_keys,
                   bootstrap_unit=bootstrap_unit)
    m.update(answers, questions)
    return m.compute()


def mcq_scores(
    questions: Iterable[MCQuestion],
    answers: Mapping[str, MCAnswer] | Iterable[MCAnswer],
    **kwargs: Any,
) -> MCQResult:
    """Deprecated: :func:`mcq_metrics` with the arguments swapped (questions first).

    .. deprecated::
        ``mcq_scores(questions, answers)`` is ``mcq_metrics(answers, questions)``, the name and
        argument order every other metric uses; this alias goes in the next release.
    """
    warnings.warn("mcq_scores(questions, answers) is deprecated; use mcq_metrics(answers, questions)",
                  DeprecationWarning, stacklevel=2)
    return mcq_metrics(answers, questions, **kwargs)


# ----------------------------------------------------------------------------- across orders and models

def _scored(answers: Mapping[str, MCAnswer] | Iterable[MCAnswer], questions: Sequence[MCQuestion], *,
            protocol: str, zero_division: float, class_keys: Iterable[tuple[str, str]] | None) -> _Arrays:
    m = MCQMetrics(protocol=protocol, zero_division=zero_division, class_keys=class_keys)
    m.update(answers, questions)
    if not m._ids:
        raise ValidationError("the updates held no questions; there is nothing to score")
    return m._arrays()


def all_orders_exact_match(
    answer_sets: Sequence[Mapping[str, MCAnswer] | Iterable[MCAnswer]],
    questions: Iterable[MCQuestion],
    *,
    protocol: str = "paper",
    zero_division: float = 1.0,
    class_keys: Iterable[tuple[str, str]] | None = None,
) -> float:
    """Exact match over several choice orders of the same questions, a question counting only if
    the answer under *every* order is exactly right (VLMEvalKit's CircularEval, for multiple
    answers): the order-robust number to report beside :func:`position_sensitivity`'s spread.

    Normalised as the protocol's exact match (``crosshoi``: by the number of images)."""
    if len(answer_sets) < 2:
        raise ConfigError(f"all-orders exact match needs answers under at least two choice orders; "
                          f"got {len(answer_sets)}")
    qs = list(questions)
    arrs = [_scored(a, qs, protocol=protocol, zero_division=zero_division, class_keys=class_keys)
            for a in answer_sets]
    exact = np.min(np.stack([a.exact for a in arrs]), axis=0)
    both = dataclasses.replace(arrs[0], exact=exact)
    return float(both.metrics(np.ones((1, len(exact))))[0, MCQ_METRIC_NAMES.index("exact_match")])


@dataclass(frozen=True)
class MCQComparison:
    """Two models' answers to the same questions, scored on the same bootstrap resamples.

    Every mapping is keyed by metric name (fractions); ``difference`` is ``a − b``, ``ci`` its
    interval, ``p_a_better`` / ``p_tie`` the share of resamples with ``a > b`` / ``a = b``."""

    names: tuple[str, str]
    a: Mapping[str, float]
    b: Mapping[str, float]
    difference: Mapping[str, float]
    ci: Mapping[str, tuple[float, float]]
    p_a_better: Mapping[str, float]
    p_tie: Mapping[str, float]
    protocol: str
    confidence: float
    n_bootstrap: int
    bootstrap_unit: str
    n_questions: int
    n_images: int

    kind: ClassVar[str] = "mcq_comparison"

    def rows(self) -> list[dict[str, Any]]:
        """One record per metric (fractions), in :data:`MCQ_METRIC_NAMES` order."""
        return [{"metric": k, "model_a": self.names[0], "model_b": self.names[1], "a": self.a[k],
                 "b": self.b[k], "difference": self.difference[k], "ci_low": self.ci[k][0],
                 "ci_high": self.ci[k][1], "p_a_better": self.p_a_better[k], "p_tie": self.p_tie[k]}
                for k in MCQ_METRIC_NAMES]

    def to_json(self) -> dict[str, Any]:
        """The comparison as one JSON object (NaN as null)."""
        return {"kind": self.kind, "model_a": self.names[0], "model_b": self.names[1],
                "protocol": self.protocol, "confidence": self.confidence, "n_bootstrap": self.n_bootstrap,
                "bootstrap_unit": self.bootstrap_unit, "n_questions": self.n_questions,
                "n_images": self.n_images,
                "metrics": [{k: json_float(v) if isinstance(v, float) else v for k, v in r.items()}
                            for r in self.rows()]}


def mcq_compare(
    answers_a: Mapping[str, MCAnswer] | Iterable[MCAnswer],
    answers_b: Mapping[str, MCAnswer] | Iterable[MCAnswer],
    questions: Iterable[MCQuestion],
    *,
    names: tuple[str, str] = ("a", "b"),
    protocol: str = "paper",
    zero_division: float = 1.0,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
    bootstrap_unit: str = "auto",
    class_keys: Iterable[tuple[str, str]] | None = None,
) -> MCQComparison:
    """Paired bootstrap comparison of two answer sets on the same questions: each resample
    scores both models on the same draw, so the interval of ``a − b`` is narrower than the two
    separate intervals suggest (the mAP twin is ``hoibench analyze compare``)."""
    _check_bootstrap(n_bootstrap, confidence, bootstrap_unit)
    if n_bootstrap < 1:
        raise ConfigError("a paired comparison needs n_bootstrap >= 1")
    qs = list(questions)
    arr_a, arr_b = (_scored(x, qs, protocol=protocol, zero_division=zero_division, class_keys=class_keys)
                    for x in (answers_a, answers_b))

    def both(w: np.ndarray) -> np.ndarray:
        ma, mb = arr_a.metrics(w), arr_b.metrics(w)
        return np.concatenate([ma, mb, ma - mb], axis=1)

    images = [q.file_name for q in qs]
    unit, n_units, statistic = _resampling(images, bootstrap_unit, both)
    boot = bootstrap_ci(statistic, n_units, n_resamples=n_bootstrap, confidence=confidence,
                        random_state=random_state, method=MCQ_CI_METHOD)
    k = len(MCQ_METRIC_NAMES)
    est, d = boot.estimate, boot.samples[:, 2 * k:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a metric NaN in every resample
        better = np.nanmean(np.where(np.isnan(d), np.nan, d > 0), axis=0)
        tie = np.nanmean(np.where(np.isnan(d), np.nan, d == 0), axis=0)

    def by_name(v: np.ndarray) -> dict[str, float]:
        return {name: float(v[i]) for i, name in enumerate(MCQ_METRIC_NAMES)}

    return MCQComparison(
        names=(str(names[0]), str(names[1])), a=by_name(est[:k]), b=by_name(est[k:2 * k]),
        difference=by_name(est[2 * k:]),
        # an interval that would not hold its own difference is no CI: NaN ends (its SE is printed)
        ci={name: reportable_interval(float(est[2 * k + i]), float(boot.low[2 * k + i]), float(boot.high[2 * k + i]),
                                      MCQ_CI_METHOD)[1:] for i, name in enumerate(MCQ_METRIC_NAMES)},
        p_a_better=by_name(better), p_tie=by_name(tie), protocol=protocol, confidence=float(confidence),
        n_bootstrap=int(n_bootstrap), bootstrap_unit=unit, n_questions=len(qs), n_images=len(set(images)))


def _order_error(arg: str, got: object, want: str) -> ValidationError:
    """The error of arguments given in the order of the deprecated ``mcq_scores``."""
    return ValidationError(f"MCQMetrics.update(answers, questions): {arg} holds {type(got).__name__} "
                           f"objects, not {want}; answers come first, questions second (like every "
                           "metric's update(preds, target))")


def _answers_by_id(answers: Mapping[str, MCAnswer] | Iterable[MCAnswer]) -> Mapping[str, MCAnswer]:
    if isinstance(answers, Mapping):
        return answers
    by_id: dict[str, MCAnswer] = {}
    for a in answers:
        if not isinstance(a, MCAnswer):
            raise _order_error("answers", a, "MCAnswer")
        by_id[a.question_id] = a
    return by_id
