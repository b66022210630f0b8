"""Speed of the built-in baselines and of the report.

Prints the time of :class:`~hoibench.runners.ObjectPriorDetector` on the bundled HICO-DET test set
next to a straightforward per-image Python loop computing the same detections (run in the same
process, outputs compared), and the time to build and write a report of 9 mAP results.

    python perf/bench_baselines.py
"""

from __future__ import annotations

import tempfile
import time

import numpy as np

from hoibench.datasets import load_dataset
from hoibench.evaluation import HICOMapResult
from hoibench.reports import build_report
from hoibench.results import ResultRecord
from hoibench.runners import ObjectPriorDetector


def loop_object_prior(prior: np.ndarray, test) -> list[tuple]:
    """The same detections with plain Python loops (the reference for speed and output)."""
    out = []
    n_obj = prior.shape[1] - 1
    for i in range(test.n_images):
        img = test.image(i)
        seen = set()
        for s, o, _v in img.pairs.tolist():
            label = int(img.labels[o]) if o >= 0 else -1
            key = (tuple(img.boxes[s].tolist()), tuple(img.boxes[o].tolist()) if o >= 0 else None, label)
            if key in seen:
                continue
            seen.add(key)
            col = label if label >= 0 else n_obj
            p = prior[:, col]
            for v in sorted(np.flatnonzero(p > 0).tolist(), key=lambda v: (-p[v], v)):
                out.append((i, label, v, float(p[v])))
    return out


def main() -> None:
    train, test = load_dataset("hico-det:train"), load_dataset("hico-det:test")
    det = ObjectPriorDetector().fit(train)
    t0 = time.perf_counter()
    preds = det.predict(test)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = loop_object_prior(det.prior_, test)
    t_loop = time.perf_counter() - t0
    fast = list(zip(preds.image_index.tolist(), preds.objects.tolist(), preds.verbs.tolist(),
                    preds.scores.tolist()))
    assert fast == ref, "vectorised and loop detections differ"
    print(f"object-prior on HICO-DET test ({len(preds):,} detections): {t_fast:.3f} s; "
          f"per-image loop {t_loop:.3f} s; speed-up {t_loop / t_fast:.1f}x")

    rng = np.random.default_rng(0)
    results = [ResultRecord(HICOMapResult(full=float(rng.uniform(0, 0.4)), per_class_ap=rng.random(600),
                                          n_gt=np.full(600, 5)), m, b)
               for m in ("a", "b", "c") for b in ("HICO-DET", "HICO-DET-SG1", "B-RIGHT")]
    t0 = time.perf_counter()
    rep = build_report(results)
    with tempfile.TemporaryDirectory() as tmp:
        rep.write(tmp)
    print(f"report of 9 mAP results ({len(rep.tables)} tables, {len(rep.figures)} figures): "
          f"{time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
