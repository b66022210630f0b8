"""Digests of what every prediction reader returns and what ``eval`` writes, to prove a refactor
changed no result: run it before and after, and compare the two JSON files.

    python scripts/reader_digests.py OUT.json [--mutants 120]

Covers every JSON prediction format (HICO-DET: hoibench, generic, QPIC, CDN and GEN-VLKT
``results.json``, ho-rcnn ``.mat``; V-COCO: hoibench with shared and dense role boxes, the
``vsrl_eval.py`` pickle), variants that defeat a fast path (pretty-printed, braces in file names,
reordered keys), seeded mutants of each (the outcome: arrays or the error line), each read with
the C scanner and without it, and the ``--json``/``--matches`` files of ``eval hico`` and ``eval
vcoco`` (with the fields that name the run's time and version left out).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))

from bench_eval_formats import qpic_json  # noqa: E402  (perf/)

from hoibench.data import HOIPredictions  # noqa: E402
from hoibench.datasets import load_dataset  # noqa: E402
from hoibench.formats import (  # noqa: E402
    load_predictions,
    read_vcoco_detections,
    vcoco_ground_truth_from_official,
    write_hicodet,
    write_matlab_detections,
    write_predictions,
    write_vcoco_detections,
    write_vcoco_ground_truth,
    write_vsrl_detections,
)
from hoibench.testing import noisy_predictions  # noqa: E402
from tests.test_eval_vcoco_oracle import make_synthetic  # noqa: E402
from tests.test_native_predictions import _embedded_gts, cdn_results_json, gen_vlkt_results_json  # noqa: E402
from tests.test_scan_agreement import _prediction_arrays as _prediction_values  # noqa: E402
from tests.test_scan_agreement import _vcoco_arrays as _vcoco_values  # noqa: E402
from tests.test_scan_agreement import mutate  # noqa: E402

VOLATILE = {"created", "hoibench_version", "version_hoibench", "elapsed", "seconds", "timestamp", "date", "time",
            "python", "platform", "host", "command", "argv", "cwd", "path", "pred", "file", "files", "source"}


def _digest(values: list[Any]) -> str:
    h = hashlib.sha256()
    for v in values:
        if isinstance(v, np.ndarray):
            h.update(f"{v.dtype}{v.shape}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        else:
            h.update(repr(v).encode())
        h.update(b"|")
    return h.hexdigest()[:20]


def _outcome(read: Any, values: Any, path: Path) -> str:
    try:
        return "ok " + _digest(values(read(path)))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:400]


def _strip(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _strip(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [_strip(v) for v in doc]
    return doc


def _file_digest(path: Path) -> str:
    raw = path.read_bytes()
    try:
        doc = json.loads(raw)
    except ValueError:
        lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
        doc = lines
    return hashlib.sha256(json.dumps(_strip(doc), sort_keys=True).encode()).hexdigest()[:20]


def hico_files(d: Path, gt: Any) -> dict[str, Path]:
    p = noisy_predictions(gt, seed=3, per_image=(5, 40))
    keep = p.hois >= 0
    counts = np.bincount(p.image_index[keep], minlength=p.n_images)
    q = HOIPredictions.from_arrays(p.vocab, p.file_names, counts, p.boxes_h[keep], p.boxes_o[keep],
                                   p.objects[keep], p.verbs[keep], p.scores[keep])
    files: dict[str, Path] = {}
    for fmt in ("hoibench", "generic"):
        files[fmt] = d / f"{fmt}.json"
        write_predictions(p, files[fmt], format=fmt)
        doc = json.loads(files[fmt].read_text())
        files[fmt + "-pretty"] = d / f"{fmt}-pretty.json"
        files[fmt + "-pretty"].write_text(json.dumps(doc, indent=1))
        rev = dict(doc, images=[dict(reversed(list(im.items()))) for im in doc["images"]])
        files[fmt + "-reordered"] = d / f"{fmt}-reordered.json"
        files[fmt + "-reordered"].write_text(json.dumps(rev))
        brace = dict(doc, images=[dict(im, file_name=im["file_name"] + "{[}]") if i % 7 == 0 else im
                                  for i, im in enumerate(doc["images"])])
        files[fmt + "-braces"] = d / f"{fmt}-braces.json"
        files[fmt + "-braces"].write_text(json.dumps(brace))
    qpic = json.loads(qpic_json(q))
    for im in qpic:  # and a low-scoring extra verb per pair, valid or not
        for row in im["verb_scores"]:
            row[0] += 0.01
    files["qpic"] = d / "qpic.json"
    files["qpic"].write_text(json.dumps(qpic))
    files["qpic-pretty"] = d / "qpic-pretty.json"
    files["qpic-pretty"].write_text(json.dumps(qpic, indent=2))
    files["qpic-braces"] = d / "qpic-braces.json"
    files["qpic-braces"].write_text(json.dumps([dict(im, file_name=im["file_name"] + "}{") for im in qpic]))
    gts = _embedded_gts(gt.subset(np.arange(3)))
    files["cdn"] = d / "cdn.json"
    files["cdn"].write_text(cdn_results_json(p, gts))
    files["gen-vlkt"] = d / "gen.json"
    files["gen-vlkt"].write_text(gen_vlkt_results_json(q, gts))
    files["ho-rcnn-folder"] = d / "matlab"
    write_matlab_detections(q, gt, files["ho-rcnn-folder"])
    files["ho-rcnn-one"] = d / "all.mat"
    write_matlab_detections(q, gt, files["ho-rcnn-one"])
    return files


def vcoco_files(d: Path) -> tuple[Path, dict[str, Path]]:
    coco, vcoco, det = make_synthetic(5, n_images=60)
    write_vcoco_ground_truth(vcoco_ground_truth_from_official(vcoco, coco), d / "vgt.json")
    files = {"vcoco-shared": d / "v-shared.json", "vcoco-dense": d / "v-dense.json", "vsrl": d / "v.pkl"}
    write_vcoco_detections(det, files["vcoco-shared"], share_role_boxes=True)
    write_vcoco_detections(det, files["vcoco-dense"], share_role_boxes=False)
    write_vsrl_detections(det, files["vsrl"])
    doc = json.loads(files["vcoco-shared"].read_text())
    files["vcoco-pretty"] = d / "v-pretty.json"
    files["vcoco-pretty"].write_text(json.dumps(doc, indent=1))
    return d / "vgt.json", files


def main() -> None:
    out = Path(sys.argv[1])
    n_mutants = int(sys.argv[sys.argv.index("--mutants") + 1]) if "--mutants" in sys.argv else 120
    native = "HOIBENCH_NO_NATIVE" not in os.environ
    result: dict[str, str] = {}
    d = Path(tempfile.gettempdir()) / "hoibench-reader-digests"  # one fixed path: messages name it
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    try:
        gt = load_dataset("hico-det:test").subset(np.arange(300))
        small = gt.subset(np.arange(3))
        write_hicodet(gt, d / "gt.json")
        files = hico_files(d, gt)

        def read_hico(path: Path) -> Any:
            return load_predictions(path, ground_truth=gt)

        for name, path in files.items():
            result[f"read {name}"] = _outcome(read_hico, _prediction_values, path)
            for fmt in ("hoibench", "generic", "qpic", "cdn", "gen-vlkt"):
                if name.split("-")[0] != fmt and not name.startswith(fmt):
                    continue
                result[f"read {name} --format {fmt}"] = _outcome(
                    lambda x, f=fmt: load_predictions(x, format=f, ground_truth=gt), _prediction_values, path)
        small_files = hico_files(d / "small", small) if (d / "small").mkdir() is None else {}
        for fmt in ("hoibench", "generic", "qpic", "cdn", "gen-vlkt"):
            text = small_files[fmt].read_text()
            rng = random.Random(sum(map(ord, fmt)))
            for k in range(n_mutants):
                path = d / "small" / f"m-{fmt}-{k}.json"
                path.write_bytes(mutate(text, rng).encode("utf-8", "surrogatepass"))
                result[f"mutant {fmt} {k}"] = _outcome(lambda x: load_predictions(x, ground_truth=small),
                                                       _prediction_values, path)
        vgt, vfiles = vcoco_files(d)
        for name, path in vfiles.items():
            result[f"read {name}"] = _outcome(read_vcoco_detections, _vcoco_values, path)
        for name in ("vcoco-shared", "vcoco-dense"):
            text = vfiles[name].read_text()
            rng = random.Random(len(name))
            for k in range(n_mutants):
                path = d / f"vm-{name}-{k}.json"
                path.write_bytes(mutate(text, rng).encode("utf-8", "surrogatepass"))
                result[f"mutant {name} {k}"] = _outcome(read_vcoco_detections, _vcoco_values, path)
        if native:  # the command's output files (once: the reading is compared above both ways)
            exe = [sys.executable, "-m", "hoibench"]
            for name in ("hoibench", "generic", "qpic", "cdn", "gen-vlkt", "ho-rcnn-folder"):
                for protocol in ("official", "qpic"):
                    r, m = d / f"r-{name}-{protocol}.json", d / f"m-{name}-{protocol}.jsonl"
                    proc = subprocess.run([*exe, "eval", "hico", "--gt", str(d / "gt.json"), "--pred",
                                           str(files[name]), "--protocol", protocol, "--json", str(r),
                                           "--matches", str(m), "--model", "x", "--benchmark", "b"],
                                          capture_output=True, text=True)
                    key = f"eval hico {name} {protocol}"
                    result[key] = (f"rc {proc.returncode} results {_file_digest(r)} matches {_file_digest(m)}"
                                   if proc.returncode == 0 else f"rc {proc.returncode} {proc.stderr[-300:]}")
            for name in ("vcoco-shared", "vcoco-dense", "vsrl"):
                r = d / f"rv-{name}.json"
                proc = subprocess.run([*exe, "eval", "vcoco", "--gt", str(vgt), "--pred", str(vfiles[name]),
                                       "--json", str(r), "--model", "x", "--benchmark", "b"],
                                      capture_output=True, text=True)
                result[f"eval vcoco {name}"] = (f"rc {proc.returncode} results {_file_digest(r)}"
                                                if proc.returncode == 0 else f"rc {proc.returncode} "
                                                f"{proc.stderr[-300:]}")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True))
    oks = sum(v.startswith("ok ") for v in result.values())
    print(f"{len(result)} outcomes ({oks} read), native={native} -> {out}")


if __name__ == "__main__":
    main()
