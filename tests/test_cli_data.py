"""The ``hoibench data`` commands, run as a user would (exit codes, one-line errors, JSON)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import shared_file


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hoibench", *args], capture_output=True, text=True,
                          timeout=120)


def test_info_bundled_json_has_required_keys_and_splits():
    r = run("data", "info", "hico-det", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ("images", "empty_images", "pairs", "combinations", "objects", "verbs"):
        assert key in out
    assert out["splits"]["train"]["images"] == 38_118 and out["splits"]["train"]["pairs"] == 117_654
    assert out["splits"]["test"]["images"] == 9_658 and out["splits"]["test"]["pairs"] == 33_405


def test_info_real_files():
    r = run("data", "info", str(shared_file("hoi-sg/test_hico_sg1.json")), "--json")
    out = json.loads(r.stdout)
    assert (out["images"], out["pairs"], out["combinations"]) == (8515, 14475, 60)
    r = run("data", "info", str(shared_file("hico-det/instances_test2015.json")), "--json")
    out = json.loads(r.stdout)
    assert (out["images"], out["pairs"], out["combinations"]) == (9658, 33405, 600)
    r = run("data", "info", "hico-det:test")
    assert r.returncode == 0 and "33,405" in r.stdout


def test_stats_by_verb_sorted(tmp_path):
    r = run("data", "stats", "hico-det:test", "--by", "verb", "--sort", "count", "--json")
    rows = json.loads(r.stdout)
    assert len(rows) == 117 and sum(x["count"] for x in rows) == 33_405
    assert rows[0]["count"] >= rows[1]["count"] >= rows[-1]["count"]
    r = run("data", "stats", "hico-det:test", "--by", "class", "--json")
    assert len(json.loads(r.stdout)) == 600


def test_convert_then_info(tmp_path):
    out = tmp_path / "test_hico.json"
    r = run("data", "convert", "hico-det:test", str(out), "--to", "ppdm")
    assert r.returncode == 0, r.stderr
    info = json.loads(run("data", "info", str(out), "--json").stdout)
    assert info["format"] == "ppdm" and info["pairs"] == 33_405


def test_validate_lists_problems_and_exits_1(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([
        {"file_name": "HICO_a.jpg", "annotations": [{"bbox": [5, 0, 1, 1], "category_id": 1},
                                                     {"bbox": [0, 0, 1, 1], "category_id": 3}],
         "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 1}]},
        {"file_name": "HICO_a.jpg", "annotations": [], "hoi_annotation": []},
    ]))
    r = run("data", "validate", str(bad))
    assert r.returncode == 1
    lines = r.stdout.strip().splitlines()
    assert f"{bad}: record 0: boxes[0]: inverted box (x2 < x1 or y2 < y1): [5.0, 0.0, 1.0, 1.0]" in lines
    assert any("record 0: file_name: duplicate image 'HICO_a.jpg'" in ln for ln in lines)
    good = tmp_path / "good.json"
    assert run("data", "convert", "hico-det:test", str(good), "--to", "hicodet").returncode == 0
    r = run("data", "validate", str(good))
    assert r.returncode == 0 and "OK" in r.stdout


@pytest.mark.parametrize("args", [
    ("data", "info", "missing.json"),
    ("data", "info", "hico-dte"),
    ("data", "convert", "hico-det:test", "x.json", "--to", "hake"),
])
def test_bad_input_is_one_line_without_traceback(tmp_path, args):
    r = subprocess.run([sys.executable, "-m", "hoibench", *args], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_bad_json_file_is_one_line(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("[1, 2")
    r = run("data", "info", str(p))
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "not valid JSON" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
