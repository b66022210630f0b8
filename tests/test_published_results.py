"""The papers' published result tables shipped as data, and ``hoibench report --published``.

The spot values below are read from the papers' text (``shared/seeds/00*_*.txt``); the arithmetic
checks are sentences of those papers (e.g. "+12.96% EM for InternVL3-38B") recomputed from the
shipped cells.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from hoibench._exceptions import FormatError
from hoibench.analysis import parse_sg_benchmark, ranking_shift
from hoibench.benchmarks import (
    PUBLISHED_BENCHMARKS,
    PUBLISHED_METRICS,
    load_published_results,
    published_results,
)
from hoibench.evaluation import MCQ_METRIC_NAMES, HICOMapResult, MCQResult
from hoibench.reports import build_report, ranking_shift_rows
from hoibench.reports._published import canonical_benchmark, compare_published
from hoibench.results import ResultRecord, write_record

ROWS = published_results()


def one(paper: str, table: str, model: str, benchmark: str, metric: str, *, part: str = "test",
        setting: str | None = None, row: str | None = None) -> float | None:
    hits = [r for r in ROWS if (r.paper, r.table, r.model, r.benchmark, r.metric, r.part) ==
            (paper, table, model, benchmark, metric, part)
            and (setting is None or r.setting == setting) and (row is None or r.row == row)]
    assert len(hits) == 1, hits
    return hits[0].value


# ---------------------------------------------------------------------- the data file
def test_shipped_file_loads_and_every_name_is_one_hoibench_uses() -> None:
    assert len(ROWS) == 448
    assert {r.benchmark for r in ROWS} <= PUBLISHED_BENCHMARKS
    assert {r.metric for r in ROWS} <= PUBLISHED_METRICS
    assert {r.metric for r in ROWS if r.paper == "001"} == set(MCQ_METRIC_NAMES)
    # the benchmark names are the ones hoibench writes (demo, split sg) read back the same way
    for name, bench, part in (("HICO-DET", "hico-det", "test"), ("HICO-DET-SG1", "hico-det-sg1", "test"),
                              ("hico-det-sg2:train", "hico-det-sg2", "train"), ("B-RIGHT", "b-right", "test"),
                              ("B-RIGHT zero-shot", "b-right-zero-shot", "test"), ("V-COCO-SG3", "v-coco-sg3", "test")):
        assert canonical_benchmark(name) == (bench, part)
        assert bench in PUBLISHED_BENCHMARKS
    for r in ROWS:
        family, split, _ = parse_sg_benchmark(r.benchmark)
        assert r.benchmark == (family if split is None else f"{family}-sg{split}")
        assert (r.value is None) == bool(r.note.startswith("printed as"))
    assert sum("the mean of the printed splits" in r.note for r in ROWS) == 2


def test_rows_per_source_table() -> None:
    counts = Counter((r.paper, r.table) for r in ROWS)
    assert counts == {("000", "Table 3"): 74, ("000", "Table 4"): 74,  # 7 variants x 2 parts x 5 rows + 4 in brackets
                      ("001", "Table 2"): 72, ("001", "Table 3"): 42, ("001", "Table 4"): 72,
                      ("001", "Table 6"): 42, ("001", "Table 7"): 36, ("002", "Table 3"): 36}
    dashes = Counter((r.paper, r.table) for r in ROWS if r.value is None)
    assert dashes == {("001", "Table 4"): 12, ("002", "Table 3"): 5}


@pytest.mark.parametrize(("args", "kw", "value"), [
    (("000", "Table 3", "STIP (pretrained)", "hico-det-sg1", "mAP"), {}, 24.53),
    (("000", "Table 3", "HOTR (not pretrained)", "hico-det", "mAP"), {"part": "train"}, 30.54),
    (("000", "Table 3", "QPIC (pretrained)", "hico-det", "mAP"), {"row": "(mAP in literature)"}, 29.90),
    (("000", "Table 3", "FGAHOI (not pretrained)", "hico-det-sg", "mAP"), {}, 6.30),
    (("000", "Table 4", "HOTR (pretrained)", "v-coco", "role_ap"), {"part": "train"}, 64.72),
    (("000", "Table 4", "STIP (pretrained)", "v-coco", "role_ap"), {"row": "(mAP in literature)"}, 70.7),
    (("000", "Table 4", "FGAHOI (not pretrained)", "v-coco-sg", "role_ap"), {}, 4.35),
    (("001", "Table 2", "CMD-SE", "mcq-hoi", "exact_match"), {}, 14.13),
    (("001", "Table 2", "InternVL3-38B", "mcq-hoi", "avg_precision"), {}, 87.06),
    (("001", "Table 3", "Qwen2.5-VL-32B", "mcq-hoi", "instance_f1"), {}, 69.52),
    (("001", "Table 4", "ADA-CM", "mcq-hoi", "micro_f1"), {}, 61.69),
    (("001", "Table 4", "LLaVA-OV-7B", "mcq-hoi", "macro_f1"), {}, None),
    (("001", "Table 6", "Qwen2.5-VL-7B", "mcq-hoi", "macro_f1"), {}, 49.56),
    (("001", "Table 7", "Qwen2.5-VL-7B (SFT on Ours)", "mcq-hoi", "avg_recall"), {"setting": "2"}, 79.70),
    (("001", "Table 7", "Qwen2.5-VL-7B (SFT on V-COCO-based)", "mcq-hoi", "exact_match"), {"setting": "3"}, 22.53),
    (("002", "Table 3", "PViC", "b-right", "mAP"), {}, 43.73),
    (("002", "Table 3", "PViC", "hico-det-rf-uc", "mAP"), {}, None),
    (("002", "Table 3", "GEN-VLKT", "b-right-zero-shot", "mAP"), {}, 4.38),
    (("002", "Table 3", "DP-HOI", "hico-det-rf-uc", "mAP"), {}, 30.49),
])
def test_spot_values_from_the_papers_text(args: tuple[str, ...], kw: dict[str, str], value: float | None) -> None:
    assert one(*args, **kw) == value


def test_the_papers_own_arithmetic_holds_on_the_shipped_cells() -> None:
    def mcq(table: str, model: str, metric: str) -> float:
        v = one("001", table, model, "mcq-hoi", metric)
        assert v is not None
        return v

    # "+12.96% for InternVL3-38B" (EM, setting 2 vs 1); "average precision decreases by 9.1% for InternVL3-8B"
    assert mcq("Table 3", "InternVL3-38B", "exact_match") - mcq("Table 2", "InternVL3-38B", "exact_match") == \
        pytest.approx(12.96)
    assert mcq("Table 2", "InternVL3-8B", "avg_precision") - mcq("Table 3", "InternVL3-8B", "avg_precision") == \
        pytest.approx(9.1)
    # Table 6 vs Table 4 Macro-F1: "+6.6% ... Qwen2.5-Vl-7B, +4.34% ... 32B, +19.92% InternVL-8B, +8.35% 38B"
    for model, gain in (("Qwen2.5-VL-7B", 6.6), ("Qwen2.5-VL-32B", 4.34), ("InternVL3-8B", 19.92),
                        ("InternVL3-38B", 8.35)):
        assert mcq("Table 6", model, "macro_f1") - mcq("Table 4", model, "macro_f1") == pytest.approx(gain)
    # SG Average rows: the mean of the three splits, to the printed rounding
    for table, fam, metric in (("Table 3", "hico-det", "mAP"), ("Table 4", "v-coco", "role_ap")):
        for r in (r for r in ROWS if r.table == table and r.paper == "000" and r.benchmark == f"{fam}-sg"):
            splits = [one("000", table, r.model, f"{fam}-sg{s}", metric, part=r.part) for s in (1, 2, 3)]
            if "the mean of the printed splits" in r.note:  # two averages the paper misprints, kept as printed
                assert r.value != pytest.approx(float(np.mean(splits)), abs=0.006)
                assert f"is {np.mean(splits):.2f}" in r.note
            else:
                assert r.value == pytest.approx(float(np.mean(splits)), abs=0.006)
    # B-RIGHT Table 3: the printed ranks are the mAP ranks, and the shifts follow
    bright = [r for r in ROWS if r.paper == "002"]
    hico = {r.model: r.value for r in bright if r.benchmark == "hico-det"}
    bal = {r.model: r.value for r in bright if r.benchmark == "b-right"}
    shifts = {s.model: s for s in ranking_shift(hico, bal)}
    for r in bright:
        if r.benchmark == "hico-det":
            assert shifts[r.model].rank_reference == r.rank
        elif r.benchmark == "b-right":
            assert shifts[r.model].rank_other == r.rank
    assert shifts["UPT"].rank_reference - shifts["UPT"].rank_other == 4  # "2 (↑ 4)"


def _write(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    p = tmp_path / "published_results.json"
    p.write_text(json.dumps({"kind": "hoibench_published_results", "rows": rows}))
    return p


GOOD = {"model": "M", "benchmark": "b-right", "part": "test", "metric": "mAP", "classes": "selected",
        "setting": "default", "protocol": None, "value": 40.0, "paper": "002", "table": "Table 3", "row": "M"}


@pytest.mark.parametrize(("change", "field"), [
    ({"metric": "f1"}, "metric"), ({"benchmark": "coco"}, "benchmark"), ({"value": 140.0}, "value"),
    ({"value": None}, "note"), ({"classes": None}, "classes"), ({"setting": "4"}, "setting"),
])
def test_a_bad_row_is_one_error_naming_file_row_and_field(tmp_path: Path, change: dict[str, object],
                                                         field: str) -> None:
    assert load_published_results(_write(tmp_path, [GOOD]))[0].value == 40.0
    with pytest.raises(FormatError) as e:
        load_published_results(_write(tmp_path, [GOOD, {**GOOD, "row": "x", **change}]))
    assert e.value.record == 1 and e.value.field == field and "published_results.json" in str(e.value)


# ---------------------------------------------------------------------- the report
def _map(model: str, bench: str, value: float, headline: str = "full", known_object: bool = False
         ) -> ResultRecord[HICOMapResult]:
    subsets = {} if headline == "full" else {headline: value}
    res = HICOMapResult(full=value if headline == "full" else 0.5 * value, subsets=subsets, headline=headline,
                        known_object=known_object)
    return ResultRecord(res, model, bench)


def _mcq(model: str, setting: int, protocol: str) -> ResultRecord[MCQResult]:
    res = MCQResult(*(0.5 for _ in MCQ_METRIC_NAMES), protocol=protocol, zero_division=1.0, n_questions=10,
                    n_images=5, n_classes=3, n_answered=10, n_missing=0, n_empty=0, n_out_of_choice=0,
                    n_unknown_answers=0)
    return ResultRecord(res, model, "MCQ-HOI", {"setting": setting})


def _records() -> list[ResultRecord[object]]:
    return [_map("mine", "HICO-DET", 0.30), _map("mine", "HICO-DET-SG1", 0.10, "unseen"),
            _map("mine", "B-RIGHT", 0.41, "selected"), _map("other", "HICO-DET", 0.20),
            _map("other", "B-RIGHT", 0.45, "selected"), _map("mine", "my-split", 0.2),
            _map("mine", "HICO-DET-SG2", 0.1, "full"), _map("ko", "HICO-DET", 0.3, known_object=True),
            _mcq("vlm", 2, "crosshoi"), _mcq("vlm", 1, "paper")]


def test_comparable_rows_are_placed_and_the_rest_is_said_in_one_line() -> None:
    comp = compare_published(_records())
    placed = {(r.model, r.benchmark) for r in comp.records}
    assert ("STIP (pretrained) [SG T3]", "HICO-DET-SG1") in placed
    assert ("PViC [B-RIGHT T3]", "B-RIGHT") in placed and ("PViC [B-RIGHT T3]", "HICO-DET") in placed
    assert ("QPIC (pretrained) [SG T3 own paper]", "HICO-DET") in placed
    assert ("Qwen2.5-VL-32B [MCQ T3]", "MCQ-HOI") in placed  # setting 2 <- Table 3
    assert not any("T2]" in m or "T4]" in m or "T6]" in m for m, _ in placed)  # no setting 1 (protocol paper), no 3
    sg1 = next(r for r in comp.records if r.model == "STIP (pretrained) [SG T3]" and r.benchmark == "HICO-DET-SG1")
    assert sg1.result.headline == "unseen" and sg1.result.headline_map == pytest.approx(0.2453)
    qwen = next(r for r in comp.records if r.model == "Qwen2.5-VL-32B [MCQ T3]")
    assert qwen.result.instance_f1 == pytest.approx(0.6952) and qwen.result.protocol == "crosshoi"
    notes = " ".join(comp.notes)
    assert "my-split: the papers publish no result on this benchmark" in notes
    assert "HICO-DET (ko): scored in the Known-Object setting" in notes
    assert "MCQ-HOI (setting 1): results scored with --protocol paper" in notes
    assert "HICO-DET-SG2 (mine): the published mAP is over the unseen classes, this result's is over full" in notes
    rfuc = compare_published([_map("zs", "HICO-DET", 0.2, "unseen"), _map("zs", "hico-det-rf-uc", 0.2, "unseen")])
    assert any(n.startswith("HICO-DET (zs): scored with a zero-shot class split") for n in rfuc.notes)
    assert ("DP-HOI [B-RIGHT T3]", "hico-det-rf-uc") in {(r.model, r.benchmark) for r in rfuc.records}
    assert not any(r.model == "PViC [B-RIGHT T3]" and r.benchmark == "hico-det-rf-uc" for r in rfuc.records)  # '–'
    assert all(n.count(". ") <= 1 for n in comp.notes if n.startswith(("my-split", "HICO-DET (ko)")))
    # nothing of these benchmarks is placed from another part, class set or setting
    assert not any(r.benchmark in ("my-split", "HICO-DET-SG2") for r in comp.records)


def test_report_shows_published_rows_in_every_table_and_figure(tmp_path: Path) -> None:
    plain = build_report(_records())
    rep = build_report(_records(), published=True)
    tables = {t.name: t for t in rep.tables}
    assert "published-comparison" not in {t.name for t in plain.tables}
    models_in = lambda name: {row[0] for row in tables[name].rows}  # noqa: E731
    assert "PViC [B-RIGHT T3]" in models_in("map")
    assert "Qwen2.5-VL-32B [MCQ T3]" in models_in("mcq-summary")
    assert any("STIP (pretrained) [SG T3]" in c for c in tables["sg-table-hico-det"].columns)
    # B-RIGHT Table 3's ranking, with the user's models ranked among the published ones
    maps = [r for r in [*_records(), *compare_published(_records()).records]
            if isinstance(r.result, HICOMapResult) and not r.result.known_object]
    shifts = {s.model: s for s in ranking_shift_rows(maps, reference="HICO-DET", other="B-RIGHT")}
    assert shifts["UPT [B-RIGHT T3]"].shift > 0 and shifts["DP-HOI [B-RIGHT T3]"].shift < 0 and "mine" in shifts
    comp = tables["published-comparison"]
    by = {(row[0], row[4]): row[5] for row in comp.rows}
    assert by[("B-RIGHT", "mine")] == pytest.approx(41.0) and by[("B-RIGHT", "PViC [B-RIGHT T3]")] == 43.73
    assert {f"published-{s}" for s in ("sg-table3", "sg-table4", "mcq-table2", "mcq-table3", "mcq-table4",
                                       "mcq-table6", "mcq-table7", "b-right-table3")} <= set(tables)
    section = next(s for s in rep.sections if s.title == "Published results")
    assert "my-split: the papers publish no result" in section.text
    files = rep.write(tmp_path / "rep")
    for name in ("map-bars", "sg-figure-hico-det", "mcq-mcq-hoi"):
        png = next(p for p in files.figures if p.name.startswith(name))
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    mcq_fig = next(f for f in rep.figures if f.name.startswith("mcq-mcq-hoi-setting-2"))
    assert "Qwen2.5-VL-32B [MCQ T3]" in mcq_fig.colors  # one bar colour per model, published ones included
    bars = {r: next(f for f in x.figures if f.name == "map-bars") for r, x in (("plain", plain), ("pub", rep))}
    assert bars["pub"].display_size[0] > bars["plain"].display_size[0]  # a group of bars per published model
    assert "PViC [B-RIGHT T3]" in (tmp_path / "rep" / "report.md").read_text()


def test_cli_report_published(tmp_path: Path) -> None:
    from hoibench.cli import main

    for i, rec in enumerate(_records()[:5]):
        write_record(rec, tmp_path / "results" / f"r{i}.json")
    main(["report", str(tmp_path / "results"), "--published", "--out", str(tmp_path / "rep")])
    csv = (tmp_path / "rep" / "tables" / "published-comparison.csv").read_text()
    assert "STIP (pretrained) [SG T3]" in csv and "this report" in csv
    assert (tmp_path / "rep" / "tables" / "published-mcq-table7.csv").exists()
    assert math.isclose(float(next(line.split(",")[5] for line in csv.splitlines()
                                   if "PViC [B-RIGHT T3]" in line and line.startswith("B-RIGHT"))), 43.73)
