"""Run VLMEvalKit's ``run.py`` with hoibench's dataset registered, so the model gets the message
``mcq run`` sends (the image, then hoibench's prompt; :func:`~hoibench.tasks.vlmevalkit.vlmevalkit_message`)::

    python -m hoibench.tasks.vlmevalkit_run PATH/TO/VLMEvalKit/run.py --data HOIBench_MCQ --model MODEL

Every ``--data`` name whose ``$LMUData/NAME.tsv`` is an ``hoibench mcq export --to vlmevalkit``
TSV is served by :func:`~hoibench.tasks.vlmevalkit.vlmevalkit_dataset_class`; with ``--config
FILE``, every ``data`` entry of ``"class": "HOIBenchMCQDataset"``. The other names, and every
other argument, are VLMEvalKit's as usual (``torchrun ... -m hoibench.tasks.vlmevalkit_run``
works as ``torchrun ... run.py`` does).
"""

from __future__ import annotations

import csv
import json
import os
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from hoibench.tasks.vlmevalkit import PROMPT_COLUMN, register_vlmevalkit_datasets

__all__ = ["CLASS_NAME", "config_data_names", "data_names", "hoibench_datasets", "main"]

#: the class name a ``--config`` file's ``data`` entry gives (VLMEvalKit looks it up in ``vlmeval.dataset``)
CLASS_NAME = "HOIBenchMCQDataset"

USAGE = "usage: python -m hoibench.tasks.vlmevalkit_run PATH/TO/VLMEvalKit/run.py --data NAME ... [run.py options]"


def data_names(args: Sequence[str]) -> list[str]:
    """The dataset names of run.py's ``--data`` option (``--data A B`` or ``--data=A``)."""
    names: list[str] = []
    taking = False
    for a in args:
        if a.startswith("--data="):
            names.append(a.split("=", 1)[1])
            taking = False
        elif a == "--data":
            taking = True
        elif taking and not a.startswith("-"):
            names.append(a)
        else:
            taking = False
    return names


def config_data_names(args: Sequence[str]) -> list[str]:
    """The dataset names of a ``--config`` file's ``data`` entries of class :data:`CLASS_NAME`
    (each entry's ``dataset``, the name VLMEvalKit builds it with, and its key)."""
    path = next((a.split("=", 1)[1] for a in args if a.startswith("--config=")), None)
    if path is None and "--config" in args[:-1]:
        path = args[list(args).index("--config") + 1]
    if path is None:
        return []
    try:
        cfg = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: {path}: not a readable JSON config ({exc})") from None
    names: list[str] = []
    data = cfg.get("data") if isinstance(cfg, dict) else None
    for key, entry in (data.items() if isinstance(data, dict) else ()):
        if isinstance(entry, dict) and entry.get("class") == CLASS_NAME:
            names += [str(entry.get("dataset", key)), str(key)]
    return list(dict.fromkeys(names))


def hoibench_datasets(names: Sequence[str], root: str | Path) -> list[str]:
    """The ``names`` whose ``root/NAME.tsv`` is an hoibench export; one of an older export (no
    ``hoibench_prompt`` column) is an error, not a run under VLMEvalKit's own prompt."""
    found = []
    for name in names:
        tsv = Path(root) / f"{name}.tsv"
        if not tsv.is_file():
            continue
        with tsv.open(encoding="utf-8-sig", newline="") as fh:
            header = next(csv.reader(fh, delimiter="\t"), [])
        if PROMPT_COLUMN in header:
            found.append(name)
        elif "hoibench_id" in header:
            raise SystemExit(f"error: {tsv}: no {PROMPT_COLUMN} column (exported by an older hoibench); "
                             "re-export it with `hoibench mcq export --to vlmevalkit`")
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Register hoibench's dataset for the exported ``--data`` names, then run ``run.py``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or not args[0].endswith(".py"):
        raise SystemExit(USAGE)
    run_py = Path(args[0])
    if not run_py.is_file():
        raise SystemExit(f"error: {run_py}: no such file (VLMEvalKit's run.py)\n{USAGE}")
    try:
        from vlmeval.smp import LMUDataRoot
    except ImportError as exc:
        raise SystemExit(f"error: VLMEvalKit is not importable here ({exc}); install it (pip install -e "
                         "VLMEvalKit) in this environment") from None
    root = LMUDataRoot()
    configured = config_data_names(args[1:])
    names = hoibench_datasets(data_names(args[1:]) + configured, root)
    if not names:
        raise SystemExit(f"error: no --data name (nor --config data entry of class {CLASS_NAME}) is an "
                         f"`hoibench mcq export --to vlmevalkit` TSV in {root} (copy OUT/NAME.tsv there, or set LMUData)")
    register_vlmevalkit_datasets(*names, *configured)
    print(f"hoibench: {', '.join(names)} served with mcq run's prompt (image, then hoibench_prompt)",
          file=sys.stderr)
    sys.argv = [str(run_py), *args[1:]]
    sys.path.insert(0, os.fspath(run_py.resolve().parent))
    runpy.run_path(str(run_py), run_name="__main__")


if __name__ == "__main__":
    main()
