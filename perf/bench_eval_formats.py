"""Time reading ~1M detections in every prediction format, next to ``json.load`` of the same file.

    python perf/bench_eval_formats.py [--per-image 100] [--skip FORMAT ...]

Target: reading ~1M detections under 1.5 s CPU in every format (generic with any
``format`` value, hoibench, QPIC/CDN/GEN-VLKT JSON, a ``detections_XX.mat`` folder), and
``--matlab-out`` under 5 s. The files hold noisy detections on the full bundled test set
(9,658 images); the CDN and GEN-VLKT ``results.json`` texts are formatted here directly in
numpy 2's repr (what ``str()`` of their dicts prints; ``str()`` itself would take minutes).
CPU seconds are the reliable figure on a shared machine. The readers use the C scanner
(``hoibench.formats._colscan``) where it is built; ``HOIBENCH_NO_NATIVE=1`` times them without it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _timing import Timer  # noqa: E402  (perf/_timing.py)

from hoibench.data import HOIPredictions  # noqa: E402
from hoibench.datasets import load_dataset  # noqa: E402
from hoibench.formats import load_predictions, write_matlab_detections, write_predictions  # noqa: E402
from hoibench.testing import noisy_predictions  # noqa: E402


def _f32(x: float) -> str:
    return f"np.float32({x!r})"


def repr_results(p: HOIPredictions, variant: str) -> str:
    """``json.dumps(str({'preds': ..., 'gts': []}))`` for one query per detection."""
    v = p.vocab
    b32 = [np.concatenate([p.boxes_h, p.boxes_o], axis=1).astype(np.float32).tolist()]
    s32 = p.scores.astype(np.float32).tolist()
    coco = v.coco80[p.objects].tolist()
    ids = (p.verbs if variant == "cdn" else p.hois).tolist()
    images = []
    for i, fn in enumerate(p.file_names):
        s = p.image_slice(i)
        n = s.stop - s.start
        rows = b32[0][s]
        subj = [f"{{'bbox': [{', '.join(map(_f32, r[:4]))}], 'category_id': np.int64(0)}}" for r in rows]
        objs = [f"{{'bbox': [{', '.join(map(_f32, r[4:]))}], 'category_id': np.int64({c})}}"
                for r, c in zip(rows, coco[s])]
        if variant != "cdn":  # GEN-VLKT boxes carry no label
            subj = [t.split(", 'category_id'")[0] + "}" for t in subj]
            objs = [t.split(", 'category_id'")[0] + "}" for t in objs]
        hois = [f"{{'subject_id': np.int64({k}), 'object_id': np.int64({n + k}), 'category_id': np.int64({c}), "
                f"'score': {_f32(sc)}}}" for k, (c, sc) in enumerate(zip(ids[s], s32[s]))]
        images.append(f"{{'filename': '{fn}', 'predictions': [{', '.join(subj + objs)}], "
                      f"'hoi_prediction': [{', '.join(hois)}]}}")
    return json.dumps("{'preds': [" + ", ".join(images) + "], 'gts': []}")


def qpic_json(p: HOIPredictions) -> bytes:
    v = p.vocab
    out = []
    for i, fn in enumerate(p.file_names):
        s = p.image_slice(i)
        n = s.stop - s.start
        vs = np.zeros((n, v.n_verbs), np.float32)
        vs[np.arange(n), p.verbs[s]] = p.scores[s]
        out.append({"file_name": fn, "labels": [0] * n + v.coco80[p.objects[s]].tolist(),
                    "boxes": np.concatenate([p.boxes_h[s], p.boxes_o[s]]).astype(np.float32).tolist(),
                    "verb_scores": vs.tolist(), "sub_ids": list(range(n)), "obj_ids": list(range(n, 2 * n))})
    return orjson.dumps(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-image", type=int, default=100)
    ap.add_argument("--skip", nargs="*", default=[])
    args = ap.parse_args()
    gt = load_dataset("hico-det:test")
    p = noisy_predictions(gt, seed=0, per_image=(args.per_image, args.per_image))
    k = p.hois >= 0
    counts = np.bincount(p.image_index[k], minlength=p.n_images)
    p = HOIPredictions.from_arrays(p.vocab, p.file_names, counts, p.boxes_h[k].astype(np.float32).astype(float),
                                   p.boxes_o[k].astype(np.float32).astype(float), p.objects[k], p.verbs[k],
                                   p.scores[k].astype(np.float32).astype(float))
    print(f"{len(p):,} detections on {p.n_images:,} images (valid HOI classes only)")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        files: dict[str, Path] = {}
        write_predictions(p, d / "hoibench.json")
        files["hoibench"] = d / "hoibench.json"
        write_predictions(p, d / "generic.json", format="generic")
        files["generic"] = d / "generic.json"
        g = orjson.loads(files["generic"].read_bytes())
        (d / "generic_v1.json").write_bytes(orjson.dumps({"format": "hoi-det-generic/v1", **g}))
        files["generic, format 'hoi-det-generic/v1'"] = d / "generic_v1.json"
        if "qpic" not in args.skip:
            (d / "qpic.json").write_bytes(qpic_json(p))
            files["qpic (one query per detection)"] = d / "qpic.json"
        if "cdn" not in args.skip:
            (d / "cdn.json").write_text(repr_results(p, "cdn"))
            files["cdn results.json"] = d / "cdn.json"
        if "gen-vlkt" not in args.skip:
            (d / "gen.json").write_text(repr_results(p, "gen-vlkt"))
            files["gen-vlkt results.json"] = d / "gen.json"
        with Timer() as t:
            write_matlab_detections(p, gt, d / "matlab")
        print(f"write_matlab_detections, detections_XX.mat folder: {t}")
        with Timer() as t:
            write_matlab_detections(p, gt, d / "all.mat")
        print(f"write_matlab_detections, one all_boxes .mat:       {t}")
        files["ho-rcnn detections_XX.mat folder"] = d / "matlab"
        files["ho-rcnn one all_boxes .mat"] = d / "all.mat"
        # the ground truth's lazily built arrays (used by the frame check) and first imports are
        # not reading: built once here on a 10-image file
        write_predictions(p.select(p.image_index < 10), d / "warm.json")
        load_predictions(d / "warm.json", ground_truth=gt)
        print(f"{'format':40s} {'MB':>7s}  {'load_predictions':>30s}  {'json.load (same file)':>30s}")
        for name, path in files.items():
            size = sum(f.stat().st_size for f in path.iterdir()) if path.is_dir() else path.stat().st_size
            with Timer() as t:
                loaded = load_predictions(path, ground_truth=gt)
            base = "-"
            if path.is_file() and path.suffix == ".json":
                with Timer() as tb, open(path) as fh:
                    json.load(fh)
                base = str(tb)
            print(f"{name:40s} {size / 1e6:7.1f}  {t!s:>30s}  {base:>30s}   ({len(loaded.predictions):,} read as "
                  f"{loaded.format})")


if __name__ == "__main__":
    main()
