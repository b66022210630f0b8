"""The ``crosshoi`` scoring protocol against the released CrossHOI-Bench evaluation.

Three references, from weakest to strongest:

- a plain re-implementation of the script's counting, written here line by line from
  ``newbench_question_func.py`` (``mllm_instancef1_eval``, ``mllm_macrof1_eval``) and the metric
  block of ``script_eval_32B_newbench_fullqwen.py``; always runs (synthetic questions) and on the
  nine released question files when ``../shared/data/crosshoi-bench`` is there;
- the released functions themselves, imported unchanged from a copy of the repository
  (``$HOIBENCH_CROSSHOI_SRC``, default ``/tmp/crosshoi-src``; skipped when absent): the class
  tables and the scores of all nine files. The repository has no licence, so nothing of it is
  vendored; its modules import torch/torchvision for functions these tests do not call, and are
  always given empty stand-ins for those;
- pinned sizes and hashes of hoibench's class tables (always), recorded from the released tables.

The replies follow the script's presentation (``gt_choices + wrong_choices`` shuffled, padded with
``"None"`` to four, one letter per listed text): picking both letters of a text listed twice,
or naming a letter twice, picks that text twice.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hoibench import ConfigError, ValidationError
from hoibench.data import MCAnswer, MCQuestion, reference_class_keys
from hoibench.evaluation import MCQ_METRIC_NAMES, MCQResult, mcq_metrics
from hoibench.formats import read_answers, read_questions
from tests.conftest import shared_file

SRC = Path(os.environ.get("HOIBENCH_CROSSHOI_SRC", "/tmp/crosshoi-src"))
#: (folder, file, the script's --dataset, hoibench's label space)
FILES = [
    ("hicodet", "crosshoi_bench_allscene_final.json", "hicodet", "hico-det"),
    ("hicodet", "crosshoi_bench_hum_box_final.json", "hicodet", "hico-det"),
    ("hicodet", "crosshoi_bench_hum_obj_box_final.json", "hicodet", "hico-det"),
    ("vcoco", "vcoco_newbench_none.json", "vcoco", "v-coco"),
    ("vcoco", "vcoco_newbench_person.json", "vcoco", "v-coco"),
    ("vcoco", "vcoco_newbench_ho.json", "vcoco", "v-coco"),
    ("swighoi", "swighoi_newbench_none.json", "swig", "swig-hoi"),
    ("swighoi", "swighoi_newbench_person.json", "swig", "swig-hoi"),
    ("swighoi", "swighoi_newbench_ho.json", "swig", "swig-hoi"),
]
FILE_IDS = [f[1].removesuffix(".json") for f in FILES]
SPACE_OF = {"hicodet": "hico-det", "vcoco": "v-coco", "swig": "swig-hoi"}
TOL = 1e-12


# ----------------------------------------------------------------------------- the released code

def _released() -> types.SimpleNamespace:
    """The released modules, imported unchanged (skips when the copy is absent)."""
    if not (SRC / "newbench_question_func.py").exists():
        pytest.skip(f"released CrossHOI-Bench code not available: {SRC} (set HOIBENCH_CROSSHOI_SRC)")
    # only the box helpers use torch/torchvision; the scoring functions never do. Stand-ins even
    # where torch is installed: importing it would raise this process's peak memory, which the
    # children it forks inherit in their measured peak (test_reader_refusals)
    names = ("torch", "torchvision", "torchvision.ops", "torchvision.ops.boxes")
    saved = {name: sys.modules.get(name) for name in names}
    for name in names:
        stub = types.ModuleType(name)
        stub.batched_nms = stub.box_iou = None  # type: ignore[attr-defined]
        sys.modules[name] = stub
    sys.path.insert(0, str(SRC))
    try:
        import hico_text_label
        import newbench_question_func
        import swighoi_categories
        import vcoco_text_label
    finally:
        sys.path.remove(str(SRC))
        for name, module in saved.items():  # no stand-in outlives the import (other tests look for the real ones)
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module
    return types.SimpleNamespace(hico=hico_text_label, vcoco=vcoco_text_label, swig=swighoi_categories,
                                 func=newbench_question_func)


def _released_table(m: types.SimpleNamespace, dataset: str) -> dict[tuple[str, str], dict[str, int]]:
    """``macro_f1_dict_hoicls`` as the script's metric block builds it for one dataset."""
    table: dict[tuple[str, str], dict[str, int]] = {}
    if dataset in ("hicodet", "vcoco"):
        for c in m.hico.HICO_INTERACTIONS[:600]:
            table[(c["action"].replace(" ", "_"), c["object"].replace(" ", "_"))] = _zeros()
    if dataset == "vcoco":
        for i, j in m.vcoco.MAP_AO_TO_HOI_COCO:
            key = (m.vcoco.VCOCO_ACTS[i].replace(" ", "_"), m.hico.OBJ_IDX_TO_OBJ_NAME[j - 1].replace(" ", "_"))
            table[key] = _zeros()
    if dataset == "swig":
        for a in m.swig.SWIG_ACTIONS:
            table[(a["name"], "person")] = _zeros()
    return table


def _zeros() -> dict[str, int]:
    return {"tp": 0, "fp": 0, "gt": 0, "tn": 0}


def _released_scores(m: types.SimpleNamespace, raw: dict, output: dict, dataset: str) -> dict[str, float]:
    """The script's metric block around the released functions (their bodies run unchanged)."""
    picks: dict[str, Any] = {"tp": [], "fp": [], "full_pred": 0, "full_gt": 0, "ood": []}
    f1s: list[float] = []
    per_text: dict[str, dict[str, int]] = {}
    top1 = full = 0
    for file, entry in raw.items():
        replies = output.get(file, {"QA_0": []})
        f1s, per_text, picks, top1, full = m.func.mllm_instancef1_eval(entry, replies, f1s, per_text, picks,
                                                                        file, top1, full)
    prec = len(picks["tp"]) / (len(picks["tp"]) + len(picks["fp"]))
    rec = len(picks["tp"]) / picks["full_gt"]
    _, macro, _, _ = m.func.mllm_macrof1_eval(per_text, _released_table(m, dataset), dataset=dataset)
    return {"macro_f1": sum(macro.values()) / len(macro), "instance_f1": sum(f1s) / len(f1s),
            "micro_f1": 2 * prec * rec / (prec + rec), "exact_match": full / len(raw),
            "avg_precision": prec, "avg_recall": rec}


# ----------------------------------------------------------------------------- a plain re-implementation

def _key(text: str) -> tuple[str, str]:
    if " a/an " in text:
        act, obj = text.split(" a/an ")
        act, obj = act.replace(" ", "_"), obj.replace(" ", "_")
        return ("no_interaction" if "no_interaction" in act else act), obj
    return text, "person"


def _reference_scores(raw: dict, output: dict, table: frozenset[tuple[str, str]]) -> dict[str, float]:
    """The script's counting restated: replies are lists of picked texts per ``QA_k``."""
    per_text: dict[str, dict[str, int]] = {}
    n_tp = n_fp = full_gt = full_match = 0
    f1s: list[float] = []
    for file, entry in raw.items():
        qas = entry if "QA_0" in entry else {"QA_0": entry}
        replies = output.get(file, {"QA_0": []})
        for qk, qa in qas.items():
            gti, wrong = qa["gt_choices"], qa["wrong_choices"]
            rpi = replies.get(qk, [])
            full_gt += len(gti)
            if not rpi:
                f1s.append(0 if gti else 1)
                for g in gti:
                    per_text.setdefault(g, {"tp": 0, "fp": 0, "gt": 0})["gt"] += 1
                continue
            pool = list(gti)
            tp = fp = 0
            for r in rpi:
                d = per_text.setdefault(r, {"tp": 0, "fp": 0, "gt": 0})
                if r in pool:
                    tp += 1
                    d["tp"] += 1
                    pool.remove(r)
                elif r in wrong:
                    fp += 1
                    d["fp"] += 1
            n_tp += tp
            n_fp += fp
            true_pred = [r for r in rpi if r in gti or r in wrong]
            if true_pred and len(true_pred) == len(gti) and set(true_pred) == set(gti):
                full_match += 1
            for g in gti:
                per_text.setdefault(g, {"tp": 0, "fp": 0, "gt": 0})["gt"] += 1
            p = tp / (tp + fp) if tp + fp else 0
            rc = tp / len(gti) if gti else 0
            f1s.append(2 * p * rc / (p + rc) if p + rc else 0)
    classes: dict[tuple[str, str], dict[str, int]] = {}
    for text, d in per_text.items():
        if text != "None" and _key(text) in table:
            c = classes.setdefault(_key(text), {"tp": 0, "fp": 0, "gt": 0})
            for k in c:
                c[k] += d[k]
    macro = []
    for c in classes.values():
        if c["tp"] == c["fp"] == c["gt"] == 0:
            continue
        if c["tp"] == 0:
            macro.append(0.0)
        else:
            p, rc = c["tp"] / (c["tp"] + c["fp"]), c["tp"] / c["gt"]
            macro.append(2 * p * rc / (p + rc))
    prec = n_tp / (n_tp + n_fp)
    rec = n_tp / full_gt
    return {"macro_f1": sum(macro) / len(macro), "instance_f1": sum(f1s) / len(f1s),
            "micro_f1": 2 * prec * rec / (prec + rec), "exact_match": full_match / len(raw),
            "avg_precision": prec, "avg_recall": rec}


# ----------------------------------------------------------------------------- replies

def _script_replies(raw: dict, seed: int) -> dict[str, dict[str, list[str]]]:
    """Seeded random replies over the script's presentation, as its ``output_dict``: per image and
    ``QA_k`` the texts of the picked letters. Both letters of a text listed twice are often picked,
    a letter is sometimes named twice, the ``"None"`` padding letter can be picked; some images and
    questions get no reply, some an unparsable one."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, list[str]]] = {}
    for file, entry in raw.items():
        if rng.random() < 0.03:
            continue  # the image has no reply at all
        qas = entry if "QA_0" in entry else {"QA_0": entry}
        replies: dict[str, list[str]] = {}
        for qk, qa in qas.items():
            shown = list(qa["gt_choices"]) + list(qa["wrong_choices"])
            rng.shuffle(shown)
            while len(shown) < 4:
                shown.append("None")
            u = rng.random()
            if u < 0.04:
                continue  # this question has no reply
            letters = [] if u < 0.07 else [k for k in range(len(shown)) if rng.random() < 0.45]
            twice = [t for t in set(shown) if shown.count(t) > 1]
            if twice and u >= 0.07 and rng.random() < 0.7:
                letters = sorted(set(letters) | {k for k, t in enumerate(shown) if t == twice[0]})
            if letters and rng.random() < 0.1:
                letters.append(letters[int(rng.integers(len(letters)))])  # a letter named twice
            rng.shuffle(letters)
            replies[qk] = [shown[k] for k in letters]
        out[file] = replies
    return out


def _write_answers(path: Path, raw: dict, output: dict, questions: list[MCQuestion]) -> int:
    """The replies as a hoibench answers file (texts, repeats kept); returns how many answers
    pick a text more than once."""
    # like the script's run, asked every question of the file (setting null): unanswered ones are misses
    lines = [json.dumps({"header": {"kind": "mcq_answers", "model": "random", "setting": None}})]
    n_repeats = 0
    for q in questions:
        keys = list(raw[q.file_name]) if "QA_0" in raw[q.file_name] else ["QA_0"]
        qk = q.id.split("#", 1)[1] if "#" in q.id else keys[0]
        picks = output.get(q.file_name, {}).get(qk)
        if picks is None:
            continue
        n_repeats += len(set(picks)) < len(picks)
        lines.append(json.dumps({"question_id": q.id, "selected": picks, "raw": None,
                                 "status": "ok" if picks else "parse_error"}))
    path.write_text("\n".join(lines) + "\n")
    return n_repeats


def _cli_scores(questions: Path, answers: Path, out: Path, protocol: str = "crosshoi") -> dict[str, float]:
    """``hoibench mcq score`` as a user runs it: no option but the protocol."""
    from click.testing import CliRunner

    from hoibench.cli import cli

    r = CliRunner().invoke(cli, ["mcq", "score", "--questions", str(questions), "--answers", str(answers),
                                 "--protocol", protocol, "--json", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    record = json.loads(out.read_text())
    return {k: record[k] for k in MCQ_METRIC_NAMES}


def _max_diff(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: abs(a[k] - b[k]) for k in MCQ_METRIC_NAMES}


class _Run:
    """One released file with seeded replies, scored by hoibench's CLI (computed once)."""

    def __init__(self, folder: str, name: str, tmp: Path) -> None:
        self.path = shared_file(f"crosshoi-bench/{folder}/our_test/{name}")
        self.raw = json.loads(self.path.read_text())
        self.questions = list(read_questions(self.path))
        self.output = _script_replies(self.raw, seed=19)
        self.answers = tmp / f"{name}.answers.jsonl"
        self.n_repeats = _write_answers(self.answers, self.raw, self.output, self.questions)
        self.ours = _cli_scores(self.path, self.answers, tmp / f"{name}.scores.json")


@pytest.fixture(scope="module")
def released_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, _Run]:
    return _LazyRuns(tmp_path_factory.mktemp("crosshoi"))


class _LazyRuns(dict):  # type: ignore[type-arg]
    def __init__(self, tmp: Path) -> None:
        super().__init__()
        self.tmp = tmp

    def __missing__(self, name: str) -> _Run:
        folder = next(f[0] for f in FILES if f[1] == name)
        run = self[name] = _Run(folder, name, self.tmp)
        return run


# ----------------------------------------------------------------------------- class tables

TABLE_PINS = {  # size, sha256 of the sorted "action<TAB>object" lines; recorded from the released tables
    "hico-det": (600, "3d2c9dcf11aa14973fb976b128244062b22e96402ef6cafa4c7f3236df6739ee"),
    "v-coco": (707, "cf3182fa80bf0de0fc435c3e5a9294a331119e88ff89d2bb71a50e498351f482"),
    "swig-hoi": (407, "5241ecaf6ba268351450035a96decd4dda80a7f87ed63dfda07913ed0508977e"),
}


def _digest(keys: frozenset[tuple[str, str]] | set[tuple[str, str]]) -> str:
    return hashlib.sha256("\n".join(f"{a}\t{o}" for a, o in sorted(keys)).encode()).hexdigest()


@pytest.mark.parametrize("space", sorted(TABLE_PINS))
def test_class_tables_keep_their_pinned_size_and_hash(space: str) -> None:
    keys = reference_class_keys(space)
    assert keys is not None
    assert (len(keys), _digest(keys)) == TABLE_PINS[space]
    assert reference_class_keys("some-other-space") is None


def test_vcoco_pairs_are_the_bundled_annotations_pairs() -> None:
    """The V-COCO half of the table comes from the bundled vcoco toolkit files."""
    from hoibench.datasets import bundled_path
    from hoibench.vocab import COCO, vcoco_annotated_objects

    for split in ("trainval", "test"):
        with gzip.open(bundled_path("v-coco", split)) as fh:
            d = json.load(fh)
        want = {(c.replace(" ", "_"), d["objects"][j]) for c, objs in zip(d["classes"], d["action_to_object"])
                for j in objs}
        have = {(v, o) for v, objs in vcoco_annotated_objects().items() for o in objs}
        assert have == want and len(have) == 236
        assert all(o in COCO.names for _, o in have)


@pytest.mark.shared_data
def test_vcoco_phrases_are_the_released_texts_verbs() -> None:
    """Every CrossHOI-Bench phrase of a V-COCO role verb is a verb of the released V-COCO texts."""
    from hoibench.vocab import vcoco_crosshoi_phrases

    verbs = set()
    for name in ("vcoco_newbench_none.json", "vcoco_newbench_person.json", "vcoco_newbench_ho.json"):
        raw = json.loads(shared_file(f"crosshoi-bench/vcoco/our_test/{name}").read_text())
        verbs |= {t.split(" a/an ")[0] for e in raw.values() for qa in e.values()
                  for t in qa["gt_choices"] + qa["wrong_choices"]}
    phrases = vcoco_crosshoi_phrases()
    assert len(phrases) == 24 and set(phrases.values()) <= verbs


@pytest.mark.parametrize("dataset", ["hicodet", "vcoco", "swig"])
def test_class_tables_equal_the_released_scripts(dataset: str) -> None:
    """By hand, against the fetched repository: hoibench's tables are the script's tables."""
    m = _released()
    theirs = set(_released_table(m, dataset))
    ours = reference_class_keys(SPACE_OF[dataset])
    assert ours == theirs
    assert (len(theirs), _digest(theirs)) == TABLE_PINS[SPACE_OF[dataset]]


# ----------------------------------------------------------------------------- all nine released files

@pytest.mark.shared_data
@pytest.mark.parametrize("folder,name,dataset,space", FILES, ids=FILE_IDS)
def test_released_file_scores_equal_the_scripts_counting(released_runs, folder: str, name: str, dataset: str,
                                                         space: str) -> None:
    """``mcq score --protocol crosshoi`` (no other option) equals the plain re-implementation on
    replies with repeated texts; the two causes of the old differences really act here."""
    run = released_runs[name]
    assert run.n_repeats > 0 and run.questions[0].label_space == space
    table = reference_class_keys(space)
    assert table is not None
    ref = _reference_scores(run.raw, run.output, table)
    assert max(_max_diff(run.ours, ref).values()) <= TOL, _max_diff(run.ours, ref)

    answers = read_answers(run.answers, run.questions)
    api = mcq_metrics(answers, run.questions, protocol="crosshoi").metrics()
    assert max(_max_diff(api, ref).values()) <= TOL
    # counting each text once (sets) moves a number wherever the replies repeat a text
    sets = [MCAnswer(a.question_id, a.selected, a.raw, a.status) for a in answers]
    assert max(_max_diff(mcq_metrics(sets, run.questions, protocol="crosshoi").metrics(), ref).values()) > TOL
    # the paper protocol keeps sets: repeats change none of its numbers
    assert (mcq_metrics(answers, run.questions, protocol="paper").metrics()
            == mcq_metrics(sets, run.questions, protocol="paper").metrics())
    if space != "hico-det":  # the V-COCO and SWiG-HOI files hold texts their tables lack
        every = {_key(t) for q in run.questions for t in q.choice_texts} - {("None", "person")}
        assert every - table
        greedy = [MCAnswer(q.id, frozenset(q.choice_texts)) for q in run.questions]  # picks every text
        by_table = mcq_metrics(greedy, run.questions, protocol="crosshoi").macro_f1
        by_text = mcq_metrics(greedy, run.questions, protocol="crosshoi", class_keys=every | table).macro_f1
        assert abs(by_table - by_text) > TOL


@pytest.mark.shared_data
@pytest.mark.parametrize("folder,name,dataset,space", FILES, ids=FILE_IDS)
def test_released_file_scores_equal_the_released_functions(released_runs, folder: str, name: str, dataset: str,
                                                           space: str) -> None:
    """By hand, against the fetched repository: the released functions on the same replies."""
    m = _released()
    run = released_runs[name]
    theirs = _released_scores(m, run.raw, run.output, dataset)
    diff = _max_diff(run.ours, theirs)
    print(f"\n{name}: max |diff| " + " ".join(f"{k}={v:.1e}" for k, v in diff.items()))
    assert max(diff.values()) <= TOL, diff


# ----------------------------------------------------------------------------- synthetic (always runs)

SYNTH = {
    "img.jpg": {"QA_0": {"gt_choices": ["hold a/an cup", "hold a/an cup"], "wrong_choices": ["drink_with a/an cup"]},
                "QA_1": {"gt_choices": ["ride a/an horse"], "wrong_choices": ["feed a/an horse", "None"]}},
    "two.jpg": {"QA_0": {"gt_choices": [], "wrong_choices": ["pet a/an cow", "None"]}},
    "dup.jpg": {"QA_0": {"gt_choices": ["sit_on a/an truck"],
                         "wrong_choices": ["direct a/an truck", "sit_on a/an truck", "drive a/an truck"]}},
    "rep.jpg": {"QA_0": {"gt_choices": ["ride a/an bicycle", "hold a/an bicycle"],
                         "wrong_choices": ["repair a/an bicycle", "wash a/an bicycle"]}},
}
SYNTH_REPLIES = [
    # picks both letters of a text listed twice (as correct, and as correct and wrong), a letter twice
    {"img.jpg": {"QA_0": ["hold a/an cup", "hold a/an cup"], "QA_1": ["ride a/an horse"]},
     "two.jpg": {"QA_0": ["None"]}, "dup.jpg": {"QA_0": ["sit_on a/an truck", "sit_on a/an truck"]},
     "rep.jpg": {"QA_0": ["ride a/an bicycle", "ride a/an bicycle"]}},
    # the same texts once each
    {"img.jpg": {"QA_0": ["hold a/an cup"], "QA_1": ["ride a/an horse"]},
     "two.jpg": {"QA_0": ["None"]}, "dup.jpg": {"QA_0": ["sit_on a/an truck"]},
     "rep.jpg": {"QA_0": ["ride a/an bicycle", "hold a/an bicycle"]}},
]


def _synthetic(tmp_path: Path) -> tuple[Path, list[MCQuestion], frozenset[tuple[str, str]]]:
    p = tmp_path / "synth.json"
    p.write_text(json.dumps(SYNTH))
    qs = list(read_questions(p))
    table = reference_class_keys(qs[0].label_space)
    assert table is not None
    return p, qs, table


@pytest.mark.parametrize("replies", SYNTH_REPLIES, ids=["repeats", "once"])
def test_repeated_picks_count_twice_under_crosshoi_and_once_under_paper(tmp_path: Path, replies: dict) -> None:
    path, qs, table = _synthetic(tmp_path)
    answers_path = tmp_path / "a.jsonl"
    _write_answers(answers_path, SYNTH, replies, qs)
    answers = read_answers(answers_path, qs)
    ref = _reference_scores(SYNTH, replies, table)
    ours = mcq_metrics(answers, qs, protocol="crosshoi").metrics()
    assert max(_max_diff(ours, ref).values()) <= TOL
    assert max(_max_diff(_cli_scores(path, answers_path, tmp_path / "s.json"), ref).values()) <= TOL
    once = {qid: MCAnswer(qid, a.selected) for qid, a in answers.by_id().items()}
    assert mcq_metrics(answers, qs, protocol="paper") == mcq_metrics(once, qs, protocol="paper")


def test_mcq_score_says_how_each_protocol_counts_repeats(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from hoibench.cli import cli

    path, qs, _ = _synthetic(tmp_path)
    answers = tmp_path / "a.jsonl"
    assert _write_answers(answers, SYNTH, SYNTH_REPLIES[0], qs) == 3
    for protocol, says in (("paper", "counts each text once (sets)"), ("crosshoi", "counts every pick")):
        r = CliRunner().invoke(cli, ["mcq", "score", "--questions", str(path), "--answers", str(answers),
                                     "--protocol", protocol])
        assert r.exit_code == 0 and f"note: 3 answers pick a text more than once; {protocol} {says}" in r.stderr
    _write_answers(answers, SYNTH, SYNTH_REPLIES[1], qs)
    r = CliRunner().invoke(cli, ["mcq", "score", "--questions", str(path), "--answers", str(answers)])
    assert r.exit_code == 0 and "more than once" not in r.stderr


def test_synthetic_repeats_change_what_the_script_counts(tmp_path: Path) -> None:
    """The repeats are not noise. With them: "hold a/an cup", listed twice as correct, is matched
    exactly only by its two picks (img.jpg#QA_0); a second "sit_on a/an truck" (listed as correct
    and as wrong) is a false positive and spoils the exact match; a second "ride a/an bicycle" is
    ignored but spoils the exact match too. So 2 of 4 images match exactly (once each: 3 of 4),
    and precision is 5/7 (once each: 5/6; "None" is a wrong choice of two.jpg)."""
    _, qs, table = _synthetic(tmp_path)
    for replies, exact, precision in zip(SYNTH_REPLIES, (2 / 4, 3 / 4), (5 / 7, 5 / 6)):
        ref = _reference_scores(SYNTH, replies, table)
        answers = {}
        for q in qs:
            file, _, qk = q.id.partition("#")
            answers[q.id] = MCAnswer.from_picks(q.id, replies[file][qk or "QA_0"])
        ours = mcq_metrics(answers, qs, protocol="crosshoi")
        assert ref["exact_match"] == ours.exact_match == exact
        assert ref["avg_precision"] == pytest.approx(precision) and ours.avg_precision == pytest.approx(precision)


def test_answers_keep_repeats_through_files_and_resume(tmp_path: Path) -> None:
    from hoibench.formats import AnswerWriter, write_answers

    _, qs, _ = _synthetic(tmp_path)
    q = qs[0]  # img.jpg#QA_0, choices shown once each in hoibench's order
    a = MCAnswer.from_picks(q.id, ["hold a/an cup", "drink_with a/an cup", "hold a/an cup"], raw="A,B,A")
    assert a.picks == ("drink_with a/an cup", "hold a/an cup", "hold a/an cup")
    assert a.selected == {"hold a/an cup", "drink_with a/an cup"}
    plain = MCAnswer.from_picks(qs[1].id, ["ride a/an horse"])
    assert plain.picks is None and plain == MCAnswer(qs[1].id, frozenset({"ride a/an horse"}))
    with pytest.raises(ValidationError, match="picks"):
        MCAnswer(q.id, frozenset({"hold a/an cup"}), picks=("drink_with a/an cup",))
    path = tmp_path / "a.jsonl"
    write_answers(path, [a, plain])
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["selected"] == ["drink_with a/an cup", "hold a/an cup", "hold a/an cup"]
    assert lines[1]["selected"] == ["ride a/an horse"]  # no repeat: the sorted set, as before
    back = read_answers(path, qs)
    assert list(back) == [a, plain] and back[0].picks == a.picks
    # letters: the same letter twice is the same text twice
    letter = dict((c.text, k) for k, c in q.lettered())["hold a/an cup"]
    (tmp_path / "l.jsonl").write_text(json.dumps({"question_id": q.id, "selected": [letter, letter.lower()]}) + "\n")
    assert read_answers(tmp_path / "l.jsonl", qs)[0].picks == ("hold a/an cup", "hold a/an cup")
    # resume: a file with repeats reopens, its ids are done, and appending keeps them
    with AnswerWriter(path) as w:
        assert w.done == {a.question_id, plain.question_id}
        w.write(MCAnswer.from_picks(qs[2].id, ["None", "None"]))
    assert read_answers(path, qs)[2].picks == ("None", "None")


def test_default_tables_follow_each_questions_label_space() -> None:
    from hoibench.data import Choice

    def q(label_space: str, *texts: str) -> MCQuestion:
        return MCQuestion(f"{label_space}:{texts[0]}", f"{label_space}.jpg", 1, tuple(Choice(t) for t in texts),
                          frozenset({0}), label_space=label_space)

    vq = q("v-coco", "look at a/an frisbee", "lift a/an spoon")  # lift spoon: not in the script's table
    sq = q("swig-hoi", "adjusting", "discipling")  # the released files' typo of "disciplining"
    ans = [MCAnswer(vq.id, frozenset(vq.choice_texts)), MCAnswer(sq.id, frozenset(sq.choice_texts))]
    r = mcq_metrics(ans, [vq, sq], protocol="crosshoi")
    assert set(r.per_class) == {"look_at frisbee", "adjusting person"} and r.macro_f1 == 1.0
    every = mcq_metrics(ans, [vq, sq], protocol="crosshoi",
                        class_keys=[("look_at", "frisbee"), ("lift", "spoon"), ("adjusting", "person"),
                                    ("discipling", "person")])
    assert every.n_classes == 4 and every.macro_f1 == 0.5
    assert every.micro_f1 == r.micro_f1  # only Macro-F1 reads the table
    with pytest.raises(ConfigError, match="class_keys"):
        mcq_metrics(ans, [vq, sq], protocol="paper", class_keys=[("look_at", "frisbee")])
    # a label space without a table counts every text
    cq = q("custom", "hold_obj a/an cup", "throw_obj a/an cup")
    assert mcq_metrics([MCAnswer(cq.id, frozenset(cq.choice_texts))], [cq], protocol="crosshoi").n_classes == 2
    # a V-COCO question in hoibench's own spelling (role verbs) is outside the table: said, not hidden
    bq = q("v-coco", "hold_obj a/an cup", "throw_obj a/an cup")
    with pytest.warns(UserWarning, match="1 v-coco questions have no choice text in the released script's"):
        untabled = mcq_metrics([MCAnswer(bq.id, frozenset({"hold_obj a/an cup"}))], [bq], protocol="crosshoi",
                               n_bootstrap=10, random_state=0)
    # no class counts: Macro-F1 is undefined (the script divides by zero), never a 0.0 that looks real
    assert untabled.n_classes == 0 and math.isnan(untabled.macro_f1) and untabled.instance_f1 == 1.0
    assert untabled.to_json()["macro_f1"] is None and untabled.to_json()["ci"]["macro_f1"] is None
    assert math.isnan(MCQResult.from_json(json.loads(json.dumps(untabled.to_json()))).macro_f1)
