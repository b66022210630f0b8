"""Bad input to every command of the data, eval, split, analyze and mcq groups: exactly one line
on stderr that names the file (and record and field where there is one), a non-zero exit code,
never a traceback and never a silent result.

Each case runs ``python -m hoibench`` in a real process, as a user would. The inputs are small
files derived in ``tmp_path`` from the vendored fixtures, each with one defect.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hoibench.data import HOIPredictions, MCAnswer
from hoibench.formats import read_dataset, write_answers, write_ppdm, write_predictions
from tests.conftest import FIXTURES

GT = FIXTURES / "mini_instances_test2015.json"
VCOCO = FIXTURES / "mini_instances_vcoco_test.json"


def _perfect_predictions(gt: Any) -> HOIPredictions:
    """One detection per ground-truth pair (enough for every reader and evaluator path)."""
    ok = gt.pair_object >= 0
    img = gt.pair_image[ok]
    counts = np.bincount(img, minlength=gt.n_images)
    return HOIPredictions.from_arrays(
        gt.vocab, gt.file_names, counts, gt.boxes[gt.pair_subject[ok]], gt.boxes[gt.pair_object[ok]],
        gt.box_labels[gt.pair_object[ok]], gt.pair_verb[ok], np.linspace(0.9, 0.1, int(ok.sum())))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from hoibench.benchmarks.mcq import answers_from_detections, build_mcq_benchmark

    d = tmp_path_factory.mktemp("bad_input")
    out: dict[str, Path] = {"dir": d, "gt": GT}

    def put(name: str, obj: Any = None, raw: str | None = None) -> None:
        path = d / name
        path.write_text(raw if raw is not None else json.dumps(obj))
        out[name] = path

    gt = read_dataset(GT)
    preds = _perfect_predictions(gt)
    write_predictions(preds, d / "pred.json")
    out["pred.json"] = d / "pred.json"
    build = build_mcq_benchmark(gt, random_state=0, remove_easy=False)
    build.write(d / "q.jsonl")
    out["q.jsonl"] = d / "q.jsonl"
    answers = answers_from_detections(list(build.questions), preds)
    write_answers(d / "ans.jsonl", answers, header={"kind": "mcq_answers"})
    out["ans.jsonl"] = d / "ans.jsonl"
    put("not_a_dir", raw="x")

    put("empty.json", raw="")
    put("junk.mat", raw="junk")
    put("invalid.json", raw='{"images": [')
    put("null.json", raw="null")
    ann = json.loads(GT.read_text())
    for name, edit in {
        "gt_nan.json": lambda a: a["annotation"][0]["boxes_h"].__setitem__(0, [float("nan"), 1, 2, 3]),
        "gt_inverted.json": lambda a: a["annotation"][0]["boxes_h"].__setitem__(0, [300, 300, 100, 100]),
        "gt_box_str.json": lambda a: a["annotation"][0]["boxes_h"].__setitem__(0, "abc"),
        "gt_verb.json": lambda a: a["annotation"][0]["verb"].__setitem__(0, 9999),
        "gt_size.json": lambda a: a["size"].__setitem__(0, "x"),
    }.items():
        a = copy.deepcopy(ann)
        edit(a)
        put(name, raw=json.dumps(a))
    hake = json.loads((FIXTURES / "mini_hake_train.json").read_text())
    next(iter(hake.values()))["labels"][0]["width"] = "wide"
    put("hake_width.json", hake)
    p = json.loads((d / "pred.json").read_text())
    for name, edit in {
        "pred_nan.json": lambda q: q["images"][0]["boxes_h"].__setitem__(0, [float("nan"), 1, 2, 3]),
        "pred_inverted.json": lambda q: q["images"][0]["boxes_o"].__setitem__(0, [300, 300, 100, 100]),
        "pred_verb.json": lambda q: q["images"][0]["verbs"].__setitem__(0, 999),
        "pred_score.json": lambda q: q["images"][0]["scores"].__setitem__(0, "high"),
        "pred_image.json": lambda q: q["images"][0].__setitem__("file_name", "nope.jpg"),
        "pred_space.json": lambda q: q.__setitem__("label_space", "v-coco"),
        "pred_elsewhere.json": lambda q: [im.__setitem__("file_name", f"other_{i}.jpg")
                                          for i, im in enumerate(q["images"])],
    }.items():
        q = copy.deepcopy(p)
        edit(q)
        put(name, raw=json.dumps(q))
    put("qpic_no_pairs.json", [{"file_name": gt.file_names[0], "boxes": [[1, 1, 50, 50]], "labels": [0],
                                "verb_scores": [[0.1] * 117], "sub_ids": [], "obj_ids": []}])
    put("cdn_exec.json", raw=json.dumps(str({"preds": [{"filename": gt.file_names[0]}]})).replace(
        "'preds': [", "'preds': [__import__('os').getcwd(), "))  # CDN results.json holding code
    lines = (d / "q.jsonl").read_text().splitlines()
    bad_q = json.loads(lines[1])
    bad_q["correct"] = [7]
    put("q_correct.jsonl", raw="\n".join([lines[0], json.dumps(bad_q), *lines[2:]]) + "\n")
    boxed = next(json.loads(ln) for ln in lines[1:] if json.loads(ln).get("person_box"))
    boxed["person_box"] = [300, 300, 100, 100]
    put("q_inverted.jsonl", raw="\n".join([lines[0], json.dumps(boxed), *lines[1:]]) + "\n")
    alines = (d / "ans.jsonl").read_text().splitlines()
    bad_a = json.loads(alines[1])
    bad_a["selected"] = ["Z"]
    put("a_letter.jsonl", raw="\n".join([alines[0], json.dumps(bad_a), *alines[2:]]) + "\n")
    bad_a["selected"] = "ride"
    put("a_type.jsonl", raw="\n".join([alines[0], json.dumps(bad_a), *alines[2:]]) + "\n")
    other = [alines[0]] + [json.dumps({**json.loads(ln), "question_id": "x" + json.loads(ln)["question_id"]})
                           for ln in alines[1:]]
    put("a_other.jsonl", raw="\n".join(other) + "\n")
    bad_a["selected"] = []
    bad_a["seed"] = "zero"
    put("a_seed.jsonl", raw="\n".join([alines[0], json.dumps(bad_a), *alines[2:]]) + "\n")
    # issue 13: files that are not regular files, symlinks, strings for numbers, contradictory
    # redundant fields, huge ids, non-UTF-8 bytes, unknown versions
    os.mkfifo(d / "fifo.json")
    out["fifo.json"] = d / "fifo.json"
    os.symlink("loop.json", d / "loop.json")
    out["loop.json"] = d / "loop.json"
    os.symlink("gone.json", d / "dangling.json")
    out["dangling.json"] = d / "dangling.json"
    (d / "latin1.json").write_bytes(b'{"images": [{"file_name": "caf\xe9.jpg"}]}')
    out["latin1.json"] = d / "latin1.json"
    (d / "latin1.jsonl").write_bytes(b'{"header": {"model": "caf\xe9"}}\n')
    out["latin1.jsonl"] = d / "latin1.jsonl"
    for name, edit in {
        "pred_box_str.json": lambda q: q["images"][0]["boxes_h"][0].__setitem__(0, "3"),
        "pred_huge_id.json": lambda q: q["images"][0]["objects"].__setitem__(0, 2**70),
        "pred_version.json": lambda q: q.__setitem__("version", 7),
        "pred_hoi_contra.json": lambda q: [im.__setitem__("hois", [0] * len(im["scores"])) for im in q["images"]],
    }.items():
        q = copy.deepcopy(p)
        edit(q)
        put(name, raw=json.dumps(q))
    ppdm = tmp_path_factory.mktemp("ppdm") / "gt.json"
    write_ppdm(gt, ppdm)
    entries = json.loads(ppdm.read_text())
    k = next(i for i, e in enumerate(entries) if e["hoi_annotation"])
    e = copy.deepcopy(entries)
    e[k]["hoi_annotation"][0]["hoi_category_id"] = e[k]["hoi_annotation"][0]["hoi_category_id"] % 600 + 1
    put("ppdm_hoi_contra.json", e)
    e = copy.deepcopy(entries)
    e[k]["annotations"][0]["category_id"] = 2**70
    put("ppdm_huge_id.json", e)
    e = copy.deepcopy(entries)
    e[k]["hoi_annotation"][0]["subject_id"] = "0"
    put("ppdm_str_id.json", e)
    put("ids_huge.json", [1, 2**70])
    put("ids_oor.json", [1, 100000])
    put("ids_empty.json", [])
    # JSON nested too deeply (as a whole, and one value inside a valid file), a gigabyte of NUL
    # bytes, classes outside the label space, strings for V-COCO numbers
    put("deep.json", raw="[" * 5000 + "]" * 5000)
    im0 = p["images"][0]
    put("pred_deep.json", raw=json.dumps({**p, "images": [{**im0, "boxes_h": ["@@", *im0["boxes_h"][1:]]},
                                                          *p["images"][1:]]})
        .replace('"@@"', "[" * 1020 + "]" * 1020))
    q_deep = {**json.loads(lines[1]), "person_box": "@@"}
    put("q_deep.jsonl", raw="\n".join([lines[0], json.dumps(q_deep).replace('"@@"', "[" * 1020 + "]" * 1020),
                                      *lines[2:]]) + "\n")
    with open(d / "zeros.json", "wb") as fh:
        fh.truncate(1 << 30)  # a hole: no disk used
    out["zeros.json"] = d / "zeros.json"
    k, q_hoi = next((k, json.loads(ln)) for k, ln in enumerate(lines[1:], 2) if json.loads(ln)["choices"][0]["hoi"] >= 0)
    q_hoi["choices"][0]["hoi"] = 999
    put("q_hoi.jsonl", raw="\n".join([*lines[:k - 1], json.dumps(q_hoi), *lines[k:]]) + "\n")
    put("vdet_box_str.json", {"agent_classes": ["hold"], "role_classes": ["hold_obj"],
                              "images": [{"image_id": 3, "person_boxes": [["0", "0", "10", "10"]],
                                          "agent_scores": [[0.5]], "role_boxes": [[[1, 1, 4, 4]]],
                                          "role_scores": [[0.5]]}]})
    put("result.json", {"kind": "hico_map", "model": "m", "benchmark": "b", "protocol": "official",
                        "known_object": False, "full": 10.0, "rare": 5.0, "non_rare": 12.0, "subsets": {},
                        "per_class_ap": [0.5] * 600, "n_gt": [1] * 600, "class_names": ["c"] * 600,
                        "classes": None})
    return out


def _cases() -> list[tuple[str, list[str], list[str]]]:
    """``(id, argv with {placeholders}, substrings of the error line)``."""
    ev = ["eval", "hico", "--gt", "{gt}", "--pred"]
    return [
        # annotation files
        ("missing", ["data", "info", "{dir}/nope.json"], ["nope.json", "no such file"]),
        ("directory", ["data", "info", "{dir}"], ["is a directory"]),
        ("empty", ["data", "stats", "{empty.json}"], ["empty.json", "not valid JSON"]),
        ("invalid-json", ["split", "audit", "{invalid.json}", "{gt}"], ["invalid.json", "not valid JSON"]),
        ("null-json", ["data", "info", "{null.json}"], ["null.json", "unknown annotation format"]),
        ("questions-as-annotations", ["mcq", "build", "--dataset", "{q.jsonl}", "--out", "{dir}/o.jsonl"],
         ["q.jsonl", "not valid JSON"]),
        ("gt-nan-box", ["eval", "hico", "--gt", "{gt_nan.json}", "--pred", "{pred.json}"],
         ["gt_nan.json", "record 0", "non-finite"]),
        ("gt-inverted-box", ["split", "balanced", "--dataset", "{gt_inverted.json}", "--out", "{dir}/b"],
         ["gt_inverted.json", "record 0", "inverted"]),
        ("gt-wrong-type", ["data", "convert", "{gt_box_str.json}", "{dir}/c.json", "--to", "ppdm"],
         ["gt_box_str.json", "record 0", "boxes_h[0]"]),
        ("gt-verb-range", ["mcq", "build", "--dataset", "{gt_verb.json}", "--out", "{dir}/o.jsonl"],
         ["gt_verb.json", "record 0", "verb[0]", "outside"]),
        ("gt-size-type", ["split", "sg", "--dataset", "{gt_size.json}", "--seed", "0", "--out", "{dir}/sg"],
         ["gt_size.json", "record 0", "size"]),
        ("junk-mat-annotations", ["data", "info", "{junk.mat}"], ["junk.mat", "not a MATLAB file"]),
        ("junk-mat-image-labels", [*ev, "{pred.json}", "--known-object", "--image-labels", "{junk.mat}"],
         ["junk.mat", "not a MATLAB file"]),
        ("hake-width-type", ["data", "info", "{hake_width.json}"],
         ["hake_width.json", "record 0", "labels[0].width", "expected an integer"]),
        ("sg-same-file-twice", ["split", "sg", "--dataset", "{gt}", "--dataset", "{gt}", "--seed", "0", "--out",
                                "{dir}/sg4"], ["occurs more than once"]),
        ("dataset-split-typo", ["eval", "hico", "--gt", "hico-det:tset", "--pred", "{pred.json}"],
         ["hico-det has splits"]),
        ("vcoco-split-typo", ["eval", "vcoco", "--gt", "v-coco:tset", "--pred", "{pred.json}"],
         ["v-coco has splits"]),
        ("dataset-name-typo", ["data", "info", "hico-dte"], ["hico-dte", "nor a bundled dataset"]),
        # predictions
        ("pred-nan-box", [*ev, "{pred_nan.json}"], ["pred_nan.json", "record 0", "boxes_h[0]"]),
        ("pred-inverted-box", [*ev, "{pred_inverted.json}"], ["pred_inverted.json", "boxes_o[0]", "inverted"]),
        ("pred-verb-range", [*ev, "{pred_verb.json}"], ["pred_verb.json", "verb[0]"]),
        ("pred-score-type", [*ev, "{pred_score.json}"], ["pred_score.json", "scores[0]"]),
        ("pred-unknown-image", [*ev, "{pred_image.json}"],
         ["pred_image.json", "record 0", "nope.jpg", "not in the ground truth"]),
        ("pred-label-space", [*ev, "{pred_space.json}"], ["pred_space.json", "label_space", "v-coco"]),
        ("qpic-scores-without-pairs", [*ev, "{qpic_no_pairs.json}"],
         ["qpic_no_pairs.json", "record 0", "verb_scores"]),
        ("cdn-results-holding-code", [*ev, "{cdn_exec.json}"], ["cdn_exec.json", "not a literal", "__import__"]),
        ("questions-as-predictions", [*ev, "{q.jsonl}"], ["q.jsonl"]),
        ("sensitivity-pred-label-space", ["analyze", "sensitivity", "--predictions", "{pred_space.json}",
                                          "--dataset", "{gt}"], ["pred_space.json", "label_space"]),
        ("from-detections-other-images", ["mcq", "from-detections", "--questions", "{q.jsonl}",
                                          "--predictions", "{pred_elsewhere.json}", "--out", "{dir}/a.jsonl"],
         ["pred_elsewhere.json", "no detections for any"]),
        ("from-detections-bad-pred", ["mcq", "from-detections", "--questions", "{q.jsonl}", "--predictions",
                                      "{pred_nan.json}", "--out", "{dir}/a.jsonl"], ["pred_nan.json", "boxes_h[0]"]),
        # questions and answers
        ("answers-empty", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{empty.json}"],
         ["empty.json", "empty file"]),
        ("answers-null", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{null.json}"],
         ["null.json", "record 1", "expected an object"]),
        ("answers-not-jsonl", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{invalid.json}"],
         ["invalid.json", "no header and no complete answer line"]),
        ("answers-bad-letter", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{a_letter.jsonl}"],
         ["a_letter.jsonl", "record 2", "selected"]),
        ("answers-wrong-type", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{a_type.jsonl}"],
         ["a_type.jsonl", "record 2", "selected"]),
        ("answers-bad-seed", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{a_seed.jsonl}"],
         ["a_seed.jsonl", "record 2", "seed"]),
        ("answers-of-other-questions", ["mcq", "score", "--questions", "{q.jsonl}", "--answers",
                                        "{a_other.jsonl}"], ["a_other.jsonl", "none of its"]),
        ("questions-correct-range", ["mcq", "stats", "{q_correct.jsonl}"],
         ["q_correct.jsonl", "record 2", "correct"]),
        ("questions-inverted-box", ["mcq", "stats", "{q_inverted.jsonl}"],
         ["q_inverted.jsonl", "record 2", "person_box", "inverted"]),
        ("predictions-as-questions", ["mcq", "score", "--questions", "{pred.json}", "--answers", "{ans.jsonl}"],
         ["pred.json", "neither question JSONL"]),
        # class lists and result files
        ("classes-out-of-range", [*ev, "{pred.json}", "--classes", "{ids_oor.json}"],
         ["ids_oor.json", "record 1", "100000"]),
        ("classes-out-of-range-analyze", ["analyze", "class-ap", "{result.json}", "--classes", "{ids_oor.json}"],
         ["ids_oor.json", "record 1", "0..599"]),
        ("classes-empty", ["analyze", "class-ap", "{result.json}", "--classes", "{ids_empty.json}"],
         ["ids_empty.json", "no class ids"]),
        ("predictions-as-results", ["analyze", "class-ap", "{pred.json}"], ["pred.json", "kind"]),
        # contradictory or ineffective options
        ("image-labels-without-known-object", [*ev, "{pred.json}", "--image-labels", "{ids_empty.json}"],
         ["--image-labels", "--known-object"]),
        ("preset-other-dataset", ["split", "sg", "--preset", "hico-det-sg1", "--dataset", str(VCOCO),
                                  "--out", "{dir}/sg2"], ["hico-det-sg1", "v-coco"]),
        ("zero-shot-size-without-zero-shot", ["split", "balanced", "--dataset", "{gt}", "--top-k", "5",
                                              "--l-zero-shot", "3", "--out", "{dir}/b2"], ["l_zero_shot"]),
        ("max-per-class-without-redistribution", ["mcq", "build", "--dataset", "{gt}", "--no-redistribute",
                                                  "--max-per-class", "5", "--out", "{dir}/o.jsonl"],
         ["--max-per-class", "--no-redistribute"]),
        ("judge-url-without-judge", ["mcq", "build", "--dataset", "{gt}", "--judge-base-url", "http://x",
                                     "--out", "{dir}/o.jsonl"], ["--judge-base-url", "without --judge"]),
        ("seed-without-bootstrap", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{ans.jsonl}",
                                    "--seed", "3"], ["--seed", "without --bootstrap"]),
        ("thresholds-with-all-point", ["analyze", "sensitivity", "--predictions", "{pred.json}", "--dataset",
                                       "{gt}", "--ap-method", "all_point", "--thresholds", "arange"],
         ["--thresholds", "all_point"]),
        ("sg-split-typo", ["split", "sg", "--dataset", "hico-det:tset", "--seed", "0", "--out", "{dir}/sg3"],
         ["hico-det has splits"]),
        ("model-without-json", [*ev, "{pred.json}", "--model", "m"], ["--model", "without --json"]),
        ("ci-without-bootstrap", [*ev, "{pred.json}", "--ci", "90"], ["--ci", "without --bootstrap"]),
        ("per-class-without-json", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{ans.jsonl}",
                                    "--per-class"], ["--per-class", "without --json"]),
        ("plot-suffix", ["mcq", "stats", "{q.jsonl}", "--plot", "{dir}/plot.xyz"], ["plot.xyz", ".png"]),
        ("validate-missing", ["data", "validate", "{dir}/nope.json"], ["nope.json", "no such file"]),
        ("negative-limit", ["data", "validate", "{gt}", "--limit", "-1"], ["--limit"]),
        # issue 13: a FIFO (a reader would hang), a device, a folder, a symlink loop or a dangling
        # link as input to every command that reads files
        *[(f"fifo-{name}", argv, ["fifo.json", "FIFO"]) for name, argv in _readers("{fifo.json}")],
        *[(f"device-{name}", argv, ["/dev/zero", "device"]) for name, argv in _readers("/dev/zero")[:6]],
        ("folder-as-predictions", [*ev, "{dir}"], ["is a directory"]),
        ("folder-as-answers", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{dir}"], ["directory"]),
        ("symlink-loop", ["data", "info", "{loop.json}"], ["loop.json"]),
        ("symlink-dangling", [*ev, "{dangling.json}"], ["dangling.json", "does not exist"]),
        # strings for numbers, contradictory redundant fields, huge ids, bytes that are not UTF-8
        ("pred-box-string", [*ev, "{pred_box_str.json}"], ["pred_box_str.json", "record 0", "boxes_h[0]", "'3'"]),
        ("gt-id-string", ["data", "info", "{ppdm_str_id.json}"], ["ppdm_str_id.json", "subject_id", "'0'"]),
        ("pred-huge-id", [*ev, "{pred_huge_id.json}"], ["pred_huge_id.json", "objects[0]", "integer id"]),
        ("gt-huge-id", ["data", "stats", "{ppdm_huge_id.json}"], ["ppdm_huge_id.json", "category_id"]),
        ("classes-huge-id", [*ev, "{pred.json}", "--classes", "{ids_huge.json}"], ["ids_huge.json"]),
        ("pred-hoi-contradicts", [*ev, "{pred_hoi_contra.json}"], ["pred_hoi_contra.json", "hoi[0]", "disagrees"]),
        ("gt-hoi-contradicts", ["split", "balanced", "--dataset", "{ppdm_hoi_contra.json}", "--out", "{dir}/b9"],
         ["ppdm_hoi_contra.json", "hoi_category_id", "contradicts"]),
        ("pred-unknown-version", [*ev, "{pred_version.json}"], ["pred_version.json", "version 7"]),
        ("gt-not-utf8", ["data", "info", "{latin1.json}"], ["latin1.json", "not valid JSON"]),
        ("pred-not-utf8", [*ev, "{latin1.json}"], ["latin1.json"]),
        ("answers-not-utf8", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", "{latin1.jsonl}"],
         ["latin1.jsonl"]),
        ("questions-not-utf8", ["mcq", "stats", "{latin1.jsonl}"], ["latin1.jsonl"]),
        ("analyze-answers-of-other-questions", ["mcq", "analyze", "--questions", "{q.jsonl}", "--answers",
                                                "{a_other.jsonl}", "--dataset", "{gt}"], ["a_other.jsonl", "none of its"]),
        # outputs that cannot be written
        ("json-under-a-file", [*ev, "{pred.json}", "--json", "{not_a_dir}/r.json"],
         ["r.json", "not_a_dir is a file"]),
        ("answers-under-a-file", ["mcq", "from-detections", "--questions", "{q.jsonl}", "--predictions",
                                  "{pred.json}", "--out", "{not_a_dir}/a.jsonl"], ["not_a_dir is a file"]),
        ("split-dir-under-a-file", ["split", "sg", "--dataset", "{gt}", "--seed", "0", "--out",
                                    "{not_a_dir}/sg"], ["not_a_dir is a file"]),
        ("convert-under-a-file", ["data", "convert", "{gt}", "{not_a_dir}/x/c.json", "--to", "ppdm"],
         ["not_a_dir is a file"]),
        # JSON nested too deeply: one line from every reader, never an internal RecursionError
        *[(f"deep-{name}", argv, ["deep.json"]) for name, argv in _readers("{deep.json}") if name != "data-validate"],
        ("deep-value-in-predictions", [*ev, "{pred_deep.json}"], ["pred_deep.json", "nested too deeply"]),
        ("deep-value-in-questions", ["mcq", "stats", "{q_deep.jsonl}"], ["q_deep.jsonl", "nested too deeply"]),
        # a gigabyte of NUL bytes: refused from its first bytes
        *[(f"zeros-{name}", argv, ["zeros.json", "'\\x00'"]) for name, argv in _readers("{zeros.json}")[:8]
          if name != "data-validate"],
        # silent results before: an empty annotation list, a class outside the vocabulary, strings for numbers
        ("gt-empty-list", ["data", "info", "{ids_empty.json}"], ["ids_empty.json", "holds no images"]),
        ("gt-empty-list-eval", ["eval", "hico", "--gt", "{ids_empty.json}", "--pred", "{pred.json}"],
         ["ids_empty.json", "holds no images"]),
        *[(f"questions-hoi-999-{name}", argv, ["q_hoi.jsonl", "choices[0].hoi", "999"]) for name, argv in (
            ("stats", ["mcq", "stats", "{q_hoi.jsonl}"]),
            ("score", ["mcq", "score", "--questions", "{q_hoi.jsonl}", "--answers", "{ans.jsonl}"]),
            ("from-detections", ["mcq", "from-detections", "--questions", "{q_hoi.jsonl}", "--predictions",
                                 "{pred.json}", "--out", "{dir}/a8.jsonl"]))],
        ("vcoco-box-string", ["eval", "vcoco", "--gt", str(VCOCO), "--pred", "{vdet_box_str.json}"],
         ["vdet_box_str.json", "record 0", "person_boxes", "'0'"]),
    ]


def _readers(path: str) -> list[tuple[str, list[str]]]:
    """Every command that reads a file given by the user, with ``path`` as that file."""
    ev = ["eval", "hico", "--gt", "{gt}", "--pred"]
    return [
        ("data-info", ["data", "info", path]),
        ("data-validate", ["data", "validate", path]),
        ("eval-hico-gt", ["eval", "hico", "--gt", path, "--pred", "{pred.json}"]),
        ("eval-hico-pred", [*ev, path]),
        ("mcq-score-answers", ["mcq", "score", "--questions", "{q.jsonl}", "--answers", path]),
        ("mcq-stats", ["mcq", "stats", path]),
        ("eval-vcoco-pred", ["eval", "vcoco", "--gt", str(VCOCO), "--pred", path]),
        ("eval-hico-classes", [*ev, "{pred.json}", "--classes", path]),
        ("data-stats", ["data", "stats", path]),
        ("data-convert", ["data", "convert", path, "{dir}/c2.json", "--to", "ppdm"]),
        ("split-audit", ["split", "audit", path, "{gt}"]),
        ("split-sg", ["split", "sg", "--dataset", path, "--seed", "0", "--out", "{dir}/sg9"]),
        ("split-balanced", ["split", "balanced", "--dataset", path, "--out", "{dir}/b8"]),
        ("split-zero-shot", ["split", "zero-shot", "--protocol", path, "--out", "{dir}/z9"]),
        ("mcq-score-questions", ["mcq", "score", "--questions", path, "--answers", "{ans.jsonl}"]),
        ("mcq-analyze", ["mcq", "analyze", "--questions", "{q.jsonl}", "--answers", path, "--dataset", "{gt}"]),
        ("mcq-from-detections", ["mcq", "from-detections", "--questions", "{q.jsonl}", "--predictions", path,
                                 "--out", "{dir}/a9.jsonl"]),
        ("mcq-build", ["mcq", "build", "--dataset", path, "--out", "{dir}/o9.jsonl"]),
        ("analyze-class-ap", ["analyze", "class-ap", path]),
        ("report", ["report", path, "--out", "{dir}/rep9"]),
    ]


CASES = _cases()


@pytest.mark.parametrize(("argv", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line(files: dict[str, Path], argv: list[str], expected: list[str]) -> None:
    args = []
    for a in argv:
        for key, path in files.items():
            a = a.replace("{" + key + "}", str(path))
        assert "{" not in a, a
        args.append(a)
    r = subprocess.run([sys.executable, "-m", "hoibench", *args], capture_output=True, text=True,
                       timeout=300, cwd=files["dir"])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode != 0, f"exit 0 on bad input; stdout: {r.stdout[-500:]}"
    assert "Traceback" not in r.stderr
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "internal error" not in lines[0]
    for part in expected:
        assert part in lines[0], f"{part!r} not in {lines[0]!r}"


def test_the_valid_inputs_pass(files: dict[str, Path]) -> None:
    """The defects, not the base files, make the cases above fail."""
    for argv in (["eval", "hico", "--gt", str(GT), "--pred", str(files["pred.json"])],
                 ["mcq", "score", "--questions", str(files["q.jsonl"]), "--answers", str(files["ans.jsonl"])],
                 ["analyze", "class-ap", str(files["result.json"])]):
        r = subprocess.run([sys.executable, "-m", "hoibench", *argv], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr


def test_answer_writer_restarts_a_file_holding_only_a_truncated_header(tmp_path: Path) -> None:
    from hoibench.formats import AnswerWriter, read_answers

    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"header": {"mod')
    with AnswerWriter(path, header={"model": "m"}) as w:
        w.write(MCAnswer("q1", frozenset({"ride horse"}), "ride horse", "ok", {}))
    got = read_answers(path)
    assert got.header == {"model": "m"}
    assert [a.question_id for a in got] == ["q1"]


def test_read_class_list_layouts(tmp_path: Path) -> None:
    from hoibench.formats import read_class_list

    (tmp_path / "a.json").write_text("[5, 3, 5]")
    (tmp_path / "b.txt").write_text("7  # ride bicycle\n\n2\n")
    (tmp_path / "c.json").write_text(json.dumps({"kind": "balanced_classes", "classes": [{"hoi": 9}, {"hoi": 1}]}))
    assert read_class_list(tmp_path / "a.json", n_classes=600).tolist() == [3, 5]
    assert read_class_list(tmp_path / "b.txt", n_classes=600).tolist() == [2, 7]
    assert read_class_list(tmp_path / "c.json").tolist() == [1, 9]
