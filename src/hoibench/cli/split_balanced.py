"""``hoibench split balanced``: B-RIGHT class-balanced train/test sets and balanced zero-shot set."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from hoibench.cli._common import console, emit_json, input_hashes, json_option

__all__ = ["balanced"]


@click.command("balanced")
@click.option("--dataset", default="hico-det", show_default=True, metavar="DATASET_OR_FILE",
              help="Real images: a bundled dataset (train and test merged) or an annotation file.")
@click.option("--top-k", type=int, default=351, show_default=True, help="K: classes to balance.")
@click.option("--l-train", type=int, default=50, show_default=True, help="Instances per class in train.")
@click.option("--l-test", type=int, default=10, show_default=True, help="Instances per class in test.")
@click.option("--epochs", type=int, default=20, show_default=True, help="N: add/remove rounds.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="random_state of the balancing (one per released version).")
@click.option("--zero-shot", is_flag=True, help="Also build the balanced zero-shot test set.")
@click.option("--l-zero-shot", type=int, default=None, help="Instances per zero-shot class [default: --l-test].")
@click.option("--n-zero-shot-classes", type=int, default=None,
              help="Keep the N eligible zero-shot classes with the most remaining instances "
                   "(107 gives the paper's count) [default: every eligible class].")
@click.option("--extra-train", type=click.Path(dir_okay=False), default=None,
              help="Generated/crawled training images (any supported format) used only to fill the "
                   "train deficits; the test and zero-shot sets and the real train images do not change.")
@click.option("--counts", "counts_source", type=click.Choice(["auto", "official", "data"]),
              default="auto", show_default=True,
              help="Counts to rank classes by: official HICO-DET train counts + test pairs (auto for "
                   "the bundled hico-det), or the pairs in the dataset.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Output folder.")
@json_option("stats.json")
def balanced(dataset: str, top_k: int, l_train: int, l_test: int, epochs: int, seed: int, zero_shot: bool,
             l_zero_shot: int | None, n_zero_shot_classes: int | None, extra_train: str | None, counts_source: str, out_dir: str,
             as_json: str | None) -> None:
    """Build B-RIGHT balanced splits: PPDM/QPIC and hicodet files, stats.json, deficits.json.

    Classes that cannot reach --l-train from real images are listed in deficits.json (the
    input of `hoibench augment`); pass the generated images back with --extra-train.
    """
    from hoibench._exceptions import ConfigError
    from hoibench.benchmarks.balanced import build_balanced_split
    from hoibench.datasets import is_dataset_name, resolve_dataset

    ds = resolve_dataset(dataset)
    bundled_full = is_dataset_name(dataset) and ":" not in dataset
    if counts_source == "auto":
        counts_source = "official" if bundled_full and ds.vocab.name == "hico-det" else "data"
    if counts_source == "official" and ds.vocab.name != "hico-det":
        raise ConfigError(f"--counts official needs HICO-DET data; {dataset} uses {ds.vocab.name} labels")
    extra = resolve_dataset(extra_train) if extra_train else None
    with console.status("balancing", spinner="dots"):
        result = build_balanced_split(ds, top_k=top_k, l_train=l_train, l_test=l_test, epochs=epochs,
                                      random_state=seed, extra_train=extra, zero_shot=zero_shot,
                                      l_zero_shot=l_zero_shot, n_zero_shot_classes=n_zero_shot_classes,
                                      selection_counts=counts_source)  # type: ignore[arg-type]
    with console.status(f"writing {out_dir}", spinner="dots"):
        result.write(out_dir, inputs=input_hashes(dataset=dataset, extra_train=extra_train))
    if emit_json(result.stats(), as_json):
        return
    table = Table(title=f"B-RIGHT balanced split (seed {seed}) → {out_dir}")
    for col in ("split", "images", "instances", "max", "min", "classes", "objects", "verbs", "R/A",
                "deficit"):
        table.add_column(col, justify="left" if col == "split" else "right")
    for s in result.sets:
        st = s.stats()
        table.add_row(s.name, f"{st['images']:,}", f"{st['instances']:,}", str(st["max"]), str(st["min"]),
                      str(st["classes"]), str(st["objects"]), str(st["verbs"]),
                      f"{st['removed_annotation_images']:,}", f"{result.total_deficit(s.name):,}")
    console.print(table)
    rec = result.extra_train
    if rec is not None:
        kept = sum(im["instances"] for im in rec["images"])
        capped = sum(n for im in rec["images"] for _, n in im["removed"])
        console.print(f"extra train: {rec['images_used']:,} of {rec['extra_train']['images']:,} images used "
                      f"({kept:,} instances) for {len(rec['classes'])} classes in deficit; {capped:,} of "
                      f"their annotations removed by the per-class cap; real train images unchanged "
                      f"({rec['real_train']['images']:,}); test and zero-shot sets as without "
                      f"--extra-train: see {Path(out_dir) / 'extra_train.json'}")
    n_def = len(result.deficits())
    if n_def:
        console.print(f"{n_def} classes below target ({result.total_deficit():,} instances): "
                      f"see {Path(out_dir) / 'deficits.json'}")
