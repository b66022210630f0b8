"""The papers' extra tables and figures: SG Tables 3/4 and Figure 2, the multiple-choice Figure 1b,
B-RIGHT Figure 2 / S6 (class counts) and Tables S2/S3 (augmentation counts); each checked against
a computation of its own, through the library, the ``hoibench analyze`` command and the report."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from hoibench.analysis import (
    augmentation_counts,
    class_split_counts,
    mcq_vs_map,
    parse_sg_benchmark,
    sg_split_tables,
)
from hoibench.cli import main
from hoibench.data import DatasetBuilder
from hoibench.evaluation import MCQ_METRIC_NAMES
from hoibench.formats import write_ppdm
from hoibench.reports import PaperInputs, build_report, sg_split_table
from hoibench.results import ResultRecord
from hoibench.vocab import hico_det
from tests.conftest import one_line_error

MODELS = ("HOTR", "QPIC", "STIP")


def _map(model: str, bench: str, full: float) -> dict:
    return {"kind": "hico_map", "model": model, "benchmark": bench, "protocol": "official",
            "known_object": False, "full": full, "rare": full, "non_rare": full}


def _sg_records(seed: int = 0) -> tuple[list[dict], dict]:
    """mAP objects (percent, as files hold them) of three models on the original split and three
    SG splits, train and test; and the same numbers as a plain dict for the checks."""
    rng = np.random.default_rng(seed)
    objs, truth = [], {}
    for m in MODELS:
        for part in ("train", "test"):
            for split in (0, 1, 2, 3):
                v = float(rng.uniform(0, 60))
                bench = "hico-det" if split == 0 else f"hico-det-sg{split}"
                objs.append(_map(m, bench + (":train" if part == "train" else ""), round(v, 4)))
                truth[(m, part, split)] = round(v, 4)
    return objs, truth


def test_parse_sg_benchmark_names() -> None:
    assert parse_sg_benchmark("HICO-DET-SG2:train") == ("hico-det", 2, "train")
    assert parse_sg_benchmark("v-coco-sg1") == ("v-coco", 1, "test")
    assert parse_sg_benchmark("hico-det") == ("hico-det", None, "test")
    assert parse_sg_benchmark("b-right:test") == ("b-right", None, "test")


def test_sg_tables_mean_and_std_by_hand(tmp_path, capsys) -> None:
    objs, truth = _sg_records()
    records = [ResultRecord.from_json(d) for d in objs]
    (t,) = sg_split_tables(records)
    assert t.splits == (1, 2, 3) and t.models == MODELS
    for m in MODELS:
        for part in ("train", "test"):
            sg = [truth[(m, part, s)] / 100 for s in (1, 2, 3)]
            assert t.mean(m, part) == pytest.approx(sum(sg) / 3)
            mu = sum(sg) / 3
            assert t.std(m, part) == pytest.approx((sum((x - mu) ** 2 for x in sg) / 3) ** 0.5)
            assert t.cell(m, part, 0) == pytest.approx(truth[(m, part, 0)] / 100)
    table = sg_split_table(t)
    assert [r[0] for r in table.rows] == ["original", "SG split 1", "SG split 2", "SG split 3", "SG mean", "SG std"]
    col = table.columns.index("QPIC (test)")
    assert table.rows[-2][col] == pytest.approx(100 * t.mean("QPIC", "test"))
    # the command prints and writes the same table
    path = tmp_path / "results.json"
    path.write_text(json.dumps(objs))
    main(["analyze", "sg-tables", str(path), "--out", str(tmp_path / "out")])
    with open(tmp_path / "out" / "sg-table-hico-det.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(table.columns)
    assert float(rows[5][col]) == pytest.approx(table.rows[-2][col])
    assert (tmp_path / "out" / "sg-figure-hico-det.png").stat().st_size > 1000
    # the report has the section, with the same numbers
    rep = build_report(records)
    (rt,) = [x for x in rep.tables if x.name == "sg-table-hico-det"]
    assert rt.rows == table.rows
    assert "sg-figure-hico-det" in [f.name for f in rep.figures]
    capsys.readouterr()


def test_sg_tables_leave_missing_values_undefined_and_refuse_duplicates(tmp_path, capsys) -> None:
    recs = [ResultRecord.from_json(_map("A", "hico-det-sg1", 10.0)),
            ResultRecord.from_json(_map("B", "hico-det", 30.0))]
    (t,) = sg_split_tables(recs)
    assert t.std("A", "test") is None  # one split: no standard deviation
    assert t.cell("A", "test", 0) is None and t.mean("B", "test") is None
    table = sg_split_table(t)
    assert table.rows[0][table.columns.index("A (test)")] is None
    with pytest.raises(Exception, match="second test result"):
        sg_split_tables([*recs, recs[0]])
    # the report still builds; the section says why the tables are left out
    rep = build_report([*recs, recs[0]])
    (sec,) = [s for s in rep.sections if s.title.startswith("Systematic generalization")]
    assert "left out" in sec.text and not sec.tables
    # Known-Object results are not mixed into the Default-setting tables
    ko = ResultRecord.from_json({**_map("A", "hico-det-sg1", 50.0), "known_object": True})
    assert sg_split_tables([*recs, ko])[0].cell("A", "test", 1) == pytest.approx(0.10)
    path = tmp_path / "r.json"
    path.write_text(json.dumps([_map("A", "hico-det", 1.0)]))
    assert "no result on an SG split" in one_line_error(["analyze", "sg-tables", str(path)], capsys)


def _mcq(model: str, bench: str, value: float, **extra) -> dict:
    d = {"kind": "mcq_metrics", "model": model, "benchmark": bench, "protocol": "paper", **extra}
    d.update({k: value for k in MCQ_METRIC_NAMES})
    return d


def test_mcq_vs_map_pairs_models_with_both_results(tmp_path, capsys) -> None:
    # multiple-choice files hold fractions, mAP files percent (docs/interfaces.md)
    objs = [_mcq("A", "MCQ-HOI setting 3", 0.40), _mcq("A", "MCQ-HOI setting 2", 0.90),
            _mcq("B", "mcq", 0.30, evaluate_by_hand={"setting": 3}), _mcq("C", "MCQ-HOI setting 3", 0.20),
            _map("A", "HICO-DET", 25.0), _map("B", "hico-det", 35.0), _map("D", "hico-det", 20.0)]
    recs = [ResultRecord.from_json(d) for d in objs]
    points = {p.model: p for p in mcq_vs_map(recs)}
    assert set(points) == {"A", "B"}  # C has no mAP, D no setting-3 result
    assert points["A"].instance_f1 == pytest.approx(0.40) and points["A"].hico_map == pytest.approx(0.25)
    assert points["B"].hico_map == pytest.approx(0.35)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(objs))
    main(["analyze", "mcq-vs-map", str(path), "--out", str(tmp_path / "out")])
    with open(tmp_path / "out" / "mcq-vs-map.csv") as fh:
        rows = {r["model"]: r for r in csv.DictReader(fh)}
    assert float(rows["B"]["instance_f1"]) == pytest.approx(30.0)
    rep = build_report(recs)
    assert "mcq-vs-map" in [f.name for f in rep.figures]
    capsys.readouterr()


def _split_world(seed: int = 0):
    """A random train and test set of HICO-DET classes (a few pairs per image)."""
    rng = np.random.default_rng(seed)
    vocab = hico_det()
    person = vocab.objects.index("person")
    sets = []
    for part, n in (("train", 60), ("test", 25)):
        b = DatasetBuilder(vocab)
        for i in range(n):
            boxes, labels, s, o, v = [], [], [], [], []
            for h in rng.choice(12, size=int(rng.integers(1, 4))) * 7:  # 12 classes, uneven frequencies
                verb, obj = (int(x) for x in vocab.hoi_verb_object[int(h)])
                boxes += [[0, 0, 10, 10], [5, 5, 20, 20]]
                labels += [person, obj]
                s.append(len(boxes) - 2)
                o.append(len(boxes) - 1)
                v.append(verb)
            b.add_image(f"{part}_{i}.jpg", boxes, labels, s, o, v, width=64, height=64)
        sets.append(b.build(name=part))
    return sets


def test_class_counts_by_hand(tmp_path, capsys) -> None:
    train, test = _split_world()
    unseen = [7, 14]
    c = class_split_counts(train, test, unseen=unseen)
    by_hand_train = {int(h): int((train.pair_hoi == h).sum()) for h in np.unique(train.pair_hoi)}
    by_hand_test = {int(h): int((test.pair_hoi == h).sum()) for h in np.unique(test.pair_hoi)}
    for h, a, b, u in zip(c.classes, c.train, c.test, c.unseen):
        assert a == by_hand_train.get(int(h), 0) and b == by_hand_test.get(int(h), 0)
        assert u == (int(h) in unseen)
    assert list(c.train) == sorted(c.train, reverse=True)  # head first
    ratio = c.ratio
    for a, b, r in zip(c.train, c.test, ratio):
        assert (np.isnan(r) and b == 0) or r == pytest.approx(a / b)
    s = c.summary()
    seen_train = [by_hand_train.get(int(h), 0) for h in c.classes if int(h) not in unseen]
    assert s["seen"]["train"]["max"] == max(seen_train) and s["seen"]["train"]["instances"] == sum(seen_train)
    # the command on a split folder (the layout B-RIGHT, SG and zero-shot folders share)
    folder = tmp_path / "split"
    folder.mkdir()
    write_ppdm(train, folder / "trainval_hico.json")
    write_ppdm(test, folder / "test_hico.json")
    ids = tmp_path / "unseen.txt"
    ids.write_text("7\n14\n")
    main(["analyze", "class-counts", "--dataset", str(folder), "--unseen", str(ids), "--out", str(tmp_path / "out")])
    with open(tmp_path / "out" / "class-counts-per-class.csv") as fh:
        rows = {int(r["hoi"]): r for r in csv.DictReader(fh)}
    assert {h: int(r["train"]) for h, r in rows.items()} == {int(h): int(a) for h, a in zip(c.classes, c.train)}
    assert (tmp_path / "out" / "class-counts.png").stat().st_size > 1000
    capsys.readouterr()
    rep = build_report([], paper_inputs=PaperInputs(class_counts=(("split", c),)))
    (t,) = rep.tables
    assert [r[:2] for r in t.rows][:2] == [("all", "train"), ("all", "test")]
    assert [f.name for f in rep.figures] == ["class-counts-split"]


def _manifest(folder, records) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_augmentation_counts_by_hand(tmp_path, capsys) -> None:
    rng = np.random.default_rng(1)
    expected = {}
    specs = []
    for split in ("1", "2"):
        recs_gen, recs_crawl = [], []
        want = {"images": {"generated": 0, "crawled": 0}, "instances": {"generated": 0, "crawled": 0}}
        for a in range(8):
            status = "kept" if rng.random() < 0.6 else "rejected"
            pairs = [[0, 1, 3]] * int(rng.integers(1, 4))
            recs_gen.append({"event": "attempt", "hoi": 5, "attempt": a, "status": status,
                             "annotation": {"pairs": pairs}})
            if status == "kept":
                want["images"]["generated"] += 1
                want["instances"]["generated"] += len(pairs)
        # a re-inspected image counts once, by its last verdict
        recs_gen.append({"event": "describe", "hoi": 5, "slot": 0, "prompt": "x"})
        for k in range(5):
            pairs = [[0, 1, 2]] * int(rng.integers(1, 3))
            recs_crawl.append({"event": "filtered", "hoi": 9, "image": f"c{k}.jpg", "status": "rejected",
                               "annotation": {"pairs": pairs}})
            recs_crawl.append({"event": "filtered", "hoi": 9, "image": f"c{k}.jpg", "status": "kept",
                               "annotation": {"pairs": pairs}})
            want["images"]["crawled"] += 1
            want["instances"]["crawled"] += len(pairs)
        _manifest(tmp_path / f"gen{split}", recs_gen)
        _manifest(tmp_path / f"crawl{split}", recs_crawl)
        specs += [f"{split}={tmp_path / f'gen{split}'}", f"{split}={tmp_path / f'crawl{split}'}"]
        expected[split] = want
    from hoibench.cli._paper_inputs import split_folders

    counts = augmentation_counts(split_folders(tuple(specs)))
    for split, want in expected.items():
        assert dict(counts.images[split]) == want["images"]
        assert dict(counts.instances[split]) == want["instances"]
    main(["analyze", "augmentation-counts", *specs, "--out", str(tmp_path / "out")])
    with open(tmp_path / "out" / "augmentation-instances.csv") as fh:
        rows = {r["split"]: r for r in csv.DictReader(fh)}
    assert int(rows["2"]["total"]) == sum(expected["2"]["instances"].values())
    capsys.readouterr()
    assert "not an augmentation output folder" in one_line_error(
        ["analyze", "augmentation-counts", str(tmp_path / "nope")], capsys)


def test_head_to_tail_by_training_question_frequency(tmp_path, capsys) -> None:
    from collections import Counter

    from hoibench.analysis import head_to_tail_recall, question_class_counts
    from hoibench.data import Choice, MCAnswer, MCQuestion
    from hoibench.formats import write_questions
    from hoibench.formats.questions import write_answers

    vocab = hico_det()
    rng = np.random.default_rng(4)

    def question(qid: str, hois: list[int], correct: set[int]) -> MCQuestion:
        return MCQuestion(qid, f"{qid}.jpg", 1, tuple(Choice(vocab.hoi_name(h), h, int(vocab.hoi_verb_object[h][0]),
                                                             int(vocab.hoi_verb_object[h][1])) for h in hois),
                          frozenset(correct))

    pool = list(range(0, 120, 6))
    qs = [question(f"t{i}", list(rng.choice(pool, 4, replace=False)), {0, 1}) for i in range(30)]
    train = [question(f"tr{i}", list(rng.choice(pool, 4, replace=False)), {int(rng.integers(0, 4))})
             for i in range(80)]
    answers = [MCAnswer(q.id, frozenset(c.text for c in q.choices if rng.random() < 0.5)) for q in qs]
    by_hand = Counter(q.choices[i].hoi for q in train for i in q.correct)
    counts = question_class_counts(train, vocab.n_hois)
    assert {h: int(c) for h, c in enumerate(counts) if c} == dict(by_hand)
    want = head_to_tail_recall(qs, answers, counts, n_bins=4)
    write_questions(tmp_path / "q.jsonl", qs)
    write_questions(tmp_path / "train.jsonl", train)
    write_answers(tmp_path / "a.jsonl", answers)
    main(["analyze", "head-to-tail", "--questions", str(tmp_path / "q.jsonl"), "--answers", str(tmp_path / "a.jsonl"),
          "--train-questions", str(tmp_path / "train.jsonl"), "--bins", "4", "--out", str(tmp_path / "out")])
    with open(tmp_path / "out" / "head-to-tail-train-questions.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["recall"]) for r in rows] == pytest.approx([100 * b.recall for b in want.bins])
    assert [int(r["train_questions_max"]) for r in rows] == [b.max_count for b in want.bins]
    capsys.readouterr()


def _colours(png: bytes) -> set[tuple[int, int, int]]:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        return {tuple(c) for c in np.unique(np.asarray(im.convert("RGB")).reshape(-1, 3), axis=0).tolist()}


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def test_figures_use_the_palette_of_their_benchmarks_and_models() -> None:
    """One colour per benchmark and per model in every figure: the bars' fill is the palette's."""
    from hoibench.reports import mcq_vs_map_figure, sg_split_figure
    from hoibench.reports._style import benchmark_color, model_color

    objs, _ = _sg_records(seed=2)
    (t,) = sg_split_tables([ResultRecord.from_json(d) for d in objs])
    found = _colours(sg_split_figure(t).png)
    assert {_rgb(benchmark_color("hico-det")), _rgb(benchmark_color("hico-det-sg1"))} <= found
    points = mcq_vs_map([ResultRecord.from_json(d) for d in (_mcq("A", "s setting 3", 0.4), _map("A", "hico-det", 20.0),
                                                             _mcq("B", "s setting 3", 0.3), _map("B", "hico-det", 30.0))])
    found = _colours(mcq_vs_map_figure(points).png)
    assert {_rgb(model_color("A")), _rgb(model_color("B"))} <= found


def test_report_cli_adds_class_counts_and_augmentation_sections(tmp_path, capsys) -> None:
    train, test = _split_world(seed=6)
    folder = tmp_path / "bright"
    folder.mkdir()
    write_ppdm(train, folder / "trainval_hico.json")
    write_ppdm(test, folder / "test_hico.json")
    _manifest(tmp_path / "aug", [{"event": "attempt", "hoi": 1, "attempt": 0, "status": "kept",
                                  "annotation": {"pairs": [[0, 1, 2], [0, 1, 3]]}}])
    (tmp_path / "r.json").write_text(json.dumps(_map("A", "b-right", 30.0)))
    main(["report", str(tmp_path / "r.json"), "--class-counts", str(folder), "--augmentation", f"1={tmp_path / 'aug'}",
          "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    tables = {t["name"]: t for s in report["sections"] for t in s["tables"]}
    want = class_split_counts(train, test).summary()["all"]["train"]
    row = tables["class-counts-bright"]["rows"][0]
    assert row[:4] == ["all", "train", want["classes"], want["instances"]]
    assert tables["augmentation-instances"]["rows"] == [["1", 2, 0, 2]]
    capsys.readouterr()
    assert "need --images" in one_line_error(["report", str(tmp_path / "r.json"), "--detection-class", "3",
                                              "--out", str(tmp_path / "o")], capsys)
