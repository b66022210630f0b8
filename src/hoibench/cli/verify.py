"""``hoibench verify DIR``: check a release folder against the sha256 manifest shipped in the
package (one line per mismatch, exit 1 on any). Thin: :mod:`hoibench.benchmarks._release`."""

from __future__ import annotations

import sys

import click

from hoibench.cli._common import console

__all__ = ["verify"]


@click.command("verify")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--only", "only", multiple=True, metavar="NAME",
              help="Check only this benchmark or group (sg, b-right/seed0, mcq, ...); repeatable.")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A manifest file instead of the one shipped with hoibench.")
def verify(folder: str, only: tuple[str, ...], manifest: str | None) -> None:
    """Check that FOLDER holds the frozen benchmarks byte for byte (hoibench release build)."""
    from hoibench.benchmarks._release import load_manifest, verify_release

    man = load_manifest(manifest)
    problems = verify_release(folder, only or None, manifest=man)
    if problems:
        for p in problems:
            click.echo(p.line(), err=True)
        click.echo(f"error: {len(problems)} file(s) do not match release {man['release']}", err=True)
        sys.exit(1)
    n = sum(len(man["benchmarks"][b]["files"]) for b in (man["benchmarks"] if not only else _names(only)))
    console.print(f"ok: {n} files match release {man['release']} (manifest of hoibench {man.get('hoibench')})")


def _names(only: tuple[str, ...]) -> list[str]:
    from hoibench.benchmarks._release import select_benchmarks

    return [b.name for b in select_benchmarks(only)]
