"""``hoibench split sg|audit|stats``: HICO-DET-SG / V-COCO-SG splits (see docs/sg-splits.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.table import Table

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import check_folder, read_json
from hoibench.cli._common import console, emit_json, err_console, input_hashes, json_option

__all__ = ["audit", "sg", "stats"]


def _load_source(specs: tuple[str, ...]) -> tuple[Any, np.ndarray | None, str]:
    """The union to split: a bundled dataset name, or files concatenated in the given order."""
    from hoibench.benchmarks.sg import load_union
    from hoibench.data import HOIDataset
    from hoibench.datasets import is_dataset_name, resolve_dataset

    if len(specs) == 1 and is_dataset_name(specs[0]) and ":" not in specs[0]:
        ds, origin = load_union(specs[0])
        return ds, origin, ds.name
    parts = [resolve_dataset(s) for s in specs]
    ds = parts[0] if len(parts) == 1 else HOIDataset.concat(parts, name="+".join(specs))
    return ds, None, ds.name


@click.command("sg")
@click.option("--dataset", "datasets", multiple=True, metavar="NAME_OR_FILE",
              help="hico-det, v-coco, or annotation files (repeat: original train file first, "
                   "then test); their union is split.")
@click.option("--preset", default=None,
              help="hico-det-sg1|sg2|sg3, v-coco-sg1|sg2|sg3: dataset, seed, ratio and policy "
                   "'released' of a released split (V-COCO-SG: only with QPIC's files as --dataset).")
@click.option("--seed", default=None, metavar="N|auto[:START]",
              help="random_state of SELECT; 'auto' retries START, START+1, ... until VERIFY passes.")
@click.option("--ratio", type=float, default=None,
              help="Share of combinations kept for train [0.9 hico-det, 0.7 v-coco].")
@click.option("--policy", type=click.Choice(["paper", "released"]), default=None,
              help="paper: mixed images dropped; released: mixed images go to test with their "
                   "test pairs [paper; released with --preset].")
@click.option("--verify", type=click.Choice(["paper", "released"]), default=None,
              help="VERIFY rule [the policy's].")
@click.option("--removals", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON {split name: [file names]} of test entries to delete (released policy; "
                   "presets use the lists shipped with hoibench).")
@click.option("--boxes", type=click.Choice(["as-released", "0-based"]), default=None,
              help="Box convention written for HICO-DET images of the original test set: "
                   "as-released keeps the released files' 1-based boxes there (two conventions "
                   "in one file, warned); 0-based writes every box 0-based [as-released with "
                   "policy released, else 0-based]. Files given with --dataset are written as read.")
@click.option("--name", default=None,
              help="Name of a split built without --preset [<dataset>-sg-seed<N>]; a released split's "
                   "name is refused.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Output directory.")
@json_option("stats.json")
def sg(datasets: tuple[str, ...], preset: str | None, seed: str | None, ratio: float | None,
       policy: str | None, verify: str | None, removals: str | None, boxes: str | None,
       name: str | None, out: str, as_json: str | None) -> None:
    """Build one systematic-generalization split into OUT: trainval_*.json, test_*.json
    (PPDM/QPIC layout), test_combinations.json, stats.json and table1.md. Exits non-zero
    (after writing, for inspection) when the split fails VERIFY."""
    from hoibench._exceptions import ValidationError
    from hoibench.benchmarks.sg import (
        build_preset,
        build_sg_split,
        get_preset,
        load_released_removals,
        table1_markdown,
    )

    if name is not None:
        if preset is not None:
            raise ConfigError("--name names a split built without --preset; a preset keeps its own name")
        try:
            taken = get_preset(name).name
        except ConfigError:
            taken = None
        if taken is not None:
            raise ConfigError(f"--name {name} is the released split {taken}'s name; use --preset {taken} "
                              "or another name")
    if preset is not None:
        p = get_preset(preset)
        clash = [n for n, v in (("--seed", seed), ("--ratio", ratio)) if v is not None]
        if clash:
            raise ConfigError(f"--preset {p.name} fixes {', '.join(clash)}; drop them or drop --preset")
        src, origin = (None, None)
        if datasets:
            src, origin, _ = _load_source(datasets)
        split = build_preset(p.name, dataset=src, origin_test=origin, removals_file=removals,
                             policy=policy or "released", verify=verify, boxes=boxes)  # type: ignore[arg-type]
    else:
        if not datasets:
            raise ConfigError("give --dataset (hico-det, v-coco or files) or --preset")
        if seed is None:
            raise ConfigError("give --seed N, --seed auto[:START] or --preset")
        src, origin, _ = _load_source(datasets)
        ratio = ratio if ratio is not None else (0.7 if src.vocab.name == "v-coco" else 0.9)
        rem = load_released_removals(path=removals) if removals is not None else ()
        from rich.progress import Progress, SpinnerColumn, TextColumn

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=console,
                      transient=True) as progress:
            task = progress.add_task("SELECT + VERIFY", total=None)

            def on_attempt(tried: int, problems: object) -> None:
                progress.update(task, description=f"seed {tried}: "
                                + ("VERIFY passes" if not problems else "VERIFY fails, next seed"))

            split = build_sg_split(src, random_state=seed, ratio=ratio, policy=policy or "paper",  # type: ignore[arg-type]
                                   verify=verify, boxes=boxes, origin_test=origin,  # type: ignore[arg-type]
                                   removals=rem, on_attempt=on_attempt, name=name or "")
    with console.status(f"writing {split.name} to {out}"):
        paths = split.write(out, inputs=input_hashes(dataset=list(datasets) or None, removals=removals))
    stats_out = split.stats()
    box_warning = split.box_convention_warning()
    if box_warning is not None:
        err_console.print(f"[yellow]warning:[/] {box_warning}", soft_wrap=True)
    if not emit_json(stats_out, as_json):
        click.echo(table1_markdown(split.table1_rows()))
        console.print(f"seed {split.seed} ({split.attempts} attempt(s)), policy {split.policy}, "
                      f"{split.mixed_images:,} mixed images, {len(split.removed)} test entries removed; "
                      f"wrote {', '.join(str(p) for p in paths.values())}")
    if split.verify_problems:
        more = len(split.verify_problems) - 1
        raise ValidationError(f"{split.name} fails VERIFY {split.verify} (seed {split.seed}): "
                              f"{split.verify_problems[0]}" + (f" (and {more} more)" if more else "")
                              + f"; {out} holds a split that does not generalize systematically")


@click.command("audit")
@click.argument("train", type=click.Path(exists=True, dir_okay=False))
@click.argument("test", type=click.Path(exists=True, dir_okay=False))
@json_option("Full report")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="Rows to print per list.")
def audit(train: str, test: str, as_json: str | None, limit: int) -> None:
    """Leakage report for any TRAIN/TEST pair of annotation files; exit code 1 when a
    combination or an image occurs in both."""
    from hoibench.benchmarks.sg import audit_split
    from hoibench.formats import read_dataset

    report = audit_split(read_dataset(train), read_dataset(test))
    if not emit_json(report.as_dict(), as_json):
        t1 = report.table1
        console.print(f"train {train}: {t1['images']['train']:,} images, {t1['triplets']['train']:,} "
                      f"triplets, {t1['combinations']['train']} combinations")
        console.print(f"test  {test}: {t1['images']['test']:,} images, {t1['triplets']['test']:,} "
                      f"triplets, {t1['combinations']['test']} combinations")
        verdict = "[red]LEAKS[/]" if report.leaks else "[green]no leakage[/]"
        console.print(f"shared combinations: {len(report.shared_combinations)} ({verdict})")
        for r in report.shared_combinations[:limit]:
            console.print(f"  {r['verb']} {r['object']}: train {r['train']}, test {r['test']}")
        console.print(f"shared images: {len(report.shared_images)}"
                      + (f" (e.g. {', '.join(report.shared_images[:5])})" if report.shared_images else ""))
        console.print(f"objects only in test: {report.objects_only_in_test or 'none'}")
        console.print(f"verbs only in test: {report.verbs_only_in_test or 'none'}")
        table = Table(title="box conventions by file-name prefix")
        for col in ("file", "prefix", "images", "boxes", "x1|y1 = 0", "x1|y1 = 1", "convention"):
            table.add_column(col, justify="left" if col in ("file", "prefix", "convention") else "right",
                             no_wrap=True)
        for part, groups in report.box_groups.items():
            for g in groups:
                table.add_row(part, g.prefix, f"{g.images:,}", f"{g.boxes:,}", f"{g.at_zero:,}",
                              f"{g.at_one:,}", g.convention)
        console.print(table)
        for part, mixed in report.box_conventions_mixed.items():
            if mixed:
                console.print(f"[yellow]{part}: box conventions are mixed[/] (some entries 1-based, "
                              "others 0-based: a 1-pixel shift between them)")
    if report.leaks or report.shared_images:  # an image in both parts leaks as surely as a combination
        if as_json != "-":
            err_console.print(f"split audit: {len(report.shared_combinations)} shared combinations, "
                              f"{len(report.shared_images)} images in both train and test")
        raise SystemExit(1)


@click.command("stats")
@click.argument("split_dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@json_option("Rows")
@click.option("--no-original", is_flag=True, help="Skip the rows of the bundled original datasets.")
def stats(split_dirs: tuple[str, ...], as_json: str | None, no_original: bool) -> None:
    """The paper's Table 1 (original datasets, the paper's SG rows, the released test files)
    next to the SPLIT_DIRS built by ``hoibench split sg``, as a Markdown table; then section 6.1:
    the HICO-DET-SG train data relative to V-COCO-SG's (images, HOIs, combinations), the paper's
    stated ratios beside those of its Table 1, the bundled originals and the SPLIT_DIRS."""
    from hoibench.benchmarks.sg import (
        PAPER_TABLE1,
        RELEASED_TEST_COUNTS,
        paper_row,
        section61_markdown,
        section61_ratios,
        split_table1,
        table1_markdown,
    )

    rows: list[tuple[str, dict[str, dict[str, int]]]] = []
    ratios: list[tuple[str, dict[str, float]]] = []
    for k in (1, 2, 3):
        ratios.append((f"paper Table 1, split {k}", section61_ratios(paper_row(f"hico-det-sg{k}"),
                                                                   paper_row(f"v-coco-sg{k}"))))
    ratios.append(("paper Table 1, sum of splits 1-3", section61_ratios(
        *(_summed([paper_row(f"{d}{k}") for k in (1, 2, 3)]) for d in ("hico-det-sg", "v-coco-sg")))))
    ratios.append(("paper Table 1, original HICO-DET / V-COCO",
                   section61_ratios(paper_row("hico-det"), paper_row("v-coco"))))
    if not no_original:
        from hoibench.datasets import BUNDLED, load_dataset

        originals = {}
        for name in BUNDLED:
            train_split, test_split = list(BUNDLED[name])
            tr, te = load_dataset(name, train_split), load_dataset(name, test_split)
            originals[name] = split_table1(tr, te)
            rows.append((f"original {name} (bundled)", originals[name]))
        if {"hico-det", "v-coco"} <= set(originals):
            ratios.append(("bundled original HICO-DET / V-COCO (measured)",
                           section61_ratios(originals["hico-det"], originals["v-coco"])))
    for name in PAPER_TABLE1:
        rows.append((f"{name} (paper)", paper_row(name)))
    for name, c in RELEASED_TEST_COUNTS.items():
        rows.append((f"{name} (released test file)", {k: {"test": v} for k, v in c.items()}))
    built: dict[str, list[tuple[str, dict[str, dict[str, int]]]]] = {"hico-det": [], "v-coco": []}
    for d in split_dirs:
        path = Path(d) / "stats.json"
        check_folder(d)
        data = read_json(path)
        if not isinstance(data, dict) or "table1" not in data:
            raise FormatError("not an SG stats.json (needs 'table1')", file=path)
        rows.append((f"{data.get('name', d)} ({d}, {data.get('policy', '?')})", data["table1"]))
        space = data.get("label_space")
        if space in built:
            built[space].append((d, data["table1"]))
    for (hd, ht), (vd, vt) in zip(built["hico-det"], built["v-coco"]):
        ratios.append((f"{hd} / {vd} (measured)", section61_ratios(ht, vt)))
    if emit_json([{"split": label, **row} for label, row in rows], as_json):
        return
    click.echo(table1_markdown(rows))
    click.echo("\nSection 6.1: the HICO-DET-SG train data relative to V-COCO-SG's (ratios of train counts)\n")
    click.echo(section61_markdown(ratios))
    if len(built["hico-det"]) != len(built["v-coco"]):
        click.echo(f"(split folders paired in the order given: {len(built['hico-det'])} HICO-DET and "
                   f"{len(built['v-coco'])} V-COCO; the unpaired ones have no section 6.1 row)")


def _summed(rows: list[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """Table 1 rows added up (the pooled ratio of several splits)."""
    return {k: {s: sum(r[k][s] for r in rows) for s in ("train", "test")} for k in rows[0]}
