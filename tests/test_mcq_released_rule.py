"""``mcq from-detections``: the released script's top-k rule and its prediction files.

Two references:

- hand-computed answers on tiny cases with score ties, repeated texts, an IoU of exactly 0.5,
  a single-precision tie, a question without a correct choice and SWiG-HOI's ``QA_k`` (always run);
- ``script_eval_32B_newbench_HOI.py`` itself (ChelsieLei/CrossHOI-Bench, ``$HOIBENCH_CROSSHOI_SRC``,
  default ``/tmp/crosshoi-src``; skipped when absent, as in ``test_mcq_crosshoi.py``), run unchanged
  on question and prediction files generated here; its metric block's numbers (the released
  functions on the picks it saves) must equal ``mcq score --protocol crosshoi`` of hoibench's
  answers to 1e-9. It runs in a child process (it needs torch; skipped without); its imports of
  transformers and qwen_vl_utils (unused by the HOI path) get empty stand-ins, and torchvision's
  ``box_iou`` a stand-in with torchvision's formula when torchvision is not installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from hoibench import FormatError
from hoibench.benchmarks.mcq import answers_from_detections, answers_released_rule, text_detections
from hoibench.cli import cli
from hoibench.data import HOIPredictions, reference_class_keys
from hoibench.evaluation import MCQ_METRIC_NAMES
from hoibench.formats import read_questions
from hoibench.formats.crosshoi_predictions import read_released_hoi
from hoibench.vocab import hico_det
from tests.test_mcq_crosshoi import SRC, _released, _released_scores

TOL = 1e-9
PERSON = [11.0, 11.0, 111.0, 211.0]  # 1-based, as in the released HICO-DET files
HALF = [11.0, 11.0, 111.0, 111.0]  # IoU with PERSON exactly 0.5
FAR = [300.0, 300.0, 400.0, 400.0]
OBJ = [201.0, 201.0, 301.0, 301.0]
CUP = {"gt_choices": ["hold a/an cup"],
       "wrong_choices": ["drink_with a/an cup", "carry a/an cup", "wash a/an cup"]}
#: (human box, object box, score, text) of image A
DETS_A = [
    (PERSON, OBJ, 0.9, "hold a/an cup"),
    (PERSON, OBJ, 0.8, "hold a/an cup"),  # a repeat
    (FAR, OBJ, 0.85, "carry a/an cup"),  # not the target, but counts for the threshold
    ([12.0, 12.0, 110.0, 210.0], OBJ, 0.7, "drink_with a/an cup"),  # ties at the 5th best score
    (PERSON, FAR, 0.7, "wash a/an cup"),
    (PERSON, OBJ, 0.7, "ride a/an horse"),  # not a choice
    (PERSON, OBJ, 0.6, "carry a/an cup"),  # below the threshold
    (HALF, OBJ, 0.95, "carry a/an cup"),  # IoU 0.5: the released rule needs more
]


def _released_file(dets: dict[str, list[tuple[Any, ...]]]) -> dict[str, dict[str, list[Any]]]:
    return {f: {"h_boxes": [d[0] for d in ds], "o_boxes": [d[1] for d in ds], "ho_scores": [d[2] for d in ds],
                "ao_names": [d[3] for d in ds]} for f, ds in dets.items()}


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def _picks(answers: list[Any]) -> dict[str, list[str]]:
    return {a.question_id: list(a.selections) for a in answers}


def _hico_questions(tmp: Path, boxes: dict[str, Any], name: str = "q.json") -> list[Any]:
    qa = dict(CUP, boxes=boxes) if boxes else dict(CUP)
    return read_questions(_write(tmp / name, {"A.jpg": qa, "B.jpg": qa, "C.jpg": qa}))


# ----------------------------------------------------------------------------- hand-computed (always)

@pytest.mark.parametrize("boxes,expected_a", [
    # setting 2, person box: 5th best of all 8 scores is 0.7; matched and >= 0.7: 0, 1, 3, 4
    ({"human": PERSON}, ["drink_with a/an cup", "hold a/an cup", "hold a/an cup", "wash a/an cup"]),
    # human and object box: 4's object is elsewhere
    ({"human": PERSON, "object": OBJ}, ["drink_with a/an cup", "hold a/an cup", "hold a/an cup"]),
    # setting 1: every triplet at or above 0.7 whose text is a choice
    ({}, ["carry a/an cup", "carry a/an cup", "drink_with a/an cup", "hold a/an cup", "hold a/an cup",
          "wash a/an cup"]),
], ids=["person", "person-object", "none"])
def test_released_rule_by_hand(tmp_path: Path, boxes: dict[str, Any], expected_a: list[str]) -> None:
    qs = _hico_questions(tmp_path, boxes)
    det = read_released_hoi(_write(tmp_path / "p.json", _released_file({"A.jpg": DETS_A, "B.jpg": []})),
                            dataset="hico-det")
    answers = answers_released_rule(qs, det)
    # B has an empty entry, C none: both empty answers
    assert _picks(answers) == {"A.jpg": expected_a, "B.jpg": [], "C.jpg": []}


def test_paper_rule_differs_on_the_same_detections(tmp_path: Path) -> None:
    """The paper rule: 5 distinct classes among the person's triplets (IoU >= 0.5 takes the 0.95
    carry); each text once."""
    qs = _hico_questions(tmp_path, {"human": PERSON})
    det = read_released_hoi(_write(tmp_path / "p.json", _released_file({"A.jpg": DETS_A})), dataset="hico-det")
    preds = _predictions(det)
    paper = answers_from_detections(qs, preds)
    assert paper[0].selected == {"carry a/an cup", "drink_with a/an cup", "hold a/an cup", "wash a/an cup"}
    released = answers_released_rule(qs, text_detections(preds))  # by class: the same picks as by text
    assert _picks(released)["A.jpg"] == ["drink_with a/an cup", "hold a/an cup", "hold a/an cup", "wash a/an cup"]


def _predictions(det: dict[str, Any]) -> HOIPredictions:
    """The same triplets as hoibench predictions of HICO-DET classes."""
    v = hico_det()
    names, counts, bh, bo, objs, verbs, scores = [], [], [], [], [], [], []
    for f, d in det.items():
        names.append(f)
        counts.append(len(d))
        bh.append(d.boxes_h)
        bo.append(d.boxes_o)
        scores.append(d.scores)
        for t in d.texts:
            verb, obj = t.split(" a/an ")
            verbs.append(v.verb_index(verb))
            objs.append(v.object_index(obj))
    return HOIPredictions.from_arrays(v, names, counts, np.concatenate(bh), np.concatenate(bo),
                                      np.asarray(objs), np.asarray(verbs), np.concatenate(scores))


def test_scores_tie_in_single_precision(tmp_path: Path) -> None:
    """0.1 + 0.2 and 0.3 differ in double precision, not in the script's float32: top-1 keeps both."""
    qs = _hico_questions(tmp_path, {"human": PERSON})
    dets = {"A.jpg": [(PERSON, OBJ, 0.1 + 0.2, "hold a/an cup"), (PERSON, OBJ, 0.3, "wash a/an cup")]}
    det = read_released_hoi(_write(tmp_path / "p.json", _released_file(dets)), dataset="hico-det")
    assert _picks(answers_released_rule(qs, det, top_k=1))["A.jpg"] == ["hold a/an cup", "wash a/an cup"]


def test_no_correct_choice_matches_nothing_with_an_object_box(tmp_path: Path) -> None:
    """The script checks objects against the first correct choice's; without one nothing matches."""
    qa = {"gt_choices": [], "wrong_choices": CUP["wrong_choices"], "boxes": {"human": PERSON, "object": OBJ}}
    qs = read_questions(_write(tmp_path / "q.json", {"A.jpg": qa}))
    det = read_released_hoi(_write(tmp_path / "p.json", _released_file({"A.jpg": DETS_A})), dataset="hico-det")
    (a,) = answers_released_rule(qs, det)
    assert not a.selected and a.status == "no_person_match"


def test_swig_first_word_and_the_first_questions_choices(tmp_path: Path) -> None:
    """SWiG-HOI triplets are named by their first word, and every question of an image is checked
    against the choices of its QA_0 (the script's)."""
    box2 = [400.0, 10.0, 500.0, 210.0]
    q = {"adjusting_1.jpg": {
        "QA_0": {"gt_choices": ["adjusting"], "wrong_choices": ["tuning", "tying", "squeezing"],
                 "boxes": {"human": [10, 10, 110, 210]}},
        "QA_1": {"gt_choices": ["pulling"], "wrong_choices": ["tuning", "pushing", "carrying"],
                 "boxes": {"human": box2}}}}
    qs = read_questions(_write(tmp_path / "q.json", q))
    dets = {"adjusting_1.jpg": [([10, 10, 110, 210], OBJ, 0.9, "adjusting a/an guitar"),
                                (box2, OBJ, 0.8, "pulling a/an rope"),  # QA_1's answer, not a QA_0 choice
                                (box2, OBJ, 0.7, "tuning a/an guitar")]}
    det = read_released_hoi(_write(tmp_path / "p.json", _released_file(dets)), dataset="swig-hoi")
    assert _picks(answers_released_rule(qs, det)) == {"adjusting_1.jpg#QA_0": ["adjusting"],
                                                      "adjusting_1.jpg#QA_1": ["tuning"]}


# ----------------------------------------------------------------------------- the prediction files

def test_released_file_frames(tmp_path: Path) -> None:
    """HICO-DET boxes are 1-based like its question boxes (shifted by -1), the others 0-based."""
    data = _released_file({"A.jpg": [(PERSON, OBJ, 0.5, "hold a/an cup")]})
    hico = read_released_hoi(_write(tmp_path / "p.json", data), dataset="hico-det")["A.jpg"]
    assert hico.boxes_h.tolist() == [[10.0, 10.0, 110.0, 210.0]] and hico.boxes_o.tolist() == [[200.0] * 2 + [300.0] * 2]
    assert read_released_hoi(tmp_path / "p.json", dataset="v-coco")["A.jpg"].boxes_h.tolist() == [PERSON]
    shifted = read_released_hoi(tmp_path / "p.json", dataset="hico-det", box_shift=2.0)["A.jpg"]
    assert shifted.boxes_h.tolist() == [[12.0, 12.0, 112.0, 212.0]]
    # the question's person box (1-based too) lands on the same pixels
    qs = _hico_questions(tmp_path, {"human": PERSON})
    assert qs[0].person_box == tuple(hico.boxes_h[0])


@pytest.mark.parametrize("entry,message", [
    ({"h_boxes": [PERSON], "o_boxes": [OBJ], "ho_scores": [0.5]}, "A.jpg: missing ao_names"),
    ({"h_boxes": [PERSON], "o_boxes": [], "ho_scores": [0.5], "ao_names": ["x"]}, "o_boxes: 0 entries, but ao_names has 1"),
    ({"h_boxes": [[1, 2, 3]], "o_boxes": [OBJ], "ho_scores": [0.5], "ao_names": ["x"]}, "h_boxes[0]: expected a box"),
    ({"h_boxes": [[5, 5, 1, 1]], "o_boxes": [OBJ], "ho_scores": [0.5], "ao_names": ["x"]}, "h_boxes[0]: inverted box"),
    ({"h_boxes": [PERSON], "o_boxes": [OBJ], "ho_scores": ["high"], "ao_names": ["x"]}, "ho_scores[0]: expected a finite"),
    ({"h_boxes": [PERSON], "o_boxes": [OBJ], "ho_scores": [0.5], "ao_names": [3]}, "ao_names[0]: expected a string"),
])
def test_bad_released_file_names_record_and_field(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    path = _write(tmp_path / "p.json", {"A.jpg": entry})
    with pytest.raises(FormatError, match=re.escape(message)) as e:
        read_released_hoi(path, dataset="hico-det")
    assert "p.json" in str(e.value)


def test_cli_reads_released_files_with_the_released_rule_by_default(tmp_path: Path) -> None:
    q = _write(tmp_path / "q.json", {"A.jpg": dict(CUP, boxes={"human": PERSON})})
    p = _write(tmp_path / "p.json", _released_file({"A.jpg": DETS_A}))
    out = tmp_path / "a.jsonl"
    r = CliRunner().invoke(cli, ["mcq", "from-detections", "--questions", str(q), "--predictions", str(p),
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["header"]["rule"] == "released"
    assert sorted(lines[1]["selected"]) == ["drink_with a/an cup", "hold a/an cup", "hold a/an cup", "wash a/an cup"]
    r = CliRunner().invoke(cli, ["mcq", "from-detections", "--questions", str(q), "--predictions", str(p),
                                 "--rule", "paper", "--out", str(out)])
    assert r.exit_code != 0 and "use --rule released" in r.output


# ----------------------------------------------------------------------------- the released script itself

def _generate(rng: np.random.Generator, n_images: int, swig: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Question entries (person and object boxes) and released prediction entries with score ties
    (a coarse grid, 0.1 + 0.2 next to 0.3), repeated texts, targets, bystanders and empty images."""
    if swig:
        verbs = sorted(a for a, _ in reference_class_keys("swig-hoi") or ())
        objects = ["guitar", "rope", "person"]
    else:
        v = hico_det()
        by_obj: dict[str, list[str]] = {}
        for vi, oi in v.hoi_verb_object.tolist():
            by_obj.setdefault(v.objects[oi], []).append(f"{v.verbs[vi]} a/an {v.objects[oi]}")
        objects = sorted(o for o, ts in by_obj.items() if len(ts) >= 5)
    grid = [round(0.05 * i, 2) for i in range(1, 20)] + [0.1 + 0.2, 0.3, 0.3]
    questions: dict[str, Any] = {}
    preds: dict[str, Any] = {}
    for i in range(n_images):
        name = f"{'swig' if swig else 'HICO_test2015'}_{i:08d}.jpg"
        n_qa = int(rng.integers(1, 3)) if swig else 1
        qas, dets = {}, []
        for k in range(n_qa):
            x, y = (int(c) for c in rng.integers(1, 300, size=2))
            w, h = (int(c) for c in rng.integers(40, 200, size=2))
            person = [x, y, x + w, y + h]
            ox, oy = (int(c) for c in rng.integers(1, 300, size=2))
            obj_box = [ox, oy, ox + 80, oy + 60]
            obj = str(rng.choice(objects))
            pool = (list(rng.choice(verbs, size=6, replace=False)) if swig
                    else list(rng.choice(by_obj[obj], size=5, replace=False)))
            n_gt = int(rng.integers(0, 3))
            qas[f"QA_{k}"] = {"gt_choices": pool[:n_gt], "wrong_choices": pool[n_gt:4],
                              "boxes": {"human": person, "object": obj_box}}
            for _ in range(int(rng.integers(0, 9))):
                u = rng.random()
                hb = ([c + int(rng.integers(-3, 4)) for c in person] if u < 0.6
                      else [x, y, x + w, y + h // 2] if u < 0.7 else [c + 150 for c in person])  # IoU 0.5, far
                for j in (2, 3):
                    hb[j] = max(hb[j], hb[j - 2] + 1)
                ob = [c + int(rng.integers(-3, 4)) for c in obj_box] if rng.random() < 0.8 else [c + 90 for c in obj_box]
                for j in (2, 3):
                    ob[j] = max(ob[j], ob[j - 2] + 1)
                text = str(rng.choice(pool))
                dets.append((hb, ob, float(rng.choice(grid)), f"{text} a/an {obj}" if swig else text))
                if rng.random() < 0.25:
                    dets.append((hb, ob, float(rng.choice(grid)), dets[-1][3]))  # the same text again
        questions[name] = qas if swig else qas["QA_0"]
        if swig:
            for qa in qas.values():
                qa["boxes"]["object_class"] = "person"
        preds[name] = _released_file({name: dets})[name]
    return questions, preds


#: runs the released script in a child process (torch stays out of the test process: its memory
#: would count in the peak of every child forked later); argv: the source folder, the arguments
RUNNER = r"""
import argparse, importlib.util, json, sys, types
src, args = sys.argv[1], json.loads(sys.argv[2])
for name, attrs in {"transformers": ("Qwen2_5_VLForConditionalGeneration", "AutoProcessor", "BitsAndBytesConfig"),
                    "qwen_vl_utils": ("process_vision_info",)}.items():
    module = types.ModuleType(name)  # always: the HOI path never uses them
    for a in attrs:
        setattr(module, a, None)
    sys.modules[name] = module
if importlib.util.find_spec("torchvision") is None:
    import torch

    def box_iou(a, b):  # torchvision.ops.box_iou's formula
        area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
        area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        lt = torch.max(a[:, None, :2], b[:, :2])
        rb = torch.min(a[:, None, 2:], b[:, 2:])
        wh = (rb - lt).clamp(min=0)
        inter = wh[..., 0] * wh[..., 1]
        return inter / (area_a[:, None] + area_b - inter)

    for name in ("torchvision", "torchvision.ops", "torchvision.ops.boxes"):
        module = types.ModuleType(name)
        module.box_iou, module.batched_nms = box_iou, None
        sys.modules[name] = module
sys.path.insert(0, src)
import script_eval_32B_newbench_HOI

script_eval_32B_newbench_HOI.main(argparse.Namespace(**args))
"""


def _run_script(tmp: Path, **args: Any) -> str:
    """The released script's ``main`` on ``args``, run in ``tmp``; what it printed."""
    _released()  # skips when the copy is absent
    if importlib.util.find_spec("torch") is None:
        pytest.skip("the released script needs torch")
    r = subprocess.run([sys.executable, "-c", RUNNER, str(SRC), json.dumps(args)], cwd=tmp, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


#: the script's --prompt_box_type -> (folder, question file name, --dataset)
SCRIPT_FILES = {
    ("hicodet", "none"): ("hicodet", "crosshoi_bench_allscene_final.json"),
    ("hicodet", "person"): ("hicodet", "crosshoi_bench_hum_box_final.json"),
    ("hicodet", "all"): ("hicodet", "crosshoi_bench_hum_obj_box_final.json"),
    ("swig", "person"): ("swighoi", "swighoi_newbench_person.json"),
    ("swig", "all"): ("swighoi", "swighoi_newbench_ho.json"),
}


@pytest.mark.parametrize("dataset,box_type", sorted(SCRIPT_FILES), ids=[f"{d}-{b}" for d, b in sorted(SCRIPT_FILES)])
def test_released_rule_equals_the_released_script(tmp_path: Path, dataset: str, box_type: str) -> None:
    """By hand, against the fetched repository: ``--rule released`` answers scored with
    ``--protocol crosshoi`` equal the script's metrics (the released functions on the picks it
    saves) to 1e-9, and its printed four-decimal numbers; the picks are the same lists."""
    folder, file_name = SCRIPT_FILES[(dataset, box_type)]
    questions, preds = _generate(np.random.default_rng(7 + len(box_type)), 60, dataset == "swig")
    if box_type == "none":
        questions = {f: {k: v for k, v in qa.items() if k != "boxes"} for f, qa in questions.items()}
    elif box_type == "person":
        questions = {f: ({k: v for k, v in qa.items() if k != "boxes"} | {"boxes": {"human": qa["boxes"]["human"]}}
                         if "QA_0" not in qa else
                         {qk: {k: v for k, v in q.items() if k != "boxes"} | {"boxes": {"human": q["boxes"]["human"]}}
                          for qk, q in qa.items()})
                     for f, qa in questions.items()}
    qdir = tmp_path / folder / "our_test"
    qdir.mkdir(parents=True)
    qfile = _write(qdir / file_name, questions)
    pfile = _write(tmp_path / "method.json", preds)
    printed = _run_script(tmp_path, image_folder=str(tmp_path), dataset=dataset, hoi_pred_json_file=str(pfile),
                          output=str(tmp_path / "out"), prompt_box_type=box_type, pred_thres=5.0, save_pred=True,
                          pred_select="question_rank", num_hoi_cls=600)
    (saved,) = (tmp_path / "out").glob("*_hoi_eval_5.0.json")
    theirs_picks = json.loads(saved.read_text())
    theirs = _released_scores(_released(), questions, theirs_picks, dataset)

    ans = tmp_path / "a.jsonl"
    r = CliRunner().invoke(cli, ["mcq", "from-detections", "--questions", str(qfile), "--predictions", str(pfile),
                                 "--out", str(ans)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["mcq", "score", "--questions", str(qfile), "--answers", str(ans),
                                 "--protocol", "crosshoi", "--json", str(tmp_path / "s.json")],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    record = json.loads((tmp_path / "s.json").read_text())
    ours = {k: record[k] for k in MCQ_METRIC_NAMES}
    diff = {k: abs(ours[k] - theirs[k]) for k in MCQ_METRIC_NAMES}
    assert max(diff.values()) <= TOL, diff
    assert f"Instance F1: {ours['instance_f1']:.4f}" in printed
    assert f"Micro F1 Score: {ours['micro_f1']:.4f}" in printed
    assert f"Macro F1: {ours['macro_f1']:.4f}" in printed

    ours_picks = {json.loads(x)["question_id"]: sorted(json.loads(x)["selected"])
                  for x in ans.read_text().splitlines()[1:]}
    flat = {f if len(v) == 1 else f"{f}#{qk}": sorted(p) for f, v in theirs_picks.items() for qk, p in v.items()}
    assert ours_picks == flat
    # the data exercise what they should: repeats, ties at the threshold, several picks
    assert any(len(set(p)) < len(p) for p in flat.values())


def _frame_case(tmp: Path, offset: float) -> tuple[Path, Path]:
    """150 target people and a detector that finds them (sub-pixel noise), written ``offset``
    pixels off the released HICO-DET frame."""
    rng = np.random.default_rng(3)
    questions, dets = {}, {}
    for i in range(150):
        x, y = rng.integers(1, 300, size=2).tolist()
        w, h = rng.integers(20, 200, size=2).tolist()
        person = [x, y, x + w, y + h]
        name = f"HICO_test2015_{i:08d}.jpg"
        questions[name] = dict(CUP, boxes={"human": person})
        box = [float(c + offset + rng.normal(0, 0.2)) for c in person]
        dets[name] = [(box, OBJ, 0.9, "hold a/an cup"), ([c + 150.0 for c in box], OBJ, 0.5, "wash a/an cup")]
    return _write(tmp / "q.json", questions), _write(tmp / "p.json", _released_file(dets))


@pytest.mark.parametrize("offset,extra,warned", [(0.0, [], False), (-1.0, [], True), (-1.0, ["--box-shift", "1"], False)],
                         ids=["released-frame", "0-based", "0-based-shifted-back"])
def test_a_file_one_pixel_off_is_named(tmp_path: Path, offset: float, extra: list[str], warned: bool) -> None:
    """A released HICO-DET file written 0-based (one pixel off its question boxes) gets one warning
    with the --box-shift that fits; read in its frame, or shifted back, none."""
    q, p = _frame_case(tmp_path, offset)
    r = CliRunner().invoke(cli, ["mcq", "from-detections", "--questions", str(q), "--predictions", str(p),
                                 "--out", str(tmp_path / "a.jsonl"), *extra])
    assert r.exit_code == 0, r.output
    assert ("better shifted by +1 pixel" in r.output and "--box-shift 1 sets it" in r.output) == warned, r.output
