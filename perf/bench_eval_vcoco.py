"""Time ``hoibench eval vcoco`` on the V-COCO test set against a plain per-class loop.

Ground truth: the bundled ``v-coco:test`` (4,946 images, 6,276 annotated people). Detections:
``--per-image`` people per image (jittered copies of the annotated people, duplicates and
background boxes), each with 26 agent scores and 25 role boxes and scores. Prints the whole
``hoibench eval vcoco`` command (wall, CPU, peak RSS) on each hoibench JSON layout (shared role
boxes, as written by default, and dense ``role_boxes`` with nulls), the time to
read the detections (hoibench JSON and ``vsrl_eval.py`` pickle), the vectorised evaluation on
the full set, and the baseline loop (``vsrl_eval.py``'s algorithm written plainly: per image, per
class, per detection, with the detections grouped by image up front) on ``--baseline-images``
images next to the vectorised evaluation of the same images, with the ratio. The two must agree.
Times are wall clock and, in brackets, CPU time of this process (the honest figure on a busy
machine).

    python perf/bench_eval_vcoco.py [--per-image 32] [--baseline-images 500]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import compile_package

from hoibench.data import VCOCODetections, VCOCOGroundTruth
from hoibench.data._vcoco import vcoco_role_action
from hoibench.datasets import resolve_vcoco_ground_truth
from hoibench.evaluation import vcoco_role_ap
from hoibench.formats import read_vcoco_detections, write_vcoco_detections, write_vsrl_detections


def make_detections(gt: VCOCOGroundTruth, per_image: int, seed: int) -> VCOCODetections:
    rng = np.random.default_rng(seed)
    n_img = gt.n_images
    counts = np.diff(gt.person_offsets)
    img = np.repeat(np.arange(n_img), per_image)
    n = img.size
    # each detection copies a random person of its image (or is background when the image has none)
    pick = gt.person_offsets[img] + (rng.random(n) * np.maximum(counts[img], 1)).astype(np.int64)
    pick = np.minimum(pick, max(gt.n_persons - 1, 0))
    boxes = gt.person_boxes[pick].astype(np.float64)
    wh = np.maximum(boxes[:, 2:] - boxes[:, :2], 1.0)
    boxes += rng.normal(0, 0.12, (n, 4)) * np.hstack([wh, wh])
    bg = (rng.random(n) < 0.2) | (counts[img] == 0)
    xy = rng.uniform(0, 500, (n, 2))
    boxes[bg] = np.hstack([xy, xy + rng.uniform(10, 200, (n, 2))])[bg]
    boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1)
    has = (gt.person_actions[pick] == 1) & ~bg[:, None]
    agent = rng.random((n, has.shape[1])) * 0.7 + 0.3 * has
    role_has = has[:, vcoco_role_action()]
    role_scores = rng.random(role_has.shape) * 0.7 + 0.3 * role_has
    # role boxes come from one detected object per annotated role (as a detector reuses its object
    # boxes across people and classes); empty roles and background people get all-zero boxes
    objects = gt.role_boxes.astype(np.float64)
    owh = np.maximum(objects[..., 2:] - objects[..., :2], 1.0)
    objects += rng.normal(0, 0.1, objects.shape) * np.concatenate([owh, owh], axis=-1)
    objects[..., 2:] = np.maximum(objects[..., 2:], objects[..., :2])
    role_boxes = np.nan_to_num(objects[pick], nan=0.0)
    role_boxes[bg] = 0.0
    return VCOCODetections(gt.image_ids[img], boxes, agent, role_boxes, role_scores)


# --------------------------------------------------------------------------- baseline loop
def _iou(gt: np.ndarray, box: np.ndarray) -> np.ndarray:
    one = np.float32(1)
    iw = np.maximum(np.minimum(gt[:, 2], box[2]) - np.maximum(gt[:, 0], box[0]) + one, np.float32(0))
    ih = np.maximum(np.minimum(gt[:, 3], box[3]) - np.maximum(gt[:, 1], box[1]) + one, np.float32(0))
    inter = iw * ih
    return inter / ((box[2] - box[0] + one) * (box[3] - box[1] + one)
                    + (gt[:, 2] - gt[:, 0] + one) * (gt[:, 3] - gt[:, 1] + one) - inter)


def _ap(score: list[float], tp: list[bool], npos: int) -> float:
    if npos == 0:
        return float("nan")
    order = np.argsort(-np.asarray(score, dtype=np.float32), kind="stable")
    t = np.cumsum(np.asarray(tp, dtype=np.float32)[order], dtype=np.float32)
    f = np.cumsum(1 - np.asarray(tp, dtype=np.float32)[order], dtype=np.float32)
    rec = t / np.float32(npos)
    prec = t.astype(np.float64) / np.maximum((t + f).astype(np.float64), np.finfo(np.float64).eps)
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    for i in range(mpre.size - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    i = np.flatnonzero(mrec[1:] != mrec[:-1])
    return float(np.float32(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])))


def baseline(det: VCOCODetections, gt: VCOCOGroundTruth) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    by_image: dict[int, list[int]] = {}
    for d, i in enumerate(det.image_ids.tolist()):
        by_image.setdefault(i, []).append(d)
    role_action = vcoco_role_action()
    npos = gt.n_positives()

    def run(scores: np.ndarray, judge) -> tuple[list[float], list[bool]]:
        sc: list[float] = []
        tp: list[bool] = []
        for i in range(gt.n_images):
            lo, hi = gt.person_offsets[i], gt.person_offsets[i + 1]
            rows = [d for d in by_image.get(int(gt.image_ids[i]), []) if not np.isnan(scores[d])]
            rows.sort(key=lambda d: -scores[d])
            covered = np.zeros(hi - lo, dtype=bool)
            for d in rows:
                if hi == lo:
                    sc.append(scores[d])
                    tp.append(False)
                    continue
                ov = _iou(gt.person_boxes[lo:hi], det.person_boxes[d])
                j = int(ov.argmax())
                if gt.person_actions[lo + j, 0] == -1:
                    continue
                hit = ov[j] >= 0.5 and judge(d, lo + j)
                sc.append(scores[d])
                tp.append(bool(hit and not covered[j]))
                if hit:
                    covered[j] = True
        return sc, tp

    agent = np.array([_ap(*run(det.agent_scores[:, a], lambda d, p, a=a: gt.person_actions[p, a] == 1), npos[a])
                      for a in range(npos.size)])
    role = {}
    for s in (1, 2):
        out = []
        for c in range(role_action.size):
            def judge(d: int, p: int, c: int = c, s: int = s) -> bool:
                if gt.person_actions[p, role_action[c]] != 1:
                    return False
                g, r = gt.role_boxes[p, c], det.role_boxes[d, c]
                if np.isnan(g).all():
                    return s == 2 or bool((r == 0).all() or np.isnan(r).all())
                return bool(_iou(g[None], r)[0] >= 0.5)
            out.append(_ap(*run(det.role_scores[:, c], judge), npos[role_action[c]]))
        role[s] = np.array(out)
    return agent, role


def whole_command(pred: Path, repeats: int, layout: str) -> None:
    """``hoibench eval vcoco --gt v-coco:test`` in its own process, ``repeats`` times after the
    file is flushed to disk (its writeback would otherwise run during the first): wall time, CPU
    time and peak RSS of each (``/usr/bin/time -v`` where it exists, else the child's rusage)."""
    cmd = [sys.executable, "-m", "hoibench", "eval", "vcoco", "--gt", "v-coco:test", "--pred", str(pred), "--quiet"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                         os.environ.get("PYTHONPATH", "")])}
    compile_package()
    os.sync()
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        if Path("/usr/bin/time").exists():
            out = subprocess.run(["/usr/bin/time", "-v", *cmd], env=env, capture_output=True, text=True,
                                 check=True).stderr
            peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out).group(1)) / 1e6
            cpu = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", out).group(1)) for k in ("User", "System"))
        else:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(cmd, env=env, capture_output=True, check=True)
            ru = resource.getrusage(resource.RUSAGE_CHILDREN)
            peak = ru.ru_maxrss / 1e6
            cpu = ru.ru_utime + ru.ru_stime - before.ru_utime - before.ru_stime
        runs.append((time.perf_counter() - t, cpu, peak))
    walls = sorted(r[0] for r in runs)
    print(f"whole command `hoibench eval vcoco --gt v-coco:test --pred {pred.name}` ({layout}), {repeats} runs: wall "
          f"{', '.join(f'{r[0]:.2f}' for r in runs)} s (median {walls[len(walls) // 2]:.2f} s); cpu "
          f"{', '.join(f'{r[1]:.2f}' for r in runs)} s; peak RSS {max(r[2] for r in runs):.2f} GB "
          f"(load average {os.getloadavg()[0]:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-image", type=int, default=32)
    ap.add_argument("--baseline-images", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3, help="runs of the whole command")
    ap.add_argument("--pickle-max", type=int, default=200_000,
                    help="write and read the vsrl pickle only up to this many detections (pickling 51 numpy "
                         "objects per detection takes ~0.4 ms each: 494,600 take ~3 min to write, and "
                         "loading them builds ~7 GB of Python objects)")
    args = ap.parse_args()

    t = time.perf_counter()
    gt = resolve_vcoco_ground_truth("v-coco:test")
    print(f"ground truth v-coco:test: {gt.n_images} images, {gt.n_persons} people "
          f"({time.perf_counter() - t:.2f} s)")
    det = make_detections(gt, args.per_image, args.seed)
    print(f"detections: {len(det):,} people x (26 agent scores + 25 role boxes and scores)")
    with tempfile.TemporaryDirectory() as tmp:
        writers = (("hoibench json", write_vcoco_detections),
                   ("json, role_boxes", lambda d, p: write_vcoco_detections(d, p, share_role_boxes=False)),
                   ("vsrl pickle", write_vsrl_detections))
        for k, (name, write) in enumerate(writers):
            path = Path(tmp) / f"detections{k}"
            if name == "vsrl pickle" and len(det) > args.pickle_max:
                print(f"read {name:16s} skipped: {len(det):,} detections > --pickle-max {args.pickle_max:,}")
                continue
            write(det, path)
            if name != "vsrl pickle":
                whole_command(path, args.repeats, name)
            t, c = time.perf_counter(), time.process_time()
            loaded = read_vcoco_detections(path).detections
            dt, dc = time.perf_counter() - t, time.process_time() - c
            assert np.array_equal(loaded.role_scores, det.role_scores, equal_nan=True)
            print(f"read {name:16s} {path.stat().st_size / 1e6:8.1f} MB  {dt:6.2f} s [cpu {dc:.2f} s]")

    t, c = time.perf_counter(), time.process_time()
    res = vcoco_role_ap(det, gt)
    full, full_cpu = time.perf_counter() - t, time.process_time() - c
    print(f"evaluate full test set (agent + role s1 + s2): {full:.2f} s [cpu {full_cpu:.2f} s]  "
          f"[agent mAP {100 * res.agent_map:.2f}, role mAP s1 {100 * res.role_map(1):.2f}, "
          f"s2 {100 * res.role_map(2):.2f}]")

    sub = gt.select(gt.image_ids[: args.baseline_images])
    sub_det = det.subset(np.flatnonzero(np.isin(det.image_ids, sub.image_ids)))
    t, c = time.perf_counter(), time.process_time()
    fast = vcoco_role_ap(sub_det, sub)
    t_fast, c_fast = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    agent, role = baseline(sub_det, sub)
    t_base, c_base = time.perf_counter() - t, time.process_time() - c
    same = (np.array_equal(agent, fast.agent_ap, equal_nan=True)
            and all(np.array_equal(role[s], fast.role_ap[s], equal_nan=True) for s in (1, 2)))
    print(f"{sub.n_images} images, {len(sub_det):,} detections: baseline loop {t_base:.2f} s "
          f"[cpu {c_base:.2f} s], vectorised {t_fast:.3f} s [cpu {c_fast:.3f} s], "
          f"ratio {c_base / max(c_fast, 1e-9):.0f}x (cpu), identical APs: {same}")
    print(f"baseline extrapolated to the full set: cpu {c_base * len(det) / max(len(sub_det), 1):.0f} s "
          f"vs {full_cpu:.2f} s")


if __name__ == "__main__":
    main()
