"""Multiple-choice metrics: property tests against scikit-learn, the released script's counting,
bootstrap intervals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, precision_score, recall_score

from hoibench import ConfigError, ValidationError
from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.evaluation import MCQMetrics, bootstrap_ci, bootstrap_weights, mcq_metrics
from hoibench.formats import read_questions
from hoibench.vocab import hico_det
from tests.conftest import shared_file

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


# ----------------------------------------------------------------------------- released script

def _reference_scores(raw: dict, preds: dict) -> dict[str, float]:
    """A plain re-implementation of the released script's counting (mllm_instancef1_eval,
    mllm_macrof1_eval and the pooled precision/recall of script_eval_*), written from its text."""
    hico = {(VOCAB.verbs[a], VOCAB.objects[b]) for a, b in VOCAB.hoi_verb_object}
    per_text: dict[str, dict[str, int]] = {}
    tp_all = fp_all = full_gt = full_match = 0
    f1s = []
    for file, entry in raw.items():
        qas = entry if "QA_0" in entry or any(k.startswith("QA_") for k in entry) else {"QA_0": entry}
        for qk, qa in qas.items():
            gti, wrong = qa["gt_choices"], qa["wrong_choices"]
            rpi = preds.get(file, {}).get(qk, [])
            if not rpi:
                full_gt += len(gti)
                f1s.append(0 if gti else 1)
                for g in gti:
                    per_text.setdefault(g, {"tp": 0, "fp": 0, "gt": 0})["gt"] += 1
                continue
            pool = list(gti)
            tp = fp = 0
            for r in rpi:
                d = per_text.setdefault(r, {"tp": 0, "fp": 0, "gt": 0})
                if r in pool:
                    tp += 1
                    d["tp"] += 1
                    pool.remove(r)
                elif r in wrong:
                    fp += 1
                    d["fp"] += 1
            tp_all += tp
            fp_all += fp
            full_gt += len(gti)
            true_pred = [r for r in rpi if r in gti or r in wrong]
            if true_pred and len(true_pred) == len(gti) and set(true_pred) == set(gti):
                full_match += 1
            for g in gti:
                per_text.setdefault(g, {"tp": 0, "fp": 0, "gt": 0})["gt"] += 1
            p = tp / (tp + fp) if tp + fp else 0
            rc = tp / len(gti) if gti else 0
            f1s.append(2 * p * rc / (p + rc) if p + rc else 0)
    classes: dict[tuple[str, str], dict[str, int]] = {}
    for text, d in per_text.items():
        if text == "None":
            continue
        if " a/an " in text:
            act, obj = text.split(" a/an ")
            act, obj = act.replace(" ", "_"), obj.replace(" ", "_")
            if "no_interaction" in act:
                act = "no_interaction"
        else:
            act, obj = text, "person"
        if (act, obj) not in hico:
            continue
        c = classes.setdefault((act, obj), {"tp": 0, "fp": 0, "gt": 0})
        for k in c:
            c[k] += d[k]
    macro = []
    for c in classes.values():
        if c["tp"] == c["fp"] == c["gt"] == 0:
            continue
        if c["tp"] == 0:
            macro.append(0.0)
        else:
            p, rc = c["tp"] / (c["tp"] + c["fp"]), c["tp"] / c["gt"]
            macro.append(2 * p * rc / (p + rc))
    prec = tp_all / (tp_all + fp_all)
    rec = tp_all / full_gt
    return {"macro_f1": sum(macro) / len(macro), "instance_f1": sum(f1s) / len(f1s),
            "micro_f1": 2 * prec * rec / (prec + rec), "exact_match": full_match / len(raw),
            "avg_precision": prec, "avg_recall": rec}


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["crosshoi_bench_allscene_final.json", "crosshoi_bench_hum_box_final.json",
                                  "crosshoi_bench_hum_obj_box_final.json"])
def test_crosshoi_protocol_reproduces_released_counting_with_random_answers(name: str) -> None:
    path = shared_file(f"crosshoi-bench/hicodet/our_test/{name}")
    raw = json.loads(path.read_text())
    questions = read_questions(path)
    rng = np.random.default_rng(7)
    answers, preds = {}, {}
    for q in questions:
        texts = list(q.choice_texts)
        if rng.random() < 0.05:
            continue  # a missing answer
        picked = sorted({texts[i] for i in np.flatnonzero(rng.random(len(texts)) < 0.4)})
        answers[q.id] = MCAnswer(q.id, frozenset(picked))
        preds[q.file_name] = {"QA_0": picked}
    ours = mcq_metrics(answers, questions, protocol="crosshoi").metrics()
    ref = _reference_scores(raw, preds)
    for k, v in ref.items():
        assert ours[k] == pytest.approx(v, abs=1e-12), k
    # the two protocols really differ on the same answers
    paper = mcq_metrics(answers, questions, protocol="paper").metrics()
    assert paper["avg_precision"] != pytest.approx(ours["avg_precision"])


def test_crosshoi_protocol_on_synthetic_duplicates_and_multi_question_images() -> None:
    qa = {"img.jpg": {"QA_0": {"gt_choices": ["hold a/an cup", "hold a/an cup"], "wrong_choices": ["drink_with a/an cup"]},
                      "QA_1": {"gt_choices": ["ride a/an horse"], "wrong_choices": ["feed a/an horse", "None"]}},
          "two.jpg": {"QA_0": {"gt_choices": [], "wrong_choices": ["pet a/an cow", "None"]}}}
    import tempfile
    from pathlib import Path

    from hoibench.formats.crosshoi import read_crosshoi

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "v.json"
        p.write_text(json.dumps(qa))
        qs = read_crosshoi(p, dataset="hico-det")
    preds = {"img.jpg": {"QA_0": ["hold a/an cup"], "QA_1": ["ride a/an horse"]}, "two.jpg": {"QA_0": ["None"]}}
    answers = {"img.jpg#QA_0": MCAnswer("img.jpg#QA_0", frozenset({"hold a/an cup"})),
               "img.jpg#QA_1": MCAnswer("img.jpg#QA_1", frozenset({"ride a/an horse"})),
               "two.jpg": MCAnswer("two.jpg", frozenset({"None"}))}
    ours = mcq_metrics(answers, qs, protocol="crosshoi").metrics()
    ref = _reference_scores(qa, preds)
    for k, v in ref.items():
        assert ours[k] == pytest.approx(v), k
    assert ref["exact_match"] == 0.5  # one exact match, two images (three questions)


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
    assert r.ci is not None and set(r.ci) == set(r.metrics())
    for name, value in r.metrics().items():
        lo, hi = r.ci[name]
        assert lo <= value <= hi and hi - lo < 0.25, name
    assert mcq_metrics(ans, qs, n_bootstrap=300, random_state=0).ci == r.ci


def test_crosshoi_class_keys_restrict_macro_f1() -> None:
    from hoibench.data import parse_choice_text

    choices = (parse_choice_text("look at a/an frisbee"), parse_choice_text("throw a/an frisbee"))
    q = MCQuestion("v", "v.jpg", 1, tuple(c.__class__(c.text) for c in choices), frozenset({0}),
                   label_space="v-coco")
    ans = [MCAnswer("v", frozenset({"look at a/an frisbee", "throw a/an frisbee"}))]
    every_text = mcq_metrics(ans, [q], protocol="crosshoi")
    assert every_text.n_classes == 2 and every_text.macro_f1 == pytest.approx(0.5)
    only_look = mcq_metrics(ans, [q], protocol="crosshoi", class_keys=[("look_at", "frisbee")])
    assert only_look.n_classes == 1 and only_look.macro_f1 == pytest.approx(1.0)
    assert only_look.micro_f1 == every_text.micro_f1  # only Macro-F1 uses the class table
    with pytest.raises(ConfigError, match="class_keys"):
        mcq_metrics(ans, [q], protocol="paper", class_keys=[("look_at", "frisbee")])


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
