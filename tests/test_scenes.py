"""Multiple-choice metrics by scene type (Finding 2): the scene of each question from the
annotations, the per-bin metrics, the CLI and the report section."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoibench.analysis import SCENE_BINS, mcq_scene_breakdown, question_scene_types
from hoibench.cli import main
from hoibench.data import Choice, DatasetBuilder, MCAnswer, MCQuestion, choice_text
from hoibench.evaluation import mcq_metrics
from hoibench.formats import write_hicodet, write_questions
from hoibench.formats.questions import write_answers
from hoibench.reports import PaperInputs, build_report
from hoibench.vocab import hico_det
from tests.conftest import one_line_error

W = H = 200
VOCAB = hico_det()
PERSON = VOCAB.objects.index("person")


def _scene_world(seed: int = 0, n: int = 40):
    """Images of a known scene type each (the type drawn at random, the geometry built for it),
    one setting-2 question per image about its first person, and two models' answers."""
    rng = np.random.default_rng(seed)
    b = DatasetBuilder(VOCAB)
    questions, expected = [], {}
    hois = rng.choice(VOCAB.n_hois, size=(n, 2), replace=True)
    for i in range(n):
        layout = str(rng.choice(SCENE_BINS[:3]))
        truncated, occluded = bool(rng.random() < 0.3), bool(rng.random() < 0.3) and layout != SCENE_BINS[0]
        x0 = 0.0 if truncated else 20.0
        target = [x0, 40.0, x0 + 40.0, 100.0]
        # the other person: covering 2/3 of the target (IoU 0.4: another person) or far away
        other = [x0 + 13.3, 40.0, x0 + 60.0, 100.0] if occluded else [120.0, 40.0, 160.0, 100.0]
        h1, h2 = (int(h) for h in hois[i])
        if h1 == h2:
            h2 = (h1 + 1) % VOCAB.n_hois
        people = [target] if layout == SCENE_BINS[0] else [target, other]
        classes = [[h1]] if layout == SCENE_BINS[0] else [[h1], [h1] if layout == SCENE_BINS[2] else [h2]]
        boxes, labels, subj, obj, verbs = [], [], [], [], []
        for box, cls in zip(people, classes):
            boxes.append(box)
            labels.append(PERSON)
            k = len(boxes) - 1
            for h in cls:
                v, o = (int(x) for x in VOCAB.hoi_verb_object[h])
                boxes.append([60.0, 150.0, 90.0, 180.0])
                labels.append(o)
                subj.append(k)
                obj.append(len(boxes) - 1)
                verbs.append(v)
        name = f"img_{i:03d}.jpg"
        b.add_image(name, boxes, labels, subj, obj, verbs, width=W, height=H)
        texts = sorted({h1, h2, (h1 + 7) % VOCAB.n_hois, (h1 + 13) % VOCAB.n_hois})
        choices = tuple(Choice(choice_text(VOCAB.verbs[VOCAB.hoi_verb_object[h][0]],
                                           VOCAB.objects[VOCAB.hoi_verb_object[h][1]]), int(h),
                               int(VOCAB.hoi_verb_object[h][0]), int(VOCAB.hoi_verb_object[h][1])) for h in texts)
        q = MCQuestion(f"{name}#s2", name, 2, choices, frozenset({texts.index(h1)}),
                       person_box=tuple(target), width=W, height=H)
        questions.append(q)
        expected[q.id] = (layout, truncated or occluded)
    answers = {}
    for model in ("alpha", "beta"):
        answers[model] = {q.id: MCAnswer(q.id, frozenset(c.text for c in q.choices if rng.random() < 0.5))
                          for q in questions}
    return b.build(name="scenes"), questions, answers, expected


def test_scene_types_follow_the_geometry() -> None:
    ds, qs, _, expected = _scene_world()
    types = question_scene_types(qs, ds)
    assert [(t.layout, t.truncated or t.occluded) for t in types] == [expected[q.id] for q in qs]
    # an image missing from the annotations has no layout bin
    other = question_scene_types([qs[0]], ds.subset([1]))
    assert other[0].layout is None and other[0].bins == ()


def test_breakdown_equals_metrics_of_each_bin_by_hand() -> None:
    ds, qs, answers, expected = _scene_world(seed=3)
    bd = mcq_scene_breakdown(answers, qs, ds)
    for b in SCENE_BINS:
        members = [q for q in qs if expected[q.id][0] == b or (b == SCENE_BINS[3] and expected[q.id][1])]
        assert bd.counts[b] == len(members)
        for model, ans in answers.items():
            if not members:
                assert bd.value(model, b, "instance_f1") is None
                continue
            ref = mcq_metrics({q.id: ans[q.id] for q in members}, members)
            for k, v in ref.metrics().items():
                assert bd.value(model, b, k) == pytest.approx(v)
    assert sum(bd.counts[b] for b in SCENE_BINS[:3]) == len(qs)


def test_cli_and_report_agree(tmp_path, capsys) -> None:
    ds, qs, answers, _ = _scene_world(seed=5)
    write_hicodet(ds, tmp_path / "gt.json")
    write_questions(tmp_path / "q.jsonl", qs)
    for model, ans in answers.items():
        write_answers(tmp_path / f"{model}.jsonl", list(ans.values()), header={"model": model})
    out = tmp_path / "out"
    main(["analyze", "scenes", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(tmp_path / "alpha.jsonl"),
          "--answers", str(tmp_path / "beta.jsonl"), "--dataset", str(tmp_path / "gt.json"), "--out", str(out)])
    data = json.loads((out / "mcq-scenes.json").read_text())
    assert (out / "mcq-scenes-instance-f1.png").stat().st_size > 1000
    bd = mcq_scene_breakdown(answers, qs, ds)
    for model in answers:
        for b in SCENE_BINS:
            if bd.counts[b]:
                assert data["results"][model][b]["instance_f1"] == pytest.approx(bd.value(model, b, "instance_f1"))
    # the report's section shows the same numbers, in percent
    table = next(t for t in build_report([], paper_inputs=PaperInputs(scenes=bd)).tables if t.name == "mcq-scenes")
    for row in table.rows:
        model, b = row[0], row[1]
        assert row[2] == bd.counts[b]
        v = bd.value(model, b, "instance_f1")
        assert row[3 + 1] == (None if v is None else pytest.approx(100 * v))
    capsys.readouterr()
    assert one_line_error(["analyze", "scenes", "--questions", str(tmp_path / "q.jsonl"), "--answers",
                           str(tmp_path / "alpha.jsonl"), "--name", "a", "--name", "b",
                           "--dataset", str(tmp_path / "gt.json")], capsys).startswith("error: --name")


def test_bootstrap_intervals_per_bin_are_those_of_the_bin_alone() -> None:
    from hoibench.reports import scene_breakdown_figure

    ds, qs, answers, expected = _scene_world(seed=8, n=24)
    bd = mcq_scene_breakdown(answers, qs, ds, n_bootstrap=40, random_state=3)
    members = [q for q in qs if expected[q.id][0] == SCENE_BINS[0]]
    ref = mcq_metrics({q.id: answers["alpha"][q.id] for q in members}, members, n_bootstrap=40, random_state=3)
    assert bd.results["alpha"][SCENE_BINS[0]].ci["instance_f1"] == pytest.approx(ref.ci["instance_f1"])
    assert "Error bars: bootstrap confidence intervals" in scene_breakdown_figure(bd).caption
    assert "Error bars" not in scene_breakdown_figure(mcq_scene_breakdown(answers, qs, ds)).caption


def test_scene_figure_draws_each_model_in_its_palette_colour() -> None:
    import io

    from PIL import Image

    from hoibench.reports import scene_breakdown_figure
    from hoibench.reports._style import model_color

    ds, qs, answers, _ = _scene_world(seed=9, n=16)
    with Image.open(io.BytesIO(scene_breakdown_figure(mcq_scene_breakdown(answers, qs, ds)).png)) as im:
        pixels = {tuple(c) for c in np.unique(np.asarray(im.convert("RGB")).reshape(-1, 3), axis=0).tolist()}
    for model in answers:
        c = model_color(model)
        assert tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) in pixels
