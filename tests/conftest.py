"""Shared test fixtures: the real annotation files in ``../shared/data`` (skipped when absent),
and small vendored fixtures under ``tests/fixtures`` that always run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hoibench.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED_DATA = Path(os.environ.get("HOIBENCH_SHARED_DATA", ROOT.parent / "shared" / "data"))


def one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the ``hoibench`` entry point; it must exit non-zero with one ``error:`` line."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert exc.value.code != 0 and len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def shared_file(rel: str) -> Path:
    """Path of a real data file; skips the test with a clear reason when it is absent."""
    path = SHARED_DATA / rel
    if not path.exists():
        pytest.skip(f"real data not available: {path} (set HOIBENCH_SHARED_DATA to ../shared/data)")
    return path


@pytest.fixture
def shared() -> type[_Shared]:
    return _Shared


class _Shared:
    root = SHARED_DATA
    file = staticmethod(shared_file)


@pytest.fixture(params=["read", "mapped"])
def file_access(request, monkeypatch) -> str:
    """Run a reader test twice: the file read into memory, and memory-mapped (``read_buffer``
    maps files from 16 MB on; under ``mapped`` every file is mapped)."""
    import hoibench._io

    if request.param == "mapped":
        monkeypatch.setattr(hoibench._io, "_MAP_AT", 0)
    return request.param
