"""Provenance and whole-folder writes (issue 13, findings 1 and 2): split folders record what made
them and are replaced as a whole, a folder that mixes two outputs is refused by its readers, the
demo resumes or reuses only what exactly the same run made, augmentation resumes only on an
exact match."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from hoibench.benchmarks.sg import build_sg_split
from hoibench.datasets import load_dataset
from hoibench.formats import write_ppdm
from tests.conftest import one_line_error


@pytest.fixture(scope="module")
def small() -> object:
    return load_dataset("hico-det:test").subset(np.arange(600))


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_crash_while_writing_a_split_leaves_the_old_split_whole(tmp_path: Path, small, monkeypatch) -> None:
    """Finding 2: a split written over another one and interrupted after its first file used to
    leave a folder mixing the two splits (every file whole)."""
    out = tmp_path / "D"
    build_sg_split(small, random_state=1, ratio=0.8).write(out)
    old = _files(out)
    new_split = build_sg_split(small, random_state=2, ratio=0.8)
    import hoibench.benchmarks.sg._split as split_module

    calls = {"n": 0}
    real = split_module.write_ppdm

    def dies_after_the_first_file(ds, path):  # the process "is killed" after trainval is written
        real(ds, path)
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(split_module, "write_ppdm", dies_after_the_first_file)
    with pytest.raises(KeyboardInterrupt):
        new_split.write(out)
    assert _files(out) == old
    assert [p.name for p in tmp_path.iterdir()] == ["D"]  # the staging folder went with it
    monkeypatch.undo()
    new_split.write(out)
    assert json.loads((out / "stats.json").read_text())["seed"] == 2


def test_split_folders_record_parameters_and_input_hashes(tmp_path: Path, small, capsys) -> None:
    from hoibench.cli import main

    src = tmp_path / "src.json"
    write_ppdm(small, src)
    with pytest.raises(SystemExit):
        main(["split", "sg", "--dataset", str(src), "--seed", "3", "--ratio", "0.8", "--out", str(tmp_path / "D")])
    capsys.readouterr()
    prov = json.loads((tmp_path / "D" / "provenance.json").read_text())
    assert prov["writer"] == "split sg" and prov["parameters"]["seed"] == 3
    assert prov["inputs"]["dataset"] == [f"sha256:{hashlib.sha256(src.read_bytes()).hexdigest()}"]
    for name, digest in prov["files"].items():
        assert hashlib.sha256((tmp_path / "D" / name).read_bytes()).hexdigest() == digest


def test_readers_refuse_a_folder_that_mixes_two_splits(tmp_path: Path, small, capsys) -> None:
    a, b = tmp_path / "A", tmp_path / "B"
    build_sg_split(small, random_state=1, ratio=0.8).write(a)
    build_sg_split(small, random_state=2, ratio=0.8).write(b)
    (a / "test_combinations.json").write_bytes((b / "test_combinations.json").read_bytes())  # by hand
    err = one_line_error(["split", "stats", "--no-original", str(a)], capsys)
    assert "mixes outputs" in err and "test_combinations.json" in err
    err = one_line_error(["split", "zero-shot", "--protocol", str(a), "--out", str(tmp_path / "z")], capsys)
    assert "mixes outputs" in err


def test_a_split_is_not_written_over_a_folder_of_other_files(tmp_path: Path, small) -> None:
    from hoibench._exceptions import ConfigError

    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="did not write"):
        build_sg_split(small, random_state=1, ratio=0.8).write(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_demo_discards_a_partial_folder_of_another_run(tmp_path: Path, monkeypatch) -> None:
    """Finding 1: work left by a killed run is reused only when its provenance is exactly this
    run's; another seed's partial results are thrown away, not reported as this seed's."""
    import hoibench.demo as demo

    cfg = demo.DemoConfig(seed=0)
    partial = demo.partial_folder(tmp_path / "D")
    (partial / "results" / "mcq").mkdir(parents=True)
    stale = partial / "results" / "mcq" / "random-setting1.json"
    stale.write_text("seed 1's result")
    (partial / "demo.json").write_text(json.dumps({
        "kind": "hoibench_demo", "config": demo.DemoConfig(seed=1).to_dict(),
        "provenance": demo._provenance(demo.DemoConfig(seed=1)), "finished": False}))

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(demo, "_build_benchmarks", stop)  # look at the folder, then stop
    with pytest.raises(Stop):
        demo.run_demo(tmp_path / "D", config=cfg, progress=False)
    assert not stale.exists()
    marker = json.loads((partial / "demo.json").read_text())
    assert marker["provenance"] == demo._provenance(cfg) and not marker["finished"]
    assert not (tmp_path / "D").exists()  # the target is only ever a finished run


def test_demo_provenance_names_the_bundled_data_by_content() -> None:
    import hoibench.demo as demo
    from hoibench.datasets import bundled_path

    prov = demo._provenance(demo.DemoConfig())
    digest = hashlib.sha256(bundled_path("hico-det", "test").read_bytes()).hexdigest()
    assert prov["inputs"]["hico-det:test"] == f"sha256:{digest}"
    assert demo._provenance(demo.DemoConfig(seed=1)) != prov


def test_augment_resume_refuses_another_dataset(tmp_path: Path) -> None:
    from hoibench._exceptions import ConfigError
    from hoibench.augment._pipeline import RUN_FILE, _check_run_file

    header = {"kind": "augment_generate", "config": {"seed": 0}, "classes": [[1, 2]], "models": {},
              "dataset": "real.json", "dataset_sha256": "a" * 64}
    _check_run_file(tmp_path, header)
    assert (tmp_path / RUN_FILE).exists()
    _check_run_file(tmp_path, dict(header))  # the same run resumes
    (tmp_path / "manifest.jsonl").write_text('{"event": "attempt", "hoi": 1, "attempt": 0, "status": "kept"}\n')
    with pytest.raises(ConfigError, match="different dataset content"):  # it holds work
        _check_run_file(tmp_path, {**header, "dataset_sha256": "b" * 64})
