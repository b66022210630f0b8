"""Qualitative pages (the multiple-choice paper's Figures 4–6; the detections of a class): images
drawn with what the numbers are about, embedded (downscaled PNG) in the report so it stays one
self-contained file.

- :func:`mcq_qualitative_section` — for a seeded sample of questions: the image with the target
  person's box, the choices, the correct set and each model's answer.
- :func:`detection_qualitative_section` — the top-scored detections of one HOI class drawn on
  their images (human box, object box, the line between them, the score).

Images are read from ``images_dir`` (the file name as the question or prediction names it, also
under HICO-DET's ``train2015/`` / ``test2015/`` sub-folders); questions or images missing there
are left out and counted in the section's text, never drawn blank.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._random import check_random_state
from hoibench.data import HOIPredictions, MCAnswer, MCQuestion
from hoibench.reports._figures import Figure, _pyplot, _render
from hoibench.reports._report import Section
from hoibench.reports._style import model_color
from hoibench.reports._tables import Table

__all__ = ["detection_qualitative_section", "find_image", "mcq_qualitative_section"]

_SUBFOLDERS = ("", "images", "train2015", "test2015", "images/train2015", "images/test2015")
_TARGET = "#D55E00"  # the target person (the papers draw it red)
_OBJECT = "#0072B2"


def find_image(images_dir: str | os.PathLike[str], file_name: str) -> Path | None:
    """The image file of ``file_name`` under ``images_dir`` (or a HICO-DET sub-folder); None when
    absent. Names leading out of the folder are refused."""
    root = Path(images_dir).resolve()
    for sub in _SUBFOLDERS:
        p = (root / sub / file_name).resolve()
        if root not in p.parents:
            raise ConfigError(f"image name {file_name!r} leads out of {images_dir}")
        if p.is_file():
            return p
    return None


def _load(path: Path, max_side: int) -> tuple[np.ndarray, float]:
    """The image as RGB, downscaled so its longer side is at most ``max_side``; and the scale."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            rgb = im.convert("RGB")
    except (OSError, UnidentifiedImageError) as exc:
        raise FormatError(f"cannot read image ({exc})", file=path) from None
    scale = min(1.0, max_side / max(rgb.size))
    if scale < 1.0:
        rgb = rgb.resize((max(1, round(rgb.width * scale)), max(1, round(rgb.height * scale))))
    return np.asarray(rgb), scale


def _box(ax: Any, box: Sequence[float], scale: float, colour: str, label: str = "", lw: float = 2.0) -> None:
    from matplotlib.patches import Rectangle

    x1, y1, x2, y2 = (float(v) * scale for v in box)
    ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, edgecolor=colour, linewidth=lw))
    if label:
        ax.text(x1, y1, label, color="white", fontsize=7, va="bottom",
                bbox={"facecolor": colour, "edgecolor": "none", "pad": 1})


def _sample(items: Sequence[Any], n: int, seed: int) -> list[Any]:
    rng = check_random_state(seed)
    idx = np.sort(rng.choice(len(items), size=min(n, len(items)), replace=False))
    return [items[int(i)] for i in idx]


def mcq_qualitative_section(questions: Sequence[MCQuestion], answers: Mapping[str, Mapping[str, MCAnswer]],
                            images_dir: str | os.PathLike[str], *, n: int = 6, seed: int = 0,
                            max_side: int = 480, title: str = "Qualitative examples: multiple-choice questions",
                            ) -> Section:
    """A section of ``n`` questions drawn with ``seed`` among those whose image is found: per
    question a figure (image with the target box; the choices with the correct ones and each
    model's picks marked) and one table of the sample (choice texts as data)."""
    if n < 1:
        raise ConfigError(f"the number of qualitative examples must be >= 1; got {n}")
    found = [(q, p) for q in questions if (p := find_image(images_dir, q.file_name)) is not None]
    if not found:
        raise ConfigError(f"none of the {len(questions)} questions' images is in {images_dir}")
    models = list(answers)
    plt = _pyplot()
    figures, rows = [], []
    for k, (q, path) in enumerate(_sample(found, n, seed)):
        img, scale = _load(path, max_side)
        fig, (ax_img, ax_txt) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1.1, 1]})
        ax_img.imshow(img)
        ax_img.set_axis_off()
        if q.person_box is not None:
            _box(ax_img, q.person_box, scale, _TARGET, "target")
        if q.object_box is not None:
            _box(ax_img, q.object_box, scale, _OBJECT, "object")
        ax_txt.set_axis_off()
        ax_txt.set_xlim(0, 1)
        ax_txt.set_ylim(0, 1)
        head = ["correct", *models]
        xs = [0.0, *(0.14 + 0.12 * j for j in range(len(models)))]
        x_text = 0.16 + 0.12 * len(models)
        line = 1.0 / (len(q.choices) + 3)
        for j, (h, x) in enumerate(zip(head, xs)):
            ax_txt.text(x, 1 - line, h, fontsize=8, rotation=30, ha="left", va="bottom",
                        color="black" if j == 0 else model_color(h))
        picked = {m: answers[m].get(q.id) for m in models}
        for i, c in enumerate(q.choices):
            y = 1 - line * (i + 2)
            ok = i in q.correct
            ax_txt.text(xs[0] + 0.03, y, "✓" if ok else "·", fontsize=11, color="#009E73" if ok else "#999999",
                        va="center")
            for m, x in zip(models, xs[1:]):
                a = picked[m]
                sel = a is not None and c.text in a.selected
                ax_txt.text(x + 0.03, y, "●" if sel else "○", fontsize=10, va="center",
                            color=model_color(m) if sel else "#BBBBBB")
            ax_txt.text(x_text, y, c.text, fontsize=9, va="center", fontweight="bold" if ok else "normal")
        status = "; ".join(f"{m}: {picked[m].status if picked[m] is not None else 'no answer'}" for m in models
                           if picked[m] is None or picked[m].status != "ok")
        if status:
            ax_txt.text(0.0, 0.02, status, fontsize=7, color="#555555")
        fig.suptitle(f"{q.id} (setting {q.setting})", fontsize=9)
        fig.tight_layout()
        figures.append(Figure(f"qualitative-mcq-{k + 1}", f"Question {q.id}", _render(fig),
                              "Box labelled target: the target person. ✓: a correct choice; ●: picked by the model "
                              "(its colour), ○: not picked."))
        rows.append((q.id, q.setting, " | ".join(sorted(q.correct_texts)),
                     *(" | ".join(sorted(picked[m].selected)) if picked[m] is not None else None for m in models)))
    table = Table("qualitative-mcq", "Sampled questions: correct choices and answers",
                  ("question", "setting", "correct", *models), tuple(rows),
                  caption=f"{len(rows)} questions drawn with seed {seed} among the {len(found)} whose image "
                          f"is in the images folder; empty: the model has no answer.")
    missing = len(questions) - len(found)
    return Section(title, "A seeded sample of questions (the multiple-choice paper's Figures 4–6)."
                   + (f" {missing} questions whose image is not in the folder are left out." if missing else ""),
                   tables=[table], figures=figures)


def detection_qualitative_section(predictions: HOIPredictions, hoi: int, images_dir: str | os.PathLike[str], *,
                                  top_k: int = 6, max_side: int = 360, model: str = "") -> Section:
    """The ``top_k`` highest-scored detections of HOI class ``hoi`` whose image is found, each
    drawn on its image (one figure, a grid)."""
    vocab = predictions.vocab
    if not 0 <= hoi < vocab.n_hois:
        raise ConfigError(f"HOI class must be in 0..{vocab.n_hois - 1}; got {hoi}")
    if top_k < 1:
        raise ConfigError(f"top_k must be >= 1; got {top_k}")
    rows = np.flatnonzero(predictions.hois == hoi)
    name = vocab.hoi_name(hoi)
    if len(rows) == 0:
        raise ConfigError(f"no detection of class {hoi} ({name})")
    order = rows[np.argsort(-predictions.scores[rows], kind="stable")]
    image_of = predictions.image_index
    chosen: list[tuple[int, Path]] = []
    for r in order:
        p = find_image(images_dir, predictions.file_names[int(image_of[r])])
        if p is not None:
            chosen.append((int(r), p))
            if len(chosen) == top_k:
                break
    if not chosen:
        raise ConfigError(f"none of the images with a detection of {name!r} is in {images_dir}")
    plt = _pyplot()
    cols = min(3, len(chosen))
    n_rows = -(-len(chosen) // cols)
    fig, axes = plt.subplots(n_rows, cols, figsize=(3.6 * cols, 3.2 * n_rows), squeeze=False)
    table_rows = []
    for ax, (rank, (r, path)) in zip(axes.flat, enumerate(chosen, start=1)):
        img, scale = _load(path, max_side)
        ax.imshow(img)
        ax.set_axis_off()
        bh, bo = predictions.boxes_h[r], predictions.boxes_o[r]
        _box(ax, bh, scale, _TARGET, "human")
        if not np.isnan(bo).any():
            _box(ax, bo, scale, _OBJECT, vocab.objects[int(predictions.objects[r])])
            ch = ((bh[0] + bh[2]) / 2 * scale, (bh[1] + bh[3]) / 2 * scale)
            co = ((bo[0] + bo[2]) / 2 * scale, (bo[1] + bo[3]) / 2 * scale)
            ax.plot([ch[0], co[0]], [ch[1], co[1]], color="white", lw=1.5)
        fname = predictions.file_names[int(image_of[r])]
        ax.set_title(f"#{rank}: score {predictions.scores[r]:.3f}\n{fname}", fontsize=8)
        table_rows.append((rank, fname, float(predictions.scores[r])))
    for ax in list(axes.flat)[len(chosen):]:
        ax.set_axis_off()
    who = f"{model}: " if model else ""
    fig.suptitle(f"{who}top detections of '{name}'", fontsize=10)
    fig.tight_layout()
    slug = f"qualitative-detections-{hoi}"
    figure = Figure(slug, f"{who}top-scored detections of {name}", _render(fig),
                    "Box labelled human: the detected person; labelled with its category: the object; a white line joins them; the score is "
                    "the detector's.")
    table = Table(slug, f"{who}top-scored detections of {name}", ("rank", "image", "score"), tuple(table_rows),
                  decimals=3, caption=f"The {len(chosen)} highest scores of class {hoi} ({name}) whose image "
                                      "is in the images folder.")
    return Section(f"Qualitative examples: detections of {name}" + (f" ({model})" if model else ""),
                   "The detector's highest-scored detections of one class drawn on their images.",
                   tables=[table], figures=[figure])
