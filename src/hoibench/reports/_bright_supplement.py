"""B-RIGHT's supplementary Figures S2 (generated images of a prompt ablation side by side, the
prompt under each) and S3 (t-SNE of real and generated images in CLIP and DreamSim space).
The numbers and images come from :mod:`hoibench.analysis`."""

from __future__ import annotations

import textwrap

from PIL import Image, UnidentifiedImageError

from hoibench._exceptions import FormatError, ValidationError
from hoibench.analysis import EmbeddingMap, PromptAblation, RunImage
from hoibench.reports._figures import Figure, _pyplot, _render

__all__ = ["embedding_tsne_figure", "prompt_ablation_figure"]

#: group → colour (Okabe-Ito): real images blue, generated orange; other groups after them
_GROUP_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")


def embedding_tsne_figure(m: EmbeddingMap, *, name: str = "embedding-tsne",
                          title: str = "Real and generated images, t-SNE of their embeddings") -> Figure:
    """One panel per embedding space, a colour per group (first group blue, second orange)."""
    if not m.coords:
        raise ValidationError(f"figure {name!r}: no embedding space to plot")
    plt = _pyplot()
    groups = list(dict.fromkeys(m.groups))
    colors = {g: _GROUP_COLORS[i % len(_GROUP_COLORS)] for i, g in enumerate(groups)}
    n = len(m.coords)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 4.2), squeeze=False)
    for k, (ax, (space, xy)) in enumerate(zip(axes[0], m.coords.items(), strict=True)):
        for g in groups:
            idx = [i for i, x in enumerate(m.groups) if x == g]
            ax.scatter(xy[idx, 0], xy[idx, 1], s=8, alpha=0.7, color=colors[g],
                       label=f"{g} ({len(idx)})", linewidths=0)
        ax.set_title(f"({chr(ord('a') + k)}) {space}", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
    fig.suptitle(title, fontsize=11)
    counts = ", ".join(f"{sum(x == g for x in m.groups)} {g}" for g in groups)
    return Figure(name, title, _render(fig),
                  f"t-SNE (scikit-learn, seed {m.seed}, perplexity {m.perplexity:g}) of each image's "
                  f"embedding, one panel per embedding model; {counts} images. Axes have no units.",
                  colors=colors)


def _thumb(path: object, size: int) -> Image.Image:
    try:
        with Image.open(str(path)) as im:
            im = im.convert("RGB")
            im.thumbnail((size, size))
            return im
    except (OSError, UnidentifiedImageError) as exc:
        raise FormatError(f"cannot read the image: {exc}", file=path) from None


def prompt_ablation_figure(a: PromptAblation, *, name: str = "prompt-ablation",
                           title: str = "Generated images per prompt kind", wrap: int = 38,
                           max_prompt_chars: int = 300) -> Figure:
    """A row per class, a column per run and image; the prompt (cut at ``max_prompt_chars``) and
    the verification's verdict under each image."""
    if not a.classes:
        raise ValidationError(f"figure {name!r}: no class to show")
    plt = _pyplot()
    per = max(len(imgs) for row in a.cells for imgs in row)
    cols = len(a.runs) * per

    def caption(im: RunImage) -> str:
        prompt = im.prompt or ""
        if len(prompt) > max_prompt_chars:
            prompt = prompt[:max_prompt_chars - 1].rstrip() + "…"
        return "\n".join(textwrap.wrap(prompt, wrap)) + f"\n[{im.status or 'no verdict'}]"

    # each row as tall as its image and its longest caption (6.5 pt lines)
    lines = max(caption(im).count("\n") + 1 for row in a.cells for imgs in row for im in imgs)
    row_h = 2.6 + 0.12 * lines
    fig, axes = plt.subplots(len(a.classes), cols, figsize=(2.6 * cols, row_h * len(a.classes)), squeeze=False)
    for r, (row, cname) in enumerate(zip(a.cells, a.names, strict=True)):
        for j, imgs in enumerate(row):
            for k in range(per):
                ax = axes[r][j * per + k]
                ax.set_xticks([])
                ax.set_yticks([])
                if r == 0 and k == 0:
                    ax.set_title(a.runs[j], fontsize=10, fontweight="bold", loc="left")
                if j == 0 and k == 0:
                    ax.set_ylabel(cname, fontsize=9)
                if k >= len(imgs):
                    ax.axis("off")
                    continue
                im = imgs[k]
                ax.imshow(_thumb(im.path, 256))
                ax.set_xlabel(caption(im), fontsize=6.5)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return Figure(name, title, _render(fig),
                  f"One row per HOI class, one column per run ({', '.join(a.runs)}); under each image the "
                  "prompt it was generated from and the verification's verdict.")
