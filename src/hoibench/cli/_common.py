"""Small helpers shared by the CLI modules: console, JSON output, dataset arguments."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console

from hoibench._io import dumps_json

__all__ = ["console", "echo_json", "err_console", "reject_unused_options"]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def echo_json(obj: Any) -> None:
    """Print one JSON object to stdout (machine-readable output of ``--json``)."""
    sys.stdout.write(dumps_json(obj, indent=True).decode() + "\n")
    sys.stdout.flush()


def dataset_argument(name: str = "dataset") -> Any:
    return click.argument(name, metavar="DATASET_OR_FILE")


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
