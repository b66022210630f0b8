"""``hoibench mcq analyze`` on the released CrossHOI-Bench questions and the real HICO-DET test
annotations, checked against an independent count made here from the raw files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoibench.analysis import misattribution_share
from hoibench.cli import main
from hoibench.data import MCAnswer
from hoibench.datasets import load_dataset
from hoibench.formats import read_questions
from hoibench.formats.questions import write_answers

from .conftest import shared_file


def _iou(a, b):
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


@pytest.mark.shared_data
def test_finding1_on_real_data_matches_an_independent_count(tmp_path, capsys):
    qfile = shared_file("crosshoi-bench/hicodet/our_test/crosshoi_bench_hum_box_final.json")
    inst = json.loads(shared_file("hico-det/instances_test2015.json").read_text())
    raw = json.loads(qfile.read_text())
    # a model that ticks every choice: each wrong choice is a false positive
    qs = list(read_questions(qfile))
    answers = [MCAnswer(q.id, frozenset(q.choice_texts)) for q in qs]

    # independent count, from the raw files only (both in HICO-DET's 1-based boxes)
    index = {f: i for i, f in enumerate(inst["filenames"])}
    fp = mis = 0
    for name, entry in raw.items():
        wrong = [t for t in dict.fromkeys(entry["wrong_choices"]) if t not in entry["gt_choices"]]
        fp += len(wrong)
        ann = inst["annotation"][index[name]]
        target = entry["boxes"]["human"]
        others = {(inst["verbs"][v], inst["objects"][o])
                  for h, v, o in zip(ann["boxes_h"], ann["verb"], ann["object"]) if _iou(h, target) < 0.5}
        for t in wrong:
            verb, obj = t.split(" a/an ")
            mis += (verb, obj) in others

    m = misattribution_share(qs, answers, load_dataset("hico-det:test"))
    assert (m.false_positives, m.misattributed) == (fp, mis)
    assert m.questions == 1274 and m.questions_not_in_dataset == 0
    assert 0 < m.share < 1

    apath = tmp_path / "all.jsonl"
    write_answers(apath, answers, header={"model": "tick-all"})
    main(["mcq", "analyze", "--questions", str(qfile), "--answers", str(apath), "--out-dir",
          str(tmp_path / "out"), "--bins", "5", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["misattribution"]["misattributed"] == mis
    bins = result["head_to_tail"]["bins"]
    assert len(bins) == 5 and all(b["recall"] == 1.0 for b in bins)  # ticking all recalls all
    counts = [b["max_count"] for b in bins]
    assert counts == sorted(counts, reverse=True)  # head first
    assert (tmp_path / "out" / "head_to_tail_recall.png").stat().st_size > 1000
    assert (tmp_path / "out" / "head_to_tail_recall.csv").read_text().startswith("bin,")


def test_analyze_cli_table_on_a_synthetic_answer_file(tmp_path, capsys):
    """Always runs: bundled HICO-DET annotations and a two-question file."""
    from hoibench.data import Choice, MCQuestion
    from hoibench.formats.questions import write_questions
    from hoibench.vocab import hico_det

    ds = load_dataset("hico-det:test")
    v = hico_det()
    # pick an image where another person (IoU < 0.5 with the target) does something else
    from hoibench.evaluation import box_iou

    for i in range(ds.n_images):
        img = ds.image(i)
        if len(img.pairs) < 2:
            continue
        target = img.boxes[img.pairs[0, 0]]
        far = box_iou(np.asarray([target]), img.subject_boxes)[0] < 0.5
        other_pairs = [p for p, ob, f in zip(img.pairs, img.object_labels, far)
                       if f and p[2] != img.pairs[0, 2] and ob >= 0 and img.pairs[0, 1] >= 0]
        if other_pairs:
            break
    p = other_pairs[0]
    ob = int(img.labels[p[1]])
    other = Choice(f"{v.verbs[p[2]]} a/an {v.objects[ob]}", hoi=int(v.hoi_index(np.array([p[2]]), np.array([ob]))[0]),
                   verb=int(p[2]), object=ob)
    own_ob = int(img.labels[img.pairs[0, 1]])
    own = Choice(f"{v.verbs[img.pairs[0, 2]]} a/an {v.objects[own_ob]}",
                 hoi=int(v.hoi_index(np.array([img.pairs[0, 2]]), np.array([own_ob]))[0]),
                 verb=int(img.pairs[0, 2]), object=own_ob)
    q = MCQuestion(id="q", file_name=img.file_name, setting=2, choices=(own, other, Choice("zzz a/an x")),
                   correct=frozenset({0}), person_box=tuple(float(x) for x in target))
    qpath, apath = tmp_path / "q.jsonl", tmp_path / "a.jsonl"
    write_questions(qpath, [q], header={"seed": 0})
    write_answers(apath, [MCAnswer("q", frozenset({other.text, "zzz a/an x"}))])
    main(["mcq", "analyze", "--questions", str(qpath), "--answers", str(apath), "--bins", "1"])
    out = capsys.readouterr().out
    assert "Finding 1: 1 of 2 false positives (50.0%)" in out
    assert "0.0" in out  # recall of the one correct class
