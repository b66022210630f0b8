"""``hoibench split zero-shot``: HICO-DET zero-shot splits (see docs/zero-shot-splits.md)."""

from __future__ import annotations

import click

from hoibench.cli._common import console, emit_json, err_console, input_hashes, json_option

__all__ = ["zero_shot"]


@click.command("zero-shot")
@click.option("--protocol", required=True, metavar="rf-uc|nf-uc|uo|uv|FILE",
              help="Unseen classes: a zero-shot setting, a split folder / test_combinations.json, or a "
                   "file of 0-based HOI ids.")
@click.option("--dataset", "datasets", multiple=True, default=("hico-det",), show_default=True,
              metavar="NAME_OR_PATH",
              help="hico-det (its train and test splits), a folder with trainval_hico.json and "
                   "test_hico.json (a B-RIGHT split folder), or two files: train, then test.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Output directory.")
@json_option("stats.json")
def zero_shot(protocol: str, datasets: tuple[str, ...], out: str, as_json: str | None) -> None:
    """Build a zero-shot split into OUT: trainval_hico.json without the pairs that carry an unseen
    class (gen-vlkt's rule), the full test_hico.json, test_combinations.json (the unseen classes,
    for `eval hico --classes unseen:OUT`) and stats.json."""
    from hoibench.benchmarks.zeroshot import build_zero_shot_split, load_zero_shot_source

    with console.status("reading", spinner="dots"):
        train, test, name = load_zero_shot_source(datasets)
    _warn_mixed_boxes(train, test)
    split = build_zero_shot_split(train, test=test, protocol=protocol, name=name)
    with console.status(f"writing {out}", spinner="dots"):
        paths = split.write(out, inputs=input_hashes(dataset=list(datasets), protocol=protocol))
    st = split.stats()
    if emit_json(st, as_json):
        return
    tr, te = st["train"], st["test"]
    console.print(f"{split.name}: {st['unseen_classes']} unseen classes")
    console.print(f"train: {tr['images']:,} images, {tr['pairs']:,} pairs (of {tr['source_images']:,} / "
                  f"{tr['source_pairs']:,}: {tr['removed_pairs']:,} pairs removed, "
                  f"{tr['dropped_images']:,} images dropped, {tr['empty_source_images']:,} of them "
                  "without pairs to begin with)")
    console.print(f"test:  {te['images']:,} images, {te['pairs']:,} pairs ({te['unseen_pairs']:,} unseen, "
                  f"{te['seen_pairs']:,} seen)")
    console.print(f"wrote {', '.join(str(p) for p in paths.values())}")


def _warn_mixed_boxes(*parts: object) -> None:
    """One warning line per input file whose boxes are in two conventions (an SG split folder
    written as released, the released files): they are written as read, the shift included."""
    from hoibench.data import HOIDataset
    from hoibench.formats import box_conventions

    for ds in parts:
        if not isinstance(ds, HOIDataset):
            continue
        conv = box_conventions(ds, ds.name)  # a file's dataset is named by its path
        if conv.mixed:
            err_console.print(f"[yellow]warning:[/] {ds.name}: boxes are in two conventions: {conv.describe()}; "
                              "split zero-shot writes them as read: give files in one convention (split sg "
                              "--boxes 0-based, or hoibench data convert --mixed-boxes unify)", soft_wrap=True)
