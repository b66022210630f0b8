"""``hoibench mcq``: the multiple-choice HOI benchmark (sub-commands in their own modules)."""

from __future__ import annotations

import click

from hoibench.cli import LazyGroup

__all__ = ["mcq"]


@click.group(cls=LazyGroup, lazy_commands={
    "build": "hoibench.cli.mcq_bench:build",
    "stats": "hoibench.cli.mcq_bench:stats",
    "score": "hoibench.cli.mcq_bench:score",
    "from-detections": "hoibench.cli.mcq_bench:from_detections",
    "run": "hoibench.cli.mcq_run:run",
    "analyze": "hoibench.cli.mcq_run:analyze",
    "compare": "hoibench.cli.mcq_compare:compare",
    "export": "hoibench.cli.mcq_export:export",
    "merge": "hoibench.cli.mcq_merge:merge",
})
def mcq() -> None:
    """Multiple-choice HOI benchmark: build questions, run VLMs, score answers."""
