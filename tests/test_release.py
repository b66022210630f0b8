"""Frozen releases: a fresh build matches the shipped sha256 manifest, ``hoibench verify`` fails on
one changed line (one line per mismatch, non-zero exit), and ``hoibench export --to hf`` writes a
folder ``datasets.load_dataset(DIR, config)`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoibench.benchmarks._hf import export_hf
from hoibench.benchmarks._release import (
    RELEASE,
    RELEASE_BENCHMARKS,
    build_release,
    folder_manifest,
    load_manifest,
    select_benchmarks,
    verify_release,
)
from hoibench.benchmarks.mcq import build_mcq_training_set
from hoibench.cli import main
from tests.test_mcq_builder import synthetic_dataset

FAST = "b-right/seed0"  # the quickest frozen benchmark to build (≈ 4 s)


@pytest.fixture(scope="module")
def fast_release(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("release")
    main(["release", "build", str(folder), "--only", FAST])  # builds, then verifies (exit 0)
    return folder


def test_manifest_ships_and_covers_every_benchmark() -> None:
    man = load_manifest()
    assert man["release"] == RELEASE
    assert list(man["benchmarks"]) == [b.name for b in RELEASE_BENCHMARKS]
    for b, (name, entry) in zip(RELEASE_BENCHMARKS, man["benchmarks"].items(), strict=True):
        assert (entry["command"], entry["description"]) == (b.command, b.description), name
        assert entry["files"], name
        assert all(len(f["sha256"]) == 64 and f["bytes"] > 0 for f in entry["files"].values())
    # that it ships in the wheel: tests/test_packaging.py (package-data covers every data file)


def test_fresh_build_verifies_and_one_changed_line_fails(fast_release, tmp_path, capsys) -> None:
    assert verify_release(fast_release, [FAST]) == []
    main(["verify", str(fast_release), "--only", FAST])
    assert "ok:" in capsys.readouterr().out
    copy = tmp_path / "copy"
    for p in (fast_release / FAST).iterdir():
        (copy / FAST).mkdir(parents=True, exist_ok=True)
        (copy / FAST / p.name).write_bytes(p.read_bytes())
    stats = copy / FAST / "stats.json"
    lines = stats.read_text().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if '"seed"' in ln)
    lines[k] = lines[k].replace("0", "1", 1)
    stats.write_text("".join(lines))
    with pytest.raises(SystemExit) as exc:
        main(["verify", str(copy), "--only", FAST])
    err = capsys.readouterr().err.splitlines()
    assert exc.value.code == 1
    assert len(err) == 2 and err[0].startswith(f"{FAST}/stats.json: changed (sha256 ") and err[1].startswith("error: 1 file")
    (copy / FAST / "classes.json").unlink()
    (copy / FAST / "notes.txt").write_text("x")
    problems = {(m.path, m.problem) for m in verify_release(copy, [FAST])}
    assert problems == {(f"{FAST}/stats.json", "changed"), (f"{FAST}/classes.json", "missing"),
                        (f"{FAST}/notes.txt", "unexpected")}


def test_the_recorded_command_writes_the_same_bytes(tmp_path, capsys) -> None:
    entry = load_manifest()["benchmarks"][FAST]
    argv = entry["command"].replace("DIR", str(tmp_path)).split()[1:]
    main(argv)
    capsys.readouterr()
    assert verify_release(tmp_path, [FAST]) == []


def test_unknown_benchmark_and_groups() -> None:
    assert [b.name for b in select_benchmarks(["mcq"])] == ["mcq/benchmark", "mcq/train"]
    assert len(select_benchmarks(["b-right"])) == 4 and len(select_benchmarks(["sg"])) == 3
    with pytest.raises(Exception, match="no frozen benchmark 'v-coco-sg1'"):
        select_benchmarks(["v-coco-sg1"])


def test_hf_export_loads_with_datasets(fast_release, tmp_path, capsys) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "hf"
    main(["export", str(out), "--to", "hf", "--release", str(fast_release), "--only", FAST, "--json"])
    counts = json.loads(capsys.readouterr().out)
    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "config_name: b-right-seed0" in card and "Annotations only" in card
    test = datasets.load_dataset(str(out), "b-right-seed0", split="test", cache_dir=str(tmp_path / "cache"))
    src = json.loads((fast_release / FAST / "test_hico.json").read_text())
    assert len(test) == len(src) == counts["b-right-seed0"]["test"]
    assert test[0]["file_name"] == src[0]["file_name"]
    assert test[0]["hoi_annotation"][0]["hoi_category_id"] == src[0]["hoi_annotation"][0]["hoi_category_id"]
    assert (out / "extra" / "b-right-seed0" / "stats.json").is_file()


def test_hf_export_of_questions_and_refusal_of_a_changed_release(tmp_path) -> None:
    """Question files lose their header line and keep ``meta`` as a JSON string (one schema);
    a release that does not match its manifest is not exported."""
    datasets = pytest.importorskip("datasets")
    release = tmp_path / "release"
    build = build_mcq_training_set(synthetic_dataset(), random_state=0)
    build.write((release / "mcq" / "train").mkdir(parents=True) or release / "mcq" / "train" / "questions.jsonl")
    manifest = folder_manifest(release, select_benchmarks(["mcq/train"]))
    export_hf(release, tmp_path / "hf", ["mcq/train"], manifest=manifest)
    ds = datasets.load_dataset(str(tmp_path / "hf"), "mcq-train", split="train", cache_dir=str(tmp_path / "cache"))
    assert len(ds) == len(build.questions)
    by_id = {q.id: q for q in build.questions}
    for row in ds:
        q = by_id[row["id"]]
        assert json.loads(row["meta_json"]) == json.loads(json.dumps(dict(q.meta)))
        assert row["correct"] == sorted(q.correct) and row["setting"] == q.setting
    path = release / "mcq" / "train" / "questions.jsonl"
    path.write_text(path.read_text().replace('"setting":1', '"setting":2', 1))
    with pytest.raises(Exception, match="differ from release"):
        export_hf(release, tmp_path / "hf2", ["mcq/train"], manifest=manifest)


@pytest.mark.slow
def test_full_release_build_verifies(tmp_path) -> None:
    """Every frozen benchmark, built fresh, matches the shipped manifest (≈ 3 min on 2 busy cores)."""
    manifest = build_release(tmp_path)
    assert list(manifest["benchmarks"]) == list(load_manifest()["benchmarks"])
    assert verify_release(tmp_path) == []
