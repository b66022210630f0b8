"""Statistics of the multiple-choice benchmark: bootstrap resampling by image, the paired
comparison of two models (``mcq compare``) and exact match under every choice order."""

from __future__ import annotations

import json

import pytest

from hoibench import ConfigError
from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.evaluation import MCQResult, all_orders_exact_match, mcq_compare, mcq_metrics
from hoibench.formats import write_answers, write_questions
from tests.conftest import one_line_error

TEXTS = ("hold a/an cup", "ride a/an horse", "feed a/an dog", "wash a/an car")


def _questions(n_images: int, per_image: int) -> list[MCQuestion]:
    return [MCQuestion(f"q{i}_{j}", f"im{i}.jpg", 2 if per_image > 1 else 1, tuple(Choice(t) for t in TEXTS),
                       frozenset({0}), person_box=(0.0, 0.0, 10.0 + j, 10.0) if per_image > 1 else None)
            for i in range(n_images) for j in range(per_image)]


def _answers(qs: list[MCQuestion], right: set[str]) -> dict[str, MCAnswer]:
    return {q.id: MCAnswer(q.id, frozenset({TEXTS[0] if q.id in right else TEXTS[1]})) for q in qs}


def _width(r: MCQResult, metric: str = "exact_match") -> float:
    assert r.ci is not None
    lo, hi = r.ci[metric]
    return hi - lo


def test_image_bootstrap_is_the_default_when_images_hold_several_questions_and_is_wider() -> None:
    qs = _questions(20, 3)
    # an image's questions are all right or all wrong: 30 questions worth only 20 independent draws
    ans = _answers(qs, {q.id for q in qs if int(q.file_name[2:-4]) % 2 == 0})
    auto = mcq_metrics(ans, qs, n_bootstrap=2000, random_state=0)
    by_image = mcq_metrics(ans, qs, n_bootstrap=2000, random_state=0, bootstrap_unit="image")
    by_question = mcq_metrics(ans, qs, n_bootstrap=2000, random_state=0, bootstrap_unit="question")
    assert auto.bootstrap_unit == "image" and auto.ci == by_image.ci
    assert by_question.bootstrap_unit == "question"
    # the sd of a mean over clusters of 3 equal values is sqrt(3) times that over 60 independent ones
    assert _width(by_image) > 1.4 * _width(by_question)
    assert by_image.exact_match == by_question.exact_match == 0.5
    # one question per image: auto resamples questions, as before
    single = _questions(30, 1)
    r = mcq_metrics(_answers(single, {q.id for q in single[:10]}), single, n_bootstrap=200, random_state=0)
    assert r.bootstrap_unit == "question"
    back = MCQResult.from_json(auto.to_json())
    assert back.bootstrap_unit == "image" and back.ci is not None and auto.ci is not None
    assert back.ci["exact_match"] == pytest.approx(auto.ci["exact_match"])
    with pytest.raises(ConfigError, match="bootstrap_unit"):
        mcq_metrics(ans, qs, n_bootstrap=10, bootstrap_unit="person")


def test_paired_comparison_difference_interval_and_ties() -> None:
    qs = _questions(15, 2)
    ids = [q.id for q in qs]
    a = _answers(qs, set(ids[:24]))
    b = _answers(qs, set(ids[:12]))  # right wherever A is right on the first 12 only
    cmp = mcq_compare(a, b, qs, names=("A", "B"), n_bootstrap=500, random_state=0)
    ra, rb = mcq_metrics(a, qs), mcq_metrics(b, qs)
    for name in ("macro_f1", "instance_f1", "exact_match"):
        assert cmp.a[name] == pytest.approx(getattr(ra, name))
        assert cmp.b[name] == pytest.approx(getattr(rb, name))
        assert cmp.difference[name] == pytest.approx(getattr(ra, name) - getattr(rb, name))
    assert cmp.difference["exact_match"] == pytest.approx(12 / 30)
    lo, hi = cmp.ci["exact_match"]
    # A dominates B question by question: no resample can favour B
    assert 0.0 <= lo < cmp.difference["exact_match"] < hi and cmp.p_a_better["exact_match"] > 0.99
    assert cmp.bootstrap_unit == "image" and cmp.n_images == 15 and cmp.n_questions == 30
    same = mcq_compare(a, a, qs, n_bootstrap=100)
    assert same.ci["exact_match"] == (0.0, 0.0) and same.p_tie["exact_match"] == 1.0
    assert same.p_a_better["exact_match"] == 0.0
    rows = json.loads(json.dumps(cmp.to_json()))["metrics"]
    assert [r["metric"] for r in rows][:2] == ["macro_f1", "instance_f1"]


def test_all_orders_exact_match_needs_every_order_right() -> None:
    qs = _questions(10, 1)
    ids = [q.id for q in qs]
    orders = [_answers(qs, set(ids[:8])), _answers(qs, set(ids[2:10])), _answers(qs, set(ids[:6]) | {ids[9]})]
    both = set(ids[:8]) & set(ids[2:10]) & (set(ids[:6]) | {ids[9]})
    assert all_orders_exact_match(orders, qs) == pytest.approx(len(both) / len(qs))
    assert all_orders_exact_match(orders, qs) <= min(mcq_metrics(o, qs).exact_match for o in orders)
    # crosshoi divides exact matches by images: two questions per image halve the denominator
    qs2 = _questions(5, 2)
    o2 = [_answers(qs2, {q.id for q in qs2}), _answers(qs2, {qs2[0].id})]
    assert all_orders_exact_match(o2, qs2, protocol="crosshoi") == pytest.approx(1 / 5)
    with pytest.raises(ConfigError, match="at least two"):
        all_orders_exact_match(orders[:1], qs)


def test_cli_compare_and_all_orders_in_score(tmp_path, capsys) -> None:
    from hoibench.cli import main

    qs = _questions(8, 2)
    ids = [q.id for q in qs]
    write_questions(tmp_path / "q.jsonl", qs)
    write_answers(tmp_path / "a.jsonl", list(_answers(qs, set(ids[:12])).values()), header={"permutation": 0})
    write_answers(tmp_path / "b.jsonl", list(_answers(qs, set(ids[:4])).values()), header={"permutation": 1})
    main(["mcq", "compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--questions",
          str(tmp_path / "q.jsonl"), "--bootstrap", "200", "--json", "-"])
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "mcq_comparison" and out["bootstrap_unit"] == "image"
    em = next(r for r in out["metrics"] if r["metric"] == "exact_match")
    assert em["difference"] == pytest.approx(8 / 16) and em["model_a"] == "a"
    # two files of two orders: the all-orders exact match sits beside the per-order spread
    main(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(tmp_path / "a.jsonl"),
          "--answers", str(tmp_path / "b.jsonl"), "--json", str(tmp_path / "m.json")])
    assert "exact match under all 2 orders: 25.00%" in capsys.readouterr().out
    m = json.loads((tmp_path / "m.json").read_text())
    assert m["all_orders"] == {"exact_match": pytest.approx(4 / 16), "n_orders": 2}
    assert "position_sensitivity" in m
    err = one_line_error(["mcq", "compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--questions",
                          str(tmp_path / "q.jsonl"), "--name", "x"], capsys)
    assert "--name" in err
    err = one_line_error(["mcq", "score", "--questions", str(tmp_path / "q.jsonl"), "--answers",
                          str(tmp_path / "a.jsonl"), "--bootstrap-unit", "image"], capsys)
    assert "bootstrap" in err
