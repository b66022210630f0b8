"""What B-RIGHT's supplementary Figures S2 and S3 show (``002_*.txt``, appendix B):

- :func:`prompt_ablation` — per HOI class, the images that two or more augmentation runs (e.g.
  the basic prompt vs the prompt with the VLM's description) generated, with the prompt of each
  (Figure S2).
- :func:`embedding_tsne` — real and generated images embedded by image models (CLIP, DreamSim;
  :class:`hoibench.models.ImageEmbedder`) and laid out in 2-D by t-SNE (Figure S3).

Images of a run are read from its manifest (:func:`augment_run_images`). Figures are drawn by
:mod:`hoibench.reports`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import read_json
from hoibench._random import check_random_state
from hoibench.augment import read_manifests
from hoibench.models import ImageEmbedder

__all__ = [
    "IMAGE_SUFFIXES",
    "EmbeddingMap",
    "PromptAblation",
    "RunImage",
    "augment_run_images",
    "embedding_tsne",
    "folder_images",
    "prompt_ablation",
    "run_prompt_kind",
    "sample_paths",
]

#: the files :func:`folder_images` counts as images
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp"})


@dataclass(frozen=True)
class RunImage:
    """One image an augmentation run decided on: its class, attempt (generated) or None
    (crawled), file, the prompt it was generated from (None for crawled) and the verdict."""

    hoi: int
    attempt: int | None
    path: Path
    prompt: str | None
    status: str


def augment_run_images(run_dir: str | os.PathLike[str], *, kept_only: bool = False) -> list[RunImage]:
    """The images of an ``augment run`` or ``augment filter`` output folder, from its manifests,
    in class then attempt order (the last record of an attempt redone after a crash counts).
    ``kept_only``: only those the verification kept."""
    out = Path(run_dir)
    run_file = out / "run.json"
    if not run_file.is_file():
        raise ConfigError(f"{out}: not an augmentation output folder (no run.json)")
    run = read_json(run_file)
    root = out if run.get("kind") == "augment_generate" else Path(run.get("images_root", out))
    last: dict[tuple[int, str], RunImage] = {}
    for rec in read_manifests(out):
        if rec["event"] not in ("attempt", "filtered") or not isinstance(rec.get("image"), str):
            continue
        attempt = int(rec["attempt"]) if rec["event"] == "attempt" else None
        key = (int(rec["hoi"]), str(attempt).zfill(12) if attempt is not None else rec["image"])
        last[key] = RunImage(int(rec["hoi"]), attempt, root / rec["image"],
                             rec.get("prompt") if isinstance(rec.get("prompt"), str) else None,
                             str(rec.get("status", "")))
    images = [last[k] for k in sorted(last)]
    return [im for im in images if im.status == "kept"] if kept_only else images


def run_prompt_kind(run_dir: str | os.PathLike[str]) -> str:
    """How a run's prompts were made, from its ``describe`` records: ``"basic prompt"`` (no
    reference image described), ``"description prompt"`` (every prompt from a described real
    image), ``"mixed prompts"`` or ``"no prompts"`` (a filter run)."""
    kinds = {rec.get("prompt_from") for rec in read_manifests(run_dir) if rec["event"] == "describe"}
    if not kinds:
        return "no prompts"
    if kinds == {"basic"}:
        return "basic prompt"
    return "description prompt" if kinds == {"reference"} else "mixed prompts"


def folder_images(folder: str | os.PathLike[str]) -> list[Path]:
    """Image files (by suffix) anywhere under ``folder``, sorted by path."""
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{root}: not a folder")
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


def sample_paths(paths: Sequence[Path], n: int, *, seed: int) -> list[Path]:
    """``n`` of ``paths`` drawn without replacement (seeded), in their order; all when fewer."""
    if n >= len(paths):
        return list(paths)
    keep = np.sort(check_random_state(seed).choice(len(paths), size=n, replace=False))
    return [paths[i] for i in keep]


# ------------------------------------------------------------------------------- Figure S2
@dataclass(frozen=True)
class PromptAblation:
    """Per class (``classes``, with ``names``), the images of each run (``runs``, in order):
    ``cells[class index][run index]`` lists that run's first images of the class."""

    runs: tuple[str, ...]
    classes: tuple[int, ...]
    names: tuple[str, ...]
    cells: tuple[tuple[tuple[RunImage, ...], ...], ...]


def prompt_ablation(runs: Mapping[str, str | os.PathLike[str]], *, per_class: int = 1,
                    max_classes: int | None = 8, classes: Sequence[int] | None = None,
                    kept_only: bool = False, class_name: Callable[[int], str] = str) -> PromptAblation:
    """The images each run generated for the classes all runs have (or ``classes``), the first
    ``per_class`` attempts of each (``kept_only``: the first kept ones), at most ``max_classes``
    classes in class order."""
    if len(runs) < 2:
        raise ConfigError("a prompt ablation compares at least two augmentation runs")
    if per_class < 1:
        raise ConfigError(f"per_class must be >= 1; got {per_class}")
    by_run: list[dict[int, list[RunImage]]] = []
    for label, folder in runs.items():
        per: dict[int, list[RunImage]] = {}
        for im in augment_run_images(folder, kept_only=kept_only):
            if im.prompt is not None:
                per.setdefault(im.hoi, []).append(im)
        if not per:
            raise ConfigError(f"run {label!r} ({folder}): no generated image"
                              + (" was kept" if kept_only else "") + " in its manifest")
        by_run.append(per)
    common = sorted(set.intersection(*(set(p) for p in by_run)))
    if classes is not None:
        missing = [c for c in classes if c not in common]
        if missing:
            raise ConfigError(f"classes {missing} have no generated image in every run; classes all runs "
                              f"have: {common[:20]}{' ...' if len(common) > 20 else ''}")
        common = list(dict.fromkeys(int(c) for c in classes))
    if not common:
        raise ConfigError("the runs have no class in common: nothing to compare side by side")
    if max_classes is not None:
        common = common[:max_classes]
    cells = tuple(tuple(tuple(per[h][:per_class]) for per in by_run) for h in common)
    return PromptAblation(tuple(runs), tuple(common), tuple(class_name(h) for h in common), cells)


# ------------------------------------------------------------------------------- Figure S3
@dataclass(frozen=True)
class EmbeddingMap:
    """Each image (``paths``) with its group (``groups``: e.g. real, generated) and its 2-D t-SNE
    position in each embedding space (``coords[space]``, shape (n, 2))."""

    paths: tuple[Path, ...]
    groups: tuple[str, ...]
    coords: Mapping[str, np.ndarray]
    perplexity: float
    seed: int

    def rows(self) -> list[tuple[str, str, str, float, float]]:
        """(space, group, image, x, y), one per image and space."""
        return [(space, g, str(p), float(xy[i, 0]), float(xy[i, 1]))
                for space, xy in self.coords.items()
                for i, (p, g) in enumerate(zip(self.paths, self.groups, strict=True))]


def _open(path: Path) -> Image.Image:
    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except (OSError, UnidentifiedImageError) as exc:
        raise FormatError(f"cannot read the image: {exc}", file=path) from None


def embedding_tsne(groups: Mapping[str, Sequence[Path]], embedders: Sequence[ImageEmbedder], *,
                   seed: int = 0, perplexity: float = 30.0, batch_size: int = 16,
                   on_batch: Callable[[str, int], None] | None = None) -> EmbeddingMap:
    """Embed every image of every group with each embedder and lay each space out by t-SNE
    (scikit-learn, ``random_state=seed``, PCA initialisation). The perplexity is lowered to
    ``(n - 1) / 3`` when there are too few images for it (t-SNE needs perplexity < n).
    ``on_batch(space, images_done)`` reports progress."""
    from sklearn.manifold import TSNE

    paths = [p for ps in groups.values() for p in ps]
    labels = [g for g, ps in groups.items() for _ in ps]
    empty = [g for g, ps in groups.items() if not ps]
    if empty:
        raise ConfigError(f"no images in group(s) {', '.join(map(repr, empty))}")
    if len(paths) < 4:
        raise ConfigError(f"t-SNE needs at least 4 images; got {len(paths)}")
    if not embedders:
        raise ConfigError("no embedding model given")
    if len({e.name for e in embedders}) != len(embedders):
        raise ConfigError(f"embedding models need distinct names; got {[e.name for e in embedders]}")
    perp = float(min(perplexity, (len(paths) - 1) / 3))
    feats: dict[str, list[np.ndarray]] = {e.name: [] for e in embedders}
    for start in range(0, len(paths), batch_size):
        batch = [_open(p) for p in paths[start:start + batch_size]]
        for e in embedders:
            x = np.asarray(e.embed(batch), dtype=np.float64)
            if x.ndim != 2 or len(x) != len(batch) or not np.isfinite(x).all():
                raise ConfigError(f"embedding model {e.name!r} returned shape {x.shape}"
                                  + ("" if np.isfinite(x).all() else " with non-finite values")
                                  + f" for {len(batch)} images")
            feats[e.name].append(x)
            if on_batch is not None:
                on_batch(e.name, start + len(batch))
    coords = {}
    for name, parts in feats.items():
        x = np.concatenate(parts)
        coords[name] = TSNE(n_components=2, perplexity=perp, init="pca", random_state=seed).fit_transform(x)
    return EmbeddingMap(tuple(paths), tuple(labels), coords, perp, seed)
