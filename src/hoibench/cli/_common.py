"""Small helpers shared by the CLI modules: console, JSON output, dataset arguments."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console

from hoibench._io import dumps_json

__all__ = [
    "confidence_interval_options",
    "console",
    "echo_json",
    "err_console",
    "input_hashes",
    "reject_unused_options",
]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


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
                     help="Confidence level of the bootstrap intervals."),
        click.option("--ci-method", type=click.Choice(["percentile", "basic"]), default="basic",
                     show_default=True,
                     help="Interval: replicate quantiles, or reflected about the estimate (bias-corrected)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func
