"""Exit codes, messages and output (issue 13, findings 7 and 9): 0 only when the command did what
was asked, OS and SQLite errors as one line naming the user's path, ``--json PATH|-`` the same in
every command, tables written to a pipe neither wrapped nor truncated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hoibench.cli import main
from hoibench.datasets import load_dataset
from hoibench.formats import write_ppdm
from tests.conftest import FIXTURES

GT = FIXTURES / "mini_instances_test2015.json"


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A train and a test file sharing one image (and nothing else leaking)."""
    d = tmp_path_factory.mktemp("audit")
    ds = load_dataset("hico-det:test").subset(np.arange(40))
    write_ppdm(ds.subset(np.arange(0, 21)), d / "train.json")
    write_ppdm(ds.subset(np.arange(20, 40)), d / "test.json")
    return d / "train.json", d / "test.json"


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hoibench", *args], capture_output=True, text=True, timeout=300)


def test_split_audit_fails_when_an_image_is_in_train_and_test(parts, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["split", "audit", str(parts[0]), str(parts[1]), "--json", "-"])
    report = json.loads(capsys.readouterr().out)
    assert len(report["shared_images"]) == 1 and exc.value.code == 1


def test_data_validate_exits_2_for_a_file_it_cannot_read(tmp_path: Path, capsys) -> None:
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SystemExit) as exc:
        main(["data", "validate", str(tmp_path / "bin.json")])
    assert exc.value.code == 2 and "bin.json" in capsys.readouterr().err
    main(["data", "validate", str(GT)])  # a readable file without problems: no exit code
    assert "OK" in capsys.readouterr().out


def test_data_validate_finds_boxes_outside_the_image(tmp_path: Path, capsys) -> None:
    ds = load_dataset("hico-det:test").subset(np.arange(3))
    write_ppdm(ds, tmp_path / "gt.json")
    entries = json.loads((tmp_path / "gt.json").read_text())
    entries[1]["annotations"][0]["bbox"][2] = entries[1]["width"] + 50
    (tmp_path / "gt.json").write_text(json.dumps(entries))
    with pytest.raises(SystemExit) as exc:
        main(["data", "validate", str(tmp_path / "gt.json")])
    out = capsys.readouterr().out
    assert exc.value.code == 1 and "record 1: boxes[0]" in out and "outside" in out


def test_a_cache_that_is_no_database_is_one_line_naming_it(tmp_path: Path) -> None:
    from hoibench._exceptions import ConfigError
    from hoibench.models._cache import ResponseCache

    (tmp_path / "cache.sqlite").write_text("notes, not a database")
    with pytest.raises(ConfigError, match=r"cache\.sqlite: cannot use it as the response cache"):
        ResponseCache(tmp_path / "cache.sqlite")


def test_json_means_one_thing_in_every_command(tmp_path: Path, capsys) -> None:
    """A path writes the file (the table still prints), '-' and a bare --json print JSON only."""
    main(["data", "info", str(GT), "--json", str(tmp_path / "info.json")])
    table = capsys.readouterr().out
    written = json.loads((tmp_path / "info.json").read_text())
    assert "images" in json.dumps(written) and "{" not in table
    for flag in (["--json", "-"], ["--json"]):
        main(["data", "info", str(GT), *flag])
        assert json.loads(capsys.readouterr().out) == written
    assert not (Path.cwd() / "-").exists()


def test_tables_written_to_a_pipe_are_not_wrapped_or_truncated(tmp_path: Path) -> None:
    name = "a-model-with-a-name-far-longer-than-eighty-columns-" + "x" * 60
    rec = {"kind": "hico_map", "model": name, "benchmark": "b", "protocol": "official", "known_object": False,
           "full": 10.0, "rare": 5.0, "non_rare": 12.0, "subsets": {}, "per_class_ap": [0.5] * 600,
           "n_gt": [1] * 600, "class_names": ["c"] * 600, "classes": None}
    (tmp_path / "r.json").write_text(json.dumps(rec))
    r = _run(["analyze", "class-ap", str(tmp_path / "r.json")])
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("|")]
    assert any(name in ln for ln in rows) and "…" not in r.stdout
    assert len({ln.count("|") for ln in rows}) == 1  # every Markdown row whole


def test_glibc_reuses_freed_memory_in_the_cli(monkeypatch) -> None:
    """``main`` asks glibc for large blocks from its heap (reused once freed); a threshold the
    user set is left alone, and other platforms are untouched."""
    import platform

    from hoibench.cli import reuse_freed_memory

    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert reuse_freed_memory() is glibc
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert reuse_freed_memory() is False
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert reuse_freed_memory() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_heap_memory_is_kept_for_the_next_array() -> None:
    """With the CLI's allocator settings an array freed at the heap's top is reused by the next
    one instead of being handed back and faulted in again (a user's ``MALLOC_TRIM_THRESHOLD_``,
    here glibc's own 128 KiB, is left alone and shows the difference)."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    code = ("import resource, numpy as np\n"
            "from hoibench.cli import reuse_freed_memory\n"
            "reuse_freed_memory()\n"
            "f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "for _ in range(10):\n"
            "    a = np.ones(20 << 20, dtype=np.uint8)\n"
            "    del a\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n")

    def faults(**env: str) -> int:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        return int(subprocess.run([sys.executable, "-c", code], env={**environ, **env}, check=True,
                                  capture_output=True, text=True).stdout)

    kept, handed_back = faults(), faults(MALLOC_TRIM_THRESHOLD_="131072")
    assert kept * 3 < handed_back, (kept, handed_back)
