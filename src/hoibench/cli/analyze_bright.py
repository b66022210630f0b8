"""``hoibench analyze embeddings`` and ``hoibench analyze prompt-ablation``: B-RIGHT's
supplementary Figures S3 (t-SNE of real vs generated images in CLIP and DreamSim space) and S2
(generated images of two or more augmentation runs side by side, the prompt under each)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hoibench.cli._common import console, err_console

__all__ = ["embeddings_cmd", "prompt_ablation_cmd"]

_SPACES = ("clip", "dreamsim")


def _generated_images(folder: Path, all_attempts: bool) -> tuple[list[Path], str]:
    """The images of an augmentation output folder (kept ones unless ``all_attempts``), or every
    image under a plain folder; and a few words saying which."""
    from hoibench.analysis import augment_run_images, folder_images

    if (folder / "run.json").is_file():
        images = augment_run_images(folder, kept_only=not all_attempts)
        return [im.path for im in images], ("every generated image" if all_attempts else "kept images") + \
            f" of the augmentation run {folder}"
    return folder_images(folder), f"images under {folder}"


def _embedders(spaces: list[str], clip: str, dreamsim: str, dreamsim_type: str, device: str) -> list[Any]:
    from hoibench.models import ClipEmbedder, DreamSimEmbedder

    out: dict[str, Any] = {}
    # DreamSim first: a missing package is refused before CLIP's weights are fetched
    for space in sorted(spaces, key=lambda s: s != "dreamsim"):
        if space == "clip":
            e = ClipEmbedder.from_pretrained(clip, device=device)
            e.name = f"CLIP ({Path(clip).name if Path(clip).is_dir() else clip})"
        else:
            e = DreamSimEmbedder.from_pretrained(dreamsim, dreamsim_type=dreamsim_type, device=device)
            e.name = f"DreamSim ({dreamsim_type})"
        out[space] = e
    return [out[s] for s in spaces]  # panels in the order asked


@click.command("embeddings")
@click.argument("real", type=click.Path(exists=True, file_okay=False))
@click.argument("generated", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write embedding-tsne.png (a panel per model) and embedding-tsne.csv (2-D coordinates).")
@click.option("--models", "models", default="clip,dreamsim", show_default=True,
              help="Embedding spaces, comma-separated: clip, dreamsim (one panel each).")
@click.option("--clip", "clip", default="openai/clip-vit-base-patch32", show_default=True,
              help="CLIP model: hub id or local folder (transformers CLIPModel).")
@click.option("--dreamsim", "dreamsim", default="./models", show_default=True,
              help="Folder of DreamSim's weights (the dreamsim package downloads them there when missing).")
@click.option("--dreamsim-type", default="ensemble", show_default=True,
              help="DreamSim model: ensemble (the default of its paper), dino_vitb16, clip_vitb32, open_clip_vitb32.")
@click.option("--all-real", is_flag=True, help="Embed every real image; default: a seeded sample of as many "
              "real images as there are generated ones (as the paper does).")
@click.option("--all-attempts", is_flag=True, help="From an augmentation run, every generated image; "
              "default: the kept ones (those in the augmented dataset).")
@click.option("--names", default="real,generated", show_default=True,
              help="Legend names of REAL and GENERATED, comma-separated (e.g. HICO-DET,B-RIGHT).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the real-image sample and of t-SNE.")
@click.option("--perplexity", type=float, default=30.0, show_default=True,
              help="t-SNE perplexity (lowered to (n-1)/3 for fewer images).")
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--device", default="auto", show_default=True, help="cpu, cuda, cuda:1 or auto.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def embeddings_cmd(real: str, generated: str, out_dir: str, models: str, clip: str, dreamsim: str,
                   dreamsim_type: str, all_real: bool, all_attempts: bool, names: str, seed: int, perplexity: float,
                   batch_size: int, device: str, no_progress: bool) -> None:
    """t-SNE of REAL images (a folder) and GENERATED images (an augmentation output folder or a
    folder of images) in CLIP and DreamSim embedding space (B-RIGHT Figure S3)."""
    from hoibench._exceptions import ConfigError
    from hoibench._io import atomic_write_bytes, atomic_write_csv
    from hoibench._progress import make_progress
    from hoibench.analysis import embedding_tsne, folder_images, sample_paths
    from hoibench.reports import embedding_tsne_figure

    spaces = [s.strip().lower() for s in models.split(",") if s.strip()]
    bad = [s for s in spaces if s not in _SPACES]
    if bad or not spaces:
        raise ConfigError(f"--models {models!r}: choose from {', '.join(_SPACES)}")
    labels = [x.strip() for x in names.split(",")]
    if len(labels) != 2 or not all(labels) or labels[0] == labels[1]:
        raise ConfigError(f"--names {names!r}: two different names, comma-separated (e.g. real,generated)")
    real_paths = folder_images(real)
    gen_paths, gen_what = _generated_images(Path(generated), all_attempts)
    if not real_paths:
        raise ConfigError(f"{real}: no images (.jpg, .jpeg, .png, .webp, .bmp) under it")
    if not gen_paths:
        raise ConfigError(f"{generated}: no images ({gen_what})")
    if not all_real:
        real_paths = sample_paths(real_paths, len(gen_paths), seed=seed)
    embedders = _embedders(list(dict.fromkeys(spaces)), clip, dreamsim, dreamsim_type, device)
    err_console.print(f"embeddings: {len(real_paths)} {labels[0]} images from {real}, {len(gen_paths)} {labels[1]} "
                      f"({gen_what}); models: {', '.join(e.name for e in embedders)}", markup=False)
    groups = {labels[0]: real_paths, labels[1]: gen_paths}
    n = len(real_paths) + len(gen_paths)
    if no_progress:
        m = embedding_tsne(groups, embedders, seed=seed, perplexity=perplexity, batch_size=batch_size)
    else:
        with make_progress() as bar:
            tasks = {e.name: bar.add_task(f"embedding: {e.name}", total=n) for e in embedders}
            m = embedding_tsne(groups, embedders, seed=seed, perplexity=perplexity, batch_size=batch_size,
                               on_batch=lambda space, done: bar.update(tasks[space], completed=done))
    fig = embedding_tsne_figure(m)
    out = Path(out_dir)
    atomic_write_bytes(out / f"{fig.name}.png", fig.png)
    atomic_write_csv(out / f"{fig.name}.csv", ("space", "group", "image", "x", "y"),
                     [(s, g, i, f"{x:.6g}", f"{y:.6g}") for s, g, i, x, y in m.rows()])
    console.print(fig.caption, markup=False)
    console.print(f"wrote {out / (fig.name + '.png')} and {out / (fig.name + '.csv')}", markup=False)


def _run_labels(specs: tuple[str, ...]) -> dict[str, str]:
    """``LABEL=DIR`` or ``DIR`` (labelled by its folder name and prompt kind), in order."""
    from hoibench._exceptions import ConfigError
    from hoibench.analysis import run_prompt_kind

    out: dict[str, str] = {}
    for spec in specs:
        label, sep, folder = spec.partition("=")
        if not sep or not label:
            folder = spec
            if not (Path(folder) / "run.json").is_file():
                raise ConfigError(f"{folder}: not an augmentation output folder (no run.json)")
            label = f"{Path(folder).name}: {run_prompt_kind(folder)}"
        if label in out:
            raise ConfigError(f"two runs are labelled {label!r}; name them LABEL=DIR")
        out[label] = folder
    return out


@click.command("prompt-ablation")
@click.argument("runs", nargs=-1, required=True, metavar="[LABEL=]RUN_DIR...")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Write prompt-ablation.png and prompt-ablation.csv (class, run, image, prompt) here.")
@click.option("--per-class", type=click.IntRange(min=1), default=1, show_default=True,
              help="Images per class and run.")
@click.option("--max-classes", type=click.IntRange(min=1), default=6, show_default=True,
              help="Classes shown (the first the runs have in common, by class index).")
@click.option("--classes", "class_list", default=None, help="HOI class indices to show, comma-separated.")
@click.option("--kept-only", is_flag=True, help="Only images the verification kept (the paper's (c)); "
              "default: the first generated images whatever their verdict.")
@click.option("--dataset", default="hico-det", show_default=True, help="Dataset whose class names label the rows.")
def prompt_ablation_cmd(runs: tuple[str, ...], out_dir: str, per_class: int, max_classes: int,
                        class_list: str | None, kept_only: bool, dataset: str) -> None:
    """Generated images of two or more augmentation runs side by side per class, the prompt under
    each (B-RIGHT Figure S2: basic prompt vs prompt with the VLM's description)."""
    from hoibench._exceptions import ConfigError
    from hoibench._io import atomic_write_bytes, atomic_write_csv
    from hoibench.analysis import prompt_ablation
    from hoibench.datasets import resolve_dataset
    from hoibench.reports import prompt_ablation_figure

    labelled = _run_labels(runs)
    classes = None
    if class_list is not None:
        try:
            classes = [int(c) for c in class_list.split(",") if c.strip()]
        except ValueError:
            raise ConfigError(f"--classes {class_list!r}: expected HOI class indices such as 12,40") from None
    vocab = resolve_dataset(dataset).vocab
    a = prompt_ablation(labelled, per_class=per_class, max_classes=None if classes else max_classes,
                        classes=classes, kept_only=kept_only,
                        class_name=lambda h: vocab.hoi_name(h) if 0 <= h < vocab.n_hois else f"class {h}")
    fig = prompt_ablation_figure(a)
    out = Path(out_dir)
    atomic_write_bytes(out / f"{fig.name}.png", fig.png)
    rows = [(h, name, a.runs[j], im.attempt, str(im.path), im.status, im.prompt)
            for h, name, row in zip(a.classes, a.names, a.cells, strict=True)
            for j, imgs in enumerate(row) for im in imgs]
    atomic_write_csv(out / f"{fig.name}.csv", ("hoi", "class", "run", "attempt", "image", "status", "prompt"), rows)
    console.print(f"{len(a.classes)} classes × {len(a.runs)} runs ({', '.join(a.runs)})", markup=False)
    console.print(f"wrote {out / (fig.name + '.png')} and {out / (fig.name + '.csv')}", markup=False)
