"""Every benchmark in one run, written as one table: ``docs/benchmarks.md``.

    python perf/bench_all.py [--quick] [--out docs/benchmarks.md]     (``make bench``)

Each row times one hoibench operation and its reference (the straightforward implementation a
research script uses: ``json.load`` and a Python loop, the per-detection evaluation loop,
Algorithm 1 as printed, ...) on the same data, in this process, once each, and checks that both
give the same answer. Times are CPU seconds of this process with numpy's threads pinned to one,
the steady figure on a shared machine. ``--quick`` uses fewer detections per image and fewer
bootstrap resamples (the table says which mode made it). The detailed scripts beside this one
(``perf/bench_*.py``) print more about each operation; ``perf/bench_references.py`` times
``eval hico`` against QPIC's and pocket's own evaluators when their sources are extracted.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import platform
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PERF = Path(__file__).resolve().parent
ROOT = PERF.parent
sys.path.insert(0, str(PERF))

import bench_balanced  # noqa: E402  (perf/: the reference implementations)
import bench_baselines  # noqa: E402
import bench_eval_hico  # noqa: E402
import bench_load  # noqa: E402
import bench_map_bootstrap  # noqa: E402
import bench_mcq  # noqa: E402
import bench_sg  # noqa: E402

from hoibench._random import check_random_state  # noqa: E402
from hoibench.analysis import hico_map_bootstrap  # noqa: E402
from hoibench.benchmarks import build_balanced_split, hico_det_selection_counts  # noqa: E402
from hoibench.benchmarks.mcq import build_mcq_benchmark  # noqa: E402
from hoibench.benchmarks.sg import build_preset, load_union  # noqa: E402
from hoibench.data import MCAnswer  # noqa: E402
from hoibench.datasets import load_dataset  # noqa: E402
from hoibench.evaluation import (  # noqa: E402
    ClassesWithoutGroundTruthWarning,
    bootstrap_weights,
    hico_mean_ap,
    match_hico_detections,
    mcq_metrics,
)
from hoibench.formats import read_predictions, write_predictions  # noqa: E402
from hoibench.formats.ppdm import to_ppdm_list  # noqa: E402
from hoibench.runners import ObjectPriorDetector  # noqa: E402
from hoibench.testing import hico_average_precision_loop, noisy_predictions  # noqa: E402


@dataclass
class Row:
    what: str
    ours: float
    ref: float
    reference: str
    target: str


def cpu(fn: Callable[[], object]) -> tuple[float, object]:
    """CPU seconds of one call (measured once: the table is a snapshot, not a statistic)."""
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def bench_load_rows() -> list[Row]:
    t_ours, n = cpu(bench_load.load_hoibench)
    t_ref, m = cpu(bench_load.load_baseline)
    assert n == m, (n, m)
    return [Row(f"load the bundled HICO-DET, train + test ({n:,} pairs)", t_ours, t_ref,
                "`json.load` + one dict per pair", "< 3 s")]


def bench_hico_rows(per_image: int, n_boot: int, n_naive: int) -> list[Row]:
    gt = load_dataset("hico-det:test")
    preds = noisy_predictions(gt, seed=0, per_image=(per_image, per_image))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "preds.json"
        write_predictions(preds, path, format="generic")
        t_ours, back = cpu(lambda: read_predictions(path))
        t_ref, n = cpu(lambda: bench_eval_hico.baseline_read(path))
    assert n == len(back) == len(preds)
    rows = [Row(f"read a prediction JSON ({len(preds):,} detections)", t_ours, t_ref,
                "`json.load` + a loop per detection", "< 2 s at 1M detections")]
    hico_mean_ap(back, gt, protocol="official")  # label lookups built once, as in a real run
    t_ours, res = cpu(lambda: hico_mean_ap(back, gt, protocol="official"))
    t_ref, slow = cpu(lambda: hico_average_precision_loop(back, gt, protocol="official"))
    both = ~np.isnan(slow)
    assert np.max(np.abs(slow[both] - res.per_class_ap[both])) < 1e-9
    rows.append(Row(f"HICO-DET mAP, official protocol ({len(preds):,} detections, 9,658 images)", t_ours,
                    t_ref, "per-class, per-detection loop (same APs)", "< 2 s at 1M detections"))

    matches = match_hico_detections(back, gt, protocol="official")
    t_ours, _ = cpu(lambda: hico_map_bootstrap(matches, gt, n_resamples=n_boot, random_state=0))
    weights = bootstrap_weights(gt.n_images, n_naive, check_random_state(0))

    def naive() -> None:
        warnings.simplefilter("ignore", ClassesWithoutGroundTruthWarning)  # a resample can miss a class
        for w in weights:
            g2, p2 = bench_map_bootstrap.physical_resample(gt, back, w.astype(np.int64))
            hico_mean_ap(p2, g2, protocol="official")

    t_ref, _ = cpu(naive)
    rows.append(Row(f"HICO-DET mAP bootstrap, {n_boot:,} resamples (after one matching)", t_ours,
                    t_ref * n_boot / n_naive,
                    f"resample the images and re-evaluate ({n_naive} timed, scaled to {n_boot:,})",
                    "< 60 s at 1M detections"))
    return rows


def bench_careful_read_rows(per_image: int) -> list[Row]:
    """Reading prediction files with the careful reader alone (what serves where the C extension
    is not built, or with ``HOIBENCH_NO_NATIVE=1``), next to ``json.load`` of the same file, in
    three formats (generic JSON, QPIC's outputs, CDN's ``results.json``)."""
    import json

    import bench_eval_formats

    from hoibench.data import HOIPredictions
    from hoibench.formats import _scan

    gt = load_dataset("hico-det:test")
    p = noisy_predictions(gt, seed=0, per_image=(per_image, per_image))
    k = p.hois >= 0  # valid HOI classes, float32 values: what QPIC's and CDN's files can hold
    preds = HOIPredictions.from_arrays(p.vocab, p.file_names, np.bincount(p.image_index[k], minlength=p.n_images),
                                       p.boxes_h[k].astype(np.float32).astype(float),
                                       p.boxes_o[k].astype(np.float32).astype(float), p.objects[k], p.verbs[k],
                                       p.scores[k].astype(np.float32).astype(float))
    saved = _scan._colscan, _scan.AVAILABLE
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = {"generic JSON": Path(tmp) / "generic.json", "QPIC outputs": Path(tmp) / "qpic.json",
                 "CDN results.json": Path(tmp) / "cdn.json"}
        write_predictions(preds, files["generic JSON"], format="generic")
        files["QPIC outputs"].write_bytes(bench_eval_formats.qpic_json(preds))
        files["CDN results.json"].write_text(bench_eval_formats.repr_results(preds, "cdn"))
        for what, path in files.items():
            native = read_predictions(path)
            _scan._colscan, _scan.AVAILABLE = None, False
            try:
                t_ours, back = cpu(lambda path=path: read_predictions(path))
            finally:
                _scan._colscan, _scan.AVAILABLE = saved
            t_ref, _ = cpu(lambda path=path: json.load(path.open()) and None)  # (nothing kept: the files are large)
            for key in ("offsets", "boxes_h", "boxes_o", "objects", "verbs", "scores"):
                assert np.array_equal(getattr(back, key), getattr(native, key)), (what, key)
            rows.append(Row(f"read {what} without the C extension, careful reader alone ({len(back):,} detections)",
                            t_ours, t_ref, "`json.load` of the same file" + (" (one string: the repr inside is not parsed)" if what.startswith("CDN")
                                                                             else " (no checks, no arrays)"),
                            "stated, no target"))
    return rows


def bench_reference_rows(qpic: Path | None, pocket: Path | None, per_image: int) -> list[Row]:
    """The whole ``hoibench eval hico`` command (a fresh process, reading included) against the
    published evaluators run unchanged from their extracted sources (``perf/bench_references.py``)."""
    import bench_references

    rows = []
    for r in bench_references.compare(qpic, pocket, per_image, repeats=1):
        assert r["max_diff"] < 1e-6, r  # the same per-class APs
        rows.append(Row(f"whole `hoibench eval hico --protocol {r['protocol']}` command ({r['n']:,} detections; "
                        "CPU s of each process)", r["cpu"], r["ref_cpu"], f"{r['name']}, run unchanged",
                        ">= 25x" if r["protocol"] == "qpic" else ">= 8x"))
    return rows


def bench_runner_rows(n_questions: int) -> list[Row]:
    """``mcq run`` at the realistic load (``perf/bench_runner.py --only-c32``): wall seconds against
    the ideal, 32 requests always in flight to a server answering in 200 ms."""
    import bench_runner

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        img_dir, qs = bench_runner.make_inputs(root, n_questions)
        proc, url = bench_runner.start_server(0.2)
        try:
            wall, _, _ = bench_runner.run_runner(url, img_dir, qs, root / "answers.jsonl", 32, server_pid=proc.pid)
        finally:
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(10)
    return [Row(f"`mcq run`, {len(qs):,} questions at concurrency 32 on a 200 ms server (wall s)", wall,
                len(qs) * 0.2 / 32, "the ideal: 32 requests always in flight (160 questions/s)", ">= 0.85x")]


def bench_mcq_rows(n_boot: int, n_naive: int) -> list[Row]:
    ds = load_dataset("hico-det:test")
    qs = list(build_mcq_benchmark(ds, random_state=0).questions)
    rng = np.random.default_rng(0)
    answers = {q.id: MCAnswer(q.id, frozenset(t for t in q.choice_texts if rng.random() < 0.5)) for q in qs}
    mcq_metrics(answers, qs)  # class lookups built once, as in a real run
    t_ours, ours = cpu(lambda: mcq_metrics(answers, qs))
    t_ref, loop = cpu(lambda: bench_mcq.loop_scores(qs, answers))
    assert all(abs(ours.metrics()[k] - v) < 1e-9 for k, v in loop.items())
    rows = [Row(f"score {len(qs):,} multiple-choice answers", t_ours, t_ref,
                "the paper's equations, a loop per question", "—")]

    def naive() -> None:
        r = np.random.default_rng(0)
        for _ in range(n_naive):
            sample = [qs[i] for i in r.integers(0, len(qs), len(qs))]
            renamed = [q.__class__(**{**q.__dict__, "id": f"{q.id}~{k}"}) for k, q in enumerate(sample)]
            ans = {f"{q.id}~{k}": MCAnswer(f"{q.id}~{k}", answers[q.id].selected) for k, q in enumerate(sample)}
            mcq_metrics(ans, renamed)

    t_ours, _ = cpu(lambda: mcq_metrics(answers, qs, n_bootstrap=n_boot, random_state=0))
    t_ref, _ = cpu(naive)
    rows.append(Row(f"multiple-choice bootstrap, {n_boot:,} resamples", t_ours, t_ref * n_boot / n_naive,
                    f"rescore each resample ({n_naive} timed, scaled to {n_boot:,})", "—"))
    return rows


def bench_baseline_rows() -> list[Row]:
    train, test = load_dataset("hico-det:train"), load_dataset("hico-det:test")
    det = ObjectPriorDetector().fit(train)
    t_ours, preds = cpu(lambda: det.predict(test))
    t_ref, ref = cpu(lambda: bench_baselines.loop_object_prior(det.prior_, test))
    fast = list(zip(preds.image_index.tolist(), preds.objects.tolist(), preds.verbs.tolist(),
                    preds.scores.tolist()))
    assert fast == ref
    return [Row(f"object-prior baseline on HICO-DET test ({len(preds):,} detections)", t_ours, t_ref,
                "a loop per image", "—")]


def bench_split_rows() -> list[Row]:
    ds, origin = load_union("hico-det")
    build_preset("hico-det-sg1", dataset=ds, origin_test=origin)  # imports scikit-learn once
    t_ours, sg1 = cpu(lambda: build_preset("hico-det-sg1", dataset=ds, origin_test=origin))
    entries = to_ppdm_list(ds.drop_empty_images())
    test = np.stack([ds.vocab.coco80[sg1.test_combinations[:, 1]], sg1.test_combinations[:, 0] + 1], axis=1)
    t_ref, (n_train, n_test) = cpu(lambda: bench_sg._baseline(entries, test))
    assert (n_train, n_test) == (sg1.train.n_images, sg1.test.n_images + len(sg1.removed))
    rows = [Row("build HICO-DET-SG1 (47,776 images)", t_ours, t_ref,
                "the released generator's per-pair loop (assignment only)", "< 5 s")]

    full = load_dataset("hico-det")
    counts = hico_det_selection_counts()
    t_ours, res = cpu(lambda: build_balanced_split(full, random_state=0, zero_shot=True, selection_counts=counts))
    everything = set(range(full.n_images))

    def literal() -> None:
        r = np.random.default_rng(0)
        test_set, _ = bench_balanced.literal_algorithm1(full, res.classes, everything, 10, 20, r)
        bench_balanced.literal_algorithm1(full, res.classes, everything - test_set, 50, 20, r)

    t_ref, _ = cpu(literal)
    rows.append(Row("build a B-RIGHT balanced split (test, train, zero-shot)", t_ours, t_ref,
                    "Algorithm 1 as printed (test + train only)", "< 30 s"))
    return rows


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{model}, {cores} cores available, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def render(rows: list[Row], quick: bool, total: float, skipped: list[str]) -> str:
    mode = "`--quick` (fewer detections and resamples)" if quick else "full"
    cmd = "make bench" if not quick else "make bench BENCH_ARGS=--quick"
    out = [
        "# Benchmarks",
        "",
        f"<!-- generated by perf/bench_all.py; do not edit. Regenerate with `{cmd}` "
        "(or `python perf/bench_all.py" + (" --quick" if quick else "") + "`). -->",
        "",
        f"Generated by `perf/bench_all.py` in {mode} mode; regenerate with `{cmd}`.",
        "",
        f"Machine: {machine()}.",
        "",
        "Each row times one hoibench operation and its reference on the same data in the same run, "
        "once each, and checks that both give the same answer. Times are CPU seconds of one "
        "process with numpy's threads pinned to one (the runner's row is wall clock: it waits on a server). The ratio is the reference's time over "
        "hoibench's; the target is the one the operation was built to meet (at full size).",
        "",
        "| what is measured | hoibench (s) | reference (s) | ratio | reference | target |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        ratio = r.ref / r.ours
        out.append(f"| {r.what} | {r.ours:.3f} | {r.ref:.3f} | {ratio:.2f}x | {r.reference} | {r.target} |"
                   if ratio < 10 else f"| {r.what} | {r.ours:.3f} | {r.ref:.3f} | {ratio:.1f}x | {r.reference} "
                   f"| {r.target} |")
    out += ["", *(f"Not measured in this run: {s}." for s in skipped), f"Whole run: {total:.0f} s wall.", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 detections per image (not 100), 200 bootstrap resamples (not 1,000)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    ap.add_argument("--qpic", type=Path, help="an extracted hitachi-rd-cv/qpic: time `eval hico` against its evaluator")
    ap.add_argument("--pocket", type=Path, help="an extracted fredzzhang/pocket: likewise against UPT's loop")
    args = ap.parse_args()
    t0 = time.perf_counter()
    skipped = []
    rows: list[Row] = []
    steps: list[Callable[[], list[Row]]] = [
        bench_load_rows,
        lambda: bench_hico_rows(20 if args.quick else 100, 200 if args.quick else 1000, 2 if args.quick else 5),
        lambda: bench_careful_read_rows(20 if args.quick else 100),
        lambda: bench_mcq_rows(200 if args.quick else 1000, 10 if args.quick else 50),
        bench_baseline_rows,
        bench_split_rows,
    ]
    if args.qpic or args.pocket:
        steps.insert(2, lambda: bench_reference_rows(args.qpic, args.pocket, 20 if args.quick else 100))
    else:
        skipped.append("`eval hico` against QPIC's and pocket's evaluators (pass `--qpic DIR --pocket DIR`, "
                       "their extracted sources)")
    import bench_runner

    if (bench_runner.SHARED / "crosshoi-bench").is_dir():
        steps.append(lambda: bench_runner_rows(320 if args.quick else 1274))
    else:
        skipped.append(f"the runner (needs the released question file under {bench_runner.SHARED.name}/; "
                       "set HOIBENCH_SHARED_DATA)")
    for step in steps:
        new = step()
        for r in new:
            print(f"{r.what}: hoibench {r.ours:.3f} s, reference {r.ref:.3f} s, {r.ref / r.ours:.1f}x", flush=True)
        rows += new
    args.out.write_text(render(rows, args.quick, time.perf_counter() - t0, skipped))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
