"""The two ``mcq from-detections`` rules on the same detections (docs/mcq.md, "HOI methods").

Simulates an HOI detector on a CrossHOI-Bench question file with person boxes (default: the
released HICO-DET setting-2 file) and prints Instance-F1 and the other metrics of the released
and the paper rule, scored with both protocols. The detector is synthetic (seeded): every person
of the image (the target with a jittered box, and 0-3 bystanders) gets one triplet per HICO-DET
class of the question's object, scored by a logistic of Gaussian noise, raised by ``--signal``
for the target's correct classes and for one random class of each bystander.

    python perf/mcq_detection_rules.py [--questions FILE] [--seed 0] [--signal 2.0]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from hoibench.benchmarks.mcq import answers_from_detections, answers_released_rule, text_detections
from hoibench.data import HOIPredictions
from hoibench.evaluation import mcq_metrics
from hoibench.formats import read_questions
from hoibench.formats.crosshoi_predictions import read_released_hoi
from hoibench.vocab import hico_det

DEFAULT = Path(os.environ.get("HOIBENCH_SHARED_DATA", "../shared/data")) / \
    "crosshoi-bench/hicodet/our_test/crosshoi_bench_hum_box_final.json"


def simulate(raw: dict, seed: int, signal: float) -> dict:
    """A released HOI-method prediction file for the question file ``raw`` (HICO-DET layout)."""
    v = hico_det()
    by_obj: dict[str, list[str]] = {}
    for vi, oi in v.hoi_verb_object.tolist():
        by_obj.setdefault(v.objects[oi], []).append(f"{v.verbs[vi]} a/an {v.objects[oi]}")
    rng = np.random.default_rng(seed)
    out = {}
    for name, qa in raw.items():
        texts = qa["gt_choices"] + qa["wrong_choices"]
        obj = texts[0].split(" a/an ")[-1].replace(" ", "_")
        classes = by_obj.get(obj, [])
        x1, y1, x2, y2 = qa["boxes"]["human"]
        w, h = x2 - x1, y2 - y1
        people = [([x1 + rng.normal(0, 0.05 * w), y1 + rng.normal(0, 0.05 * h), x2 + rng.normal(0, 0.05 * w),
                    y2 + rng.normal(0, 0.05 * h)], set(qa["gt_choices"]))]
        for _ in range(int(rng.integers(0, 4))):
            dx = float(rng.choice([-1.2, 1.2])) * w
            people.append(([x1 + dx, y1, x2 + dx, y2], {str(rng.choice(classes))} if classes else set()))
        det: dict[str, list] = {"h_boxes": [], "o_boxes": [], "ho_scores": [], "ao_names": []}
        for box, true in people:
            box = [float(min(box[0], box[2] - 1)), float(min(box[1], box[3] - 1)), float(box[2]), float(box[3])]
            for t in classes:
                z = rng.normal(-1.0, 1.0) + (signal if t in true else 0.0)
                det["h_boxes"].append(box)
                det["o_boxes"].append(box)
                det["ho_scores"].append(float(1 / (1 + np.exp(-z))))
                det["ao_names"].append(t)
        out[name] = det
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=Path, default=DEFAULT)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--signal", type=float, default=2.0)
    args = ap.parse_args()
    raw = json.loads(args.questions.read_text())
    qs = read_questions(args.questions)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "method.json"
        path.write_text(json.dumps(simulate(raw, args.seed, args.signal)))
        det = read_released_hoi(path, dataset="hico-det")
    preds = _as_predictions(det)
    rules = {"released": answers_released_rule(qs, text_detections(preds)),
             "paper": answers_from_detections(qs, preds)}
    print(f"{len(qs)} questions, {sum(len(d) for d in det.values()):,} triplets, seed {args.seed}, "
          f"signal {args.signal}")
    for rule, answers in rules.items():
        for protocol in ("crosshoi", "paper"):
            m = mcq_metrics(answers, qs, protocol=protocol)
            print(f"rule {rule:8s} protocol {protocol:8s} Instance-F1 {100 * m.instance_f1:5.1f}  "
                  f"Macro-F1 {100 * m.macro_f1:5.1f}  Micro-F1 {100 * m.micro_f1:5.1f}  "
                  f"EM {100 * m.exact_match:5.1f}")


def _as_predictions(det: dict) -> HOIPredictions:
    """The same triplets as HICO-DET class predictions (both rules read these)."""
    v = hico_det()
    names = list(det)
    verbs, objs = [], []
    for d in det.values():
        for t in d.texts:
            verb, obj = t.split(" a/an ")
            verbs.append(v.verb_index(verb))
            objs.append(v.object_index(obj))
    return HOIPredictions.from_arrays(v, names, [len(det[f]) for f in names],
                                      np.concatenate([det[f].boxes_h for f in names]),
                                      np.concatenate([det[f].boxes_o for f in names]),
                                      np.asarray(objs), np.asarray(verbs),
                                      np.concatenate([det[f].scores for f in names]))


if __name__ == "__main__":
    main()
