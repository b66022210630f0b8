"""Intervals hoibench stands by: nothing printed or recorded as a confidence interval excludes its
own estimate or fails the coverage check of scripts/bootstrap_coverage.py; where no interval
method passes (one model's mAP, MCQ macro-F1) the bootstrap standard error is given instead,
and result files record which one they hold."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench.analysis import ModelComparison, hico_map_bootstrap
from hoibench.cli import cli
from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.datasets import load_dataset
from hoibench.evaluation import (
    CI_METHOD_OF,
    MCQ_METRIC_NAMES,
    SE_METHOD,
    bootstrap_ci,
    interval_excludes_estimate,
    mcq_metrics,
    reportable_interval,
)
from hoibench.formats import write_answers, write_questions
from hoibench.testing import noisy_predictions
from tests.test_bootstrap_methods import _coverage_script
from tests.test_map_bootstrap import _write_gt_and_preds


def _rare_distractor_benchmark(n: int = 200) -> tuple[list[MCQuestion], list[MCAnswer]]:
    """Ten frequent classes, always answered right, and one wrong pick per question from a class
    of its own: macro-F1 averages 10 classes of F1 1 with 200 of F1 0, and a resample, which
    misses about a third of the single-question classes, scores higher. Its percentile interval
    lies above the estimate: what ``mcq score`` used to print with "(!)"."""
    qs, ans = [], []
    for k in range(n):
        right, wrong = Choice(f"ride thing{k % 10}", hoi=k % 10), Choice(f"feed other{k}", hoi=100 + k)
        q = MCQuestion(f"q{k}", f"{k}.jpg", 1, (right, wrong), frozenset({0}))
        qs.append(q)
        ans.append(MCAnswer(q.id, frozenset({right.text, wrong.text})))
    return qs, ans


def test_every_mcq_interval_labelled_ci_contains_its_estimate_and_macro_f1_gets_its_se() -> None:
    from hoibench.evaluation._mcq_metrics import MCQMetrics

    qs, ans = _rare_distractor_benchmark()
    m = MCQMetrics()
    m.update(ans, qs)
    pct = bootstrap_ci(m._arrays().metrics, len(qs), n_resamples=200, random_state=0, method="percentile")
    assert interval_excludes_estimate(pct.estimate[0], pct.low[0], pct.high[0])  # the data: a real case
    r = mcq_metrics(ans, qs, n_bootstrap=200, random_state=0)
    assert r.ci is not None and r.se is not None and r.ci_method is not None
    for name, (lo, hi) in r.ci.items():
        assert lo <= getattr(r, name) <= hi, name
    assert "macro_f1" not in r.ci and r.ci_method["macro_f1"] == SE_METHOD and r.se["macro_f1"] > 0
    # the file records what each number is
    j = json.loads(json.dumps(r.to_json()))
    assert j["ci_method"] == {k: CI_METHOD_OF[k] for k in MCQ_METRIC_NAMES}
    assert set(j["se"]) == set(MCQ_METRIC_NAMES) and "macro_f1" not in j["ci"]


def test_mcq_score_prints_no_disowned_interval(tmp_path) -> None:
    qs, ans = _rare_distractor_benchmark()
    write_questions(tmp_path / "q.jsonl", qs)
    write_answers(tmp_path / "a.jsonl", ans, header={"model": "m"})
    r = CliRunner().invoke(cli, ["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers",
                                 str(tmp_path / "a.jsonl"), "--bootstrap", "200", "--json", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    assert "(!)" not in r.output
    assert "[low, high]: 95% CI (percentile bootstrap)" in r.output  # the caption says what the brackets are
    row = next(line for line in r.output.splitlines() if "macro_f1" in line)
    assert "SE" in row and "[" not in row  # macro-F1: its standard error, not an interval
    assert json.loads((tmp_path / "s.json").read_text())["ci_method"]["macro_f1"] == "se"


@pytest.fixture(scope="module")
def biased_map():
    """Every 20th image of the bundled test set with planted detections: a test set on which one
    model's replicates lie off its mAP (classes that a resample misses score 0), so the basic
    interval printed as "95% CI" excluded the mAP, with a note against itself."""
    full = load_dataset("hico-det:test")
    gt = full.subset(np.arange(0, full.n_images, 20))
    return gt, noisy_predictions(gt, seed=2, per_image=(12, 20))


def test_one_models_map_has_no_ci_only_its_se(biased_map, tmp_path) -> None:
    gt, preds = biased_map
    basic = hico_map_bootstrap(preds, gt, n_resamples=200, random_state=0, method="basic")
    assert any(interval_excludes_estimate(e, lo, hi) for e, lo, hi in zip(basic.estimate, basic.low, basic.high))
    gt_path, (pred_path,) = _write_gt_and_preds(tmp_path, gt, {"model": preds})
    out = tmp_path / "res.json"
    r = CliRunner().invoke(cli, ["eval", "hico", "--gt", gt_path, "--pred", pred_path, "--bootstrap", "200",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "CI" not in r.output and "note:" not in r.output and "bootstrap SE" in r.output
    ci = json.loads(out.read_text())["ci"]
    assert ci["method"] == "se" and "full" not in ci and ci["se"]["full"] > 0
    assert ci["se"]["full"] == pytest.approx(100 * float(np.std(basic.samples[:, 0], ddof=1)))


def test_paired_interval_that_would_exclude_its_difference_is_given_as_se() -> None:
    """A paired difference whose replicates all lie above the observed difference: its interval
    lies above it, so it is no CI; the row keeps its SE and says so."""
    rng = np.random.default_rng(0)
    est = np.array([[0.30], [0.28]])
    samples = np.stack([0.35 + 0.005 * rng.standard_normal(300), 0.28 + 0.005 * rng.standard_normal(300)], axis=1)
    cmp = ModelComparison(("a", "b"), ("full",), est, samples[:, :, None], 0.95, 300, 0)
    d = cmp.paired_difference("a", "b")
    assert d["ci_method"] == "se" and d["ci_low"] != d["ci_low"] and d["se"] > 0
    fine = ModelComparison(("a", "b"), ("full",), np.array([[0.35], [0.28]]), samples[:, :, None], 0.95, 300, 0)
    d2 = fine.paired_difference("a", "b")
    assert d2["ci_method"] == "percentile" and d2["ci_low"] <= d2["difference"] <= d2["ci_high"]
    assert reportable_interval(0.5, 0.6, 0.7, "basic")[0] == SE_METHOD
    assert reportable_interval(0.5, 0.4, 0.7, SE_METHOD)[0] == SE_METHOD


def test_every_ci_method_passes_a_small_coverage_simulation_and_macro_f1_fails_it() -> None:
    """The methods of CI_METHOD_OF for the MCQ metrics pass the coverage check on a small MCQ
    world (benchmarks of 300 of its questions); macro-F1, printed as its SE, fails it."""
    mod = _coverage_script()
    t0 = time.perf_counter()
    for name in MCQ_METRIC_NAMES:
        sim = mod.mcq_simulation(name, copies=4, test_images=1500, n_benchmark=300)
        method = CI_METHOD_OF[name]
        out = mod.coverage(sim, reps=80, resamples=120, seed=3,
                           methods=(method,) if method != SE_METHOD else ("percentile", "basic"))
        if method == SE_METHOD:
            assert not any(mod.passes(out, m) for m in ("percentile", "basic")), (name, out)
        else:
            assert mod.passes(out, method), (name, out)
            assert out[method]["excludes_estimate"] == 0.0
    assert time.perf_counter() - t0 < 60
