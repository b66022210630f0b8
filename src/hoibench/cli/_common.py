"""Small helpers shared by the CLI modules: console, JSON output, dataset arguments."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console

from hoibench._io import dumps_json
from hoibench.evaluation import MAP_CI_METHOD

__all__ = [
    "confidence_interval_options",
    "console",
    "echo_json",
    "emit_json",
    "err_console",
    "input_hashes",
    "json_option",
    "reject_unused_options",
    "require_matching_answers",
]

def _console(stderr: bool = False) -> Console:
    """A console for tables and messages. Written to a pipe or a file, nothing is wrapped or
    truncated (rich would assume 80 columns: broken Markdown, headers cut to "combina…");
    in a terminal, its width."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        piped = not stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        piped = True
    return Console(stderr=stderr, highlight=False, width=1_000_000 if piped else None, soft_wrap=piped)


console = _console()
err_console = _console(stderr=True)


def echo_json(obj: Any) -> None:
    """Print one JSON object to stdout (machine-readable output of ``--json``)."""
    sys.stdout.write(dumps_json(obj, indent=True).decode() + "\n")
    sys.stdout.flush()


def input_hashes(**specs: object) -> dict[str, object]:
    """What a folder's ``provenance.json`` records of its inputs: ``sha256:...`` of each file
    (folders: of each file in them), ``bundled:NAME@VERSION`` of a bundled dataset name."""
    from pathlib import Path

    from hoibench._io import file_sha256
    from hoibench._version import __version__

    def one(spec: object) -> object:
        if spec is None:
            return None
        if isinstance(spec, (list, tuple)):
            return [one(s) for s in spec]
        p = Path(str(spec))
        if p.is_file():
            return f"sha256:{file_sha256(p)}"
        if p.is_dir():
            return {f.relative_to(p).as_posix(): f"sha256:{file_sha256(f)}"
                    for f in sorted(p.rglob("*")) if f.is_file()}
        return f"bundled:{spec}@{__version__}"

    return {name: one(spec) for name, spec in specs.items() if spec is not None}


def require_matching_answers(answers: Any, questions: Any, answers_path: str, questions_path: str,
                             note: str = "") -> None:
    """Every command that scores answers refuses a file none of whose answers is for one of the
    questions (answers of another question file would score 0 everywhere, silently)."""
    from hoibench._exceptions import ConfigError

    answered = {a.question_id for a in answers}
    if answered and answered.isdisjoint(q.id for q in questions):
        raise ConfigError(f"{answers_path}: none of its {len(answered)} answers is for a question of "
                          f"{questions_path}{note}; answers of another question file?")


def json_option(what: str) -> Any:
    """``--json PATH|-`` of every command: the same meaning everywhere — write ``what`` as JSON to
    the file PATH (atomically; the usual output still prints), or with ``-`` (also a bare
    ``--json``) print it on stdout instead of the usual output."""
    return click.option("--json", "as_json", metavar="PATH|-", is_flag=False, flag_value="-", default=None,
                        help=f"{what} as JSON: written to PATH, or printed instead of the table with "
                             "'-' (a bare --json is '-').")


def emit_json(obj: Any, where: str | None) -> bool:
    """Write ``obj`` where ``--json`` said (see :func:`json_option`); True when it went to stdout
    (so the caller prints nothing else)."""
    if where is None:
        return False
    if where == "-":
        echo_json(obj)
        return True
    from hoibench._io import atomic_write_json

    atomic_write_json(where, obj, indent=True)
    return False


def reject_unused_options(ctx: click.Context, reason: str, *names: str) -> None:
    """Raise a :class:`ConfigError` when any of the parameters ``names`` was given on the
    command line although ``reason`` makes it ineffective (an option that silently does nothing
    is a wrong number waiting to happen)."""
    from click.core import ParameterSource

    from hoibench._exceptions import ConfigError

    given = []
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE:
            given.append(param.opts[0] if param.opts else param.name)
    if given:
        raise ConfigError(f"{', '.join(given)} {'has' if len(given) == 1 else 'have'} no effect {reason}")


def confidence_interval_options(func: Any) -> Any:
    """``--seed``, ``--ci`` and ``--ci-method`` of the commands that bootstrap mAP (each command
    declares its own ``--bootstrap``, whose default differs)."""
    options = [
        click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap."),
        click.option("--ci", "ci_level", type=click.FloatRange(0, 100, min_open=True, max_open=True),
                     default=95.0, show_default=True, metavar="PERCENT",
                     help="Confidence level of the intervals of paired differences."),
        click.option("--ci-method", type=click.Choice(["percentile", "basic", "normal"]), default=MAP_CI_METHOD,
                     show_default=True,
                     help="Interval of paired differences: replicate quantiles, reflected about the "
                          "difference, or difference ± z·SE (measured coverage: docs/evaluation.md, "
                          "'Which interval')."),
    ]
    for option in reversed(options):
        func = option(func)
    return func
