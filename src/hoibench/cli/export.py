"""``hoibench export --to hf OUT``: a verified release folder as a Hugging Face dataset folder.
Thin: :mod:`hoibench.benchmarks._hf`."""

from __future__ import annotations

import click

from hoibench.cli._common import console, emit_json, json_option

__all__ = ["export"]


@click.command("export")
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--to", "target", required=True, type=click.Choice(["hf"]),
              help="hf: data files + dataset card (README.md with a config per benchmark).")
@click.option("--release", "release_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="A release folder (hoibench release build); checked against the manifest first.")
@click.option("--only", "only", multiple=True, metavar="NAME", help="Only this benchmark or group; repeatable.")
@json_option("Rows per config and split")
def export(out: str, target: str, release_dir: str, only: tuple[str, ...], as_json: str | None) -> None:
    """Write the frozen benchmarks of a release folder as an HF dataset folder OUT
    (`datasets.load_dataset(OUT, CONFIG)`); annotations only, never images."""
    from hoibench.benchmarks._hf import export_hf

    counts = export_hf(release_dir, out, list(only) or None)
    if emit_json(counts, as_json):
        return
    for config, splits in counts.items():
        console.print(f"{config}: " + ", ".join(f"{s} {n:,} rows" for s, n in splits.items()))
    console.print(f"wrote {out}/README.md ({len(counts)} configs)")
