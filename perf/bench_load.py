"""Time loading the bundled HICO-DET (train + test) into the data model, on one core.

    python perf/bench_load.py

Target: under 3 s on one core. The baseline, measured in the same run, is
what a typical research script does: ``json.load`` of the same files followed by one Python
dict per pair.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from hoibench.datasets import BUNDLED, bundled_path
from hoibench.formats import read_hicodet


def load_hoibench() -> int:
    return sum(read_hicodet(bundled_path("hico-det", s)).n_pairs for s in BUNDLED["hico-det"])


def load_baseline() -> int:
    pairs = []
    for split in BUNDLED["hico-det"]:
        data = json.loads(gzip.decompress(bundled_path("hico-det", split).read_bytes()))
        for name, ann in zip(data["filenames"], data["annotation"]):
            for k in range(len(ann["verb"])):
                pairs.append({"file_name": name, "box_h": [v - 1 for v in ann["boxes_h"][k]],
                              "box_o": [v - 1 for v in ann["boxes_o"][k]],
                              "object": ann["object"][k], "verb": ann["verb"][k]})
    return len(pairs)


def best_of(fn, repeat: int = 3) -> tuple[float, float, int]:
    times, result = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), result


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    ours, ours_med, n = best_of(load_hoibench)
    base, base_med, m = best_of(load_baseline)
    assert n == m == 151_059, (n, m)
    print(f"bundled HICO-DET train+test, {n:,} pairs, one core")
    print(f"  hoibench read_hicodet -> HOIDataset : best {ours:.2f} s  median {ours_med:.2f} s  (target < 3 s)")
    print(f"  baseline json.load + dict per pair : best {base:.2f} s  median {base_med:.2f} s")
    print(f"  ratio baseline / hoibench          : {base / ours:.1f}x")


if __name__ == "__main__":
    main()
