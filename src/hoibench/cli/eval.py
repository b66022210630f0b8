"""``hoibench eval``: HICO-DET mAP and V-COCO role AP (sub-commands in their own modules)."""

from __future__ import annotations

import click

from hoibench.cli import LazyGroup

__all__ = ["eval_group"]


@click.group("eval", cls=LazyGroup, lazy_commands={
    "hico": "hoibench.cli.eval_hico:hico",
    "vcoco": "hoibench.cli.eval_vcoco:vcoco",
})
def eval_group() -> None:
    """Score HOI detections: HICO-DET mAP (official, qpic, pocket protocols) and V-COCO role AP."""
