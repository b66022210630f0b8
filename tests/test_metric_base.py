"""The contract every metric shares through :class:`hoibench.evaluation.Metric`.

HICO-DET mAP, V-COCO role AP and the multiple-choice metrics run through the same checks on
non-trivial inputs: ``reset`` restores the declared state, ``compute`` is cached and invalidated
by ``update``, ``compute`` before ``update`` raises the one error, the repr names parameters and
not state, class and functional twin agree, and several updates equal one. Plus the deprecated
``mcq_scores`` alias.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from hoibench._exceptions import ValidationError
from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.datasets import load_dataset
from hoibench.evaluation import (
    HICOMeanAP,
    MCQMetrics,
    Metric,
    VCOCORoleAP,
    bootstrap_ci,
    hico_mean_ap,
    match_hico_detections,
    mcq_metrics,
    mcq_scores,
    vcoco_role_ap,
)
from hoibench.formats import vcoco_ground_truth_from_official
from hoibench.vocab import hico_det
from tests.test_analysis_bright import noisy_predictions
from tests.test_eval_vcoco_oracle import make_synthetic


@dataclass(frozen=True)
class Case:
    """A metric with its twin, a few parameters that differ from the defaults, and inputs as
    disjoint batches (``(preds, target)`` each) plus the same inputs in one piece."""

    cls: type[Metric[Any]]
    function: Callable[..., Any]
    params: dict[str, Any]
    batches: list[tuple[Any, Any]]
    whole: tuple[Any, Any]


def _hico_case() -> Case:
    test = load_dataset("hico-det:test")
    target = test.subset(np.arange(150))
    preds = noisy_predictions(target, seed=3)
    batches = []
    for part in np.array_split(np.arange(target.n_images), 3):
        gt = target.subset(part)
        keep = np.isin(np.asarray(preds.file_names)[preds.image_index], gt.file_names)
        batches.append((preds.select(keep), gt))
    return Case(HICOMeanAP, hico_mean_ap, {"protocol": "qpic", "class_subsets": {"some": np.arange(0, 600, 3)}},
                batches, (preds, target))


def _vcoco_case() -> Case:
    coco, vcoco, det = make_synthetic(11, n_images=24)
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    batches = [(det.subset(np.flatnonzero(np.isin(det.image_ids, ids))), gt.select(ids))
               for ids in np.array_split(gt.image_ids, 3)]
    return Case(VCOCORoleAP, vcoco_role_ap, {"scenarios": (2,), "iou_threshold": 0.4}, batches, (det, gt))


def _mcq_data(seed: int = 5, n: int = 60) -> tuple[list[MCAnswer], list[MCQuestion]]:
    """Random questions over 12 HICO-DET classes (two per image), random answers, some missing."""
    vocab, rng = hico_det(), np.random.default_rng(seed)

    def text(c: int) -> str:
        v, o = vocab.hoi_verb_object[c]
        return f"{vocab.verbs[v]} a/an {vocab.objects[o]}"

    questions, answers = [], []
    for k in range(n):
        classes = rng.choice(12, size=int(rng.integers(2, 5)), replace=False)
        choices = tuple(Choice(text(int(c)), hoi=int(c)) for c in classes)
        correct = frozenset(int(i) for i in np.flatnonzero(rng.random(len(choices)) < 0.5))
        questions.append(MCQuestion(id=f"q{k}", file_name=f"im{k // 2}.jpg", setting=1, choices=choices,
                                    correct=correct))
        if rng.random() < 0.9:
            picked = np.flatnonzero(rng.random(len(choices)) < 0.5)
            answers.append(MCAnswer(f"q{k}", frozenset(choices[i].text for i in picked)))
    return answers, questions


def _mcq_case(protocol: str) -> Case:
    answers, questions = _mcq_data()
    batches = []
    for part in np.array_split(np.arange(len(questions)), 3):
        qs = [questions[i] for i in part]
        ids = {q.id for q in qs}
        batches.append(([a for a in answers if a.question_id in ids], qs))
    params = {"protocol": protocol, "n_bootstrap": 40, "random_state": 0}
    if protocol == "paper":
        params["zero_division"] = 0.0
    return Case(MCQMetrics, mcq_metrics, params,
                batches, (answers, questions))


CASES: dict[str, Callable[[], Case]] = {
    "hico": _hico_case,
    "vcoco": _vcoco_case,
    "mcq-paper": lambda: _mcq_case("paper"),
    "mcq-crosshoi": lambda: _mcq_case("crosshoi"),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request: pytest.FixtureRequest) -> Case:
    return CASES[request.param]()


def assert_same(a: Any, b: Any) -> None:
    """Field by field, arrays and nested dicts included, NaN equal to NaN."""
    assert type(a) is type(b)
    np.testing.assert_equal(dataclasses.asdict(a), dataclasses.asdict(b))


def differs(a: Any, b: Any) -> bool:
    try:
        assert_same(a, b)
    except AssertionError:
        return True
    return False


def state(metric: Metric[Any]) -> dict[str, Any]:
    """The declared state as plain, comparable values."""
    def plain(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return (v.dtype.str, v.tolist())
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if hasattr(v, "__dict__"):
            return (type(v).__name__, plain(vars(v)))
        return v

    return {name: plain(getattr(metric, name)) for name in metric._defaults}


# ----------------------------------------------------------------------------- the contract
def test_compute_before_update_raises_the_one_error(case: Case) -> None:
    m = case.cls(**case.params)
    message = rf"^{case.cls.__name__}\.compute\(\) called before any update\(\): there is nothing to score yet$"
    with pytest.raises(ValidationError, match=message):
        m.compute()
    m.update(*case.batches[0])
    m.compute()
    m.reset()
    with pytest.raises(ValidationError, match=message):
        m.compute()


def test_reset_restores_every_declared_state(case: Case) -> None:
    fresh = case.cls(**case.params)
    m = case.cls(**case.params)
    assert m._defaults and state(m) == state(fresh)
    first = None
    for _ in range(2):  # the second round catches a default mutated in place by the first
        for batch in case.batches:
            m.update(*batch)
        assert m.update_count == len(case.batches)
        assert state(m) != state(fresh)
        result = m.compute()
        if first is not None:
            assert_same(result, first)
        first = result
        m.reset()
        assert state(m) == state(fresh) and m.update_count == 0


def test_compute_is_cached_until_the_next_update(case: Case) -> None:
    m = case.cls(**case.params)
    m.update(*case.batches[0])
    r1 = m.compute()
    assert m.compute() is r1
    m.update(*case.batches[1])
    r2 = m.compute()
    assert r2 is not r1 and differs(r1, r2)
    assert m.compute() is r2


def test_repr_names_the_parameters_not_the_state(case: Case) -> None:
    assert repr(case.cls()) == f"{case.cls.__name__}()"
    m = case.cls(**case.params)
    before = repr(m)
    assert before.startswith(f"{case.cls.__name__}(") and len(before) < 120
    defaults = {n: p.default for n, p in inspect.signature(case.cls.__init__).parameters.items()}
    for name, value in case.params.items():  # changed ones named, defaults left out (sklearn's style)
        assert (f"{name}=" in before) is (value is not defaults[name] and value != defaults[name])
    for batch in case.batches:
        m.update(*batch)
    m.compute()
    assert repr(m) == before


def test_class_equals_function(case: Case) -> None:
    m = case.cls(**case.params)
    m.update(*case.whole)
    assert_same(m.compute(), case.function(*case.whole, **case.params))


def test_accumulated_updates_equal_one_update(case: Case) -> None:
    m = case.cls(**case.params)
    for batch in case.batches:
        m.update(*batch)
    assert_same(m.compute(), case.function(*case.whole, **case.params))


def test_predictions_come_first_everywhere(case: Case) -> None:
    """One argument order: ``update(preds, target)`` and ``function(preds, target, **params)``."""
    first = {HICOMeanAP: "preds", VCOCORoleAP: "detections", MCQMetrics: "answers"}[case.cls]
    update = list(inspect.signature(case.cls.update).parameters)[1:3]
    function = list(inspect.signature(case.function).parameters)[:2]
    assert update == function and update[0] == first
    assert case.cls.higher_is_better is True
    twin = {HICOMeanAP: "hico_mean_ap", VCOCORoleAP: "vcoco_role_ap", MCQMetrics: "mcq_metrics"}[case.cls]
    assert case.function.__name__ == twin  # the naming rule: the class's name in snake_case


# ----------------------------------------------------------------------------- specifics
def test_hico_matches_and_bootstrap_reprs_are_short() -> None:
    case = _hico_case()
    matches = match_hico_detections(*case.whole)
    text = repr(matches)
    assert text == (f"HICOMatches(protocol='official', n_classes=600, n_detections={len(matches.scores)}, "
                    f"n_tp={int(matches.tp.sum())}, n_gt={int(matches.n_gt.sum())}, "
                    f"n_dropped={sum(matches.n_dropped.values())})")
    assert len(matches.scores) > 100
    m = HICOMeanAP()
    with pytest.raises(ValidationError, match=r"^HICOMeanAP\.matches\(\) called before any update\(\)"):
        m.matches()
    boot = bootstrap_ci(lambda w: w @ np.arange(50.0) / w.sum(1), 50, n_resamples=500, random_state=0)
    assert repr(boot) == "BootstrapResult(n_statistics=1, confidence=0.95, n_resamples=500)"


def test_hico_repr_of_a_custom_protocol_and_big_parameters() -> None:
    from hoibench.evaluation import HICOProtocol

    custom = HICOProtocol.preset("qpic").replace(max_per_image=5)
    m = HICOMeanAP(protocol=custom, known_object=True, classes=np.arange(600),
                   image_labels={f"{i}.jpg": [1] for i in range(1000)})
    assert repr(m) == ("HICOMeanAP(protocol=<HICOProtocol 'qpic+custom'>, known_object=True, "
                       "image_labels=<dict of 1000>, classes=<array shape=(600,) dtype=int64>)")


def test_mcq_metrics_in_the_old_order_is_a_clear_error() -> None:
    answers, questions = _mcq_data()
    m = MCQMetrics()
    with pytest.raises(ValidationError, match="answers holds MCQuestion objects, not MCAnswer; answers come first"):
        m.update(questions, answers)
    with pytest.raises(ValidationError, match="questions holds str objects, not MCQuestion"):
        m.update({a.question_id: a for a in answers}, {q.id: q for q in questions})
    assert m.update_count == 0


def test_an_update_without_questions_is_not_a_score() -> None:
    m = MCQMetrics()
    m.update([], [])
    with pytest.raises(ValidationError, match="held no questions"):
        m.compute()


def test_deprecated_mcq_scores_warns_and_gives_the_same_numbers() -> None:
    answers, questions = _mcq_data()
    with pytest.warns(DeprecationWarning, match=r"mcq_scores\(questions, answers\) is deprecated; use "
                                                r"mcq_metrics\(answers, questions\)"):
        old = mcq_scores(questions, answers, protocol="crosshoi", n_bootstrap=30, random_state=1)
    new = mcq_metrics(answers, questions, protocol="crosshoi", n_bootstrap=30, random_state=1)
    assert_same(old, new)
    assert new.ci is not None and new.n_questions == len(questions)


def test_base_docstring_example_runs() -> None:
    import doctest

    from hoibench.evaluation import _metric

    assert doctest.testmod(_metric).failed == 0


def test_base_rejects_a_subclass_that_skips_its_init() -> None:
    class Broken(Metric[int]):
        def __init__(self) -> None:
            self.add_state("_n", 0)

    with pytest.raises(TypeError, match=r"must call super\(\).__init__\(\)"):
        Broken()
