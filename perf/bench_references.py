"""Whole ``hoibench eval hico`` against the reference evaluators, side by side on the same detections.

    git clone https://github.com/hitachi-rd-cv/qpic /tmp/ref-qpic
    git clone https://github.com/fredzzhang/pocket /tmp/ref-pocket
    python perf/bench_references.py --qpic /tmp/ref-qpic --pocket /tmp/ref-pocket [--per-image 100]

Target: the whole ``eval hico`` command on ~1M detections at least 25x faster than QPIC's
evaluation script and 8x faster than pocket's loop, both measured in the same run. The references
are never vendored: the user extracts them, and each runs here in its own Python process
(``sys.executable``; pocket needs only torch) from a driver that feeds it what it takes:

QPIC (``datasets/hico_eval.py``, ``HICOEvaluator``)
    built with the ground truth as QPIC's ``hico.py`` gives it (per image: boxes, COCO-80
    labels, ``[subject, object, verb]`` triplets) and ``evaluate()``; its ``preds`` are set to what
    its constructor makes of ``PostProcessHOI`` outputs (boxes = subjects then objects, one
    ``hoi_prediction`` per detection, sorted by score, top 100), as building them from dense
    ``verb_scores`` (pairs x 117) would cost it 117x more for the same list. Per-class APs are
    recorded by wrapping ``voc_ap``.
pocket (``pocket.utils.BoxPairAssociation``, ``DetectionAPMeter``)
    UPT's ``test_hico`` loop body per image (associate each HOI class's detected pairs with its
    ground-truth pairs at IoU 0.5, ``meter.append``), then ``meter.eval()`` with 11-point AP,
    ``nproc=1``; the images without annotated pairs are left out, as UPT's test set does. torchvision is not installed: a stub gives ``box_iou``
    (``inter / (area1 + area2 - inter)``), and boxes are float64 (UPT's are float32: the only
    place the two can part, see docs/protocols.md, "Known gaps").

hoibench: ``hoibench eval hico --gt hico-det:test --pred FILE --protocol qpic|pocket --json OUT`` on
the same detections in hoibench's JSON format, as a fresh process (reading included), run
``--repeats`` times once the file is flushed to disk; the median run is reported. Every run
is timed as a whole process (wall clock and the child's CPU seconds); the per-class APs must
agree (printed: the largest difference), and the ratios are printed against each reference.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _timing import compile_package  # noqa: E402  (perf/_timing.py)

from hoibench.data import HOIPredictions  # noqa: E402
from hoibench.datasets import load_dataset  # noqa: E402
from hoibench.formats import write_predictions  # noqa: E402
from hoibench.testing import noisy_predictions  # noqa: E402

QPIC_DRIVER = textwrap.dedent('''
    import json, sys, types
    import numpy as np
    import torch

    datasets = types.ModuleType("datasets")  # its __init__ imports torchvision; hico_eval needs numpy only
    datasets.__path__ = ["datasets"]
    sys.modules["datasets"] = datasets
    from datasets.hico_eval import HICOEvaluator

    z = dict(np.load(sys.argv[1]))
    meta = json.loads(open(sys.argv[2]).read())
    bo, po, do = z["box_offsets"], z["pair_offsets"], z["det_offsets"]
    gts = [{"boxes": torch.from_numpy(z["boxes"][bo[i]:bo[i + 1]]),
            "labels": torch.from_numpy(z["box_labels"][bo[i]:bo[i + 1]]),
            "hois": torch.from_numpy(z["pairs"][po[i]:po[i + 1]])} for i in range(len(bo) - 1)]
    as_triplets = lambda ids: [tuple(t) for t in np.asarray(meta["triplets"])[ids].tolist()]
    ev = HICOEvaluator([], gts, 0, as_triplets(meta["rare"]), as_triplets(meta["non_rare"]), None)
    bh, bx, lab, verb, score = z["det_boxes_h"], z["det_boxes_o"], z["det_labels"], z["det_verbs"], z["det_scores"]
    for i in range(len(do) - 1):
        s = slice(do[i], do[i + 1])
        n = do[i + 1] - do[i]
        boxes = np.concatenate([bh[s], bx[s]])
        labels = np.concatenate([np.zeros(n, np.int64), lab[s]])
        bboxes = [{"bbox": b, "category_id": c} for b, c in zip(boxes, labels)]
        hois = [{"subject_id": k, "object_id": n + k, "category_id": v, "score": sc}
                for k, (v, sc) in enumerate(zip(verb[s], score[s]))]
        hois.sort(key=lambda h: h.get("score", 0), reverse=True)
        ev.preds.append({"predictions": bboxes, "hoi_prediction": hois[:ev.max_hois]})
    recorded = []
    voc_ap = ev.voc_ap
    ev.voc_ap = lambda rec, prec: recorded.append(voc_ap(rec, prec)) or recorded[-1]
    result = ev.evaluate()
    it = iter(recorded)
    per_class = {",".join(map(str, map(int, t))): (0.0 if len(ev.tp[t]) == 0 else float(next(it)))
                 for t in ev.gt_triplets}
    print(json.dumps({"map": float(result["mAP"]), "per_class": per_class}))
''')

TORCHVISION_STUB = '''
import torch


def box_area(b):
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])


def box_iou(b1, b2):
    lt = torch.max(b1[:, None, :2], b2[:, :2])
    rb = torch.min(b1[:, None, 2:], b2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (box_area(b1)[:, None] + box_area(b2) - inter)
'''

POCKET_DRIVER = textwrap.dedent('''
    import importlib, json, sys, types
    import numpy as np
    import torch

    # pocket's package __init__ imports its models (torchvision); load only ops and utils
    root = sys.argv[3]
    for name in ("pocket", "pocket.ops", "pocket.utils"):
        pkg = types.ModuleType(name)
        pkg.__path__ = [root + "/" + name.replace(".", "/")]
        sys.modules[name] = pkg
    ops = sys.modules["pocket.ops"]
    for sub in ("boxes", "relocate", "transforms"):
        mod = importlib.import_module("pocket.ops." + sub)
        for k in dir(mod):
            if not k.startswith("_"):
                setattr(ops, k, getattr(mod, k))
    from pocket.utils.association import BoxPairAssociation
    from pocket.utils.meters import DetectionAPMeter

    z = dict(np.load(sys.argv[1]))
    po, do = z["pair_offsets"], z["det_offsets"]
    gh, go, ghoi = (torch.from_numpy(z[k]) for k in ("gt_boxes_h", "gt_boxes_o", "gt_hoi"))
    bh, bx, hoi, score = (torch.from_numpy(z[k]) for k in ("det_boxes_h", "det_boxes_o", "det_hoi", "det_scores"))
    associate = BoxPairAssociation(min_iou=0.5)
    meter = DetectionAPMeter(600, nproc=1, num_gt=np.bincount(z["gt_hoi"], minlength=600).tolist(), algorithm="11P")
    for i in range(len(do) - 1):
        if po[i] == po[i + 1]:  # UPT's test set leaves out the images without annotated pairs
            continue
        s, g = slice(do[i], do[i + 1]), slice(po[i], po[i + 1])
        boxes_h, boxes_o, scores, interactions = bh[s], bx[s], score[s], hoi[s]
        target_hoi, gt_bx_h, gt_bx_o = ghoi[g], gh[g], go[g]
        labels = torch.zeros_like(scores)
        for hoi_idx in interactions.unique():
            gt_idx = torch.nonzero(target_hoi == hoi_idx).squeeze(1)
            det_idx = torch.nonzero(interactions == hoi_idx).squeeze(1)
            if len(gt_idx):
                labels[det_idx] = associate((gt_bx_h[gt_idx].view(-1, 4), gt_bx_o[gt_idx].view(-1, 4)),
                                            (boxes_h[det_idx].view(-1, 4), boxes_o[det_idx].view(-1, 4)),
                                            scores[det_idx].view(-1))
        meter.append(scores, interactions, labels)
    ap = meter.eval()
    print(json.dumps({"map": float(ap.mean()), "per_class": [float(a) for a in ap]}))
''')


def timed(cmd: list[str], **kw: object) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run a whole process: (result, wall s, CPU s of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        sys.exit(f"{' '.join(c for c in cmd if len(c) < 80)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return out, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def inputs(per_image: int, d: Path) -> tuple[HOIPredictions, Path, Path, Path, dict[str, int]]:
    """The detections (valid HOI classes only), hoibench's JSON of them, the references' arrays."""
    gt = load_dataset("hico-det:test")
    v = gt.vocab
    p = noisy_predictions(gt, seed=0, per_image=(per_image, per_image))
    # valid HOI classes only, images in the ground truth's order (the references zip the two lists)
    row_of = {f: i for i, f in enumerate(gt.file_names)}
    row = np.array([row_of[f] for f in p.file_names])[p.image_index]
    k = np.flatnonzero(p.hois >= 0)
    k = k[np.argsort(row[k], kind="stable")]
    counts = np.bincount(row[k], minlength=gt.n_images)
    p = HOIPredictions.from_arrays(v, gt.file_names, counts, p.boxes_h[k], p.boxes_o[k], p.objects[k], p.verbs[k],
                                   p.scores[k].astype(np.float32).astype(np.float64))  # as a model scores them
    pred = d / "hoibench.json"
    write_predictions(p, pred)
    ok = gt.pair_hoi >= 0
    pair_image = np.repeat(np.arange(gt.n_images), np.diff(gt.pair_offsets))[ok]
    local_box = np.arange(len(gt.boxes)) - np.repeat(gt.box_offsets[:-1], np.diff(gt.box_offsets))
    hv = v.hoi_verb_object
    triplets = np.stack([np.zeros(v.n_hois, np.int64), v.coco80[hv[:, 1]], hv[:, 0]], axis=1)
    rare = np.zeros(v.n_hois, bool)
    rare[v.rare_classes()] = True
    arrays = {
        "box_offsets": gt.box_offsets, "boxes": gt.boxes, "box_labels": v.coco80[gt.box_labels],
        "pair_offsets": np.r_[0, np.cumsum(np.bincount(pair_image, minlength=gt.n_images))],
        "pairs": np.stack([local_box[gt.pair_subject[ok]], local_box[gt.pair_object[ok]], gt.pair_verb[ok]], axis=1),
        "gt_boxes_h": gt.boxes[gt.pair_subject[ok]], "gt_boxes_o": gt.boxes[gt.pair_object[ok]],
        "gt_hoi": gt.pair_hoi[ok],
        "det_offsets": np.r_[0, np.cumsum(counts)], "det_boxes_h": p.boxes_h, "det_boxes_o": p.boxes_o,
        "det_labels": v.coco80[p.objects], "det_verbs": p.verbs, "det_hoi": p.hois,
        "det_scores": p.scores.astype(np.float32),
    }
    npz = d / "reference_inputs.npz"
    np.savez(npz, **arrays)
    meta = d / "reference_meta.json"
    meta.write_text(json.dumps({"triplets": triplets.tolist(), "rare": np.flatnonzero(rare).tolist(),
                                "non_rare": np.flatnonzero(~rare).tolist()}))
    hoi_of = {",".join(map(str, t)): h for h, t in enumerate(triplets.tolist())}
    return p, pred, npz, meta, hoi_of


def compare(qpic: Path | None, pocket: Path | None, per_image: int = 100, repeats: int = 3) -> list[dict]:
    """Run each given reference and hoibench's whole command on the same detections; one dict per
    reference (its name, wall and CPU seconds of both, both mAPs, the largest per-class AP
    difference). Prints the table as it goes."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        p, pred, npz, meta, hoi_of = inputs(per_image, d)
        print(f"{len(p):,} detections on {p.n_images:,} images; load average {os.getloadavg()[0]:.1f}")
        runs = []
        if qpic:
            out, wall, cpu = timed([sys.executable, "-c", QPIC_DRIVER, str(npz), str(meta)], cwd=qpic,
                                   env={**env, "PYTHONPATH": f"{qpic}{os.pathsep}{env['PYTHONPATH']}"})
            ref = json.loads(out.stdout.strip().splitlines()[-1])
            per_class = np.full(len(hoi_of), np.nan)
            for key, value in ref["per_class"].items():
                per_class[hoi_of[key]] = value
            runs.append(("qpic", "QPIC datasets/hico_eval.py", wall, cpu, ref["map"], per_class))
        if pocket:
            stub = d / "stub" / "torchvision" / "ops"
            stub.mkdir(parents=True)
            (stub.parent / "__init__.py").write_text("")
            (stub / "__init__.py").write_text("from .boxes import box_iou\n")
            (stub / "boxes.py").write_text(TORCHVISION_STUB)
            out, wall, cpu = timed([sys.executable, "-c", POCKET_DRIVER, str(npz), str(meta), str(pocket)],
                                   env={**env, "PYTHONPATH": f"{d / 'stub'}{os.pathsep}{env['PYTHONPATH']}"})
            ref = json.loads(out.stdout.strip().splitlines()[-1])
            runs.append(("pocket", "pocket's loop (UPT test_hico)", wall, cpu, ref["map"], np.asarray(ref["per_class"])))
        print(f"{'reference':32s} {'wall s':>8s} {'cpu s':>8s}   {'hoibench eval hico':>22s}   "
              f"{'ratio wall':>10s} {'ratio cpu':>9s}   {'mAP ref':>9s} {'mAP ours':>9s} {'max |dAP|':>9s}")
        compile_package()
        for protocol, name, wall, cpu, ref_map, ref_ap in runs:
            res_path = d / f"{protocol}.json"
            os.sync()  # the file's writeback must not run during the timed command
            timings = sorted(timed([sys.executable, "-m", "hoibench", "eval", "hico", "--gt", "hico-det:test",
                                    "--pred", str(pred), "--protocol", protocol, "--json", str(res_path)],
                                   env=env)[1:] for _ in range(repeats))
            h_wall, h_cpu = timings[len(timings) // 2]  # the median run (by wall time)
            ours = json.loads(res_path.read_text())
            ap_ours = np.array([np.nan if a is None else a for a in ours["per_class_ap"]], dtype=float)
            if protocol == "pocket":  # pocket reports 0 for classes without ground truth
                ap_ours = np.nan_to_num(ap_ours)
            diff = float(np.nanmax(np.abs(ap_ours - ref_ap)))
            print(f"{name:32s} {wall:8.1f} {cpu:8.1f}   {h_wall:9.2f} wall {h_cpu:5.2f} cpu   {wall / h_wall:9.1f}x "
                  f"{cpu / h_cpu:8.1f}x   {100 * ref_map:9.4f} {ours['full']:9.4f} {diff:9.1e}")
            results.append({"protocol": protocol, "name": name, "n": len(p), "ref_wall": wall, "ref_cpu": cpu,
                            "wall": h_wall, "cpu": h_cpu, "ref_map": 100 * ref_map, "map": ours["full"],
                            "max_diff": diff})
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qpic", type=Path, help="an extracted hitachi-rd-cv/qpic")
    ap.add_argument("--pocket", type=Path, help="an extracted fredzzhang/pocket")
    ap.add_argument("--per-image", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs of hoibench's command (the median is reported; each reference runs once, ~1 min)")
    args = ap.parse_args()
    if not (args.qpic or args.pocket):
        ap.error("give --qpic and/or --pocket")
    compare(args.qpic, args.pocket, args.per_image, args.repeats)


if __name__ == "__main__":
    main()
