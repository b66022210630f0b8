"""``hoibench augment``: fill balanced-split deficits with generated images (``run``), filter and
pseudo-label crawled images (``filter``), have people review the kept images (``review``), merge
the outputs of several shards and the review's decisions (``collect``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import click

from hoibench.cli._common import console, err_console

__all__ = ["augment"]

_IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp"}


@click.group()
def augment() -> None:
    """B-RIGHT augmentation: generate, verify and pseudo-label images for classes lacking instances."""


def _report(result: object) -> None:
    from rich.table import Table

    table = Table(title="augmentation", show_lines=False)
    for col in ("hoi", "class", "need", "filled", "kept images", "attempts", "status"):
        table.add_column(col, justify="right" if col not in ("class", "status") else "left")
    for row in result.classes:  # type: ignore[attr-defined]
        table.add_row(str(row["hoi"]), row["name"], str(row["need"]), str(row["filled"]),
                      str(row["kept_images"]), str(row["attempts"]), row["status"])
    console.print(table)
    ds = result.dataset  # type: ignore[attr-defined]
    console.print(f"{ds.n_images} images, {ds.n_pairs} instances; images under {result.images_root}")  # type: ignore[attr-defined]


def _models_line(cfg: object, roles: tuple[str, ...]) -> str:
    """The models a config loads, one line (the generator's size and steps: what its time depends on)."""
    gen, det = cfg.generator, cfg.detector  # type: ignore[attr-defined]
    gen_name = "tiny random SDXL" if gen.kind == "tiny" else f"{gen.kind} {gen.model}"
    chat = ", ".join(f"{role} {getattr(cfg, role).kind}"
                     + (f" {getattr(cfg, role).model}" if getattr(cfg, role).model else "")
                     for role in roles)
    return (f"generator {gen_name} ({gen.width}×{gen.height}, {gen.steps} step{'' if gen.steps == 1 else 's'}); "
            f"detector {det.kind}{'' if det.kind == 'fake' else ' ' + det.model}; {chat}")


def _on_device(cfg: object, device: str | None) -> object:
    """Give each process its own accelerator when the config says ``device: auto``."""
    if device is None:
        return cfg
    gen, det = cfg.generator, cfg.detector  # type: ignore[attr-defined]
    return dataclasses.replace(
        cfg,  # type: ignore[type-var]
        generator=dataclasses.replace(gen, device=device) if gen.device == "auto" else gen,
        detector=dataclasses.replace(det, device=device) if det.device == "auto" else det)


@augment.command("run")
@click.option("--deficits", "deficits_path", required=True, type=click.Path(dir_okay=False),
              help="deficits.json written by 'hoibench split balanced'.")
@click.option("--dataset", default="hico-det", show_default=True,
              help="Dataset (name or file) to retrieve reference images from.")
@click.option("--images", "images_dir", default=None, type=click.Path(file_okay=False),
              help="Folder of the dataset's images (HICO-DET: the folder holding train2015/), to "
                   "describe real reference images into prompts; an annotation naming an image "
                   "outside it is refused before any model loads. Without it every prompt is the "
                   "basic text prompt (no reference retrieval).")
@click.option("--follow-symlinks", is_flag=True,
              help="Follow symlinks under --images that lead out of it (a link farm on purpose).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder (created; a re-run resumes in it; one whose run produced nothing "
                   "restarts with new parameters).")
@click.option("--max-attempts", type=int, default=None, help="Generated images per class at most "
              "(default: the config's).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="YAML config (models, prompts, seed), or the name of a packaged one: 'dry-run' "
                   "(tiny random models, a minute on a CPU), 'ablation-basic' and "
                   "'ablation-description' (B-RIGHT Figure S2); see docs/augment.md.")
@click.option("--shard", default=None, help="'I/N' to run shard I of N by hand; default: "
              "accelerate's process index when started with 'accelerate launch'.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def run_cmd(deficits_path: str, dataset: str, images_dir: str | None, follow_symlinks: bool, out_dir: str,
            max_attempts: int | None, config_path: str | None, shard: str | None, no_progress: bool) -> None:
    """Generate, verify and pseudo-label images until each class of DEFICITS has its instances."""
    from hoibench.augment import (
        AugmentPipeline,
        augment_deficits,
        check_reference_images,
        collect_augmented,
        load_config,
        parse_shard,
        read_deficits,
        run_sharded,
    )
    from hoibench.datasets import resolve_dataset

    cfg = load_config(config_path, max_attempts=max_attempts)
    ds = resolve_dataset(dataset)
    targets = read_deficits(deficits_path, ds.vocab)
    if not targets:
        console.print("no train-set class has a deficit; nothing to do")
        return
    if images_dir is not None:
        check_reference_images(targets, dataset=ds, images_dir=images_dir, follow_symlinks=follow_symlinks)
    else:
        err_console.print("no --images: no reference retrieval; every prompt is the basic text prompt "
                          "(recorded in the manifest as prompt_from: basic)")

    def work(sh: tuple[int, int], device: str | None) -> None:
        dev_cfg = _on_device(cfg, device)
        if not no_progress:
            roles = ("describe_vlm", "region_vlm", "llm") if images_dir is not None else ("region_vlm", "llm")
            err_console.print(f"loading models: {_models_line(dev_cfg, roles)}")
        pipeline = AugmentPipeline.from_config(dev_cfg, out_dir=out_dir,  # type: ignore[arg-type]
                                               describe=images_dir is not None)
        augment_deficits(targets, vocab=ds.vocab, out_dir=out_dir, pipeline=pipeline, dataset=ds,
                         images_dir=images_dir, follow_symlinks=follow_symlinks, shard=sh,
                         progress=not no_progress)

    result = run_sharded(work, lambda: collect_augmented(out_dir, ds.vocab), shard=parse_shard(shard))
    if result is not None:
        _report(result)


def _crawled_items(images: Path, hoi: int | None, follow_symlinks: bool) -> list[tuple[Path, int]]:
    from hoibench._exceptions import ConfigError

    def files(folder: Path) -> list[Path]:
        found = []
        seen: set[str] = set()  # real folders walked, so a link cycle ends
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=follow_symlinks):
            real = os.path.realpath(dirpath)
            if real in seen:
                dirnames[:] = []
                continue
            seen.add(real)
            found.extend(p for p in (Path(dirpath) / f for f in filenames)
                         if p.suffix.lower() in _IMAGE_SUFFIXES and p.is_file())
        return sorted(found)

    if hoi is not None:
        return [(p, hoi) for p in files(images)]
    items: list[tuple[Path, int]] = []
    for sub in sorted(p for p in images.iterdir() if p.is_dir()):
        if not sub.name.isdigit():
            raise ConfigError(f"{sub}: sub-folders of --images must be named by HOI class index "
                              "(as in deficits.json), or pass --hoi")
        items.extend((p, int(sub.name)) for p in files(sub))
    return items


@augment.command("filter")
@click.option("--images", "images_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="Crawled images: one sub-folder per HOI class index, or one folder with --hoi.")
@click.option("--follow-symlinks", is_flag=True,
              help="Crawl and read through symlinks under --images that lead out of it.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--hoi", type=int, default=None, help="HOI class of every image in --images.")
@click.option("--deficits", "deficits_path", type=click.Path(dir_okay=False), default=None,
              help="Stop a class once it has its deficit (default: keep every image that passes).")
@click.option("--dataset", default="hico-det", show_default=True, help="Label space source.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None, help="YAML config.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def filter_cmd(images_dir: str, follow_symlinks: bool, out_dir: str, hoi: int | None, deficits_path: str | None,
               dataset: str, config_path: str | None, no_progress: bool) -> None:
    """Detect, verify and pseudo-label existing (e.g. crawled) images; steps 4-6 of 'run'."""
    from hoibench._exceptions import ConfigError
    from hoibench.augment import (
        AugmentPipeline,
        TargetClass,
        filter_images,
        load_config,
        read_deficits,
    )
    from hoibench.datasets import resolve_dataset

    vocab = resolve_dataset(dataset).vocab
    cfg = load_config(config_path)
    needs = {} if deficits_path is None else {t.hoi: t.need for t in read_deficits(deficits_path, vocab)}
    raw = _crawled_items(Path(images_dir), hoi, follow_symlinks)
    for _, h in raw:
        if not 0 <= h < vocab.n_hois:
            raise ConfigError(f"HOI class {h} is outside 0..{vocab.n_hois - 1} of {vocab.name}")
    items = [(p, TargetClass.of(vocab, h, needs.get(h, 0))) for p, h in raw]
    if not items:
        raise ConfigError(f"{images_dir}: no images found")
    pipeline = AugmentPipeline.from_config(cfg, out_dir=out_dir, generate=False)
    result = filter_images(items, vocab=vocab, images_root=images_dir, out_dir=out_dir, pipeline=pipeline,
                           follow_symlinks=follow_symlinks, progress=not no_progress)
    _report(result)


@augment.command("collect")
@click.option("--out", "out_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="Output folder of a (sharded) run.")
@click.option("--dataset", default="hico-det", show_default=True, help="Label space source.")
@click.option("--reviewed-only", is_flag=True,
              help="Keep only images a reviewer accepted (default: drop the rejected ones).")
def collect_cmd(out_dir: str, dataset: str, reviewed_only: bool) -> None:
    """Merge the manifests of every shard into the dataset files and summary, honouring the
    review's decisions (review_decisions.json)."""
    from hoibench.augment import collect_augmented
    from hoibench.datasets import resolve_dataset

    result = collect_augmented(out_dir, resolve_dataset(dataset).vocab, reviewed_only=reviewed_only)
    _report(result)
    review = result.review or {}
    if review.get("file"):
        console.print(f"review: {review['accepted']} accepted, {review['rejected']} rejected (dropped), "
                      f"{review['unreviewed']} unreviewed ({'dropped' if reviewed_only else 'kept'})")


@augment.command("review")
@click.argument("out_dir", metavar="DIR", type=click.Path(exists=True, file_okay=False))
@click.option("--dataset", default="hico-det", show_default=True, help="Label space source.")
@click.option("--serve/--no-serve", default=True, show_default=True,
              help="Serve the page on 127.0.0.1 and save each decision to DIR/review_decisions.json "
                   "as it is made (--no-serve: only write DIR/review.html; its Download button "
                   "saves the file).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to serve on (0: any free port).")
def review_cmd(out_dir: str, dataset: str, serve: bool, port: int) -> None:
    """Write DIR/review.html: one card per kept image with its pseudo-labels, keyboard
    accept/reject; 'augment collect' then honours the decisions."""
    from hoibench.augment import ReviewServer, review_cards, write_review_page
    from hoibench.datasets import resolve_dataset

    page = write_review_page(out_dir, resolve_dataset(dataset).vocab)
    console.print(f"wrote {page} ({len(review_cards(out_dir))} kept images)")
    if not serve:
        return
    server = ReviewServer(out_dir, port=port)
    console.print(f"open {server.url} ; decisions go to {Path(out_dir) / 'review_decisions.json'}; "
                  "Ctrl-C stops")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    console.print(f"stopped; run 'hoibench augment collect --out {out_dir}' to apply the decisions")
