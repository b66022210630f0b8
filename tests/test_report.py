"""Reports: tables, result loaders, the standard report, the HTML page (also in headless Chromium)
and the ``hoibench report`` command."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hoibench import FormatError, ValidationError
from hoibench.cli import main
from hoibench.data import vcoco_action_names, vcoco_role_classes
from hoibench.evaluation import MCQ_METRIC_NAMES, ClassRecall, HICOMapResult, MCQResult
from hoibench.reports import (
    Table,
    binned_head_to_tail,
    build_report,
    class_ap_head_to_tail,
    class_ap_spread_table,
    map_table,
    ranking_shift_rows,
    ranking_shift_table,
    vcoco_table,
)
from hoibench.results import ResultRecord, read_results

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


# ---------------------------------------------------------------------------------- tables
def test_table_renders_markdown_csv_json_html():
    t = Table("demo", "Demo", ("model", "map", "note"),
              (("a|b", 12.3456, None), ("c", float("nan"), "x<y")), decimals=1)
    md = t.to_markdown().splitlines()
    assert md[0] == "| model | map | note |"
    assert md[2] == "| a\\|b | 12.3 | n/a |"  # undefined is "n/a", never a number
    assert md[3] == "| c | n/a | x<y |"
    big = Table("big", "Big", ("images", "map"), ((9546, 1234.5),))
    assert big.text_rows() == [["9,546", "1,234.50"]]  # thousands separators
    rows = list(csv.reader(io.StringIO(t.to_csv())))
    assert rows == [["model", "map", "note"], ["a|b", "12.3456", ""], ["c", "", "x<y"]]
    assert t.to_dict()["rows"] == [["a|b", 12.3456, None], ["c", None, "x<y"]]
    assert Table.from_dict(t.to_dict()).to_csv() == t.to_csv()
    h = t.to_html()
    assert 'data-table="demo"' in h and "x&lt;y" in h and '<td class="num">12.3</td>' in h


def test_table_rejects_ragged_rows_and_bad_names():
    with pytest.raises(ValidationError, match="row 1 has 1 cells for 2 columns"):
        Table("t", "T", ("a", "b"), ((1, 2), (3,)))
    with pytest.raises(ValidationError, match="table name"):
        Table("Bad Name", "T", ("a",), ())


def test_table_from_records_keeps_first_seen_columns():
    t = Table.from_records("r", "R", [{"a": 1, "b": 2}, {"c": 3, "a": 4}])
    assert t.columns == ("a", "b", "c")
    assert t.rows == ((1, 2, None), (4, None, 3))


# ---------------------------------------------------------------------------------- results
def _map_dict(model, bench, full, n=6, seed=0, **extra):
    """A ``hico_map`` object as a file holds it (mAPs in percent, per-class AP as fractions)."""
    rng = np.random.default_rng(seed)
    ap = rng.random(n).round(4).tolist()
    ap[0] = None
    d = {"kind": "hico_map", "model": model, "benchmark": bench, "protocol": "official",
         "known_object": False, "full": full, "rare": full / 2, "non_rare": full * 1.1,
         "subsets": {"unseen": full / 3}, "per_class_ap": ap, "n_gt": [0] + [3] * (n - 1),
         "class_names": [f"c{i}" for i in range(n)], "classes": None}
    d.update(extra)
    return d


def _mcq_dict(model, bench, value, ci=0.05):
    d = {"kind": "mcq_metrics", "model": model, "benchmark": bench, "protocol": "paper",
         "n_questions": 100, "confidence": 0.95}
    d.update({k: value for k in MCQ_METRIC_NAMES})
    d["ci"] = {k: [value - ci, value + ci] for k in MCQ_METRIC_NAMES}
    return d


def _vcoco_dict(model, bench, scale):
    """A ``vcoco_role_ap`` object: every class's AP is ``scale`` (one role class has no positives)."""
    roles = list(vcoco_role_classes())
    role_ap = [scale] * len(roles)
    role_ap[roles.index("point_instr")] = None
    return {"kind": "vcoco_role_ap", "model": model, "benchmark": bench, "iou_threshold": 0.5,
            "complete_ground_truth": True, "n_images": 10, "action_names": list(vcoco_action_names()),
            "agent_ap": [scale] * 26, "n_pos": [3] * 26, "role_class_names": roles,
            "role_ap": {"scenario_1": role_ap, "scenario_2": [min(1.0, 2 * scale) if x else x for x in role_ap]}}


def _record(d):
    return ResultRecord.from_json(d)


def test_map_record_reads_the_contract_in_fractions():
    r = _record(_map_dict("m", "b", 20.0))
    assert isinstance(r.result, HICOMapResult) and r.result.full == 0.2
    assert r.result.subsets == {"unseen": pytest.approx(20.0 / 3 / 100)}
    assert len(r.result.class_ap()) == 5  # class 0 has no ground truth
    assert map_table([r]).column("full") == [20.0]  # the table prints percent, every digit kept
    # without "kind" nothing is guessed
    d = _map_dict("m", "b", 1.0)
    del d["kind"]
    with pytest.raises(FormatError, match="kind: missing"):
        _record(d)


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.pop("full"), "full: missing"),
    (lambda d: d.update(full="12"), "full: expected a number"),
    (lambda d: d.update(per_class_ap=[0.5, 1.5, None, 0, 0, 0]), "per_class_ap: entry 1: expected a fraction"),
    (lambda d: d.update(n_gt=[1, 2]), "n_gt: expected 6 entries, got 2"),
    (lambda d: d.update(kind="nope"), "kind: expected one of"),
])
def test_map_result_errors_name_file_and_field(tmp_path, mutate, message):
    d = _map_dict("m", "b", 20.0)
    mutate(d)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(FormatError) as exc:
        read_results([p])
    assert str(exc.value).startswith(str(p)) and message in str(exc.value)


def test_mcq_result_checks_fractions_and_intervals(tmp_path):
    r = _record(_mcq_dict("p", "q", 0.4))
    assert isinstance(r.result, MCQResult) and r.result.ci["macro_f1"] == pytest.approx((0.35, 0.45))
    bad = _mcq_dict("p", "q", 0.4)
    bad["macro_f1"] = 40.0
    with pytest.raises(FormatError, match="macro_f1: expected a fraction"):
        ResultRecord.from_json(bad, file="x.json")
    bad = _mcq_dict("p", "q", 0.4)
    bad["ci"]["micro_f1"] = [0.5, 0.3]
    with pytest.raises(FormatError, match=r"ci.micro_f1: low 0.5 above high 0.3"):
        ResultRecord.from_json(bad, file="x.json")


# ---------------------------------------------------------------------------------- analyses
def test_ranking_shift_table_on_hand_made_results():
    rs = [ResultRecord(HICOMapResult(full=f), m, b)
          for m, b, f in [("A", "orig", 0.30), ("B", "orig", 0.20), ("C", "orig", 0.10),
                          ("A", "bal", 0.05), ("B", "bal", 0.15), ("C", "bal", 0.25)]]
    t = ranking_shift_table(ranking_shift_rows(rs, reference="orig", other="bal"), reference="orig",
                            other="bal")
    assert t.column("model") == ["A", "B", "C"]
    assert t.column("map_orig") == [pytest.approx(30.0), pytest.approx(20.0), pytest.approx(10.0)]  # percent
    assert t.column("rank_orig") == [1, 2, 3]
    assert t.column("rank_bal") == [3, 2, 1]
    assert t.column("shift") == [-2, 0, 2]
    assert t.column("arrow") == ["↓ 2", "–", "↑ 2"]
    with pytest.raises(ValidationError, match="at least two models"):
        ranking_shift_rows(rs[:1] + rs[3:4], reference="orig", other="bal")


def test_headline_names_the_benchmark_number():
    d = _map_dict("m", "sg", 12.0, headline="unseen")
    r = _record(d)
    assert r.result.headline_map == pytest.approx(0.04) and r.result.headline == "unseen"
    assert map_table([r]).column("mAP") == [pytest.approx(4.0)]
    with pytest.raises(FormatError, match="headline: must be 'full' or a key of subsets"):
        ResultRecord.from_json({**d, "headline": "seen"}, file="r.json")


def test_class_ap_spread_matches_numpy():
    ap = np.array([0.0, 0.1, 0.2, 0.9, np.nan])
    r = ResultRecord(HICOMapResult(full=0.3, per_class_ap=ap), "m", "b")
    t = class_ap_spread_table([r])
    pct = np.array([0, 10, 20, 90.0])
    assert t.column("classes") == [4]
    assert t.column("mean") == [pytest.approx(pct.mean())]
    assert t.column("variance") == [pytest.approx(pct.var())]
    assert t.column("iqr") == [pytest.approx(np.percentile(pct, 75) - np.percentile(pct, 25))]
    assert t.column("zero_ap_share") == [pytest.approx(25.0)]


def test_binned_head_to_tail_orders_by_train_count():
    counts = [1, 100, 50, 10, 5, 0]
    recall = [0.0, 1.0, 0.8, np.nan, 0.4, 0.2]
    mean_count, mean_recall, sizes = binned_head_to_tail(counts, recall, n_bins=2)
    # NaN class dropped; order 100, 50, 5, 1, 0 → bins [100, 50, 5], [1, 0]
    assert sizes.tolist() == [3, 2]
    assert mean_count.tolist() == pytest.approx([155 / 3, 0.5])
    assert mean_recall.tolist() == pytest.approx([(1.0 + 0.8 + 0.4) / 3, 0.1])


def test_class_ap_head_to_tail_bins_ap_by_train_count():
    ap = np.array([0.9, np.nan, 0.5, 0.1, 0.0, 0.3])
    n_gt = np.array([5, 0, 5, 5, 5, 5])
    counts = np.array([100, 90, 50, 5, 1, 10])
    r = ResultRecord(HICOMapResult(full=0.01, per_class_ap=ap, n_gt=n_gt), "m", "b")
    table, figs = class_ap_head_to_tail([r], counts, n_bins=2)
    # classes with ground truth by count: 100 (0.9), 50 (0.5), 10 (0.3) | 5 (0.1), 1 (0.0)
    assert table.rows[0][:3] == ("m", "b", 5)
    assert table.rows[0][3:] == pytest.approx((100 * (0.9 + 0.5 + 0.3) / 3, 100 * 0.05))
    assert [f.name for f in figs] == ["class-ap-head-to-tail-b"]
    with pytest.raises(ValidationError, match="no result has per-class AP"):
        class_ap_head_to_tail([r], counts[:3])


# ---------------------------------------------------------------------------------- report
def _results():
    out = []
    for i, m in enumerate(("prior", "prior-top3", "other")):
        out.append(_record(_map_dict(m, "HICO-DET", 20.0 - i, n=40, seed=i)))
        out.append(_record(_map_dict(m, "B-RIGHT", 5.0 + 3 * i, n=40, seed=10 + i)))
        out.append(_record(_map_dict(m, "HICO-DET-SG", 1.0 + i, n=40, seed=20 + i)))
    out.append(_record(_mcq_dict("prior-top1", "MCQ", 0.4)))
    out.append(_record(_mcq_dict("random", "MCQ", 0.3)))
    rng = np.random.default_rng(0)
    out.append(ResultRecord(ClassRecall(train_counts=rng.integers(0, 500, 60).astype(float), recall=rng.random(60)),
                            "prior-top1", "MCQ"))
    out.append(_record(_vcoco_dict("detector-a", "V-COCO", 0.5)))
    out.append(_record(_vcoco_dict("detector-b", "V-COCO", 0.25)))
    return out


def _decode_images(page: str) -> list[Image.Image]:
    srcs = re.findall(r'<img [^>]*src="data:image/png;base64,([^"]+)"', page)
    return [Image.open(io.BytesIO(base64.b64decode(s))) for s in srcs]


def test_report_writes_every_output_self_contained(tmp_path):
    rep = build_report(_results(), title="Test report",
                       stats_tables=[Table("stats-x", "Stats", ("split", "images"), (("test", 3),))])
    files = rep.write(tmp_path / "out")
    page = files.html.read_text()
    names = {t.name for t in rep.tables}
    assert {"stats-x", "map", "class-ap-spread", "ranking-shift-hico-det-vs-b-right",
            "ranking-shift-hico-det-vs-hico-det-sg", "mcq-metrics", "head-to-tail-recall", "vcoco"} <= names
    assert len(files.tables) == len(rep.tables) and all(p.exists() for p in files.tables)
    assert {p.name for p in files.figures} == {"map-bars.png", "class-ap-boxplot.png", "mcq-mcq.png",
                                                "head-to-tail-mcq.png", "vcoco-summary.png",
                                                "vcoco-ap-detector-a-v-coco.png", "vcoco-ap-detector-b-v-coco.png"}
    images = _decode_images(page)
    assert len(images) == len(rep.figures) == 7
    assert all(im.size[0] > 100 and im.size[1] > 100 for im in images)
    # nothing is fetched from elsewhere
    assert not re.search(r'(src|href)="(?!data:|#)', page)
    assert page.count("<table ") == len(rep.tables)
    # the Markdown links the PNGs that were written; the JSON keeps raw numbers
    md = files.markdown.read_text()
    assert all(f"(figures/{p.name})" in md for p in files.figures)
    rep_json = json.loads(files.json.read_text())
    map_rows = next(t for s in rep_json["sections"] for t in s["tables"] if t["name"] == "map")["rows"]
    assert map_rows[0][:4] == ["prior", "HICO-DET", "official", 20.0]
    vcoco_rows = next(t for s in rep_json["sections"] for t in s["tables"] if t["name"] == "vcoco")["rows"]
    assert [r[:6] for r in vcoco_rows] == [["detector-a", "V-COCO", 10, 50.0, 50.0, 100.0],
                                           ["detector-b", "V-COCO", 10, 25.0, 25.0, 50.0]]


def test_report_is_byte_reproducible(tmp_path):
    a = build_report(_results()).write(tmp_path / "a")
    b = build_report(_results()).write(tmp_path / "b")
    assert a.html.read_bytes() == b.html.read_bytes()
    assert a.json.read_bytes() == b.json.read_bytes()


def test_report_needs_results():
    with pytest.raises(ValidationError, match="at least one result"):
        build_report([])


def test_report_refuses_results_it_has_no_section_for():
    matches = ResultRecord.from_json({"kind": "hoi_matches", "n_gt": [1], "hoi": [0], "score": [0.5],
                                      "tp": [True]}, file="m.json")
    with pytest.raises(ValidationError, match=r"m\.json: hoi_matches results have no report section"):
        build_report([matches])


def test_vcoco_table_shows_agent_and_role_ap_in_percent():
    t = vcoco_table([_record(_vcoco_dict("a", "V-COCO", 0.5))])
    assert t.columns[3:6] == ("agent_ap", "role_ap_scenario_1", "role_ap_scenario_2")
    assert t.rows[0][3:6] == (50.0, 50.0, 100.0)
    one = _vcoco_dict("b", "V-COCO", 0.2)
    del one["role_ap"]["scenario_2"]  # eval vcoco --scenario 1
    assert vcoco_table([_record(one)]).rows[0][4:6] == (pytest.approx(20.0), None)


# ---------------------------------------------------------------------------------- Chromium
_CHECK_SCRIPT = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var decoded = imgs.filter(function (i) {
    return i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0; }).length;
  var tables = Array.prototype.slice.call(document.querySelectorAll('table[data-table]'));
  var shown = tables.filter(function (t) {
    return t.rows.length > 1 && t.getBoundingClientRect().height > 0; }).length;
  var m = document.createElement('pre');
  m.id = 'render-check';
  m.textContent = 'RENDER images=' + imgs.length + ' decoded=' + decoded +
                  ' tables=' + tables.length + ' shown=' + shown + ' END';
  document.body.appendChild(m);
});
</script>"""


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def check_html_in_chromium(html_path: Path, work: Path, *, n_images: int, n_tables: int,
                           screenshot_name: str) -> Path:
    """Open a report in headless Chromium: every image decoded and every table shown; returns the
    screenshot (also copied to $HOIBENCH_ARTIFACTS when set)."""
    probe = work / "probe.html"
    probe.write_text(html_path.read_text().replace("</body>", _CHECK_SCRIPT + "</body>"))
    dom = _chromium(["--dump-dom", probe.as_uri()], work / "profile-dom")
    found = re.search(r"RENDER images=(\d+) decoded=(\d+) tables=(\d+) shown=(\d+) END", dom.stdout)
    assert found, f"no render marker in Chromium's DOM (rc={dom.returncode}): {dom.stderr[-2000:]}"
    images, decoded, tables, shown = map(int, found.groups())
    assert (images, decoded) == (n_images, n_images)
    assert (tables, shown) == (n_tables, n_tables)
    return full_page_screenshot(html_path, work, screenshot_name, height=4000)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs Debian's "
                                             "chromium package: apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    rep = build_report(_results(), title="Chromium check")
    files = rep.write(tmp_path / "out")
    check_html_in_chromium(files.html, tmp_path, n_images=len(rep.figures), n_tables=len(rep.tables),
                           screenshot_name="report-screenshot.png")


# ---------------------------------------------------------------------------------- CLI
def test_report_cli_builds_report_from_result_files(tmp_path, capsys):
    paths = []
    for i, r in enumerate([_map_dict("A", "orig", 30.0), _map_dict("B", "orig", 20.0),
                           _map_dict("A", "bal", 10.0), _map_dict("B", "bal", 15.0),
                           _mcq_dict("prior", "mcq", 0.5)]):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(r))
        paths.append(str(p))
    out = tmp_path / "rep"
    main(["report", *paths, "--out", str(out), "--title", "CLI"])
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert printed == str(out / "report.html")
    shift = list(csv.reader((out / "tables" / "ranking-shift-orig-vs-bal.csv").open()))
    assert shift[0] == ["model", "map_orig", "rank_orig", "map_bal", "rank_bal", "shift", "arrow"]
    assert shift[1] == ["A", "30.0", "1", "10.0", "2", "-1", "↓ 1"]
    assert (out / "tables" / "mcq-metrics.csv").exists()


def test_report_cli_bad_file_is_one_line_error(tmp_path, capsys):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"kind": "hico_map", "model": "m"}))
    with pytest.raises(SystemExit) as exc:
        main(["report", str(p), "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {p}: full: missing"


def test_report_cli_reports_eval_vcoco_results(tmp_path, capsys):
    """``hoibench eval vcoco --json`` files (two models) become the report's V-COCO section."""
    from hoibench.formats import write_vcoco_detections, write_vcoco_ground_truth
    from tests.test_eval_vcoco import CUP, P0, P1, dets_of, gt_of

    gt = gt_of((1, [{"box": P0, "actions": {"hold": {"obj": CUP}}}]),
               (2, [{"box": P0, "actions": {"hold": {"obj": CUP}}}]))
    write_vcoco_ground_truth(gt, tmp_path / "gt.json")
    paths = []
    for name, second in (("good", P0), ("bad", P1)):
        det = dets_of({"image": 1, "box": P0, "agent": {"hold": 0.9}, "roles": {"hold_obj": (CUP, 0.9)}},
                      {"image": 2, "box": second, "agent": {"hold": 0.8}, "roles": {"hold_obj": (CUP, 0.8)}})
        write_vcoco_detections(det, tmp_path / f"{name}-det.json")
        out = tmp_path / f"{name}.json"
        main(["eval", "vcoco", "--gt", str(tmp_path / "gt.json"), "--pred", str(tmp_path / f"{name}-det.json"),
              "--json", str(out), "--model", name, "--benchmark", "toy", "--quiet"])
        paths.append(str(out))
    capsys.readouterr()
    main(["report", *paths, "--out", str(tmp_path / "rep")])
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "rep" / "report.html")
    rows = list(csv.reader((tmp_path / "rep" / "tables" / "vcoco.csv").open()))
    assert rows[0][:6] == ["model", "benchmark", "images", "agent_ap", "role_ap_scenario_1", "role_ap_scenario_2"]
    by = {r[0]: r for r in rows[1:]}
    assert by["good"][1:4] == ["toy", "2", "100.0"] and float(by["bad"][3]) == pytest.approx(50.0)
    assert (tmp_path / "rep" / "figures" / "vcoco-ap-good-toy.png").exists()
    assert "V-COCO role AP" in (tmp_path / "rep" / "report.md").read_text()


def test_report_reads_split_stats_files(tmp_path, capsys):
    sg = {"kind": "sg_stats", "name": "hico-det-sg1", "table1": {
        "images": {"train": 10, "test": 3}, "triplets": {"train": 40, "test": 7},
        "combinations": {"train": 9, "test": 1}}}
    bal = {"kind": "balanced_stats", "params": {"top_k": 5, "seed": 2},
           "sets": {"train": {"images": 4, "instances": 10}, "test": {"images": 2, "instances": 5}},
           "total_deficit": {"train": 1, "test": 0}}
    paths = []
    for i, d in enumerate((sg, bal, _map_dict("m", "b", 3.0))):
        p = tmp_path / f"s{i}.json"
        p.write_text(json.dumps(d))
        paths.append(str(p))
    main(["report", *paths, "--out", str(tmp_path / "o")])
    capsys.readouterr()
    rows = list(csv.reader((tmp_path / "o" / "tables" / "stats-hico-det-sg1.csv").open()))
    assert rows == [["data split", "part", "images", "triplets", "combinations"],
                    ["hico-det-sg1", "train", "10", "40", "9"], ["hico-det-sg1", "test", "3", "7", "1"]]
    rows = list(csv.reader((tmp_path / "o" / "tables" / "stats-b-right-top-5-seed-2.csv").open()))
    assert rows[1] == ["train", "4", "10", "1"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**sg, "table1": {**sg["table1"], "images": {"train": 1}}}))
    with pytest.raises(FormatError, match=r"table1.images: expected an integer test count"):
        read_results([bad])


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs Debian's "
                                             "chromium package: apt-get install -y chromium)")
def test_chromium_check_catches_a_broken_image(tmp_path):
    rep = build_report(_results()[:2], title="broken")
    files = rep.write(tmp_path / "out")
    page = files.html.read_text()
    start = page.index("data:image/png;base64,") + len("data:image/png;base64,")
    files.html.write_text(page[:start] + "AAAA" + page[page.index('"', start):])
    n = len(rep.figures)
    with pytest.raises(AssertionError, match=rf"assert \({n}, {n - 1}\) == \({n}, {n}\)"):
        check_html_in_chromium(files.html, tmp_path, n_images=len(rep.figures),
                               n_tables=len(rep.tables), screenshot_name="broken.png")


def test_map_ci_shown_next_to_the_headline():
    d = _map_dict("m", "sg", 12.0, headline="unseen")
    d["ci"] = {"full": [10.0, 14.0], "unseen": [3.0, 5.5], "rare": None, "level": 0.95, "n_boot": 100,
               "bias": {"full": -0.1}}
    r = _record(d)
    assert r.result.headline_ci == (0.03, 0.055) and r.result.ci.confidence == 0.95  # fractions
    t = map_table([r, _record(_map_dict("n", "sg", 9.0, headline="unseen"))])
    assert t.column("ci_low") == [3.0, None] and t.column("ci_high") == [5.5, None]  # percent again
    assert "ci_low" not in map_table([_record(_map_dict("n", "sg", 9.0))]).columns
    d["ci"]["unseen"] = [6.0, 5.0]
    with pytest.raises(FormatError, match=r"ci.unseen: low 6.0 above high 5.0"):
        ResultRecord.from_json(d, file="r.json")


# ---------------------------------------------------------------------------------- one visual language
def _png_has_colour(png: bytes, hex_colour: str, *, min_pixels: int = 50) -> bool:
    """Whether a figure really draws ``hex_colour`` (not only claims it in its metadata)."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3).astype(int)
    want = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(rgb - want).max(axis=1) <= 2).sum()) >= min_pixels


def test_each_benchmark_keeps_one_colour_in_every_figure():
    from hoibench.reports import TrainCounts
    from hoibench.reports._style import benchmark_color

    recs = _results()
    counts = {b: TrainCounts(np.arange(40, dtype=float)[::-1], f"{b} train") for b in ("B-RIGHT", "HICO-DET")}
    rep = build_report(recs, train_counts=counts)
    seen: dict[str, set[str]] = {}
    for f in rep.figures:
        for name, colour in f.colors.items():
            seen.setdefault(name, set()).add(colour)
            assert _png_has_colour(f.png, colour), (f.name, name, colour)
    for bench in ("HICO-DET", "B-RIGHT", "HICO-DET-SG"):
        assert seen[bench] == {benchmark_color(bench)}, bench
    by_fig = {f.name: f for f in rep.figures}
    assert set(by_fig["map-bars"].colors) == set(by_fig["class-ap-boxplot"].colors) == {
        "HICO-DET", "B-RIGHT", "HICO-DET-SG"}
    assert by_fig["class-ap-head-to-tail-b-right"].colors == {"B-RIGHT": benchmark_color("B-RIGHT")}
    # models compared in the multiple-choice bars keep theirs; figures are 2x rasters shown at 1x
    assert set(by_fig["mcq-mcq"].colors) == {"prior-top1", "random"}
    w, h = by_fig["map-bars"].size
    assert by_fig["map-bars"].display_size == (round(w / 2), round(h / 2))
    page = rep.to_html()
    assert f'width="{round(w / 2)}"' in page and "data-colors=" in page


def test_a_tie_is_no_rank_change():
    rs = [ResultRecord(HICOMapResult(full=f), m, b)
          for m, b, f in [("A", "orig", 0.30), ("B", "orig", 0.20), ("C", "orig", 0.10),
                          ("A", "sg", 0.0), ("B", "sg", 0.0), ("C", "sg", 0.0),
                          ("A", "bal", 0.05), ("B", "bal", 0.05), ("C", "bal", 0.25)]]
    rows = ranking_shift_rows(rs, reference="orig", other="sg")
    assert [(r.rank_other, r.shift, r.arrow) for r in rows] == [(1, 0, "–"), (1, 0, "="), (1, 0, "=")]
    # a real move keeps its arrow, even next to a tie: A and B tie for 2nd on bal, C moves up 2
    rows = {r.model: r for r in ranking_shift_rows(rs, reference="orig", other="bal")}
    assert (rows["C"].arrow, rows["A"].arrow, rows["B"].arrow) == ("↑ 2", "↓ 1", "–")
    from hoibench.reports import ranking_shift_markdown

    md = ranking_shift_markdown(ranking_shift_rows(rs, reference="orig", other="sg"), reference="orig", other="sg")
    assert "↑" not in md and "(=)" in md


def test_undefined_values_print_na_and_are_not_drawn():
    sg = _map_dict("m", "HICO-DET-SG1", 4.0, headline="unseen")
    sg["subsets"] = {"unseen": 0.0, "seen": None}  # an SG test set has no seen class
    rec = _record(sg)
    assert np.isnan(rec.result.subsets["seen"])
    t = map_table([rec])
    page = build_report([rec, _record(_map_dict("n", "HICO-DET-SG1", 1.0, headline="unseen"))]).to_html()
    row = t.text_rows()[0]
    assert row[t.columns.index("seen")] == "n/a" and row[t.columns.index("unseen")] == "0.00"
    cells = re.findall(r'<table data-table="map".*?</table>', page, re.S)[0]
    assert "n/a" in cells
    assert t.to_csv().splitlines()[1].split(",")[t.columns.index("seen")] == ""  # raw: empty, not 0
    # the record of `eval hico` / the demo: a subset without ground truth is NaN, not the 0.0 of a
    # mean over absent classes
    from hoibench.results import hico_map_record

    res = HICOMapResult(full=0.1, subsets={"unseen": 0.0, "seen": 0.0},
                        per_class_ap=np.array([0.0, np.nan, np.nan]), n_gt=np.array([3, 0, 0]))
    rec = hico_map_record(res, classes_spec="unseen:x", class_subsets={"unseen": [0], "seen": [1, 2]})
    assert rec.result.subsets["unseen"] == 0.0 and np.isnan(rec.result.subsets["seen"])
    assert rec.to_json()["subsets"] == {"unseen": 0.0, "seen": None}


def test_intervals_that_exclude_their_estimate_are_marked():
    from hoibench.reports import mcq_summary_table, mcq_table

    bad = _mcq_dict("random", "MCQ", 0.467)
    bad["ci"]["macro_f1"] = [0.419, 0.457]  # the interval: 46.7 [41.9, 45.7]
    recs = [_record(bad), _record(_mcq_dict("prior", "MCQ", 0.4))]
    summary = mcq_summary_table(recs)
    assert summary.rows[0][summary.columns.index("macro_f1")] == "46.7 [41.9, 45.7] †"
    assert summary.rows[1][summary.columns.index("macro_f1")] == "40.0 [35.0, 45.0]"
    long = mcq_table(recs)
    flags = {(r[0], r[3]): r[-1] for r in long.rows}
    assert flags[("random", "macro_f1")] is True and flags[("random", "micro_f1")] is False
    d = _map_dict("m", "sg", 12.0)
    d["ci"] = {"full": [13.0, 14.0], "level": 0.95, "n_boot": 100}
    assert map_table([_record(d)]).column("ci_excludes_estimate") == [True]
    fig = build_report(recs).figures
    assert any("†" in f.caption for f in fig if f.name.startswith("mcq-"))


def test_head_to_tail_uses_each_benchmarks_own_train_split():
    from hoibench.reports import TrainCounts

    recs = [r for r in _results() if r.kind == "hico_map"]
    # without B-RIGHT's own split there is no B-RIGHT profile, and the report says so
    rep = build_report(recs)
    assert not [f for f in rep.figures if f.name.startswith("class-ap-head-to-tail")]
    section = next(s for s in rep.sections if s.title.startswith("Class-AP"))
    assert "B-RIGHT: no head-to-tail profile, its train split was not given" in section.text
    own = TrainCounts(np.r_[np.full(20, 50.0), np.full(20, 10.0)], "B-RIGHT's train split")
    zero = TrainCounts(np.zeros(40), "the SG split's train set")
    rep = build_report(recs, train_counts={"b-right": own, "HICO-DET-SG": zero})
    names = [f.name for f in rep.figures if f.name.startswith("class-ap-head-to-tail")]
    assert names == ["class-ap-head-to-tail-b-right"]
    fig = next(f for f in rep.figures if f.name == "class-ap-head-to-tail-b-right")
    assert "B-RIGHT's train split" in fig.caption
    section = next(s for s in rep.sections if s.title.startswith("Class-AP"))
    assert "HICO-DET-SG: no head-to-tail profile, every test class has 0 train instances" in section.text
    table = next(t for t in rep.tables if t.name == "class-ap-head-to-tail")
    assert set(table.column("benchmark")) == {"B-RIGHT"} and "B-RIGHT's train split" in table.caption
    # bins from B-RIGHT's own counts: the first 20 classes (50 each) head, the rest tail
    assert table.rows[0][2] == 39  # class 0 has no ground truth


def test_report_refuses_one_benchmark_name_on_two_ground_truths(tmp_path, capsys):
    from tests.conftest import one_line_error

    paths = []
    for i, gt in enumerate(("sha256:" + "a" * 64, "sha256:" + "b" * 64)):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(_map_dict(f"m{i}", "test_hico.json", 10.0 + i, ground_truth_id=gt)))
        paths.append(str(p))
    err = one_line_error(["report", *paths, "--out", str(tmp_path / "o")], capsys)
    assert "both name benchmark 'test_hico.json' but were scored on different ground truth" in err
    assert paths[0] in err and paths[1] in err
    # the same ground truth merges
    (tmp_path / "r1.json").write_text(json.dumps(_map_dict("m1", "test_hico.json", 11.0,
                                                           ground_truth_id="sha256:" + "a" * 64)))
    main(["report", *paths, "--out", str(tmp_path / "o")])
    capsys.readouterr()


def test_report_finds_results_in_nested_folders(tmp_path, capsys):
    from tests.conftest import one_line_error

    root = tmp_path / "results"
    for bench in ("HICO-DET", "B-RIGHT"):
        for m, v in (("a", 10.0), ("b", 5.0)):
            p = root / "map" / bench.lower() / f"{m}.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(_map_dict(m, bench, v)))
    main(["report", str(root), "--out", str(tmp_path / "o")])
    capsys.readouterr()
    rows = list(csv.DictReader((tmp_path / "o" / "tables" / "map.csv").open()))
    assert len(rows) == 4
    (tmp_path / "empty").mkdir()
    err = one_line_error(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "o2")], capsys)
    assert "no result files (*.json) in this folder or below it" in err


def test_eval_without_model_names_results_after_the_prediction_file(tmp_path, capsys):
    from hoibench.formats import read_dataset, write_ppdm, write_predictions
    from tests.conftest import FIXTURES, one_line_error
    from tests.test_cli_bad_input import _perfect_predictions

    gt = read_dataset(FIXTURES / "mini_instances_test2015.json")
    outs = []
    for i, keep in enumerate((gt.n_images, max(1, gt.n_images // 2))):
        d = tmp_path / f"gt{i}"
        part = gt.subset(np.arange(keep), name=gt.name)
        write_ppdm(part, d / "test_hico.json")
        write_predictions(_perfect_predictions(part), tmp_path / f"detector-{i}.json")
        outs.append(tmp_path / f"r{i}.json")
        main(["eval", "hico", "--gt", str(d / "test_hico.json"), "--pred", str(tmp_path / f"detector-{i}.json"),
              "--json", str(outs[-1])])
    capsys.readouterr()
    recs = read_results(outs)
    assert [r.model for r in recs] == ["detector-0", "detector-1"]  # not both "test_hico"
    assert recs[0].benchmark == recs[1].benchmark == "test_hico.json"
    assert recs[0].extra["ground_truth_id"] != recs[1].extra["ground_truth_id"]
    err = one_line_error(["report", *map(str, outs), "--out", str(tmp_path / "o")], capsys)
    assert "scored on different ground truth" in err


def test_analyze_names_benchmarks_case_insensitively_and_ranks_by_headline(tmp_path, capsys):
    from tests.conftest import one_line_error

    paths = []
    for m, full, unseen in (("a", 30.0, 1.0), ("b", 20.0, 9.0)):
        for bench, kw in (("HICO-DET", {}), ("HICO-DET-SG1", {"headline": "unseen"})):
            d = _map_dict(m, bench, full if bench == "HICO-DET" else full / 2, n=40, seed=len(paths), **kw)
            d["subsets"] = {"unseen": unseen}
            p = tmp_path / f"{m}-{bench}.json"
            p.write_text(json.dumps(d))
            paths.append(str(p))
    main(["analyze", "class-ap", *paths, "--reference", "hico-det", "--other", "hico-det-sg1"])
    out = capsys.readouterr().out
    assert "variance_ratio_vs_HICO-DET" in out
    err = one_line_error(["analyze", "class-ap", *paths, "--reference", "nonexistent", "--other", "hico-det"],
                         capsys)
    assert "--reference 'nonexistent': no result on that benchmark; benchmarks: HICO-DET, HICO-DET-SG1" in err
    main(["analyze", "ranking", *paths, "--reference", "hico-det", "--other", "hico-det-sg1"])
    out = capsys.readouterr().out
    # by the headline (unseen on SG1: a 1.0, b 9.0), as the report ranks, b moves up
    assert "| b | 20.00 | 2 | 9.00 | 1 (↑ 1) |" in out
    rep = build_report(read_results(paths), reference_benchmark="HICO-DET")
    t = next(t for t in rep.tables if t.name.startswith("ranking-shift"))
    assert t.column("rank_HICO-DET-SG1") == [2, 1]


# ---------------------------------------------------------------------------------- Chromium: what a reader sees
_PROBE_SCRIPT = """<script>
window.addEventListener('load', function () {
  var figs = Array.prototype.slice.call(document.querySelectorAll('figure[data-figure]')).map(function (f) {
    var img = f.querySelector('img');
    return {name: f.getAttribute('data-figure'), colors: JSON.parse(f.getAttribute('data-colors') || '{}'),
            decoded: !!(img && img.complete && img.naturalWidth > 0 && img.getBoundingClientRect().width > 0),
            natural: img ? img.naturalWidth : 0, shown: img ? img.getBoundingClientRect().width : 0};
  });
  var tables = {};
  document.querySelectorAll('table[data-table]').forEach(function (t) {
    tables[t.getAttribute('data-table')] = Array.prototype.slice.call(t.rows).map(function (r) {
      return Array.prototype.slice.call(r.cells).map(function (c) { return c.textContent; }); });
  });
  var out = {figures: figs, tables: tables, height: document.documentElement.scrollHeight,
             scroll_width: document.documentElement.scrollWidth, width: window.innerWidth};
  var m = document.createElement('pre');
  m.id = 'probe';
  m.textContent = 'PROBE' + JSON.stringify(out) + 'END';
  document.body.appendChild(m);
});
</script>"""


def chromium_probe(html_path: Path, work: Path, *, width: int = 1280) -> dict:
    """What headless Chromium shows of a report at ``width`` px: every figure (decoded, its
    colours), every table's text as rendered, the page's height and whether it scrolls sideways."""
    probe = work / f"probe-{width}.html"
    probe.write_text(html_path.read_text().replace("</body>", _PROBE_SCRIPT + "</body>"))
    dom = _chromium([f"--window-size={width},1000", "--dump-dom", probe.as_uri()], work / f"profile-probe-{width}")
    found = re.search(r'<pre id="probe">PROBE(.*?)END</pre>', dom.stdout, re.S)
    assert found, f"no probe marker in Chromium's DOM (rc={dom.returncode}): {dom.stderr[-2000:]}"
    import html as html_lib

    return json.loads(html_lib.unescape(found.group(1)))


def full_page_screenshot(html_path: Path, work: Path, name: str, *, height: int, width: int = 1280) -> Path:
    """A screenshot of the whole page (its measured height), copied to $HOIBENCH_ARTIFACTS when set."""
    shot = work / name
    res = _chromium([f"--screenshot={shot}", f"--window-size={width},{height}", "--hide-scrollbars",
                     html_path.as_uri()], work / f"profile-shot-{name}")
    assert shot.exists() and shot.stat().st_size > 10_000, res.stderr[-2000:]
    with Image.open(shot) as im:
        assert im.size == (width, height)
        assert len(np.unique(np.asarray(im.convert("L")))) > 10  # not a blank page
    artefacts = os.environ.get("HOIBENCH_ARTIFACTS")
    if artefacts:
        Path(artefacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artefacts) / name)
    return shot


def _tie_only(rank_a: int, tied_a: int, rank_b: int, tied_b: int) -> bool:
    """The test's own rule: the ranks differ but the ranks a tie spans overlap."""
    return rank_a != rank_b and max(rank_a, rank_b) <= min(rank_a + tied_a - 1, rank_b + tied_b - 1)


def check_report_as_a_reader_sees_it(report_dir: Path, work: Path, screenshot_name: str) -> dict:
    """The Must-show checks of issue 15 on a written report, in headless Chromium: every figure of
    report.json present and decoded; each benchmark (and model) one colour across figures; every
    undefined cell (null in report.json) printed "n/a", never a number; a rank move that only a
    tie explains shows no arrow; no sideways scrolling at 800 px; a full-page screenshot saved."""
    rep = json.loads((report_dir / "report.json").read_text())
    seen = chromium_probe(report_dir / "report.html", work)
    want = [f["name"] for s in rep["sections"] for f in s["figures"]]
    assert [f["name"] for f in seen["figures"]] == want
    assert all(f["decoded"] for f in seen["figures"]), [f["name"] for f in seen["figures"] if not f["decoded"]]
    colours: dict[str, set[str]] = {}
    for f in seen["figures"]:
        for name, c in f["colors"].items():
            colours.setdefault(name, set()).add(c)
    assert all(len(c) == 1 for c in colours.values()), colours
    tables = [t for s in rep["sections"] for t in s["tables"]]
    assert sorted(seen["tables"]) == sorted(t["name"] for t in tables)
    for t in tables:
        shown = seen["tables"][t["name"]][1:]  # without the header row
        assert len(shown) == len(t["rows"]), t["name"]
        for raw, text in zip(t["rows"], shown):
            for v, cell in zip(raw, text):
                if v is None:
                    assert cell == "n/a", (t["name"], raw, text)
        if t["name"].startswith("ranking-shift"):
            c = t["columns"]
            ma, ra, mb, rb = (c.index(x) for x in (c[1], c[2], c[3], c[4]))
            for raw, text in zip(t["rows"], shown):
                tied_a = sum(r[ma] == raw[ma] for r in t["rows"])
                tied_b = sum(r[mb] == raw[mb] for r in t["rows"])
                arrow = text[c.index("arrow")]
                if _tie_only(raw[ra], tied_a, raw[rb], tied_b):
                    assert arrow == "=", (t["name"], text)
                elif raw[ra] != raw[rb]:
                    assert arrow[0] in "↑↓", (t["name"], text)
    narrow = chromium_probe(report_dir / "report.html", work, width=800)
    assert narrow["scroll_width"] <= narrow["width"], "the page scrolls sideways at 800 px"
    full_page_screenshot(report_dir / "report.html", work, screenshot_name, height=min(seen["height"], 16000))
    return seen


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs Debian's "
                                             "chromium package: apt-get install -y chromium)")
def test_hand_made_report_as_a_reader_sees_it(tmp_path):
    recs = _results()
    tie = [_record(_map_dict(m, "SG-tie", 0.0, n=40, seed=30 + i)) for i, m in enumerate(("prior", "prior-top3", "other"))]
    files = build_report(recs + tie, title="Reader check", reference_benchmark="HICO-DET").write(tmp_path / "out")
    seen = check_report_as_a_reader_sees_it(tmp_path / "out", tmp_path, "hand-made-report-full-page.png")
    arrows = [r[-1] for r in seen["tables"]["ranking-shift-hico-det-vs-sg-tie"][1:]]
    assert arrows == ["–", "=", "="]
    assert files.html.exists()
