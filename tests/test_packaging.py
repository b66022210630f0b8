"""Every data file inside the package ships in a wheel: pyproject's package-data covers it."""

from __future__ import annotations

import fnmatch

import pytest

from tests.conftest import ROOT

tomllib = pytest.importorskip("tomllib")


def test_package_data_globs_cover_every_data_file():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["hoibench"]
    pkg = ROOT / "src" / "hoibench"
    # (the C scanner: its source ships through setup.py's ext_modules, its build is an artefact)
    data_files = [p.relative_to(pkg).as_posix() for p in pkg.rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc", ".c", ".so", ".pyd")
                  and "__pycache__" not in p.parts]
    assert data_files
    missing = [f for f in data_files if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert missing == [], f"add these to [tool.setuptools.package-data] in pyproject.toml: {missing}"
