"""``hoibench split``: build and audit benchmark splits (sub-commands in their own modules)."""

from __future__ import annotations

import click

from hoibench.cli import LazyGroup

__all__ = ["split"]


@click.group(cls=LazyGroup, lazy_commands={
    "sg": "hoibench.cli.split_sg:sg",
    "audit": "hoibench.cli.split_sg:audit",
    "stats": "hoibench.cli.split_sg:stats",
    "balanced": "hoibench.cli.split_balanced:balanced",
    "zero-shot": "hoibench.cli.split_zeroshot:zero_shot",
})
def split() -> None:
    """Build and audit benchmark splits (HICO-DET-SG / V-COCO-SG, B-RIGHT balanced, zero-shot)."""
