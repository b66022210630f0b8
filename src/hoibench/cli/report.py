"""``hoibench report RESULTS... --out DIR``: Markdown, CSV and a self-contained HTML page from
result files (:mod:`hoibench.results`: mAP, V-COCO role AP, multiple-choice metrics, class recall,
split statistics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hoibench.cli._common import console
from hoibench.cli._paper_inputs import paper_input_options

__all__ = ["report"]


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for report.html, report.md, report.json, tables/ and figures/.")
@click.option("--title", default="hoibench report", show_default=True, help="Page title.")
@click.option("--reference", default=None,
              help="Benchmark that ranking shifts are measured from (default: the first mAP benchmark).")
@click.option("--bins", "n_bins", default=10, show_default=True, type=click.IntRange(1, 100),
              help="Bins of the head-to-tail recall histogram.")
@click.option("--train", "train_specs", multiple=True, metavar="BENCHMARK=FILE_OR_DATASET",
              help="The train split of a benchmark (repeatable), for its class-AP head-to-tail figure: "
                   "e.g. 'B-RIGHT=b-right/trainval_hico.json'. HICO-DET's official split is used for "
                   "HICO-DET without it; other benchmarks get no head-to-tail figure without it.")
@click.option("--published", is_flag=True,
              help="Place the papers' published results beside yours wherever benchmark, metric, class "
                   "set and setting/protocol are the same, and say where they are not (docs/evaluation.md).")
@paper_input_options
def report(results: tuple[Path, ...], out_dir: Path, title: str, reference: str | None,
           n_bins: int, train_specs: tuple[str, ...], published: bool, **paper: Any) -> None:
    """Build a report from RESULTS files or folders (several models, several benchmarks).

    A folder stands for every ``*.json`` file below it, nested folders included (``hoibench
    report DIR/results`` for the demo's results). Each file holds one result object, a JSON list of them, or JSON lines, each naming its
    ``kind``: mAP results of ``hoibench eval hico --json``, role AP of ``hoibench eval vcoco
    --json``, metrics of ``hoibench mcq score --json``, class recall, or the stats.json of
    ``hoibench split sg|balanced`` (see docs/interfaces.md).
    """
    from hoibench._exceptions import ConfigError
    from hoibench.cli._paper_inputs import load_paper_inputs
    from hoibench.reports import build_report
    from hoibench.results import read_results

    files: list[Path] = []
    for p in results:
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.json") if q.is_file())
            if not found:
                raise ConfigError(f"{p}: no result files (*.json) in this folder or below it")
            files += found
        else:
            files.append(p)
    loaded = read_results(files)
    train_counts = {}
    for spec in train_specs:
        bench, sep, where = spec.partition("=")
        if not sep or not bench.strip() or not where.strip():
            raise ConfigError(f"--train {spec!r}: expected BENCHMARK=FILE_OR_DATASET")
        from hoibench.datasets import resolve_dataset
        from hoibench.reports import TrainCounts

        train_counts[bench.strip()] = TrainCounts(resolve_dataset(where.strip()).hoi_counts().astype(float),
                                                  f"the train split {where.strip()}")
    rep = build_report(loaded, title=title, reference_benchmark=reference, n_bins=n_bins,
                       train_counts=train_counts or None, meta={"results": [str(p) for p in results]},
                       paper_inputs=load_paper_inputs(paper), published=published)
    files = rep.write(out_dir)
    console.print(f"{len(rep.tables)} tables, {len(rep.figures)} figures from {len(loaded)} results")
    click.echo(str(files.html))
