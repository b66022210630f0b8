"""The layers contract of pyproject.toml ([tool.importlinter]) holds, and it can fail: the same
contract run on a copy of the package with one import added against a layer is broken."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (pip install -e '.[test]')")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(ROOT / "src" / "hoibench", dst / "src" / "hoibench",
                    ignore=shutil.ignore_patterns("__pycache__", "_bundled"))
    shutil.copy(ROOT / "pyproject.toml", dst / "pyproject.toml")
    return dst


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + "\n" + line + "\n")


def test_contract_holds_on_a_copy_and_breaks_on_an_upward_import(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    ok = _lint(copy)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2 kept, 0 broken" in ok.stdout
    # the evaluator reaching up into the reports: one floor against the layering
    _append(copy / "src/hoibench/evaluation/_ap.py", "import hoibench.reports  # noqa")
    bad = _lint(copy)
    assert bad.returncode != 0
    assert "hoibench.evaluation._ap -> hoibench.reports" in bad.stdout


def test_siblings_stay_apart_and_evaluation_reads_no_files(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    # formats and evaluation are independent siblings of one floor
    _append(copy / "src/hoibench/formats/ppdm.py", "import hoibench.evaluation  # noqa")
    # evaluation is pure: no file I/O module
    _append(copy / "src/hoibench/evaluation/_iou.py", "import pathlib  # noqa")
    out = _lint(copy).stdout
    assert "hoibench.formats.ppdm -> hoibench.evaluation" in out
    assert "hoibench.evaluation._iou -> pathlib" in out
    assert "0 kept, 2 broken" in out


def test_a_new_top_level_package_must_be_placed_in_a_layer(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / "src/hoibench/stray").mkdir()
    (copy / "src/hoibench/stray/__init__.py").write_text("")
    res = _lint(copy)
    assert res.returncode != 0
    assert "hoibench.stray" in res.stdout + res.stderr


# Function-local imports of hoibench modules that stay, each for a reason other than an import loop.
_LAZY_ON_PURPOSE = {
    # the "tiny" generator kind builds a random SDXL from configs (tests and dry runs only)
    ("hoibench/augment/_models.py", "hoibench.testing"),
}


def _local_internal_imports(path: Path) -> list[tuple[int, str]]:
    import ast

    tree = ast.parse(path.read_text())
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            found += [(node.lineno, n) for n in names if n == "hoibench" or n.startswith("hoibench.")]
    return found


def test_the_library_imports_hoibench_modules_at_module_level() -> None:
    """Function-local imports only hid import loops; the layers have none left. The CLI (the top
    floor, imported by nothing) keeps its imports inside the commands so that `hoibench --help`
    does not load numpy, scipy and matplotlib."""
    src = ROOT / "src"
    offenders = []
    for path in sorted((src / "hoibench").rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel.startswith("hoibench/cli/"):
            continue
        for line, name in _local_internal_imports(path):
            if (rel, name) not in _LAZY_ON_PURPOSE:
                offenders.append(f"{rel}:{line}: {name}")
    assert not offenders, "function-local imports of hoibench modules:\n" + "\n".join(offenders)


def test_the_local_import_check_can_fail(tmp_path: Path) -> None:
    p = tmp_path / "m.py"
    p.write_text("def f():\n    from hoibench.data import HOIDataset\n    return HOIDataset\n")
    assert _local_internal_imports(p) == [(2, "hoibench.data")]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_module_imports_itself_through_others() -> None:
    """The layers contract checks packages; this checks every module of hoibench: no import loop
    at any depth (module-level imports, as grimp sees them)."""
    grimp = pytest.importorskip("grimp")
    g = grimp.build_graph("hoibench", cache_dir=None)
    graph = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    assert _cycles(graph) == []
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
