"""The harness and fine-tuning journeys as docs/mcq.md writes them: the lmms-eval venv recipe,
lmms-eval's ``--log_samples`` file read by ``mcq score``/``analyze``, VLMEvalKit's prompt and its
failure text, TRL's answer-only loss, and the dataset card. Each file is built here as the tool
writes it (no network, no downloaded weights)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from hoibench.tasks import TASKS_DIR

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "mcq.md"


# --- lmms-eval: the --no-deps venv recipe -------------------------------------------------------

def _recipe_base_pth_line() -> str:
    """The line the documented recipe writes into the lmms-eval venv's ``_base.pth``."""
    m = re.search(r'echo "(.+?)" > /tmp/lmms-venv/lib/python3\.11/site-packages/_base\.pth', DOCS.read_text())
    assert m, "docs/mcq.md: the lmms-eval recipe's _base.pth line is gone"
    return m.group(1)


def test_lmms_eval_recipe_venv_imports_the_task_functions(tmp_path):
    """A venv made as the recipe makes it (the project's site-packages through ``_base.pth``) can
    import ``hoibench.tasks.lmms``: a plain path in a .pth file does not run the .pth files of that
    folder, so an editable hoibench stayed invisible and lmms-eval found no task function."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    line = _recipe_base_pth_line().replace("$PWD/.venv/lib/python3.11/site-packages",
                                           sysconfig.get_paths()["purelib"])
    (site / "_base.pth").write_text(line.replace("\\'", "'") + "\n")
    r = subprocess.run([str(venv / "bin" / "python"), "-c", "import hoibench.tasks.lmms"],
                       capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]


# lmms-eval 0.7.3's ``import_function`` (lmms_eval/utils.py) and ``cli_evaluate``'s handling of
# an error while it loads a task: logged, exit status 0
_LMMS_EVAL_LOADER = r'''
import importlib, importlib.util, os, sys
def import_function(yaml_path, function_name):
    *module_name, function_name = function_name.split(".")
    module_name = ".".join(module_name)
    module_path = os.path.normpath(os.path.join(os.path.dirname(yaml_path), "{}.py".format(module_name)))
    if os.path.exists(module_path):
        spec = importlib.util.spec_from_file_location(module_name, module_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, function_name)
    try:
        return getattr(importlib.import_module(module_name), function_name)
    except Exception as ex:
        raise ImportError(f"Failed to import function '{function_name}' from module '{module_name}'") from ex
try:
    for name in sys.argv[2:]:
        import_function(sys.argv[1], name)
except Exception as e:
    print(f"Error during evaluation: {e}", file=sys.stderr)
print("loaded")
'''


def _task_functions(yaml_text: str) -> list[str]:
    return re.findall(r"!function (\S+)", yaml_text)


def test_lmms_eval_task_import_failure_is_not_exit_0(tmp_path):
    """Where hoibench cannot be imported, loading a task ends the run with status 1 and one line
    saying what to install, not lmms-eval's logged error and status 0."""
    yaml_path = TASKS_DIR / "hoibench_mcq_s2_qwen25.yaml"
    names = _task_functions(yaml_path.read_text()) + _task_functions(
        (TASKS_DIR / "_hoibench_mcq_template_yaml").read_text())
    assert len(names) == 11
    (tmp_path / "loader.py").write_text(_LMMS_EVAL_LOADER)
    # -S -I: no site-packages, no PYTHONPATH — a Python where hoibench is not installed
    r = subprocess.run([sys.executable, "-S", "-I", str(tmp_path / "loader.py"), str(yaml_path), *names],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1 and "loaded" not in r.stdout, (r.stdout, r.stderr)
    assert r.stderr.strip().splitlines()[-1].startswith("error: hoibench lmms-eval tasks: cannot import")
    # with hoibench importable, every function the task files name loads
    r = subprocess.run([sys.executable, str(tmp_path / "loader.py"), str(yaml_path), *names],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "loaded" and not r.stderr, r.stderr
