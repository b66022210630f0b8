"""How long HICO-DET-SG splits take to build (target: a full split in under 5 s).

    python perf/bench_sg.py [--repeat 3] [--no-baseline]

Printed, each measured in this run on the bundled HICO-DET (train + test, 47,776 images):

* loading the bundled union (once per process; cached afterwards);
* ``build_preset("hico-det-sg1")`` (SELECT, released assignment, removals) and the same with
  ``policy="paper"``; ``hico-det-sg3`` (which first replays split 2's deletions);
* ``--seed auto`` under the paper VERIFY from seed 0 (how many seeds, how long);
* writing the split directory (PPDM files, combinations, stats);
* the baseline: the released generator's algorithm (per image, per pair, compare the pair with
  every test combination row by row) on the same data as PPDM-style lists, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from hoibench.benchmarks.sg import (
    build_preset,
    build_sg_split,
    load_union,
    select_test_combinations,
    sg_combinations,
)
from hoibench.formats.ppdm import to_ppdm_list


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _baseline(entries: list[dict], test: np.ndarray) -> tuple[int, int]:
    """The reference generator's loop: one ``np.all(test == [obj, verb], axis=1)`` per pair."""
    from hoibench.vocab import COCO

    to80 = {int(c): i for i, c in enumerate(COCO.ids91)}
    n_train = n_test = 0
    for s in entries:
        hits = 0
        new = []
        for h in s["hoi_annotation"]:
            obj = to80[s["annotations"][h["object_id"]]["category_id"]]
            match = np.sum(np.all(test == np.array([obj, h["category_id"]]), axis=1))
            hits += match
            if match:
                new.append(h)
        if hits == len(s["hoi_annotation"]):
            n_test += 1
        elif hits == 0:
            n_train += 1
        else:
            n_test += 1
    return n_train, n_test


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-baseline", action="store_true", help="skip the slow reference-style loop")
    args = ap.parse_args()

    t, c = time.perf_counter(), time.process_time()
    ds, origin = load_union("hico-det")
    t_load, c_load = time.perf_counter() - t, time.process_time() - c
    print(f"load bundled union ({ds.n_images:,} images, {ds.n_pairs:,} pairs): {t_load:.2f} s")
    select_test_combinations(sg_combinations(ds), ratio=0.9, random_state=0)  # import scikit-learn once

    t_sg1, sg1 = _best(lambda: build_preset("hico-det-sg1", dataset=ds, origin_test=origin), args.repeat)
    t_paper, _ = _best(lambda: build_preset("hico-det-sg1", dataset=ds, origin_test=origin, policy="paper"),
                       args.repeat)
    t_sg3, _ = _best(lambda: build_preset("hico-det-sg3", dataset=ds, origin_test=origin), args.repeat)
    t = time.perf_counter()
    auto = build_sg_split(ds, random_state="auto", ratio=0.9, policy="paper")
    t_auto = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        c = time.process_time()
        t_write, _ = _best(lambda: sg1.write(os.path.join(tmp, "sg1")), 1)
        c_write = time.process_time() - c
    c = time.process_time()
    build_preset("hico-det-sg1", dataset=ds, origin_test=origin)
    c_build = time.process_time() - c
    print(f"build hico-det-sg1 (released policy): {t_sg1:.3f} s")
    print(f"build hico-det-sg1 (paper policy):    {t_paper:.3f} s")
    print(f"build hico-det-sg3 (replays sg2):     {t_sg3:.3f} s")
    print(f"seed auto, paper VERIFY from 0:       {t_auto:.2f} s ({auto.attempts} seeds, found {auto.seed})")
    print(f"write split directory:                {t_write:.2f} s")
    print(f"full split from scratch (load + build + write): {t_load + t_sg1 + t_write:.2f} s wall, "
          f"{c_load + c_build + c_write:.2f} s CPU (target < 5 s; wall time grows on a loaded machine)")

    if not args.no_baseline:
        entries = to_ppdm_list(ds.drop_empty_images())
        test = np.stack([ds.vocab.coco80[sg1.test_combinations[:, 1]], sg1.test_combinations[:, 0] + 1], axis=1)
        t = time.perf_counter()
        n_train, n_test = _baseline(entries, test)
        t_base = time.perf_counter() - t
        assert (n_train, n_test) == (sg1.train.n_images, sg1.test.n_images + len(sg1.removed)), (n_train, n_test)
        print(f"baseline (reference generator's per-pair loop, assignment only): {t_base:.2f} s "
              f"-> vectorised build is {t_base / t_sg1:.0f}x faster")


if __name__ == "__main__":
    main()
