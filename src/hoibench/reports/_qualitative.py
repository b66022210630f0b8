"""Qualitative pages (the multiple-choice paper's Figures 4–6; the detections of a class): images
drawn with what the numbers are about, embedded (downscaled PNG) in the report so it stays one
self-contained file.

- :func:`mcq_qualitative_section` — for a seeded sample of questions: the image with the target
  person's box, the choices, the correct set and each model's answer.
- :func:`detection_qualitative_section` — the top-scored detections of one HOI class drawn on
  their images (human box, object box, the line between them, the score).
- :func:`failure_cases_section` — the SG paper's Figure 3: ground truth and detections drawn
  together, each detection marked TP or with its kind of FP (:mod:`hoibench.analysis`'s
  ``classify_detections``); without an images folder on a blank canvas of the image's size.

Images are read from ``images_dir`` (the file name as the question or prediction names it, also
under HICO-DET's ``train2015/`` / ``test2015/`` sub-folders); questions or images missing there
are left out and counted in the section's text, never drawn blank (the failure cases excepted:
their boxes are the point, so a missing image is a blank canvas, said in the caption).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._random import check_random_state
from hoibench.analysis import FAILURE_CATEGORIES, DetectionVerdict, failure_counts
from hoibench.data import HOIDataset, HOIPredictions, MCAnswer, MCQuestion
from hoibench.reports._figures import Figure, _pyplot, _render
from hoibench.reports._report import Section
from hoibench.reports._style import model_color
from hoibench.reports._tables import Table

__all__ = ["detection_qualitative_section", "failure_cases_section", "find_image", "mcq_qualitative_section"]

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


def _box(ax: Any, box: Sequence[float], scale: float, colour: str, label: str = "", lw: float = 2.0,
         ls: str = "-", below: bool = False) -> None:
    from matplotlib.patches import Rectangle

    x1, y1, x2, y2 = (float(v) * scale for v in box)
    ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, edgecolor=colour, linewidth=lw, linestyle=ls))
    if label:
        ax.text(x1, y2 if below else y1, label, color="white", fontsize=7, va="top" if below else "bottom",
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


#: a colour per category of :data:`~hoibench.analysis.FAILURE_CATEGORIES` (Okabe-Ito); ground truth dashed black
_CATEGORY_COLOURS = {"tp": "#009E73", "duplicate": "#999999", "poor_localisation": "#E69F00",
                     "wrong_verb": "#D55E00", "wrong_object": "#CC79A7", "wrong_verb_and_object": "#882255",
                     "background": "#0072B2"}
_GT = "#000000"


def failure_cases_section(verdicts: Sequence[DetectionVerdict], predictions: HOIPredictions, target: HOIDataset,
                          *, images_dir: str | os.PathLike[str] | None = None, counts: Sequence[DetectionVerdict] = (),
                          title: str, name: str, max_side: int = 480) -> tuple[Section, list[str]]:
    """Figure 3 of the SG paper: one panel per image of ``verdicts`` with every ground-truth pair of
    the image (dashed) and those detections (solid, coloured by category, ranked by score); a
    table of the drawn detections and one of the category counts over ``counts`` (default the
    drawn ones). Returns the section and the images drawn on a blank canvas (no ``images_dir``,
    or not in it)."""
    if not verdicts:
        raise ConfigError("no detection to draw")
    vocab = target.vocab
    by_image: dict[int, list[tuple[int, DetectionVerdict]]] = {}
    for rank, v in enumerate(verdicts, start=1):
        by_image.setdefault(v.image_index, []).append((rank, v))
    plt = _pyplot()
    cols = min(3, len(by_image))
    n_rows = -(-len(by_image) // cols)
    most = max(len(d) for d in by_image.values())
    fig, axes = plt.subplots(n_rows, cols, figsize=(4.6 * cols, (3.6 + 0.3 * most) * n_rows), squeeze=False)
    blank: list[str] = []
    for ax, (i, dets) in zip(axes.flat, by_image.items()):
        im = target.image(i)
        path = None if images_dir is None else find_image(images_dir, im.file_name)
        if path is not None:
            img, scale = _load(path, max_side)
        else:
            blank.append(im.file_name)
            boxes = np.concatenate([im.boxes.reshape(-1, 4), *(predictions.boxes_h[[v.det_index]] for _, v in dets),
                                    *(np.nan_to_num(predictions.boxes_o[[v.det_index]]) for _, v in dets)])
            w = im.width or int(np.ceil(np.nanmax(boxes[:, 2], initial=1.0)))
            h = im.height or int(np.ceil(np.nanmax(boxes[:, 3], initial=1.0)))
            scale = min(1.0, max_side / max(w, h))
            img = np.full((max(1, round(h * scale)), max(1, round(w * scale)), 3), 235, dtype=np.uint8)
        ax.imshow(img)
        ax.set_xlim(-0.5, img.shape[1] - 0.5)  # the image's frame, also for boxes reaching past it
        ax.set_ylim(img.shape[0] - 0.5, -0.5)
        ax.set_xticks([])
        ax.set_yticks([])
        for sb, ob, (_, _, verb), lab in zip(im.subject_boxes, im.object_boxes, im.pairs, im.object_labels):
            _box(ax, sb, scale, _GT, "", lw=1.2, ls="--")
            if not np.isnan(ob).any():
                _box(ax, ob, scale, _GT, f"GT: {vocab.verbs[int(verb)]} {vocab.objects[int(lab)]}", lw=1.2,
                     ls="--", below=True)
        for j, (rank, v) in enumerate(dets):
            colour = _CATEGORY_COLOURS[v.category]
            bh, bo = predictions.boxes_h[v.det_index], predictions.boxes_o[v.det_index]
            for box in (bh, bo):
                if np.isnan(box).any():
                    continue
                _box(ax, box, scale, colour)
                ax.annotate(f"#{rank}", (float(box[0]) * scale, float(box[1]) * scale), xytext=(2 + 15 * j, 2),
                            textcoords="offset points", fontsize=7, color="white", va="bottom",
                            bbox={"facecolor": colour, "edgecolor": "none", "pad": 1})
            if not np.isnan(bo).any():
                ax.plot([(bh[0] + bh[2]) / 2 * scale, (bo[0] + bo[2]) / 2 * scale],
                        [(bh[1] + bh[3]) / 2 * scale, (bo[1] + bo[3]) / 2 * scale], color=colour, lw=1.2)
            ax.text(0.0, -0.03 - 0.075 * j, f"#{rank} {v.category}: {vocab.hoi_name(v.hoi)} ({v.score:.2f})",
                    transform=ax.transAxes, fontsize=8, va="top", color=colour)
        ax.set_title(im.file_name + (" (blank canvas)" if path is None else ""), fontsize=8)
    for ax in list(axes.flat)[len(by_image):]:
        ax.set_axis_off()
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    note = (f" {len(blank)} of {len(by_image)} images drawn on a blank canvas of the image's size "
            + ("(no images folder given)." if images_dir is None else f"(not in {images_dir}).")) if blank else ""
    figure = Figure(name, title, _render(fig),
                    "Dashed black: ground-truth pairs (label under the object box). Solid: detections "
                    "(#rank by score; under the panel its category, class and score), coloured by category: " + ", ".join(FAILURE_CATEGORIES) + "." + note)
    rows = tuple((rank, v.file_name, vocab.hoi_name(v.hoi), v.score, v.category,
                  "" if v.gt_pair < 0 else vocab.hoi_name(int(target.pair_hoi[v.gt_pair])),
                  None if v.iou_human != v.iou_human else v.iou_human,
                  None if v.iou_object != v.iou_object else v.iou_object)
                 for rank, v in enumerate(verdicts, start=1))
    drawn = Table(f"{name}-detections", f"{title}: the drawn detections",
                  ("rank", "image", "detection", "score", "category", "ground_truth", "iou_human", "iou_object"),
                  rows, decimals=3, caption="ground_truth: the pair that explains the category (for a TP the "
                                            "matched pair; empty for background), with the detection's IoUs.")
    scope = counts or verdicts
    tally = failure_counts(scope)
    n = sum(tally.values())
    summary = Table(f"{name}-categories", f"{title}: detections per category",
                    ("category", "detections", "share"),
                    tuple((k, c, 100 * c / n if n else None) for k, c in tally.items()),
                    caption=f"Over {n:,} detections (share in percent); FP categories are tested in this "
                            "order, the first that applies.")
    return Section(title, "Ground truth and detections drawn together (the SG paper's Figure 3)." + note,
                   tables=[drawn, summary], figures=[figure]), blank
