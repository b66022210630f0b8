"""Time the multiple-choice benchmark: scoring with bootstrap intervals, and building.

    python perf/bench_mcq.py

Baselines, measured in the same run:

- bootstrap: the obvious implementation, which rescores a resampled list of questions
  ``n`` times (one full ``mcq_metrics`` call per resample), against our weight-matrix bootstrap
  (all resamples in a few sparse matrix products);
- scoring: a plain-Python per-question loop of the paper's equations (what a research script
  does), against ``mcq_metrics``.

Questions: the bundled HICO-DET test set built with the default parameters (no shared data
needed); answers: random subsets of the choices.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from hoibench.benchmarks.mcq import build_mcq_benchmark
from hoibench.data import MCAnswer
from hoibench.datasets import load_dataset
from hoibench.evaluation import mcq_metrics


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def loop_scores(questions, answers) -> dict[str, float]:
    """Equations 1-4 as a per-question Python loop (zero_division = 1, except that an empty
    selection on a question with correct choices has precision 0, as hoibench scores it)."""
    f1s, precs, recs, exact = [], [], [], []
    tp_all = pred_all = gt_all = 0
    per_class: dict[str, list[int]] = {}
    for q in questions:
        p = {t for t in answers[q.id].selected if t in q.choice_texts}
        g = set(q.correct_texts)
        tp = len(p & g)
        tp_all, pred_all, gt_all = tp_all + tp, pred_all + len(p), gt_all + len(g)
        f1s.append(2 * tp / (len(p) + len(g)) if p or g else 1.0)
        precs.append(tp / len(p) if p else (0.0 if g else 1.0))  # no answer is no perfect answer
        recs.append(tp / len(g) if g else 1.0)
        exact.append(p == g)
        for t in p | g:
            c = per_class.setdefault(t, [0, 0, 0])
            c[0] += t in p and t in g
            c[1] += t in p
            c[2] += t in g
    macro = [2 * c[0] / (c[1] + c[2]) for c in per_class.values()]
    return {"macro_f1": float(np.mean(macro)), "instance_f1": float(np.mean(f1s)),
            "micro_f1": 2 * tp_all / (pred_all + gt_all), "exact_match": float(np.mean(exact)),
            "avg_precision": float(np.mean(precs)), "avg_recall": float(np.mean(recs))}


def main() -> None:
    ds = load_dataset("hico-det:test")
    t_build, built = timed(lambda: build_mcq_benchmark(ds, random_state=0), repeat=1)
    qs = list(built.questions)
    rng = np.random.default_rng(0)
    answers = {q.id: MCAnswer(q.id, frozenset(t for t in q.choice_texts if rng.random() < 0.5)) for q in qs}
    print(f"questions: {len(qs)} ({built.stats()['selected_images']} images)")
    print(f"build (HICO-DET test, defaults):        {t_build:8.3f} s")

    t_ours, ours = timed(lambda: mcq_metrics(answers, qs))
    t_loop, loop = timed(lambda: loop_scores(qs, answers))
    assert all(abs(ours.metrics()[k] - v) < 1e-9 for k, v in loop.items()), (ours.metrics(), loop)
    print(f"score, mcq_metrics:                     {t_ours:8.3f} s")
    print(f"score, plain loop (baseline):           {t_loop:8.3f} s   ratio {t_loop / t_ours:5.2f}x")

    n = 1000
    t_boot, _ = timed(lambda: mcq_metrics(answers, qs, n_bootstrap=n, random_state=0), repeat=1)
    n_naive = 50  # the naive loop is timed on 50 resamples and scaled to n

    def naive() -> None:
        r = np.random.default_rng(0)
        for _ in range(n_naive):
            idx = r.integers(0, len(qs), len(qs))
            sample = [qs[i] for i in idx]
            # questions drawn twice need distinct ids to count twice
            renamed = [q.__class__(**{**q.__dict__, "id": f"{q.id}~{k}"}) for k, q in enumerate(sample)]
            ans = {f"{q.id}~{k}": MCAnswer(f"{q.id}~{k}", answers[q.id].selected) for k, q in enumerate(sample)}
            mcq_metrics(ans, renamed)

    t_naive, _ = timed(naive, repeat=1)
    t_naive *= n / n_naive
    print(f"bootstrap {n}, weight matrices:        {t_boot:8.3f} s")
    print(f"bootstrap {n}, rescoring loop (est.):  {t_naive:8.3f} s   ratio {t_naive / t_boot:5.1f}x")


if __name__ == "__main__":
    main()
