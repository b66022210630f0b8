"""``hoibench release build DIR``: build every frozen benchmark (or some) into a folder that
``hoibench verify`` checks. Thin: :mod:`hoibench.benchmarks._release`."""

from __future__ import annotations

from pathlib import Path

import click

from hoibench.cli._common import console

__all__ = ["release"]


@click.group("release")
def release() -> None:
    """Frozen, versioned builds of every benchmark hoibench defines."""


@click.command("build")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--only", "only", multiple=True, metavar="NAME",
              help="Build only this benchmark or group (sg, b-right, zero-shot, mcq, mcq/train, ...).")
@click.option("--freeze", is_flag=True,
              help="Also write FOLDER/manifest.json from what was built (maintainers: the next "
                   "release's src/hoibench/benchmarks/data/release_manifest.json).")
@click.option("--no-verify", is_flag=True, help="Do not check the build against the shipped manifest.")
def build(folder: str, only: tuple[str, ...], freeze: bool, no_verify: bool) -> None:
    """Build the frozen benchmarks into FOLDER, then check them against the shipped manifest."""
    from hoibench._exceptions import HOIBenchError
    from hoibench.benchmarks._release import build_release, verify_release, write_manifest

    def progress(name: str, seconds: float) -> None:
        console.print(f"built {name} ({seconds:.1f} s)")

    manifest = build_release(folder, only or None, progress=progress)
    if freeze:
        write_manifest(manifest, Path(folder) / "manifest.json")
        console.print(f"wrote {Path(folder) / 'manifest.json'}")
    if no_verify:
        return
    problems = verify_release(folder, list(manifest["benchmarks"]))
    if problems:
        for p in problems[:20]:
            click.echo(p.line(), err=True)
        raise HOIBenchError(f"{len(problems)} built file(s) differ from the shipped manifest of release "
                            f"{manifest['release']} (a builder changed: bump RELEASE and --freeze a new manifest)")
    console.print(f"ok: {len(manifest['benchmarks'])} benchmark(s) match release {manifest['release']}")


release.add_command(build)
