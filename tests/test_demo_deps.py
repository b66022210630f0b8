"""``make demo`` installs what ``hoibench demo`` needs and nothing else: the core package, not the
test extras (torch, transformers, diffusers, trl, datasets); ``make test`` keeps them."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

tomllib = pytest.importorskip("tomllib")


def _rules(makefile: str) -> tuple[dict[str, str], dict[str, tuple[list[str], list[str]]]]:
    """Variables and rules of a simple Makefile: target -> (prerequisites, recipe lines)."""
    variables: dict[str, str] = {}
    rules: dict[str, tuple[list[str], list[str]]] = {}
    current: list[str] | None = None

    def expand(text: str) -> str:
        for _ in range(5):
            text = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), text)
        return text

    for line in makefile.splitlines():
        if line.startswith("\t") and current is not None:
            current.append(expand(line.strip()))
            continue
        m = re.match(r"^(\w+)\s*(?::=|\?=|=)\s*(.*)$", line)
        if m:
            variables[m.group(1)] = m.group(2).strip()
            current = None
            continue
        m = re.match(r"^([^\s:#=][^:=]*):(?!=)(.*)$", line)
        if m:
            prereqs = expand(m.group(2)).replace("|", " ").split()
            current = []
            for target in expand(m.group(1)).split():
                rules[target] = (prereqs, current)
        elif not line.strip() or line.startswith("#"):
            current = None
    return variables, rules


def _installs(rules: dict[str, tuple[list[str], list[str]]], target: str) -> list[str]:
    """Every ``pip install`` line that making ``target`` may run (through its prerequisites)."""
    seen, todo, lines = set(), [target], []
    while todo:
        t = todo.pop()
        if t in seen or t not in rules:
            continue
        seen.add(t)
        prereqs, recipe = rules[t]
        lines += [x for x in recipe if "pip install" in x and "--upgrade pip" not in x]
        todo += prereqs
    return lines


def test_make_demo_installs_no_extra_and_make_test_installs_the_test_extras():
    _, rules = _rules((ROOT / "Makefile").read_text())
    demo = _installs(rules, "demo")
    assert demo, "make demo installs hoibench"
    for line in demo:
        assert "[" not in line, f"make demo installs an extra: {line}"
    test = _installs(rules, "test")
    assert any("'.[test]'" in line or ".[test]" in line for line in test)
    # each install is remade when pyproject.toml changes, and the test install counts as the core one
    stamps = {t for t, (_, recipe) in rules.items() if any("pip install -q -e" in x for x in recipe)}
    assert len(stamps) == 2 and all("pyproject.toml" in rules[s][0] for s in stamps)
    core = next(s for s in stamps if "[" not in " ".join(rules[s][1]))
    test_stamp = next(iter(stamps - {core}))
    assert any(x.startswith("touch") and core in x.split() for x in rules[test_stamp][1])
    assert core in rules["demo"][0] and test_stamp in rules["test"][0]


def _extra_modules() -> set[str]:
    """Top-level import names of every optional dependency in pyproject.toml."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in meta["dependencies"]}
    names = {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for reqs in meta["optional-dependencies"].values()
             for r in reqs} - core
    return {{"import-linter": "importlinter"}.get(n, n.replace("-", "_")) for n in names}


def test_demo_runs_without_any_optional_dependency(tmp_path):
    """The demo's whole code path in a process where every extra's package cannot be imported."""
    blocked = sorted(_extra_modules())
    assert {"torch", "transformers", "diffusers", "trl", "datasets", "accelerate", "openai"} <= set(blocked)
    script = textwrap.dedent(f"""
        import sys

        BLOCKED = set({blocked!r})

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
                return None

        sys.meta_path.insert(0, Block())
        from hoibench.cli import main

        try:
            main(["demo", "--out", sys.argv[1], "--max-test-images", "20", "--bootstrap", "0", "--quiet"])
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        print("loaded:", loaded)
    """)
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "demo")], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "loaded: []" in r.stdout
    assert (tmp_path / "demo" / "report.html").is_file()
