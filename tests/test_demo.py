"""``hoibench demo``: runs on the bundled data, its numbers equal the evaluators run by hand on
the files it writes, its report renders in Chromium, and a re-run reuses finished results."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from hoibench.cli import main
from hoibench.datasets import load_dataset
from hoibench.demo import DEMO_ANSWERERS, DEMO_DETECTORS, DemoConfig, run_demo
from hoibench.evaluation import mcq_metrics
from hoibench.formats import read_answers, read_dataset, read_questions
from hoibench.results import read_results
from tests.test_report import CHROMIUM, check_html_in_chromium, check_report_as_a_reader_sees_it

MCQ_METRICS = ("macro_f1", "instance_f1", "micro_f1", "exact_match", "avg_precision", "avg_recall")
QUICK = {"max_test_images": 250, "n_bootstrap": 50, "save_predictions": True}


@pytest.fixture(scope="module")
def quick_demo(tmp_path_factory):
    """One quick demo through the CLI (first 250 test images, 50 bootstrap resamples)."""
    out = tmp_path_factory.mktemp("demo") / "out"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["demo", "--out", str(out), "--max-test-images", "250", "--bootstrap", "50",
              "--save-predictions", "--quiet"])
    return out, buf.getvalue()


def test_demo_prints_report_path_and_writes_everything(quick_demo):
    out, printed = quick_demo
    assert printed.strip() == str(out / "report.html")
    marker = json.loads((out / "demo.json").read_text())
    assert marker["finished"] and marker["config"]["max_test_images"] == 250
    results = read_results(sorted((out / "results").rglob("*.json")))
    kinds = sorted(r.kind for r in results)
    n_det, n_ans = len(DEMO_DETECTORS), len(DEMO_ANSWERERS)
    assert kinds.count("hico_map") == 3 * n_det
    assert kinds.count("mcq_metrics") == kinds.count("class_recall") == 2 * n_ans
    assert {r.source for r in results} == {str(p) for p in (out / "results").rglob("*.json")}
    report = json.loads((out / "report.json").read_text())
    tables = {t["name"] for s in report["sections"] for t in s["tables"]}
    assert {"stats-hico-det-sg", "stats-b-right", "stats-mcq", "map", "class-ap-spread",
            "ranking-shift-hico-det-vs-b-right", "mcq-summary", "mcq-metrics", "head-to-tail-recall",
            "class-ap-head-to-tail"} <= tables
    figures = {f["name"] for s in report["sections"] for f in s["figures"]}
    assert {"map-bars", "class-ap-boxplot", "head-to-tail-mcq-hoi-setting-1",
            "class-ap-head-to-tail-b-right"} <= figures
    assert all((out / "figures" / f"{f}.png").stat().st_size > 1000 for f in figures)


def _eval_by_hand(result_file: Path, tmp: Path) -> tuple[dict, dict]:
    """The demo's result and ``hoibench eval hico`` run on the files it names."""
    got = json.loads(result_file.read_text())
    hand = got["evaluate_by_hand"]
    out = tmp / f"{result_file.parent.name}-{result_file.name}"
    args = ["eval", "hico", "--gt", hand["gt"], "--pred", hand["predictions"], "--json", str(out)]
    if hand["classes"]:
        args += ["--classes", hand["classes"]]
    assert hand["command"].startswith(" ".join(["hoibench", *args[:6]]))
    main(args)
    return got, json.loads(out.read_text())


def _same_map(got: dict, ref: dict, where: object) -> None:
    for k in ("full", "rare", "non_rare"):
        assert got[k] == pytest.approx(ref[k], abs=1e-12), (where, k)
    assert got["subsets"] == pytest.approx(ref["subsets"], abs=1e-12), where
    a = np.array([np.nan if x is None else x for x in got["per_class_ap"]])
    b = np.array([np.nan if x is None else x for x in ref["per_class_ap"]])
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=str(where))
    assert got["n_gt"] == ref["n_gt"]


def test_demo_map_equals_the_evaluator_run_by_hand(quick_demo, tmp_path, capsys):
    out, _ = quick_demo
    files = sorted((out / "results" / "map").rglob("*.json"))
    assert len(files) == 3 * len(DEMO_DETECTORS)
    for path in files:
        got, ref = _eval_by_hand(path, tmp_path)
        _same_map(got, ref, path)
        if got["headline"] != "full":
            assert got["headline"] in ref["subsets"]
    capsys.readouterr()


def test_demo_map_shows_what_the_benchmarks_measure(quick_demo):
    out, _ = quick_demo
    res = {(r.model, r.benchmark): r.result
           for r in read_results(sorted((out / "results" / "map").rglob("*.json")))}
    for model in DEMO_DETECTORS:
        # a pixel-blind prior scores on the original split and exactly zero on unseen combinations
        assert res[(model, "HICO-DET")].full > 0.01
        assert res[(model, "HICO-DET-SG1")].headline_map == 0.0
        assert res[(model, "HICO-DET-SG1")].headline == "unseen"
        assert res[(model, "B-RIGHT")].headline == "selected"
        assert res[(model, "HICO-DET")].headline == "full"
    # more verbs per pair can only add true positives for the kept classes
    assert res[("object-prior", "HICO-DET")].full >= res[("object-prior-top1", "HICO-DET")].full


def test_demo_mcq_equals_the_scorer_run_by_hand(quick_demo):
    out, _ = quick_demo
    questions = read_questions(out / "benchmarks" / "mcq" / "questions.jsonl")
    for path in sorted((out / "results" / "mcq").glob("*.json")):
        got = json.loads(path.read_text())
        hand = got["evaluate_by_hand"]
        qs = [q for q in questions if q.setting == hand["setting"]]
        answers = read_answers(hand["answers"], questions)
        ref = mcq_metrics(answers, qs, n_bootstrap=50, random_state=0).to_json()
        for k in ("macro_f1", "instance_f1", "micro_f1", "exact_match", "avg_precision", "avg_recall"):
            assert got[k] == pytest.approx(ref[k], abs=1e-12), (path, k)
            assert got["ci"].get(k) == pytest.approx(ref["ci"].get(k), abs=1e-12)  # macro-F1: none
    # the prior answerer beats the random floor on exact match in both settings
    res = {(r.model, r.benchmark): r.result
           for r in read_results(sorted((out / "results" / "mcq").glob("*.json")))}
    for s in (1, 2):
        bench = f"MCQ-HOI setting {s}"
        assert res[("random", bench)].avg_precision < res[("prior-top1", bench)].avg_precision


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs Debian's "
                                             "chromium package: apt-get install -y chromium)")
def test_demo_report_renders_in_headless_chromium(quick_demo, tmp_path):
    out, _ = quick_demo
    report = json.loads((out / "report.json").read_text())
    n_tables = sum(len(s["tables"]) for s in report["sections"])
    n_figures = sum(len(s["figures"]) for s in report["sections"])
    check_html_in_chromium(out / "report.html", tmp_path, n_images=n_figures, n_tables=n_tables,
                           screenshot_name="demo-report-screenshot.png")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs Debian's "
                                             "chromium package: apt-get install -y chromium)")
def test_demo_report_as_a_reader_sees_it(quick_demo, tmp_path):
    """Issue 15's Must show, on the demo's report: every figure there, one colour per benchmark
    across figures, "n/a" for every undefined value, no arrow for a tie; full-page screenshot."""
    out, _ = quick_demo
    seen = check_report_as_a_reader_sees_it(out, tmp_path, "demo-report-full-page.png")
    names = {f["name"] for f in seen["figures"]}
    assert {"map-bars", "class-ap-boxplot", "class-ap-head-to-tail-hico-det", "class-ap-head-to-tail-b-right",
            "mcq-mcq-hoi-setting-1", "mcq-mcq-hoi-setting-2", "head-to-tail-mcq-hoi-setting-1"} <= names
    # the benchmarks appear in several figures, each time in the same colour
    in_figures = {}
    for f in seen["figures"]:
        for b in f["colors"]:
            in_figures[b] = in_figures.get(b, 0) + 1
    assert in_figures["HICO-DET"] >= 3 and in_figures["B-RIGHT"] >= 3
    # SG1's test set has no seen class: "n/a", not "0.00"; its all-zero unseen mAP ties every model
    header, *rows = seen["tables"]["map"]
    sg_rows = [r for r in rows if r[1] == "HICO-DET-SG1"]
    assert sg_rows and all(r[header.index("seen")] == "n/a" for r in sg_rows)
    header, *rows = seen["tables"]["ranking-shift-hico-det-vs-hico-det-sg1"]
    assert [r[header.index("arrow")] for r in rows] == ["–", "=", "="]
    # SG1's unseen classes have no train instance: no head-to-tail panel drawn from another split
    assert "class-ap-head-to-tail-hico-det-sg1" not in names
    report = json.loads((out / "report.json").read_text())
    text = next(s["text"] for s in report["sections"] if s["title"].startswith("Class-AP"))
    assert "HICO-DET-SG1: no head-to-tail profile, every test class has 0 train instances" in text


def test_report_numbers_equal_the_cli_run_by_hand(quick_demo, tmp_path, capsys):
    """Every number of the report's mAP, multiple-choice, spread and ranking tables is what
    `hoibench eval hico`, `mcq score`, `analyze class-ap` and `analyze ranking` print for the same
    files."""
    import csv

    out, _ = quick_demo
    report = json.loads((out / "report.json").read_text())
    tables = {t["name"]: t for s in report["sections"] for t in s["tables"]}

    def rows(name):
        t = tables[name]
        return [dict(zip(t["columns"], r)) for r in t["rows"]]

    # mAP: eval hico on the saved predictions
    by_hand = {}
    for path in sorted((out / "results" / "map").rglob("*.json")):
        got, ref = _eval_by_hand(path, tmp_path)
        by_hand[(got["model"], got["benchmark"])] = ref
    for r in rows("map"):
        ref = by_hand[(r["model"], r["benchmark"])]
        head = ref["headline"]
        assert r["mAP"] == pytest.approx(ref["full"] if head == "full" else ref["subsets"][head], abs=1e-9)
        for k in ("full", "rare", "non_rare"):
            assert r[k] is None or r[k] == pytest.approx(ref[k], abs=1e-9), (r["model"], k)
        for k, v in ref["subsets"].items():
            assert r[k] == (None if v is None else pytest.approx(v, abs=1e-9)), (r["model"], k)
    # multiple choice: mcq score with the demo's bootstrap and seed
    for path in sorted((out / "results" / "mcq").glob("*.json")):
        hand = json.loads(path.read_text())
        j = tmp_path / f"score-{path.name}"
        main(["mcq", "score", "--questions", hand["evaluate_by_hand"]["questions"], "--answers",
              hand["evaluate_by_hand"]["answers"], "--setting", str(hand["evaluate_by_hand"]["setting"]),
              "--bootstrap", "50", "--json", str(j)])
        ref = json.loads(j.read_text())
        mine = {r["metric"]: r for r in rows("mcq-metrics")
                if (r["model"], r["benchmark"]) == (hand["model"], hand["benchmark"])}
        assert set(mine) == set(MCQ_METRICS)
        for k in MCQ_METRICS:
            assert mine[k]["value"] == pytest.approx(100 * ref[k], abs=1e-9), (path, k)
            want = [100 * x for x in ref["ci"][k]] if k in ref["ci"] else [None, None]  # macro-F1: its SE
            assert [mine[k]["ci_low"], mine[k]["ci_high"]] == pytest.approx(want, abs=1e-9)
    # class-AP spread and ranking: the analyze commands on the result files
    files = [str(p) for p in sorted((out / "results" / "map").rglob("*.json"))]
    main(["analyze", "class-ap", *files, "--out", str(tmp_path / "a")])
    spread = {(r["model"], r["benchmark"]): r for r in csv.DictReader((tmp_path / "a" / "class-ap-spread.csv").open())}
    for r in rows("class-ap-spread"):
        ref = spread[(r["model"], r["benchmark"])]
        for k in ("mean", "median", "variance", "iqr", "zero_ap_share"):
            assert r[k] == pytest.approx(float(ref[k]), abs=1e-9), (r["model"], k)
    for other in ("b-right", "hico-det-sg1"):
        main(["analyze", "ranking", *files, "--reference", "hico-det", "--other", other, "--out",
              str(tmp_path / other)])
        ref = list(csv.DictReader((tmp_path / other / "ranking-shift.csv").open()))
        mine = rows(f"ranking-shift-hico-det-vs-{other}")
        assert [(r["model"], str(r["shift"]), r["arrow"]) for r in mine] == \
            [(r["model"], r["shift"], r["arrow"]) for r in ref]
        bench = next(k for k in mine[0] if k.startswith("map_") and k != "map_HICO-DET")
        assert [r[bench] for r in mine] == pytest.approx([float(r[bench]) for r in ref], abs=1e-9)
    capsys.readouterr()


def test_demo_rerun_reuses_finished_results(quick_demo, tmp_path, capsys):
    out, _ = quick_demo
    # a copy of the finished results, so the module's output stays as it was
    import shutil

    copy = tmp_path / "again"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("predictions"))
    for p in (copy / "results").rglob("*.json"):  # keep paths valid for the copy
        p.write_text(p.read_text().replace(str(out), str(copy)))
    before = {p: p.stat().st_mtime_ns for p in (copy / "results").rglob("*.json")}
    time.sleep(0.01)
    cfg = DemoConfig(max_test_images=250, n_bootstrap=50, save_predictions=True)
    main(["demo", "--out", str(copy), "--max-test-images", "250", "--bootstrap", "50",
          "--save-predictions"])  # with progress bar and summary
    captured = capsys.readouterr()
    assert captured.out.strip() == str(copy / "report.html")
    assert "mAP (%)" in captured.err and "object-prior-top5" in captured.err
    assert {p: p.stat().st_mtime_ns for p in (copy / "results").rglob("*.json")} == before
    marker = json.loads((copy / "demo.json").read_text())
    assert len(marker["results"]) == len(before)
    assert marker["finished"] and list(marker["timings"]) == ["writing the report", "total"]
    assert (copy / "report.html").read_text().count("<table ") == \
        (out / "report.html").read_text().count("<table ")
    # a killed run with the same provenance resumes from its staging folder beside the target
    # (.NAME.partial) and recomputes only what is missing; the folder is swapped in when done
    from hoibench.demo import partial_folder

    partial = partial_folder(copy)
    shutil.copytree(copy, partial)
    (partial / "results" / "mcq" / "random-setting1.json").unlink()
    marker["finished"] = False
    (partial / "demo.json").write_text(json.dumps(marker))
    shutil.rmtree(copy)
    again = run_demo(copy, config=cfg, progress=False)
    assert (copy / "results" / "mcq" / "random-setting1.json").exists() and not partial.exists()
    kept = {p: t for p, t in before.items() if p.name != "random-setting1.json"}
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())
    assert len(again.results) == len(before)


def test_demo_rejects_bad_options(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--out", str(tmp_path), "--max-test-images", "0"])
    assert exc.value.code == 2
    assert "max-test-images" in capsys.readouterr().err


def test_full_demo_matches_the_evaluators_run_by_hand(tmp_path, capsys):
    # the full main job (about 10 s on 2 cores; its timing is in perf/bench_demo.py)
    done = run_demo(tmp_path / "full", config=DemoConfig(), progress=False)
    # by hand, for the object prior on each benchmark (predictions written afterwards)
    from hoibench.formats import write_predictions
    from hoibench.runners import ObjectPriorDetector

    for path in sorted((tmp_path / "full" / "results" / "map").rglob("object-prior.json")):
        hand = json.loads(path.read_text())["evaluate_by_hand"]
        train_file = {"hico-det": None, "hico-det-sg1": "hico-det-sg1/trainval_hico.json",
                      "b-right": "b-right/trainval_hico.json"}[path.parent.name]
        train = (load_dataset("hico-det:train") if train_file is None
                 else read_dataset(tmp_path / "full" / "benchmarks" / train_file))
        gt = load_dataset(hand["gt"]) if hand["gt"].startswith("hico-det:") else read_dataset(hand["gt"])
        write_predictions(ObjectPriorDetector().fit(train).predict(gt), hand["predictions"])
        got, ref = _eval_by_hand(path, tmp_path)
        _same_map(got, ref, path)
    capsys.readouterr()
    if os.environ.get("HOIBENCH_ARTIFACTS"):
        import shutil

        shutil.copy(done.report.html, Path(os.environ["HOIBENCH_ARTIFACTS"]) / "demo-report.html")


def test_report_cli_on_the_demo_results_reproduces_its_tables(quick_demo, tmp_path, capsys):
    import csv

    out, _ = quick_demo
    files = [str(p) for p in sorted((out / "results").rglob("*.json"))]
    main(["report", *files, "--out", str(tmp_path / "rep"), "--reference", "HICO-DET"])
    capsys.readouterr()
    for name in ("map", "class-ap-spread", "ranking-shift-hico-det-vs-b-right", "mcq-metrics",
                 "head-to-tail-recall"):
        a = list(csv.DictReader((out / "tables" / f"{name}.csv").open()))
        b = list(csv.DictReader((tmp_path / "rep" / "tables" / f"{name}.csv").open()))
        assert len(a) > 0, name
        # same rows (file order may order rows and subset columns differently)
        assert sorted(sorted(r.items()) for r in a) == sorted(sorted(r.items()) for r in b), name


def test_demo_and_report_name_an_unusable_output_folder(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for argv in (["demo", "--out", str(blocker / "out"), "--quiet"],
                 ["report", str(tmp_path / "r.json"), "--out", str(blocker / "out")]):
        (tmp_path / "r.json").write_text(json.dumps({"kind": "mcq_metrics", "macro_f1": 0.5}))
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err == f"error: {blocker / 'out'}: cannot write, {blocker} is a file, not a folder"
