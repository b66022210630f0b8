"""``hoibench data``: inspect, convert and validate annotation files and bundled datasets."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np
from rich.table import Table

from hoibench._exceptions import FormatError
from hoibench.cli._common import console, emit_json, json_option
from hoibench.data import HOIDataset, validate_dataset
from hoibench.datasets import BUNDLED, is_dataset_name, load_dataset, resolve_dataset
from hoibench.formats import FORMATS, read_dataset, read_dataset_and_format, write_dataset

__all__ = ["data"]

SUMMARY_KEYS = ("images", "empty_images", "pairs", "combinations", "objects", "verbs")


@click.group()
def data() -> None:
    """Inspect, convert and validate HOI annotation files."""


def _open(spec: str, fmt: str | None = None) -> tuple[HOIDataset, str]:
    if is_dataset_name(spec):
        return load_dataset(spec), "bundled"
    if not Path(spec).exists():
        resolve_dataset(spec)  # raises the right error: a misspelt dataset name or a missing file
    return read_dataset_and_format(spec, format=fmt)  # parses the file once


@data.command("info")
@click.argument("dataset", metavar="DATASET_OR_FILE")
@click.option("--format", "fmt", default=None, help="Input format (detected when omitted).")
@json_option("The dataset summary")
def info(dataset: str, fmt: str | None, as_json: str | None) -> None:
    """Images, empty images, pairs, (verb, object) combinations, objects and verbs.

    DATASET_OR_FILE is a bundled dataset (hico-det, hico-det:train, hico-det:test, v-coco,
    v-coco:trainval, v-coco:test) or an annotation file in any supported format.
    """
    ds, source = _open(dataset, fmt)
    out: dict[str, object] = {"dataset": dataset, "format": source, "label_space": ds.vocab.name}
    out.update(ds.summary())
    name = dataset.lower().split(":")[0]
    if source == "bundled" and ":" not in dataset and name in BUNDLED:
        out["splits"] = {s: load_dataset(name, s).summary() for s in BUNDLED[name]}
    if emit_json(out, as_json):
        return
    table = Table(title=f"{dataset} ({source}, {ds.vocab.name} labels)")
    table.add_column("")
    rows: list[tuple[str, dict[str, int]]] = [(k, v) for k, v in out.get("splits", {}).items()]  # type: ignore[union-attr]
    rows.append(("total" if rows else "all", ds.summary()))
    keys = [*SUMMARY_KEYS, "pairs_without_object"]
    for k in keys:
        table.add_column(k.replace("_", " "), justify="right")
    for label, summ in rows:
        table.add_row(label, *(f"{summ[k]:,}" for k in keys))
    console.print(table)


@data.command("stats")
@click.argument("dataset", metavar="DATASET_OR_FILE")
@click.option("--by", type=click.Choice(["class", "verb", "object"]), default="class", show_default=True)
@click.option("--sort", type=click.Choice(["id", "count"]), default="id", show_default=True)
@click.option("--format", "fmt", default=None, help="Input format (detected when omitted).")
@json_option("The counts ({id, name, count} rows)")
def stats(dataset: str, by: str, sort: str, fmt: str | None, as_json: str | None) -> None:
    """Pairs per HOI class, verb or object."""
    ds, _ = _open(dataset, fmt)
    vocab = ds.vocab
    if by == "class":
        counts = ds.hoi_counts()
        names = [vocab.hoi_name(h) for h in range(vocab.n_hois)]
    elif by == "verb":
        counts = np.bincount(ds.pair_verb, minlength=vocab.n_verbs)
        names = list(vocab.verbs)
    else:
        lab = ds.pair_object_label
        counts = np.bincount(lab[lab >= 0], minlength=vocab.n_objects)
        names = list(vocab.objects)
    order = np.argsort(-counts, kind="stable") if sort == "count" else np.arange(len(counts))
    rows = [{"id": int(i), "name": names[i], "count": int(counts[i])} for i in order]
    if emit_json(rows, as_json):
        return
    table = Table(title=f"pairs per {by} in {dataset}")
    for col in ("id", by, "pairs"):
        table.add_column(col, justify="right" if col != by else "left")
    for r in rows:
        table.add_row(str(r["id"]), str(r["name"]), f"{r['count']:,}")
    console.print(table)


@data.command("convert")
@click.argument("src", metavar="IN")
@click.argument("dst", metavar="OUT", type=click.Path(dir_okay=False))
@click.option("--to", "to", required=True,
              type=click.Choice(sorted(n for n, f in FORMATS.items() if f.write is not None)),
              help="Output format.")
@click.option("--from", "fmt", default=None, help="Input format (detected when omitted).")
@click.option("--mixed-boxes", type=click.Choice(["unify", "keep"]), default=None,
              help="When IN holds boxes in two conventions (the released HICO-DET-SG files: "
                   "1-based HICO_test2015 entries beside 0-based ones): unify moves the 1-based "
                   "entries to 0-based before converting; keep writes them as read (the shift "
                   "included). Without it such a file is refused.")
def convert(src: str, dst: str, to: str, fmt: str | None, mixed_boxes: str | None) -> None:
    """Convert IN (a file or bundled dataset) to OUT in another format (written atomically)."""
    from hoibench.formats import box_conventions

    ds, source = _open(src, fmt)
    note = ""
    if source != "bundled":
        conv = box_conventions(ds, src)
        if conv.mixed and mixed_boxes is None:
            raise FormatError(f"boxes are in two conventions: {conv.describe()}; converting would carry "
                              "the 1-pixel shift into the output: pass --mixed-boxes unify (1-based "
                              "entries to 0-based first) or --mixed-boxes keep (as read)", file=src)
        if conv.mixed and mixed_boxes == "unify":
            ds = conv.unify(ds)
            note = f"; boxes unified to 0-based before writing ({conv.describe()})"
        elif conv.mixed:
            note = f"; boxes kept as read, in two conventions ({conv.describe()})"
    write_dataset(ds, dst, format=to)
    console.print(f"wrote {ds.n_images:,} images, {ds.n_pairs:,} pairs ({source} → {to}) to {dst}{note}",
                  soft_wrap=True)


@data.command("validate")
@click.argument("file", metavar="FILE")
@click.option("--format", "fmt", default=None, help="Input format (detected when omitted).")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True, help="Print at most this many problems.")
def validate(file: str, fmt: str | None, limit: int) -> None:
    """Structural checks: box coordinates, ids in range, dangling box references, duplicate images.

    Problems print as ``file: record N: field: problem``; the exit code is 1 if there are any
    (a file that cannot be read at all is an error, exit code 2).
    """
    from hoibench._io import UnreadableFileError, check_input_file

    check_input_file(file)  # missing, a folder, a FIFO...: unreadable, exit code 2
    try:
        ds = read_dataset(file, format=fmt, validate=False)
    except UnreadableFileError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(2) from None
    except FormatError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(1) from None
    problems = validate_dataset(ds, geometry=True)
    for p in problems[:limit]:
        click.echo(p.format(file))
    if len(problems) > limit:
        click.echo(f"... and {len(problems) - limit} more problems")
    if problems:
        click.echo(f"{file}: {len(problems)} problem(s)", err=True)
        raise SystemExit(1)
    console.print(f"{file}: OK ({ds.n_images:,} images, {ds.n_pairs:,} pairs)")
