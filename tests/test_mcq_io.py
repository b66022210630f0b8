"""CrossHOI-Bench loader and our question/answer JSONL files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoibench import FormatError
from hoibench.data import MCAnswer, choice_text, parse_choice_text, reference_class_key
from hoibench.formats import (
    AnswerWriter,
    read_answers,
    read_crosshoi,
    read_questions,
    write_answers,
    write_questions,
)
from hoibench.vocab import hico_det
from tests.conftest import shared_file

# A synthetic file in CrossHOI-Bench's layout (our own content, not copied from the release).
SYNTH_HICO = {
    "img_a.jpg": {"gt_choices": ["ride a/an horse", "hold a/an horse"],
                  "wrong_choices": ["feed a/an horse", "carry a/an giraffe"],
                  "boxes": {"human": [11.0, 21.0, 51.0, 101.0]}},
    "img_b.jpg": {"gt_choices": [], "wrong_choices": ["no_interaction with a/an cow", "pet a/an cow",
                                                      "pet a/an cow"],
                  "boxes": {"human": [1.0, 1.0, 10.0, 10.0]}},
    "img_c.jpg": {"gt_choices": ["sit_on a/an bench"], "wrong_choices": ["sit_on a/an bench", "lie_on a/an bench",
                                                                         "carry a/an bench"],
                  "boxes": {"human": [1.0, 1.0, 10.0, 10.0]}},
}
SYNTH_VCOCO = {
    "COCO_x.jpg": {"QA_0": {"gt_choices": ["look at a/an frisbee"], "wrong_choices": ["throw a/an frisbee"]},
                   "QA_2": {"gt_choices": ["no_interaction a/an frisbee"], "wrong_choices": ["catch a/an frisbee"]}},
}
SYNTH_SWIG = {"hugging_1.jpg": {"QA_0": {"gt_choices": ["hugging"], "wrong_choices": ["kissing", "None"]}}}


def _write(tmp_path: Path, name: str, obj: object) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


def test_choice_text_parsing_maps_classes_and_keeps_oov() -> None:
    v = hico_det()
    ride = parse_choice_text("ride a/an horse")
    assert ride.in_vocabulary and v.hoi_name(ride.hoi) == "ride horse"
    noi = parse_choice_text("no_interaction with a/an cow")
    assert v.verbs[noi.verb] == "no_interaction" and v.objects[noi.object] == "cow" and noi.hoi >= 0
    racket = parse_choice_text("hold a/an tennis racket")  # space instead of underscore
    assert v.hoi_name(racket.hoi) == "hold tennis_racket"
    giraffe = parse_choice_text("carry a/an giraffe")  # both names exist, the pair is no class
    assert giraffe.hoi == -1 and giraffe.verb >= 0 and giraffe.object >= 0
    assert reference_class_key("no_interaction with a/an sports ball") == ("no_interaction", "sports_ball")
    assert reference_class_key("hugging") == ("hugging", "person")
    assert choice_text("no_interaction", "cow") == "no_interaction with a/an cow"


def test_synthetic_hico_file_loads_with_oddities_and_0_based_boxes(tmp_path: Path) -> None:
    qs = read_crosshoi(_write(tmp_path, "h.json", SYNTH_HICO))
    assert [q.id for q in qs] == ["img_a.jpg", "img_b.jpg", "img_c.jpg"]
    a, b, c = qs
    assert a.setting == 2 and a.person_box == (10.0, 20.0, 50.0, 100.0)
    assert a.correct_texts == {"ride a/an horse", "hold a/an horse"}
    assert not a.choices[3].in_vocabulary
    assert b.correct == frozenset() and "no correct choice" in b.meta["oddities"]
    assert len(b.choices) == 2 and b.meta["raw_wrong"] == SYNTH_HICO["img_b.jpg"]["wrong_choices"]
    assert c.correct_texts == {"sit_on a/an bench"} and len(c.choices) == 3
    assert any("both correct and wrong" in o for o in c.meta["oddities"])
    assert read_crosshoi(tmp_path / "h.json", setting=3)[0].setting == 3


def test_nested_files_detect_dataset_and_ids(tmp_path: Path) -> None:
    qs = read_questions(_write(tmp_path, "v.json", SYNTH_VCOCO))
    assert [q.id for q in qs] == ["COCO_x.jpg#QA_0", "COCO_x.jpg#QA_2"]
    assert {q.label_space for q in qs} == {"v-coco"} and qs[0].setting == 1
    sw = read_questions(_write(tmp_path, "s.json", SYNTH_SWIG))
    assert sw[0].id == "hugging_1.jpg" and sw[0].label_space == "swig-hoi"
    assert "3 choices" in sw[0].meta["oddities"]


def test_bad_crosshoi_records_name_file_record_field(tmp_path: Path) -> None:
    bad = {"x.jpg": {"gt_choices": "ride a/an horse", "wrong_choices": []}}
    with pytest.raises(FormatError, match=r"b\.json: record 0: x\.jpg\.gt_choices: expected a list"):
        read_crosshoi(_write(tmp_path, "b.json", bad))
    bad_box = {"x.jpg": {"gt_choices": [], "wrong_choices": ["a"], "boxes": {"human": [1, 2, 3]}}}
    with pytest.raises(FormatError, match=r"x\.jpg\.boxes\.human"):
        read_crosshoi(_write(tmp_path, "c.json", bad_box))
    with pytest.raises(FormatError, match="neither question JSONL"):
        read_questions(_write(tmp_path, "d.json", {"images": []}))


def test_questions_jsonl_round_trip_is_byte_stable(tmp_path: Path) -> None:
    qs = read_crosshoi(_write(tmp_path, "h.json", SYNTH_HICO))
    out = tmp_path / "q.jsonl"
    write_questions(out, qs, header={"seed": 3, "builder": "test"})
    back = read_questions(out)
    assert back.header == {"seed": 3, "builder": "test"} and back.seed == 3
    assert list(back) == list(qs)
    assert [q.meta for q in back] == [dict(q.meta) for q in qs]
    out2 = tmp_path / "q2.jsonl"
    write_questions(out2, back, header=back.header)
    assert out.read_bytes() == out2.read_bytes()


def test_question_line_errors_name_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "q.jsonl"
    p.write_text('{"header": {}}\n{"id": "a", "file_name": "a.jpg", "setting": 1, '
                 '"choices": [{"text": "x"}], "correct": [3]}\n')
    with pytest.raises(FormatError, match=r"q\.jsonl: record 2: correct: 3 is not a choice index"):
        read_questions(p)


def test_answers_letters_texts_resume_and_truncation(tmp_path: Path) -> None:
    qs = read_crosshoi(_write(tmp_path, "h.json", SYNTH_HICO))
    a = qs[0]
    order = a.lettered(seed=5)
    letter_of = {c.text: k for k, c in order}
    p = tmp_path / "ans.jsonl"
    with AnswerWriter(p, header={"seed": 5}) as w:
        w.write(MCAnswer(a.id, frozenset({letter_of["ride a/an horse"]}), raw="A"))
    # simulate a crash in the middle of the second line
    with open(p, "ab") as fh:
        fh.write(b'{"question_id": "img_b.jpg", "sel')
    got = read_answers(p, qs)
    assert got.n_truncated == 1
    assert got.by_id()[a.id].selected == {"ride a/an horse"}
    with AnswerWriter(p) as w:  # resume: the truncated line is dropped, done ids are known
        assert w.done == {a.id}
        w.write(MCAnswer("img_b.jpg", frozenset({"pet a/an cow"})))
        w.write(MCAnswer(a.id, frozenset({"hold a/an horse", "not a choice"})))
    got = read_answers(p, qs)
    assert got.n_truncated == 0 and got.n_replaced == 1
    assert got.by_id()[a.id].selected == {"hold a/an horse", "not a choice"}
    with pytest.raises(FormatError, match="letters"):
        bad = tmp_path / "bad.jsonl"
        write_answers(bad, [MCAnswer(a.id, frozenset({"Z"}))])
        read_answers(bad, qs)


@pytest.mark.shared_data
@pytest.mark.parametrize("name,n_questions", [
    ("hicodet/our_test/crosshoi_bench_allscene_final.json", 1274),
    ("hicodet/our_test/crosshoi_bench_hum_box_final.json", 1274),
    ("hicodet/our_test/crosshoi_bench_hum_obj_box_final.json", 1274),
    ("vcoco/our_test/vcoco_newbench_person.json", 647),
    ("swighoi/our_test/swighoi_newbench_none.json", 1852),
])
def test_released_files_load(name: str, n_questions: int) -> None:
    qs = read_questions(shared_file(f"crosshoi-bench/{name}"))
    assert len(qs) == n_questions
    assert len({q.id for q in qs}) == n_questions


@pytest.mark.shared_data
def test_released_hico_oddities_and_boxes_match_instances() -> None:
    qs = read_questions(shared_file("crosshoi-bench/hicodet/our_test/crosshoi_bench_hum_obj_box_final.json"))
    assert sum(not q.correct for q in qs) == 4  # data README: four questions without a correct choice
    assert sum(len(q.choices) == 3 for q in qs) >= 1
    n_vocab = sum(c.in_vocabulary for q in qs for c in q.choices)
    assert n_vocab / sum(len(q.choices) for q in qs) > 0.95
    inst = json.loads(shared_file("hico-det/instances_test2015.json").read_text())
    index = {f: i for i, f in enumerate(inst["filenames"])}
    hits = 0
    for q in qs[:200]:
        raw = [[v - 1 for v in b] for b in inst["annotation"][index[q.file_name]]["boxes_h"]]
        hits += list(q.person_box) in raw
    assert hits >= 195  # boxes are HICO-DET's 1-based boxes, shifted to 0-based


@pytest.mark.shared_data
@pytest.mark.parametrize("name,n_correct_classes", [("vcoco_newbench_person.json", 196),
                                                    ("vcoco_newbench_none.json", 202)])
def test_released_vcoco_class_counts_match_its_readme(name: str, n_correct_classes: int) -> None:
    """The release's vcoco/readme.md: 647 questions, 499 images, 196 (person box) / 202 (no box)
    HOI classes, 323 with the negative-only ones."""
    from hoibench.benchmarks.mcq import question_statistics

    st = question_statistics(read_questions(shared_file(f"crosshoi-bench/vcoco/our_test/{name}")))
    assert (st["questions"], st["images"]) == (647, 499)
    assert st["distinct_correct_texts"] == n_correct_classes and st["distinct_choice_texts"] == 323
