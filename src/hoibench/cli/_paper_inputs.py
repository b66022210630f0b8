"""Inputs of the papers' extra figures, shared by ``hoibench analyze`` and ``hoibench report``:
questions with each model's answers, a split folder's class counts, augmentation folders, and
the options ``hoibench report`` takes for them (:func:`paper_input_options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["class_counts_of", "detection_pages", "load_paper_inputs", "model_answers", "paper_input_options",
           "split_folders"]


def model_answers(questions_path: str, answers_paths: tuple[str, ...], names: tuple[str, ...],
                  setting: int | None = None) -> tuple[list[Any], dict[str, Any]]:
    """The questions (of ``setting``; 3 reads the shared setting-2 questions) and, per model, its
    answers (the file's first choice order). Model names: ``names`` in order, else the answers
    file's header ``model``, else its stem."""
    from hoibench._exceptions import ConfigError
    from hoibench.formats import read_answers, read_questions

    if names and len(names) != len(answers_paths):
        raise ConfigError(f"--name given {len(names)} times for {len(answers_paths)} --answers files")
    qs = list(read_questions(questions_path))
    if setting is not None:
        qs = [q for q in qs if q.setting in (2 if setting == 3 else setting, setting)]
        if not qs:
            raise ConfigError(f"{questions_path}: no questions of setting {setting}")
    out: dict[str, Any] = {}
    for k, path in enumerate(answers_paths):
        answers = read_answers(path, qs)
        name = names[k] if names else str(answers.header.get("model") or Path(path).name.split(".")[0])
        if name in out:
            raise ConfigError(f"{path}: a second answers file for model {name!r}; give each model its own "
                              "name (--name where the command has it, else the files' header 'model')")
        perms = answers.permutations()
        out[name] = answers.for_permutation(perms[0]) if perms else {}
    return qs, out


def class_counts_of(specs: tuple[str, ...], unseen: str | None) -> Any:
    """Per-class train/test counts of a split folder (or bundled dataset, or train and test
    files); unseen classes from ``unseen`` or the folder's ``test_combinations.json``."""
    from hoibench.analysis import class_split_counts
    from hoibench.benchmarks.zeroshot import load_zero_shot_source
    from hoibench.datasets import zero_shot_classes
    from hoibench.formats import COMBINATIONS_FILE

    train, test, _ = load_zero_shot_source(list(specs))
    if unseen is None and len(specs) == 1 and (Path(specs[0]) / COMBINATIONS_FILE).is_file():
        unseen = specs[0]
    classes = zero_shot_classes(unseen, vocab=train.vocab) if unseen is not None else ()
    return class_split_counts(train, test, unseen=classes)


def split_folders(specs: tuple[str, ...]) -> dict[str, list[str]]:
    """``SPLIT=DIR`` (or ``DIR``, named by the folder) arguments grouped by split, in order."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep:
            name, folder = Path(spec).name, spec
        out.setdefault(name, []).append(folder)
    return out


def paper_input_options(func: Any) -> Any:
    """Options of ``hoibench report`` for the sections whose inputs are not result files."""
    options = [
        click.option("--questions", "paper_questions", default=None, type=click.Path(exists=True, dir_okay=False),
                     help="Questions of the multiple-choice benchmark (scene-type section, qualitative pages)."),
        click.option("--answers", "paper_answers", multiple=True, type=click.Path(exists=True, dir_okay=False),
                     help="Answers of one model to --questions (repeat per model)."),
        click.option("--dataset", "paper_dataset", default=None, metavar="DATASET_OR_FILE",
                     help="Annotations of the questions' images (scene types), e.g. hico-det:test."),
        click.option("--images", "paper_images", default=None, type=click.Path(exists=True, file_okay=False),
                     help="Image folder: adds qualitative pages (sampled questions of --questions with "
                          "each model's answer; top detections of --detections)."),
        click.option("--detections", "paper_detections", multiple=True, type=click.Path(exists=True, dir_okay=False),
                     help="Detections of one model (any format eval hico reads) for the qualitative pages."),
        click.option("--detection-class", "paper_detection_class", default=None, metavar="HOI",
                     help="HOI class of the detection pages: index or 'verb object' [default: the class of "
                          "the top-scored detection]."),
        click.option("--class-counts", "paper_class_counts", multiple=True, metavar="DIR",
                     help="A B-RIGHT, SG or zero-shot split folder: per-class train/test counts (B-RIGHT "
                          "Figure 2, Figure S6 for a zero-shot folder)."),
        click.option("--augmentation", "paper_augmentation", multiple=True, metavar="[SPLIT=]DIR",
                     help="Output folder of hoibench augment run/filter (Tables S2/S3); add the split's "
                          "`split balanced --extra-train` folder to count its train set after trimming."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def load_paper_inputs(options: dict[str, Any]) -> Any:
    """The :class:`hoibench.reports.PaperInputs` of :func:`paper_input_options`' values (None
    when none was given)."""
    from hoibench._exceptions import ConfigError
    from hoibench.analysis import augmentation_counts, mcq_scene_breakdown
    from hoibench.datasets import resolve_dataset
    from hoibench.reports import PaperInputs, mcq_qualitative_section

    questions, answers = options.get("paper_questions"), tuple(options.get("paper_answers") or ())
    dataset, images = options.get("paper_dataset"), options.get("paper_images")
    detections = tuple(options.get("paper_detections") or ())
    counts, aug = options.get("paper_class_counts") or (), options.get("paper_augmentation") or ()
    if not (questions or answers or dataset or images or detections or counts or aug
            or options.get("paper_detection_class")):
        return None
    if bool(questions) != bool(answers):
        raise ConfigError("--questions and --answers go together")
    if dataset and not questions:
        raise ConfigError("--dataset (scene types) needs --questions and --answers")
    if (detections or options.get("paper_detection_class")) and not images:
        raise ConfigError("--detections and --detection-class need --images (qualitative pages)")
    if images and not (questions or detections):
        raise ConfigError("--images needs --questions with --answers, or --detections")
    scenes, pages = None, []
    if questions:
        qs, by_model = model_answers(questions, answers, ())
        if dataset:
            scenes = mcq_scene_breakdown(by_model, qs, resolve_dataset(dataset))
        if images:
            pages.append(mcq_qualitative_section(qs, by_model, images))
    for path in detections:
        pages.append(detection_pages(path, images, options.get("paper_detection_class")))
    return PaperInputs(
        scenes=scenes,
        class_counts=tuple((Path(d).name, class_counts_of((d,), None)) for d in counts),
        augmentation=augmentation_counts(split_folders(tuple(aug))) if aug else None,
        qualitative=tuple(pages),
    )


def hoi_class_of(spec: str, vocab: Any, option: str) -> int:
    """An HOI class from an index or its ``verb object`` name (underscores and spaces alike:
    ``sit on airplane`` finds ``sit_on airplane``); one error line naming ``option`` otherwise."""
    from hoibench._exceptions import ConfigError

    if spec.strip().isdigit():
        hoi = int(spec)
        if hoi >= vocab.n_hois:
            raise ConfigError(f"{option} {spec}: HOI classes are 0..{vocab.n_hois - 1}")
        return hoi

    def norm(text: str) -> str:
        return " ".join(text.replace("_", " ").split()).lower()

    names = {norm(vocab.hoi_name(h)): h for h in range(vocab.n_hois)}
    if norm(spec) not in names:
        raise ConfigError(f"{option} {spec!r} is not an HOI class name (e.g. {vocab.hoi_name(0)!r}) nor an index")
    return names[norm(spec)]


def detection_pages(path: str, images: str, hoi_class: str | None, *, top_k: int = 6) -> Any:
    """The qualitative section of one detections file: ``hoi_class`` as an index or ``verb
    object`` text (default: the class of the top-scored detection)."""
    from hoibench._exceptions import ConfigError
    from hoibench.formats import load_predictions
    from hoibench.reports import detection_qualitative_section
    from hoibench.vocab import hico_det

    preds = load_predictions(path, vocab=hico_det()).predictions
    if hoi_class is None:
        valid = preds.hois >= 0
        if not valid.any():
            raise ConfigError(f"{path}: no detection of an HOI class")
        hoi = int(preds.hois[valid][int(preds.scores[valid].argmax())])
    else:
        hoi = hoi_class_of(hoi_class, preds.vocab, "--detection-class")
    return detection_qualitative_section(preds, hoi, images, top_k=top_k,
                                         model=Path(path).name.split(".")[0])
