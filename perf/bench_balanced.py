"""Time the B-RIGHT balancer on the whole bundled HICO-DET (train + test, 47,776 images).

    python perf/bench_balanced.py [--seeds 4]

Target: under 30 s for the balancer on the whole of HICO-DET. Printed per seed: the
full build (test set, train set, zero-shot set with K=351, L=50/10, N=20), writing the files,
and, as a baseline measured in the same run, a direct Python transcription of Algorithm 1
(``get_image`` = random draw with replacement among the class's images, per-image ``Counter``
of classes, sets for D_bal) building the same test and train sets.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from hoibench.benchmarks import build_balanced_split, hico_det_selection_counts
from hoibench.datasets import load_dataset


def literal_algorithm1(ds, classes, pool, L, epochs, rng):
    """Algorithm 1 as printed, with a guard against classes that cannot reach L."""
    hoi = ds.pair_hoi
    img_of = ds.pair_image
    wanted = set(classes.tolist())
    per_image: dict[int, Counter] = {}
    for p in range(ds.n_pairs):
        h = int(hoi[p])
        i = int(img_of[p])
        if h in wanted and i in pool:
            per_image.setdefault(i, Counter())[h] += 1
    images_of: dict[int, list[int]] = {c: [] for c in wanted}
    for i, cnt in per_image.items():
        for h in cnt:
            images_of[h].append(i)
    bal: set[int] = set()
    count: Counter = Counter()
    order = classes.tolist()
    for n in range(epochs):
        for c in reversed(order):
            cand = images_of[c]
            while count[c] < L and any(i not in bal for i in cand):
                x = cand[int(rng.integers(len(cand)))]
                if x in bal:
                    continue
                bal.add(x)
                count.update(per_image[x])
        if n < epochs - 1:
            for c in order:
                cand = images_of[c]
                while count[c] > L:
                    x = cand[int(rng.integers(len(cand)))]
                    if x in bal:
                        bal.remove(x)
                        count.subtract(per_image[x])
    return bal, count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=4)
    args = ap.parse_args()

    t0 = time.perf_counter()
    ds = load_dataset("hico-det")
    counts = hico_det_selection_counts()
    t_load = time.perf_counter() - t0
    print(f"load HICO-DET train+test: {t_load:.2f} s ({ds.n_images:,} images, {ds.n_pairs:,} pairs)")

    build_times, write_times = [], []
    for seed in range(args.seeds):
        t0 = time.perf_counter()
        res = build_balanced_split(ds, random_state=seed, zero_shot=True, selection_counts=counts)
        build_times.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            res.write(tmp)
            write_times.append(time.perf_counter() - t0)
        st = res.stats()["sets"]
        print(f"seed {seed}: build {build_times[-1]:.2f} s, write {write_times[-1]:.2f} s | "
              f"train {st['train']['images']:,} img R/A {st['train']['removed_annotation_images']:,} "
              f"deficit {res.total_deficit('train')} | test {st['test']['images']:,} img "
              f"R/A {st['test']['removed_annotation_images']} | zero-shot {st['zero_shot']['classes']} "
              f"classes {st['zero_shot']['images']} img")

    # baseline: literal transcription, test then train set of one seed
    rng = np.random.default_rng(0)
    classes = res.classes
    t0 = time.perf_counter()
    all_images = set(range(ds.n_images))
    test, _ = literal_algorithm1(ds, classes, all_images, 10, 20, rng)
    literal_algorithm1(ds, classes, all_images - test, 50, 20, rng)
    t_literal = time.perf_counter() - t0
    best = min(build_times)
    print(f"hoibench build (best of {args.seeds}): {best:.2f} s  [target < 30 s: "
          f"{'ok' if max(build_times) < 30 else 'MISSED'}]")
    print(f"baseline (literal Algorithm 1, test + train only, no trimming): {t_literal:.2f} s  "
          f"-> speed-up x{t_literal / best:.1f}")


if __name__ == "__main__":
    main()
