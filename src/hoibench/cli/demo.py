"""``hoibench demo [--out DIR]``: the main job — build HICO-DET-SG split 1, a B-RIGHT balanced
split and the multiple-choice benchmark from the bundled data, run and evaluate the built-in
baselines, write the report and print its path."""

from __future__ import annotations

from pathlib import Path

import click

from hoibench.cli._common import err_console

__all__ = ["demo"]


@click.command("demo")
@click.option("--out", "out_dir", default="hoibench-demo", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the benchmarks, answers, results and the report.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the balanced split, the questions, the random answerer and the bootstrap.")
@click.option("--bootstrap", "n_bootstrap", default=1000, show_default=True, type=click.IntRange(0),
              help="Bootstrap resamples for the multiple-choice confidence intervals.")
@click.option("--max-test-images", default=None, type=click.IntRange(1),
              help="Use only the first N test images of each benchmark (a quick look).")
@click.option("--save-predictions", is_flag=True,
              help="Also write every baseline's detections (to evaluate them by hand).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def demo(out_dir: Path, seed: int, n_bootstrap: int, max_test_images: int | None,
         save_predictions: bool, quiet: bool) -> None:
    """Run the main job on the bundled data and print the path of the HTML report."""
    from hoibench.demo import DemoConfig, run_demo

    cfg = DemoConfig(seed=seed, n_bootstrap=n_bootstrap, max_test_images=max_test_images,
                     save_predictions=save_predictions)
    result = run_demo(out_dir, config=cfg, progress=not quiet)
    if not quiet:
        _summary(result.results)
        err_console.print(f"finished in {result.timings['total']:.1f} s: {len(result.results)} results, "
                          f"{len(result.report.tables)} tables, {len(result.report.figures)} figures")
    click.echo(str(result.report.html))


def _summary(results: list) -> None:
    """Headline mAP per model and benchmark, and multiple-choice exact match, on stderr (%)."""
    from rich.table import Table

    from hoibench.evaluation import HICOMapResult, MCQResult
    from hoibench.reports import map_reasons

    maps = [r for r in results if isinstance(r.result, HICOMapResult)]
    benches = list(dict.fromkeys(r.benchmark for r in maps))
    headline = {r.benchmark: r.result.headline for r in maps}
    table = Table(title="mAP (%): each benchmark's headline")
    table.add_column("model")
    for b in benches:
        table.add_column(b if headline[b] == "full" else f"{b} ({headline[b]})", justify="right")
    for m in dict.fromkeys(r.model for r in maps):
        vals = {r.benchmark: r.result.headline_map for r in maps if r.model == m}
        table.add_row(m, *(("n/a" if vals[b] != vals[b] else f"{100 * vals[b]:.2f}") if b in vals else "–"
                           for b in benches))
    err_console.print(table)
    for sentence in map_reasons(maps):  # why a striking value is what it is, as the report says
        err_console.print(sentence, markup=False)
    mcq = [r for r in results if isinstance(r.result, MCQResult)]
    table = Table(title="multiple choice: exact match / macro-F1 (%)")
    table.add_column("model")
    mbenches = list(dict.fromkeys(r.benchmark for r in mcq))
    for b in mbenches:
        table.add_column(b, justify="right")
    for m in dict.fromkeys(r.model for r in mcq):
        vals = {r.benchmark: r.result.metrics() for r in mcq if r.model == m}
        table.add_row(m, *(f"{100 * vals[b]['exact_match']:.1f} / {100 * vals[b]['macro_f1']:.1f}"
                           if b in vals else "–" for b in mbenches))
    err_console.print(table)
