"""An answers file records the questions it was asked (setting, question file hash, shard,
--limit, model), and ``mcq score|analyze|compare`` and ``report`` score exactly those by default:
a ``mcq run --setting 2`` on a file holding settings 1 and 2 never counts the setting-1 questions
as misses, and results of different settings never share a chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from hoibench.cli import main
from hoibench.data import MCAnswer
from hoibench.formats import read_answers, read_questions, write_answers
from hoibench.formats.questions import write_questions
from hoibench.testing import FakeChatServer, request_text
from tests.conftest import FIXTURES

ANN = FIXTURES / "mini_instances_test2015.json"


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Questions of settings 1 and 2 from the mini HICO-DET fixture, and blank images of their sizes."""
    d = tmp_path_factory.mktemp("bench")
    main(["mcq", "build", "--dataset", str(ANN), "--no-redistribute", "--no-remove-easy",
          "--out", str(d / "q.jsonl"), "--json"])
    qs = read_questions(d / "q.jsonl")
    assert {q.setting for q in qs} == {1, 2}
    for q in qs:
        p = d / "images" / q.file_name
        if not p.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (q.width, q.height)).save(p)
    return d


def _reply(body: dict) -> str:
    """A model that always picks the first choice, and also the second on every other prompt."""
    return "A" if len(request_text(body)) % 2 else "A,B"


def _run(bench: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str, model: str = "vlm-x") -> None:
    with FakeChatServer(_reply) as server:
        main(["mcq", "run", "--questions", str(bench / "q.jsonl"), "--images", str(bench / "images"),
              "--model", model, "--base-url", server.url, "--box-convention", "original", "--out", str(out),
              "--no-progress", "--json", *extra])
    capsys.readouterr()


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict, str]:
    """The JSON a command prints with ``--json -``, and its stderr."""
    main([*args, "--json", "-"])
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_setting_2_run_is_scored_analysed_and_compared_on_setting_2(bench, tmp_path, capsys):
    from hoibench.analysis import head_to_tail_recall, train_class_counts
    from hoibench.evaluation import mcq_metrics

    qpath = bench / "q.jsonl"
    out = tmp_path / "a.jsonl"
    _run(bench, out, capsys, "--setting", "2")
    header = read_answers(out).header
    assert header["setting"] == 2 and header["questions"].startswith("q.jsonl:sha256:")
    qs = list(read_questions(qpath))
    qs2 = [q for q in qs if q.setting == 2]
    answers = read_answers(out, qs)
    want = mcq_metrics(answers, qs2)
    assert mcq_metrics(answers, qs).macro_f1 < want.macro_f1  # what counting setting 1 as misses gave

    score, err = _json(capsys, "mcq", "score", "--questions", str(qpath), "--answers", str(out))
    assert score["n_questions"] == len(qs2) and score["n_missing"] == 0 and "no answer" not in err
    assert score["macro_f1"] == pytest.approx(want.macro_f1)
    assert score["setting"] == 2 and score["model"] == "vlm-x"  # named by the run, not by a file stem

    h2t, _ = _json(capsys, "mcq", "analyze", "--questions", str(qpath), "--answers", str(out),
                   "--dataset", str(ANN))
    expect = head_to_tail_recall(qs2, answers, train_class_counts("official"), n_bins=10).as_dict()
    assert h2t["head_to_tail"] == json.loads(json.dumps(expect))
    assert h2t["setting"] == 2 and h2t["n_questions"] == len(qs2)

    cmp, _ = _json(capsys, "mcq", "compare", str(out), str(out), "--questions", str(qpath), "--bootstrap", "20")
    assert cmp["n_questions"] == len(qs2) and cmp["setting"] == 2

    # asking for the setting it was not asked is one line, not "answers are for questions not in ..."
    for cmd in (["mcq", "score", "--answers", str(out)], ["mcq", "analyze", "--answers", str(out)]):
        err = _error(capsys, *cmd, "--questions", str(qpath), "--setting", "1")
        assert "asked in setting 2, not 1" in err


def test_answers_of_another_question_file_are_refused(bench, tmp_path, capsys):
    out = tmp_path / "a.jsonl"
    _run(bench, out, capsys, "--setting", "2", "--limit", "3")
    qs = list(read_questions(bench / "q.jsonl"))
    other = tmp_path / "other.jsonl"
    write_questions(other, qs[:-1], header={"seed": 0})  # the same ids, one question fewer
    for cmd in (["mcq", "score", "--answers", str(out)], ["mcq", "analyze", "--answers", str(out)],
                ["mcq", "compare", str(out), str(out)]):
        err = _error(capsys, *cmd, "--questions", str(other))
        assert "was answered on another question file" in err and "q.jsonl:sha256:" in err


def test_limit_and_shard_runs_are_scored_on_what_they_asked(bench, tmp_path, capsys):
    qpath = str(bench / "q.jsonl")
    limited = tmp_path / "limited.jsonl"
    _run(bench, limited, capsys, "--setting", "2", "--limit", "5")
    score, err = _json(capsys, "mcq", "score", "--questions", qpath, "--answers", str(limited))
    assert score["n_questions"] == 5 and score["n_missing"] == 0 and "--limit 5" in err

    from hoibench.runners.mcq import shard_questions

    shard = tmp_path / "shard.jsonl"
    _run(bench, shard, capsys, "--shard", "1/2")  # every setting, each question in its own
    mine = shard_questions(list(read_questions(qpath)), 1, 2)
    score, _ = _json(capsys, "mcq", "score", "--questions", qpath, "--answers", str(shard))
    assert score["n_questions"] == len(mine) and score["n_missing"] == 0
    assert score["setting"] is None and score["settings"] == [1, 2]


def test_a_file_without_a_record_is_scored_on_its_answers_with_a_note(bench, tmp_path, capsys):
    qpath = str(bench / "q.jsonl")
    qs = list(read_questions(qpath))
    qs2 = [q for q in qs if q.setting == 2]
    plain = tmp_path / "plain.jsonl"  # another tool's file: answers only, setting 2 only
    write_answers(plain, [MCAnswer(q.id, q.correct_texts) for q in qs2])
    score, err = _json(capsys, "mcq", "score", "--questions", qpath, "--answers", str(plain))
    assert score["n_questions"] == len(qs2) and score["exact_match"] == 1.0 and score["setting"] == 2
    assert f"{len(qs) - len(qs2)} questions" in err and "left out" in err and "--count-unanswered" in err
    counted, _ = _json(capsys, "mcq", "score", "--questions", qpath, "--answers", str(plain), "--count-unanswered")
    assert counted["n_questions"] == len(qs) and counted["n_missing"] == len(qs) - len(qs2)
    assert counted["exact_match"] == pytest.approx(len(qs2) / len(qs))


def test_the_report_keeps_settings_apart(bench, tmp_path, capsys):
    from hoibench.reports import build_report
    from hoibench.results import read_results

    qpath = str(bench / "q.jsonl")
    results = []
    for s in ("1", "2"):
        out = tmp_path / f"s{s}.jsonl"
        _run(bench, out, capsys, "--setting", s)
        res = tmp_path / f"bench{s}.json"  # the same benchmark name, no --model
        main(["mcq", "score", "--questions", qpath, "--answers", str(out), "--json", str(res)])
        results.append(res)
    capsys.readouterr()
    records = read_results(results)
    assert [r.extra["setting"] for r in records] == [1, 2] and {r.model for r in records} == {"vlm-x"}
    rep = build_report(records)
    names = [f.name for f in rep.figures if f.name.startswith("mcq-")]
    assert len(names) == 2, names  # one chart per setting
    rows = next(t for t in rep.tables if t.name == "mcq-summary").rows
    assert [r[1] for r in rows] == ["q.jsonl (setting 1)", "q.jsonl (setting 2)"]
    err = _error(capsys, "mcq", "compare", str(tmp_path / "s1.jsonl"), str(tmp_path / "s2.jsonl"),
                 "--questions", qpath)
    assert "setting 2" in err and "setting 1" in err
