"""Multiple-choice metrics: property tests against scikit-learn, bootstrap intervals (the
``crosshoi`` protocol against the released script: ``test_mcq_crosshoi.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, precision_score, recall_score

from hoibench import ConfigError, ValidationError
from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.evaluation import MCQMetrics, bootstrap_ci, bootstrap_weights, mcq_metrics
from hoibench.vocab import hico_det

VOCAB = hico_det()
N_CLASSES = 12  # a small class universe makes shared classes (and macro averaging) likely


def _class_text(c: int) -> str:
    v, o = VOCAB.hoi_verb_object[c]
    return f"{VOCAB.verbs[v]} a/an {VOCAB.objects[o]}"


@st.composite
def benchmark(draw: st.DrawFn) -> tuple[list[MCQuestion], dict[str, MCAnswer], np.ndarray, np.ndarray]:
    """Random questions over a small class universe with random answers, plus the indicator
    matrices scikit-learn scores (rows: questions, columns: classes)."""
    n = draw(st.integers(1, 25))
    questions, answers = [], {}
    y_true = np.zeros((n, N_CLASSES), dtype=int)
    y_pred = np.zeros((n, N_CLASSES), dtype=int)
    for k in range(n):
        classes = draw(st.lists(st.integers(0, N_CLASSES - 1), min_size=1, max_size=4, unique=True))
        correct = draw(st.sets(st.integers(0, len(classes) - 1)))
        chosen = draw(st.sets(st.integers(0, len(classes) - 1)))
        choices = tuple(Choice(_class_text(c), hoi=c) for c in classes)
        q = MCQuestion(id=f"q{k}", file_name=f"im{k}.jpg", setting=1, choices=choices,
                       correct=frozenset(correct))
        questions.append(q)
        answers[q.id] = MCAnswer(q.id, frozenset(choices[i].text for i in chosen))
        for i in correct:
            y_true[k, classes[i]] = 1
        for i in chosen:
            y_pred[k, classes[i]] = 1
    return questions, answers, y_true, y_pred


@settings(max_examples=150, deadline=None)
@given(benchmark(), st.sampled_from([0.0, 1.0]))
def test_paper_protocol_matches_sklearn(data, zero_division: float) -> None:
    questions, answers, y_true, y_pred = data
    r = mcq_metrics(answers, questions, protocol="paper", zero_division=zero_division)
    present = np.flatnonzero((y_true + y_pred).sum(axis=0) > 0)
    kw = {"zero_division": zero_division}
    if len(present):
        assert r.macro_f1 == pytest.approx(f1_score(y_true, y_pred, average="macro", labels=present, **kw))
    assert r.micro_f1 == pytest.approx(f1_score(y_true, y_pred, average="micro", **kw))
    assert r.instance_f1 == pytest.approx(f1_score(y_true, y_pred, average="samples", **kw))
    # as scikit-learn, except that no answer to a question with correct choices has precision 0
    n_pred, n_gt = y_pred.sum(axis=1), y_true.sum(axis=1)
    per_q = np.where(n_pred > 0, (y_true & y_pred).sum(axis=1) / np.maximum(n_pred, 1),
                     np.where(n_gt > 0, 0.0, zero_division))
    assert r.avg_precision == pytest.approx(per_q.mean())
    if (n_pred > 0).all() or zero_division == 0.0:
        assert r.avg_precision == pytest.approx(precision_score(y_true, y_pred, average="samples", **kw))
    assert r.avg_recall == pytest.approx(recall_score(y_true, y_pred, average="samples", **kw))
    assert r.exact_match == pytest.approx(np.mean((y_true == y_pred).all(axis=1)))


def test_metric_object_accumulates_caches_and_resets() -> None:
    q1 = MCQuestion("a", "a.jpg", 1, (Choice("x"), Choice("y")), frozenset({0}))
    q2 = MCQuestion("b", "b.jpg", 1, (Choice("x"), Choice("z")), frozenset({1}))
    ans = {"a": MCAnswer("a", frozenset({"x"})), "zzz": MCAnswer("zzz", frozenset())}
    m = MCQMetrics()
    m.update(ans, [q1])
    m.update(ans, [q2])
    r = m.compute()
    assert m.compute() is r
    assert r.n_questions == 2 and r.missing_ids == ("b",) and r.n_missing == 1
    assert r.exact_match == 0.5 and r.micro_f1 == pytest.approx(2 / 3)
    assert r == mcq_metrics(ans, [q1, q2])
    m.reset()
    with pytest.raises(ValidationError, match="before any update"):
        m.compute()
    m.update(ans, [])
    with pytest.raises(ValidationError, match="no questions"):
        m.compute()
    with pytest.raises(ConfigError, match="protocol must be one of"):
        MCQMetrics(protocol="vqa")


def test_out_of_choice_selections_are_ignored_and_counted() -> None:
    q = MCQuestion("a", "a.jpg", 1, (Choice("x"), Choice("y")), frozenset({0}))
    r = mcq_metrics([MCAnswer("a", frozenset({"x", "bogus"}))], [q])
    assert r.exact_match == 1.0 and r.n_out_of_choice == 1


# ----------------------------------------------------------------------------- bootstrap

def test_bootstrap_is_seeded_vectorised_and_covers_the_estimate() -> None:
    x = np.random.default_rng(0).normal(size=200)
    stat = lambda w: w @ x / w.sum(axis=1)  # noqa: E731
    a = bootstrap_ci(stat, 200, n_resamples=400, random_state=1)
    b = bootstrap_ci(stat, 200, n_resamples=400, random_state=1, batch_size=37)
    np.testing.assert_allclose(a.samples, bootstrap_ci(stat, 200, n_resamples=400, random_state=1).samples)
    assert a.samples.shape == (400, 1) and b.samples.shape == (400, 1)
    assert a.low[0] < x.mean() < a.high[0]
    se = x.std(ddof=1) / np.sqrt(200)
    assert (a.high[0] - a.low[0]) == pytest.approx(2 * 1.96 * se, rel=0.2)
    w = bootstrap_weights(50, 10, 0)
    assert w.shape == (10, 50) and (w.sum(axis=1) == 50).all()
    with pytest.raises(ConfigError, match="random_state"):
        bootstrap_ci(stat, 200, random_state="x")  # type: ignore[arg-type]


def test_mcq_bootstrap_intervals_bracket_the_scores() -> None:
    rng = np.random.default_rng(3)
    qs, ans = [], {}
    for k in range(300):
        classes = rng.choice(40, size=4, replace=False)
        choices = tuple(Choice(_class_text(int(c)), hoi=int(c)) for c in classes)
        q = MCQuestion(f"q{k}", f"{k}.jpg", 1, choices, frozenset({0, 1}))
        qs.append(q)
        ans[q.id] = MCAnswer(q.id, frozenset(choices[i].text for i in np.flatnonzero(rng.random(4) < 0.5)))
    r = mcq_metrics(ans, qs, n_bootstrap=300, random_state=0)
    # macro-F1 gets its bootstrap SE, no interval (none passed the coverage check)
    assert r.ci is not None and set(r.ci) == set(r.metrics()) - {"macro_f1"} and r.ci_method["macro_f1"] == "se"
    for name, lo_hi in r.ci.items():
        lo, hi = lo_hi
        assert lo <= getattr(r, name) <= hi and hi - lo < 0.25, name
    assert set(r.se) == set(r.metrics()) and 0 < r.se["macro_f1"] < 0.1
    assert mcq_metrics(ans, qs, n_bootstrap=300, random_state=0).ci == r.ci


_HASH_SCRIPT = """
import numpy as np
from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.evaluation import mcq_metrics
from hoibench.vocab import hico_det

v = hico_det()
rng = np.random.default_rng(0)
qs, ans = [], []
for i in range(300):
    hois = rng.choice(v.n_hois, 4, replace=False)
    choices = tuple(Choice(f"{v.verbs[v.hoi_verb_object[h][0]]} a/an {v.objects[v.hoi_verb_object[h][1]]}",
                           hoi=int(h), verb=int(v.hoi_verb_object[h][0]), object=int(v.hoi_verb_object[h][1]))
                    for h in hois)
    correct = tuple(int(c) for c in np.flatnonzero(rng.random(4) < 0.5)) or (0,)
    q = MCQuestion(id=f"q{i}", file_name=f"img{i % 97}.jpg", setting=1, choices=choices,
                   correct=frozenset(correct))
    picked = [choices[j].text for j in range(4) if rng.random() < 0.5]
    qs.append(q)
    ans.append(MCAnswer(question_id=q.id, selected=frozenset(picked)))
for proto in ("paper", "crosshoi"):
    r = mcq_metrics(ans, qs, protocol=proto)
    print(proto, *(repr(x) for x in r.metrics().values()))
"""


def test_scores_do_not_depend_on_string_hashing() -> None:
    """Macro-F1 sums per-class F1 in the order classes are first met; that order must not come
    from iterating a set of strings (PYTHONHASHSEED changed the last digit before)."""
    import os
    import subprocess
    import sys

    outs = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        res = subprocess.run([sys.executable, "-c", _HASH_SCRIPT], env=env, capture_output=True,
                             text=True, timeout=120, check=True)
        outs.add(res.stdout)
    assert len(outs) == 1, outs
