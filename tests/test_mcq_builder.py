"""MCQ builder, judges, statistics and top-k detector answers."""

from __future__ import annotations

import numpy as np
import pytest

from hoibench import ConfigError, FormatError
from hoibench.benchmarks import head_tail_ratio, kl_divergence, scene_composition
from hoibench.benchmarks.mcq import (
    NegativeFilter,
    answers_from_detections,
    build_mcq_benchmark,
    build_mcq_training_set,
    load_judge_template,
    question_statistics,
    similar_verbs,
    temporal_partners,
    time_sensitive_classes,
)
from hoibench.data import HOIDataset, HOIImage, HOIPredictions, MCQuestion
from hoibench.models import ScriptedBackend
from hoibench.vocab import hico_det

V = hico_det()


def hoi(verb: str, obj: str) -> int:
    return int(V.hoi_index(V.verb_index(verb), V.object_index(obj)))


def _image(name: str, people: list[tuple[list[float], list[tuple[str, str, list[float]]]]]) -> HOIImage:
    """people: [(person box, [(verb, object, object box), ...])]."""
    boxes, labels, pairs = [], [], []
    for pbox, acts in people:
        boxes.append(pbox)
        labels.append(V.person)
        s = len(boxes) - 1
        for verb, obj, obox in acts:
            boxes.append(obox)
            labels.append(V.object_index(obj))
            pairs.append([s, len(boxes) - 1, V.verb_index(verb)])
    return HOIImage.from_lists(name, boxes, labels, pairs, width=640, height=480)


def synthetic_dataset() -> HOIDataset:
    """Scenes of every kind the builder distinguishes (our own toy annotations)."""
    horse = [100, 100, 300, 300]
    ims = [
        # single person, single object, common class: easy
        _image("easy_single.jpg", [([0, 0, 50, 100], [("ride", "horse", horse)])]),
        # two people doing the same thing: easy
        _image("easy_same.jpg", [([0, 0, 50, 100], [("ride", "bicycle", horse)]),
                                 ([200, 0, 250, 100], [("ride", "bicycle", [300, 0, 400, 100])])]),
        # two people doing different things: kept; the other's action is a hard negative
        _image("diff.jpg", [([0, 0, 50, 100], [("hold", "umbrella", [0, 0, 30, 30])]),
                            ([200, 0, 250, 100], [("ride", "bicycle", [200, 50, 260, 120]),
                                                  ("straddle", "bicycle", [200, 50, 260, 120])])]),
        # a time-sensitive positive: its temporal twins (exit airplane) are never negatives
        _image("board.jpg", [([0, 0, 50, 100], [("board", "airplane", [60, 0, 600, 300])]),
                             ([300, 0, 350, 100], [("wash", "airplane", [60, 0, 600, 300])])]),
        # rare class, single person single object: not easy (rare)
        _image("rare.jpg", [([0, 0, 50, 100], [("hop_on", "elephant", [60, 0, 600, 300])])]),
        # the same person annotated twice with slightly moved boxes (one person)
        _image("dup.jpg", [([0, 0, 50, 100], [("hold", "cup", [10, 10, 20, 20])]),
                           ([1, 0, 51, 101], [("drink_with", "cup", [10, 10, 20, 20])]),
                           ([300, 0, 350, 100], [("hold", "knife", [310, 10, 320, 20])])]),
        _image("empty.jpg", []),
    ]
    return HOIDataset.from_images(V, ims, name="toy")


def test_data_tables() -> None:
    ts = time_sensitive_classes(V)
    assert len(ts) == 68 and hoi("board", "airplane") in ts and hoi("exit", "airplane") in ts
    sim = similar_verbs(V)
    assert V.verb_index("hug") in sim[V.verb_index("hold")]
    assert V.verb_index("hold") not in sim[V.verb_index("hold")]


def test_builder_rules_on_synthetic_scenes() -> None:
    ds = synthetic_dataset()
    b = build_mcq_benchmark(ds, random_state=0, redistribute=False, easy_min_train_count=100)
    by_id = {q.id: q for q in b.questions}
    files = {q.file_name for q in b.questions}
    assert "easy_single.jpg" not in files and "easy_same.jpg" not in files
    assert {"diff.jpg", "board.jpg", "rare.jpg", "dup.jpg"} <= files
    assert b.report["removed_easy"] == {"single person, single object": 1, "several people, same interaction": 1}
    for q in b.questions:
        assert len(q.choices) == 4 and q.correct and len({c.text for c in q.choices}) == 4
        positives = {q.choices[i].hoi for i in q.correct}
        negatives = {c.hoi for i, c in enumerate(q.choices) if i not in q.correct}
        assert not positives & negatives
        assert q.id.endswith("#s1") == (q.setting == 1)
    # setting 2 targets one person; the other person's interactions are hard negatives
    d2 = by_id["diff.jpg#s2"]
    target = set(d2.meta["target_hois"])
    other = {hoi("hold", "umbrella")} if hoi("ride", "bicycle") in target else {hoi("ride", "bicycle"), hoi("straddle", "bicycle")}
    assert other & {c.hoi for c in d2.choices}
    assert d2.person_box is not None
    # setting 1 asks about everybody: all annotated classes are positives (up to four)
    d1 = by_id["diff.jpg#s1"]
    assert {d1.choices[i].hoi for i in d1.correct} == {hoi("hold", "umbrella"), hoi("ride", "bicycle"),
                                                       hoi("straddle", "bicycle")}
    # temporal twins never appear as wrong choices
    for sfx in ("s1", "s2"):
        q = by_id[f"board.jpg#{sfx}"]
        wrong = {c.hoi for i, c in enumerate(q.choices) if i not in q.correct}
        if hoi("board", "airplane") in {q.choices[i].hoi for i in q.correct}:
            assert hoi("exit", "airplane") not in wrong
    # near-duplicate boxes are one person
    assert by_id["dup.jpg#s1"].meta["n_people"] == 2
    assert b.header["negative_filter"] is None and "no judge" in b.header["negative_filter_note"]


def test_temporal_pairs_are_time_sensitive_classes_of_one_object() -> None:
    partners = temporal_partners(V)
    ts = set(time_sensitive_classes(V).tolist())
    assert partners[hoi("board", "airplane")] == {hoi("exit", "airplane")}
    assert partners[hoi("catch", "frisbee")] == {hoi("throw", "frisbee")}
    assert hoi("direct", "airplane") not in partners  # time-sensitive, but no temporal partner
    assert partners[hoi("swing", "baseball_bat")] == {hoi("wield", "baseball_bat")}
    hv = V.hoi_verb_object
    for a, bs in partners.items():
        assert a in ts and bs <= ts and a not in bs
        assert all(hv[b, 1] == hv[a, 1] and a in partners[b] for b in bs)  # same object, symmetric


def test_temporal_positives_add_only_temporal_partners() -> None:
    ims = [_image("board.jpg", [([0, 0, 50, 100], [("board", "airplane", [60, 0, 600, 300])])]),
           _image("swing.jpg", [([0, 0, 50, 100], [("swing", "baseball_bat", [60, 0, 90, 30])])])]
    ds = HOIDataset.from_images(V, ims, name="temporal")
    for seed in range(5):
        b = build_mcq_benchmark(ds, random_state=seed, redistribute=False, remove_easy=False,
                                temporal_positives=True)
        assert b.header["params"]["temporal_pairs"] == "1"
        for q in b.questions:
            correct = {q.choices[i].hoi for i in q.correct}
            wrong = {c.hoi for i, c in enumerate(q.choices) if i not in q.correct}
            if q.file_name == "board.jpg":
                assert correct == {hoi("board", "airplane"), hoi("exit", "airplane")}
                assert hoi("direct", "airplane") not in wrong  # still never a negative
                assert q.meta["temporal_positives"] == ["exit a/an airplane"]
            else:  # the old rule made throw / break / wield baseball bat all correct
                assert correct == {hoi("swing", "baseball_bat"), hoi("wield", "baseball_bat")}
                assert not wrong & {hoi("throw", "baseball_bat"), hoi("break", "baseball_bat")}
    off = build_mcq_benchmark(ds, random_state=0, redistribute=False, remove_easy=False)
    assert all(len(q.correct) == 1 for q in off.questions) and off.header["params"]["temporal_pairs"] is None


def test_builder_is_deterministic_and_seed_dependent() -> None:
    ds = synthetic_dataset()
    a = build_mcq_benchmark(ds, random_state=3, redistribute=False)
    b = build_mcq_benchmark(ds, random_state=3, redistribute=False)
    c = build_mcq_benchmark(ds, random_state=4, redistribute=False)
    assert a.questions == b.questions
    assert [q.choices for q in a.questions] != [q.choices for q in c.questions]
    with pytest.raises(ConfigError, match="settings"):
        build_mcq_benchmark(ds, settings=(3,))
    with pytest.raises(ConfigError, match="random_state"):
        build_mcq_benchmark(ds, random_state=np.random.default_rng(0))  # type: ignore[arg-type]


def test_redistribution_caps_classes() -> None:
    # 30 images of two different people, one frequent class pair repeated
    ims = []
    for k in range(30):
        ims.append(_image(f"r{k}.jpg", [([0, 0, 50, 100], [("hold", "cup", [5, 5, 9, 9])]),
                                       ([200, 0, 250, 100], [("ride", "horse", [200, 50, 300, 150])])]))
    ds = HOIDataset.from_images(V, ims, name="rep")
    full = build_mcq_benchmark(ds, random_state=0, redistribute=False, settings=(2,))
    capped = build_mcq_benchmark(ds, random_state=0, max_per_class=3, head_exponent=0.0, settings=(2,))
    assert len(full.questions) == 30
    counts: dict[int, int] = {}
    for q in capped.questions:
        for i in q.correct:
            counts[q.choices[i].hoi] = counts.get(q.choices[i].hoi, 0) + 1
    assert max(counts.values()) <= 3 and len(capped.questions) <= 6


def test_judge_template_is_versioned_recorded_and_replaceable(tmp_path) -> None:
    default = load_judge_template()
    assert (default.name, default.version) == ("judge", "1.0")
    assert default.render("ride a/an horse", None) == (
        'Look at the image. Could the following describe an interaction that is actually happening '
        'in it: "ride a/an horse"? Answer with one word: yes or no.')
    assert "the person in the box [1.0, 2.1, 3.0, 4.0]" in default.render("x", (1, 2.06, 3, 4))
    mine = tmp_path / "strict.yaml"
    mine.write_text('name: strict\nversion: 2\nprompt: "Is {choice} visible{target}? yes/no"\n'
                    'target: " for box {box}"\n')
    judge = ScriptedBackend(lambda req: "no", model="j")
    b = build_mcq_benchmark(synthetic_dataset(), random_state=0, redistribute=False, judges=NegativeFilter(
        first=judge, image_root="/images", template=load_judge_template(mine)))
    assert b.header["negative_filter"]["template"] == {
        "name": "strict", "version": "2", "prompt": "Is {choice} visible{target}? yes/no", "target": " for box {box}"}
    texts = [c.messages[0].parts[1].text for c in judge.calls]
    assert any(t.endswith("visible? yes/no") for t in texts) and any(" for box [" in t for t in texts)
    for body, problem in (('name: x\nversion: 1\nprompt: "no choice here"\n', "{choice}"),
                          ('name: x\nversion: 1\nprompt: "{choice} {box}"\n', "unknown placeholder {box}"),
                          ('name: x\nprompt: "{choice}"\n', "version: missing"),
                          ("[1, 2", "not valid YAML")):
        mine.write_text(body)
        with pytest.raises(FormatError, match=problem.replace("{", r"\{").replace("}", r"\}")) as exc:
            load_judge_template(mine)
        assert "\n" not in str(exc.value) and "strict.yaml" in str(exc.value)
    with pytest.raises(ConfigError, match="neither a YAML file"):
        load_judge_template("nope")


def test_judge_cascade_filters_negatives() -> None:
    ds = synthetic_dataset()

    def says_plausible(req) -> str:  # the first judge finds every "hold" negative plausible
        text = req.messages[0].parts[1].text
        return "yes" if '"hold a/an' in text else "no"

    refine = ScriptedBackend(lambda req: "Yes." if "umbrella" in req.messages[0].parts[1].text else "no", model="r")
    cross = ScriptedBackend(lambda req: "no", model="c")
    judges = NegativeFilter(first=ScriptedBackend(says_plausible, model="f"), refine=refine, cross_check=cross,
                            image_root="/images")
    b = build_mcq_benchmark(ds, random_state=0, redistribute=False, judges=judges)
    for q in b.questions:
        for i, c in enumerate(q.choices):
            if i not in q.correct:
                assert not c.text.startswith("hold a/an")
    assert b.header["negative_filter"]["first"] == {"backend": "scripted", "model": "f"}
    assert judges.stats["first_asked"] > 0 and judges.stats.get("cross_check_asked", 0) == judges.stats.get(
        "refine_plausible", 0)
    assert str(judges.first.calls[0].messages[0].parts[0].path).startswith("/images/")
    with pytest.raises(ConfigError, match="cross_check needs refine"):
        NegativeFilter(first=refine, cross_check=cross)


def test_training_set_has_three_questions_per_image() -> None:
    ds = synthetic_dataset()
    t = build_mcq_training_set(ds, random_state=0)
    per_image: dict[str, list[MCQuestion]] = {}
    for q in t.questions:
        per_image.setdefault(q.file_name, []).append(q)
    assert "empty.jpg" not in per_image
    for qs in per_image.values():
        assert sorted(q.setting for q in qs) == [1, 2, 3]
        s3 = next(q for q in qs if q.setting == 3)
        assert len(s3.meta["person_boxes"]) == s3.meta["n_people"]


def test_statistics_and_distribution_helpers() -> None:
    ds = synthetic_dataset()
    b = build_mcq_benchmark(ds, random_state=0, redistribute=False)
    st = question_statistics(b.questions, dataset=ds, train_counts=V.train_counts_official())
    assert st["questions"] == len(b.questions) and st["images"] == len({q.file_name for q in b.questions})
    assert st["images_matched_to_annotations"] == st["images"]
    assert 0 <= st["scene_composition"]["multi_person_different_hoi"] <= 1
    assert kl_divergence([1, 1], [1, 1]) == 0.0
    assert kl_divergence([1, 3], [3, 1]) == pytest.approx(0.25 * np.log(1 / 3) + 0.75 * np.log(3))
    assert kl_divergence([1, 1], [1, 0]) == float("inf")
    assert kl_divergence([1, 1], [1, 0], support="q") == 0.0
    train = np.array([5, 4, 3, 1, 1, 1])
    assert head_tail_ratio(train, np.array([2, 2, 0, 0, 1, 1]), k=2) == 2.0  # tail = last two count-1 classes


def test_hico_det_distribution_facts_from_the_cli(capsys) -> None:  # bundled data: always runs
    from hoibench.cli import main
    from hoibench.datasets import load_dataset

    test = load_dataset("hico-det:test")
    counts = np.bincount(test.pair_hoi[test.pair_hoi >= 0], minlength=600)
    train = V.train_counts_official()
    assert kl_divergence(train, counts) == pytest.approx(0.0876, abs=5e-5)
    assert head_tail_ratio(train, counts) == pytest.approx(80.19, abs=5e-3)
    main(["mcq", "stats", "--dataset", "hico-det:test", "--json"])
    import json

    row = json.loads(capsys.readouterr().out)
    assert row["images"] == 9658 and row["classes"] == 600
    assert row["kl_train_test"] == kl_divergence(train, counts)
    assert row["head_tail_ratio"] == head_tail_ratio(train, counts)
    assert row["scene_composition"] == scene_composition(test).as_dict()
    assert row["scene_composition"]["single_person_single_object"] == pytest.approx(0.607, abs=0.001)
    assert row["paper"]["kl_train_test"] == 0.088


def test_answers_from_detections_top_k_and_person_match() -> None:
    q2 = MCQuestion("a#s2", "a.jpg", 2, tuple(_choices(["ride horse", "hold horse", "feed horse", "walk horse"])),
                    frozenset({0, 1}), person_box=(0.0, 0.0, 10.0, 10.0))
    q1 = MCQuestion("a#s1", "a.jpg", 1, q2.choices, frozenset({0}))
    q_missing = MCQuestion("b#s1", "b.jpg", 1, q2.choices, frozenset({0}))
    H = np.array
    preds = HOIPredictions.from_arrays(
        V, ["a.jpg"], [4],
        boxes_h=H([[0, 0, 10, 10], [0, 0, 10, 10], [50, 50, 60, 60], [0, 0, 10, 10.5]]),
        boxes_o=H([[0, 0, 5, 5]] * 4),
        objects=H([V.object_index("horse")] * 4),
        verbs=H([V.verb_index(v) for v in ("ride", "feed", "walk", "ride")]),
        scores=H([0.9, 0.2, 0.95, 0.8]),
    )
    a2, a1, am = answers_from_detections([q2, q1, q_missing], preds, top_k=5)
    assert a2.selected == {"ride a/an horse", "feed a/an horse"}  # walk belongs to another person
    assert a1.selected == {"ride a/an horse", "feed a/an horse", "walk a/an horse"}
    assert am.selected == frozenset() and am.status == "ok"
    top1 = answers_from_detections([q1], preds, top_k=1)[0]
    assert top1.selected == {"walk a/an horse"}
    far = MCQuestion("c#s2", "a.jpg", 2, q2.choices, frozenset({0}), person_box=(200.0, 200.0, 210.0, 210.0))
    assert answers_from_detections([far], preds)[0].status == "no_person_match"
    # IoU exactly 0.5 matches with >= (paper) but not with > (reference code)
    half = MCQuestion("d#s2", "a.jpg", 2, q2.choices, frozenset({0}), person_box=(0.0, 0.0, 20.0, 10.0))
    assert answers_from_detections([half], preds)[0].selected
    assert answers_from_detections([half], preds, strict=True)[0].status == "no_person_match"


def _choices(names: list[str]):
    from hoibench.data import parse_choice_text

    for n in names:
        verb, obj = n.split()
        yield parse_choice_text(f"{verb} a/an {obj}")
