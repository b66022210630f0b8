"""Small helpers shared by the CLI modules: console, JSON output, dataset arguments."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console

from hoibench._io import dumps_json

__all__ = ["console", "echo_json", "err_console"]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def echo_json(obj: Any) -> None:
    """Print one JSON object to stdout (machine-readable output of ``--json``)."""
    sys.stdout.write(dumps_json(obj, indent=True).decode() + "\n")
    sys.stdout.flush()


def dataset_argument(name: str = "dataset") -> Any:
    return click.argument(name, metavar="DATASET_OR_FILE")
