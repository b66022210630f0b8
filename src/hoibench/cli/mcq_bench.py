"""``hoibench mcq build|stats|score|from-detections``: the multiple-choice HOI benchmark."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from hoibench._progress import make_progress
from hoibench.cli._common import (
    console,
    echo_json,
    emit_json,
    err_console,
    json_option,
    reject_unused_options,
)

__all__ = ["ANSWER_FORMATS", "build", "count_unanswered_option", "from_detections", "read_any_answers",
           "read_scored_questions", "score", "scored_answers", "stats"]


def _dataset_for(dataset: str, split: str) -> Any:
    from hoibench.datasets import is_dataset_name, resolve_dataset

    if is_dataset_name(dataset) and ":" not in dataset:
        from hoibench.datasets import list_datasets, parse_dataset_name

        name, _ = parse_dataset_name(dataset)
        # V-COCO's training split is trainval: --split train means the dataset's training split
        if split == "train" and f"{name}:train" not in list_datasets() and f"{name}:trainval" in list_datasets():
            split = "trainval"
        return resolve_dataset(f"{name}:{split}")
    return resolve_dataset(dataset)


def _judges(specs: tuple[str, ...], base_urls: tuple[str, ...], images: str | None, follow_symlinks: bool,
            cache: str, template: str) -> Any:
    """Judges wrapped in the runners' persistent response cache: an interrupted build re-asks
    nothing that was already answered."""
    from hoibench._exceptions import ConfigError
    from hoibench.benchmarks.mcq import NegativeFilter, load_judge_template
    from hoibench.models import CachedBackend, ResponseCache, make_backend

    if not specs:
        return None
    if len(specs) > 3:
        raise ConfigError(f"--judge takes at most 3 judges (first, refine, cross-check); got {len(specs)}")
    if images is None:
        raise ConfigError("--judge needs --images (the judges look at the images)")
    backends = []
    shared_cache = ResponseCache(cache)
    for spec in specs:
        name, sep, model = spec.partition(":")
        if not sep or not model:
            raise ConfigError(f"--judge must read BACKEND:MODEL (e.g. openai:gpt-4.1); got {spec!r}")
        kwargs: dict[str, Any] = {"model": model}
        if name == "openai" and base_urls:
            kwargs["base_urls"] = base_urls
        backends.append(CachedBackend(make_backend(name, **kwargs), shared_cache))
    return NegativeFilter(first=backends[0], refine=backends[1] if len(backends) > 1 else None,
                          cross_check=backends[2] if len(backends) > 2 else None, image_root=images,
                          follow_symlinks=follow_symlinks, template=load_judge_template(template))


@click.command("build")
@click.option("--dataset", default="hico-det", show_default=True, metavar="DATASET_OR_FILE",
              help="A bundled dataset (combined with --split) or an annotation file.")
@click.option("--split", type=click.Choice(["test", "train"]), default="test", show_default=True,
              help="test: the evaluation benchmark; train: the training questions of App. C.3.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="random_state of the builder (recorded in the header).")
@click.option("--settings", default="1,2", show_default=True,
              help="Question kinds: 1 (whole image), 2 (target person; reused by setting 3).")
@click.option("--max-per-class", type=int, default=3, show_default=True,
              help="Redistribution: setting-2 questions per correct class (median-frequency class).")
@click.option("--head-exponent", type=float, default=0.3, show_default=True,
              help="Redistribution: per-class cap grows as (train count / median)^exponent; 0 = flat.")
@click.option("--no-redistribute", is_flag=True, help="Keep every image (one random target person).")
@click.option("--no-remove-easy", is_flag=True, help="Keep single-person single-object and same-HOI scenes.")
@click.option("--easy-min-train-count", type=int, default=100, show_default=True,
              help="Only scenes whose classes all have this many train pairs count as easy.")
@click.option("--temporal-positives", is_flag=True,
              help="Also mark the temporally confusable partner of a time-sensitive positive correct "
                   "(board <-> exit airplane; data/temporal_pairs.json).")
@click.option("--judge", "judge_specs", multiple=True, metavar="BACKEND:MODEL",
              help="Negative-filtering judges in order: first, refine, cross-check (default: none).")
@click.option("--judge-base-url", "judge_base_urls", multiple=True, help="Server URL(s) of openai judges.")
@click.option("--images", type=click.Path(file_okay=False), default=None,
              help="Image folder (judges only); an annotation naming an image outside it is refused.")
@click.option("--follow-symlinks", is_flag=True,
              help="Follow symlinks under --images that lead out of it (judges only).")
@click.option("--judge-cache", type=click.Path(dir_okay=False), default=None,
              help="SQLite cache of judge replies (resume) [default: OUT.judges.sqlite].")
@click.option("--judge-template", default="judge", show_default=True, metavar="NAME_OR_YAML",
              help="The judges' question: the packaged template or a YAML file (see docs/mcq.md).")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), required=True, help="Questions JSONL.")
@json_option("Build report")
def build(dataset: str, split: str, seed: int, settings: str, max_per_class: int, head_exponent: float,
          no_redistribute: bool,
          no_remove_easy: bool, easy_min_train_count: int, temporal_positives: bool, judge_specs: tuple[str, ...],
          judge_base_urls: tuple[str, ...], images: str | None, follow_symlinks: bool, judge_cache: str | None,
          judge_template: str, out_path: str,
          as_json: str | None) -> None:
    """Build multiple-choice questions from annotations (JSONL with a provenance header)."""
    from hoibench._exceptions import ConfigError

    ctx = click.get_current_context()
    if split == "train":
        reject_unused_options(ctx, "with --split train (one question per setting and image)", "settings",
                              "max_per_class", "head_exponent", "no_redistribute", "no_remove_easy",
                              "easy_min_train_count", "temporal_positives", "judge_specs",
                              "judge_template")
    if no_redistribute:
        reject_unused_options(ctx, "with --no-redistribute", "max_per_class", "head_exponent")
    if not judge_specs:
        reject_unused_options(ctx, "without --judge", "judge_base_urls", "images", "follow_symlinks",
                              "judge_cache", "judge_template")
    from hoibench.benchmarks.mcq import build_mcq_benchmark, build_mcq_training_set

    try:
        setting_list = [int(s) for s in settings.split(",") if s.strip()]
    except ValueError:
        raise ConfigError(f"--settings must be a comma-separated list of 1 and 2; got {settings!r}") from None
    ds = _dataset_for(dataset, split)
    provenance = {"dataset_spec": dataset, "split": split, "n_images": ds.n_images, "n_pairs": ds.n_pairs}
    judges = _judges(judge_specs, judge_base_urls, images, follow_symlinks,
                     judge_cache or f"{out_path}.judges.sqlite", judge_template)
    with make_progress(transient=True) as bar:
        task = bar.add_task(f"analysing {ds.name} images", total=ds.n_images)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        if split == "train":
            result = build_mcq_training_set(ds, random_state=seed, provenance=provenance, progress=progress)
        else:
            result = build_mcq_benchmark(
                ds, random_state=seed, settings=setting_list, remove_easy=not no_remove_easy,
                easy_min_train_count=easy_min_train_count, redistribute=not no_redistribute,
                max_per_class=max_per_class, head_exponent=head_exponent,
                temporal_positives=temporal_positives, judges=judges,
                provenance=provenance, progress=progress)
    result.write(out_path)
    if emit_json(result.stats(), as_json):
        return
    table = Table(title=f"hoibench mcq build → {out_path}", show_header=False)
    for k, v in result.stats().items():
        table.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    console.print(table)
    if result.header.get("negative_filter") is None:
        err_console.print("note: no negative-filtering judge (recorded in the header)")


def _annotations_for(questions: Any, annotations: str | None) -> Any:
    from hoibench.datasets import resolve_dataset

    if annotations is not None:
        return resolve_dataset(annotations)
    header = getattr(questions, "header", {})
    spec = header.get("provenance", {}).get("dataset_spec") if isinstance(header, dict) else None
    split = header.get("provenance", {}).get("split") if isinstance(header, dict) else None
    if spec:
        return _dataset_for(spec, split or "test")
    if questions and all(q.label_space == "hico-det" and q.file_name.startswith("HICO_test") for q in questions):
        return resolve_dataset("hico-det:test")
    return None


@click.command("stats")
@click.argument("questions_path", metavar="[FILE]", required=False, type=click.Path(dir_okay=False))
@click.option("--dataset", "dataset_spec", default=None, metavar="DATASET_OR_FILE",
              help="Instead of a question file: the figures of a whole annotated split "
                   "(hico-det:test prints the HICO-DET row of Table 1, KL and head/tail).")
@click.option("--annotations", default=None, metavar="DATASET_OR_FILE",
              help="Annotations of the images for Table 1 (default: from the header, or the bundled "
                   "HICO-DET test set for HICO test images).")
@click.option("--setting", type=click.IntRange(1, 3), default=None, help="Only questions of this setting.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Save the class distribution (train vs correct choices) as a PNG image.")
@json_option("Statistics")
def stats(questions_path: str | None, dataset_spec: str | None, annotations: str | None, setting: int | None,
          plot_path: str | None, as_json: str | None) -> None:
    """Statistics of a question file (ours or CrossHOI-Bench), or of an annotated split with
    --dataset, next to the paper's numbers."""
    from hoibench._exceptions import ConfigError
    from hoibench.benchmarks.mcq import PAPER_REFERENCE, question_statistics
    from hoibench.formats import read_questions
    from hoibench.vocab import hico_det

    if (questions_path is None) == (dataset_spec is None):
        raise ConfigError("give a question FILE or --dataset (one of them)")
    if dataset_spec is not None:
        reject_unused_options(click.get_current_context(), "with --dataset (a whole split, no questions)",
                              "annotations", "setting", "plot_path")
        _dataset_stats(dataset_spec, as_json)
        return
    assert questions_path is not None
    if not Path(questions_path).exists():
        raise ConfigError(f"{questions_path}: no such question file")
    qs = read_questions(questions_path)
    ds = _annotations_for(qs, annotations)
    selected = [q for q in qs if setting is None or q.setting == setting]
    train = None
    if ds is None or ds.vocab.name == "hico-det":
        train = hico_det().train_counts_official()
    result = question_statistics(selected, dataset=ds, train_counts=train)
    if plot_path is not None:
        from hoibench._io import atomic_write_bytes
        from hoibench.benchmarks.mcq import class_counts
        from hoibench.reports import class_distribution_figure

        if train is None:
            raise ConfigError("--plot needs HICO-DET questions (train counts are known for HICO-DET only)")
        suffix = Path(plot_path).suffix.lower()
        if suffix not in ("", ".png"):
            raise ConfigError(f"{plot_path}: --plot writes a PNG image; use a .png file name, not {suffix}")
        # the same questions the KL and head/tail figures count
        counts = class_counts([q for q in selected if q.label_space == "hico-det"
                               and q.setting == result.get("distribution_setting")], len(train))
        figure = class_distribution_figure(train, counts, title=Path(questions_path).name)
        atomic_write_bytes(plot_path, figure.png)
    if emit_json({**result, "paper": PAPER_REFERENCE}, as_json):
        return
    table = Table(title=f"hoibench mcq stats {questions_path}")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    table.add_column("paper", justify="right")
    ref = PAPER_REFERENCE
    rows: list[tuple[str, Any, Any]] = [
        ("questions", result["questions"], ""),
        ("images", result["images"], ref["images"]),
        ("settings", result["settings"], ""),
        ("correct answers per question", result["correct_answers_histogram"], ""),
        ("choices per question", result["choices_histogram"], ""),
        ("out-of-vocabulary choices", result["out_of_vocabulary_choices"], ""),
        ("distinct texts (correct / any choice)",
         f"{result['distinct_correct_texts']} / {result['distinct_choice_texts']}", ""),
    ]
    if result.get("oddities"):
        rows.append(("oddities", result["oddities"], ""))
    where = f"setting {result.get('distribution_setting')} correct choices"
    if "classes_correct" in result:
        rows.append((f"classes ({where})", result["classes_correct"], ""))
        rows.append(("classes (correct, all settings / any choice)",
                     f"{result['classes_correct_all_settings']} / {result['classes_any_choice']}", ""))
    if "kl_train_benchmark" in result:
        rows.append((f"KL(train ‖ {where})", f"{result['kl_train_benchmark']:.3f}", ref["kl_train_benchmark"]))
        rows.append((f"head/tail ratio (top-20/bottom-20 train classes; {where})",
                     f"{result['head_tail_ratio']:.2f}", ref["head_tail_ratio"]))
    sc = result.get("scene_composition")
    if sc:
        rows.extend(_scene_rows(sc, ref))
    for name, value, paper in rows:
        table.add_row(name, str(value), str(paper))
    console.print(table)


def _scene_rows(sc: dict[str, Any], ref: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Table 1's three shares next to the paper's (``ref``: its benchmark or its HICO-DET row)."""
    return [(label, f"{sc[key]:.1%}", f"{ref[key]:.1%}" if key in ref else "")
            for key, label in (("single_person_single_object", "single person, single object"),
                               ("multi_person_different_hoi", "multi-person, different HOIs"),
                               ("same_hoi_within_multi_person", "same HOI within multi-person"))]


def _dataset_stats(spec: str, as_json: str | None) -> None:
    """``mcq stats --dataset``: Table 1's row, KL(train ‖ split) and head/tail of a whole split."""
    from hoibench.benchmarks.mcq import PAPER_REFERENCE, dataset_statistics
    from hoibench.datasets import resolve_dataset
    from hoibench.vocab import hico_det

    ds = resolve_dataset(spec)
    train = hico_det().train_counts_official() if ds.vocab.name == "hico-det" else None
    result = dataset_statistics(ds, train_counts=train)
    ref = PAPER_REFERENCE["hico_det_test"] if ds.name == "hico-det:test" else {}
    if emit_json({**result, "paper": ref or None}, as_json):
        return
    table = Table(title=f"hoibench mcq stats --dataset {spec}")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    table.add_column("paper", justify="right")
    paper_images = 9658 if ref else ""
    rows: list[tuple[str, Any, Any]] = [("images", result["images"], paper_images),
                                        ("pairs", result["pairs"], ""), ("classes", result["classes"], "")]
    rows.extend(_scene_rows(result["scene_composition"], ref))
    if "kl_train_test" in result:
        rows.append(("KL(train ‖ this split)", f"{result['kl_train_test']:.4f}", ref.get("kl_train_test", "")))
        rows.append(("head/tail ratio (top-20/bottom-20 train classes)", f"{result['head_tail_ratio']:.2f}",
                     ref.get("head_tail_ratio", "")))
    for name, value, paper in rows:
        table.add_row(name, str(value), str(paper))
    console.print(table)
    if train is None:
        err_console.print(f"note: no train counts for {ds.vocab.name}: KL and head/tail are for HICO-DET only")


def _score_table(title: str, results: list[tuple[str, Any]]) -> Table:
    """Metrics (rows) of each choice order (columns), printed in percent."""
    from hoibench.evaluation import MCQ_METRIC_NAMES

    table = Table(title=title)
    table.add_column("metric")
    for name, _ in results:
        table.add_column(name, justify="right")
    for metric in MCQ_METRIC_NAMES:
        cells = []
        for _, r in results:
            cell = f"{100 * getattr(r, metric):.2f}"
            if r.ci is not None:
                cell += " " + _spread_text(r, metric)
            cells.append(cell)
        table.add_row(metric, *cells)
    boot = next((r for _, r in results if r.ci is not None), None)
    if boot is not None:
        table.caption = (f"\\[low, high]: {boot.confidence:.0%} CI (percentile bootstrap); ± SE: bootstrap standard "
                         "error, where no interval passed the coverage check (docs/evaluation.md, 'Which "
                         "interval'); compare two models with `hoibench mcq compare`")
    return table


def _spread_text(r: Any, metric: str) -> str:
    """A metric's CI as ``[low, high]`` where its method passed the coverage check, else its
    bootstrap standard error as ``± x.xx SE`` (percent): never an interval it cannot stand by."""
    se = (r.se or {}).get(metric, float("nan"))
    if (r.ci_method or {}).get(metric, "se") == "se" or metric not in r.ci:
        return "n/a" if se != se else f"± {100 * se:.2f} SE"
    lo, hi = r.ci[metric]
    return "n/a" if lo != lo else f"[{100 * lo:.2f}, {100 * hi:.2f}]"


def read_scored_questions(questions_path: str, setting: int | None) -> list[Any]:
    """All questions of a file, or one setting's (3: the setting-2 person-box questions, as
    ``mcq run --setting 3`` asks them); for commands without answers (``mcq export``)."""
    from hoibench._exceptions import ConfigError
    from hoibench.formats import read_questions

    qs = read_questions(questions_path)
    if setting is not None:
        want = 2 if setting == 3 else setting
        qs_list = [q for q in qs if q.setting in (want, setting)]
    else:
        qs_list = list(qs)
    if not qs_list:
        raise ConfigError(f"{questions_path}: no questions of setting {setting}")
    return qs_list


#: the option every command that scores answers has: unanswered questions of a file that does
#: not record what it was asked are left out unless asked for
count_unanswered_option = click.option(
    "--count-unanswered", is_flag=True,
    help="Answers files that do not record the questions they were asked (other tools, hand-made): "
         "score every question of --questions (of --setting), an unanswered one as a miss, instead of "
         "the answered ones only. Files of `mcq run` score the questions they were asked either way.")


def scored_answers(questions_path: str, answers_paths: tuple[str, ...], setting: int | None,
                   answers_format: str = "auto", count_unanswered: bool = False) -> tuple[Any, Any]:
    """``(answers, scope)`` of ``mcq score|analyze|compare``: the answers of one run (one file per
    choice order) and the questions they were asked (:func:`hoibench.runners.mcq.answer_scope`),
    its notes printed; another question file, or no answer for any of them, is refused."""
    from hoibench.cli._common import require_matching_answers
    from hoibench.formats import read_questions
    from hoibench.runners.mcq import answer_scope

    qs_all = list(read_questions(questions_path))
    answers, sets = _read_answer_files(answers_paths, qs_all, answers_format)
    scope = answer_scope(qs_all, [(p, a.header, a) for p, a in zip(answers_paths, sets)],
                         questions_path=questions_path, setting=setting, count_unanswered=count_unanswered)
    require_matching_answers(answers, scope.questions, ", ".join(answers_paths), questions_path,
                             f" ({scope.label})")
    for note in scope.notes:
        err_console.print(note, soft_wrap=True, highlight=False, markup=False)
    for path, a in zip(answers_paths, sets):
        if a.header.get("source") == "vlmevalkit" and a.header.get("prompt") != "hoibench":
            err_console.print(f"warning: {path}: the model got VLMEvalKit's own MCQ prompt (Hint/Question/Options "
                              "frame or the model's), not mcq run's; run VLMEvalKit through `python -m "
                              "hoibench.tasks.vlmevalkit_run run.py ...` to send mcq run's prompt",
                              soft_wrap=True, highlight=False, markup=False)
    in_file = {q.id for q in qs_all}
    outside = {a.question_id for a in answers} & in_file - scope.ids()
    if outside:
        err_console.print(f"note: {len(outside)} answered questions of {questions_path} are outside the "
                          f"{len(scope.questions)} scored ({scope.label}) and left out",
                          soft_wrap=True, highlight=False, markup=False)
    unknown = {a.question_id for a in answers} - in_file
    if unknown:
        err_console.print(f"note: {len(unknown)} answers are for questions not in {questions_path}",
                          soft_wrap=True, highlight=False, markup=False)
    return answers, scope


#: answer file formats `mcq score` and `mcq compare` read; auto: VLMEvalKit for .xlsx/.tsv,
#: lmms-eval for a --log_samples file (by its first record)
ANSWER_FORMATS = ("auto", "hoibench", "vlmevalkit", "lmms-eval")


def read_any_answers(path: str, questions: list[Any], answers_format: str = "auto") -> Any:
    """An answers JSONL file, a VLMEvalKit prediction file of an `mcq export --to vlmevalkit`
    TSV (``auto``: by the suffix, ``.xlsx``/``.tsv``), or lmms-eval's ``--log_samples`` file of a
    ``hoibench_mcq`` task (``auto``: by its first record's ``doc_id`` and ``filtered_resps``)."""
    from hoibench.formats import read_answers

    if answers_format == "vlmevalkit" or (answers_format == "auto" and Path(path).suffix.lower() in (".xlsx", ".tsv")):
        from hoibench.tasks.vlmevalkit import read_vlmevalkit_answers

        return read_vlmevalkit_answers(path, questions)
    if answers_format in ("auto", "lmms-eval"):
        from hoibench.tasks.lmms import is_lmms_eval_samples, read_lmms_eval_samples

        if answers_format == "lmms-eval" or is_lmms_eval_samples(path):
            return read_lmms_eval_samples(path, questions)
    return read_answers(path, questions)


def _read_answer_files(paths: tuple[str, ...], questions: list[Any], answers_format: str = "auto") -> Any:
    """One answer set from several files (each holding its own choice orders), and each file's;
    the same question answered under the same order in two files is an error, not a silent choice."""
    from dataclasses import replace

    from hoibench._exceptions import ConfigError
    from hoibench.formats.questions import answer_permutation

    sets = [read_any_answers(p, questions, answers_format) for p in paths]
    files = list(sets)
    if len(sets) == 1:
        return sets[0], files
    # a runner's file names its order in the header only: carry it onto each answer
    sets = [replace(s, answers=tuple(
        a if "permutation" in a.meta else
        replace(a, meta={**a.meta, "permutation": int(s.header.get("permutation", 0) or 0)})
        for a in s)) for s in sets]
    seen: dict[tuple[str, int], str] = {}
    for path, answers in zip(paths, sets):
        for a in answers:
            key = (a.question_id, answer_permutation(a))
            if key in seen:
                raise ConfigError(f"{path}: question {key[0]!r} under order {key[1]} is also answered in "
                                  f"{seen[key]}; give each choice order (mcq run --permutation) once")
            seen[key] = path
    return replace(sets[0], answers=tuple(a for s in sets for a in s),
                   n_replaced=sum(s.n_replaced for s in sets), n_truncated=sum(s.n_truncated for s in sets)), files


#: the answer statuses of an empty selection that the runner decided, said under the scores
_STATUS_WHY = {
    "no_person_match": "setting 3: none of the people the model detected overlaps the target person "
                       "at the run's IoU threshold (0.5 unless set), so the question was not asked",
    "parse_error": "the reply named no choice the parser could read",
}


@click.command("score")
@click.option("--questions", "questions_path", required=True, type=click.Path(dir_okay=False))
@click.option("--answers", "answers_paths", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="Answers JSONL; repeat it to score several choice orders (one file per "
                   "`mcq run --permutation K`): each order is scored and position sensitivity shown. "
                   "A VLMEvalKit prediction file (.xlsx/.tsv) of an `mcq export --to vlmevalkit` TSV, and "
                   "lmms-eval's --log_samples file of a hoibench_mcq task, are read too.")
@click.option("--answers-format", type=click.Choice(ANSWER_FORMATS), default="auto", show_default=True,
              help="auto: VLMEvalKit predictions for .xlsx/.tsv, lmms-eval samples by their first record, "
                   "else answers JSONL.")
@click.option("--protocol", type=click.Choice(["paper", "crosshoi"]), default="paper", show_default=True,
              help="paper: equations 1-4; crosshoi: the released evaluation script's counting.")
@click.option("--setting", type=click.IntRange(1, 3), default=None,
              help="Score only questions of this setting (3: the setting-2 questions) [default: the "
                   "setting the answers file records it was asked, else every setting].")
@count_unanswered_option
@click.option("--bootstrap", "n_bootstrap", type=int, default=0, show_default=True,
              help="Bootstrap resamples (e.g. 1000): 95% CIs where one passed the coverage check, else "
                   "the bootstrap SE (macro-F1).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--bootstrap-unit", type=click.Choice(["auto", "question", "image"]), default="auto",
              show_default=True, help="What the bootstrap resamples; auto: images (their questions move "
                                      "together) when an image holds several questions, else questions.")
@click.option("--zero-division", type=float, default=1.0, show_default=True,
              help="paper protocol: value of a ratio with an empty denominator.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, is_flag=False, flag_value="-", metavar="PATH|-",
              help="Write the metrics as one JSON object to this file; '-' prints it instead of the table.")
@click.option("--per-class", is_flag=True, help="Add per-class tp/pred/gt/F1 to the JSON output.")
@click.option("--model", default="",
              help="Model name recorded in --json output [default: the answers file's model, else its name].")
@click.option("--benchmark", default="",
              help="Benchmark name recorded in --json output [default: the questions file name; the "
                   "setting is recorded beside it].")
def score(questions_path: str, answers_paths: tuple[str, ...], answers_format: str, protocol: str,
          setting: int | None, count_unanswered: bool, n_bootstrap: int,
          seed: int, bootstrap_unit: str, zero_division: float, json_out: str | None, per_class: bool, model: str,
          benchmark: str) -> None:
    """Score answers (JSONL: selected choice texts or letters) against questions."""
    from hoibench.cli._common import reject_unused_options
    from hoibench.evaluation import all_orders_exact_match, mcq_metrics
    from hoibench.results import mcq_record, write_record

    if n_bootstrap == 0:
        reject_unused_options(click.get_current_context(), "without --bootstrap", "seed", "bootstrap_unit")
    if json_out is None:
        reject_unused_options(click.get_current_context(), "without --json", "per_class", "model", "benchmark")
    if protocol != "paper":
        reject_unused_options(click.get_current_context(), f"with --protocol {protocol}", "zero_division")

    answers, scope = scored_answers(questions_path, answers_paths, setting, answers_format, count_unanswered)
    qs_list = list(scope.questions)
    answers_path = ", ".join(answers_paths)
    perms = answers.permutations() or [0]  # a header-only file: every question unanswered
    results = []
    for k in perms:
        r = mcq_metrics(answers.for_permutation(k), qs_list, protocol=protocol, zero_division=zero_division,
                        n_bootstrap=n_bootstrap, random_state=seed, bootstrap_unit=bootstrap_unit)
        results.append((f"order {k}" if len(perms) > 1 else "score (%)", r))
    main = results[0][1]
    extra: dict[str, Any] = {}
    if len(perms) > 1:
        extra["all_orders"] = {"exact_match": all_orders_exact_match(
            [answers.for_permutation(k) for k in perms], qs_list, protocol=protocol, zero_division=zero_division),
            "n_orders": len(perms)}
    if json_out != "-":
        console.print(_score_table(f"hoibench mcq score ({protocol}): {len(qs_list)} questions, {scope.label}",
                                   results))
        if main.ci is not None:
            console.print(f"bootstrap: {main.n_bootstrap} resamples of the {main.bootstrap_unit}s (seed {seed})")
        if extra:
            import numpy as np

            ems = [r.exact_match for _, r in results]
            console.print(f"exact match under all {len(perms)} orders: {100 * extra['all_orders']['exact_match']:.2f}% "
                          f"(per order: {100 * min(ems):.2f}–{100 * max(ems):.2f}%, std {100 * np.std(ems):.2f})")
    ids = {q.id for q in qs_list}
    first = answers.for_permutation(perms[0])
    statuses = Counter(a.status for a in (first.values() if isinstance(first, dict) else first)
                       if a.question_id in ids)
    n_error = statuses["error"]
    if main.n_missing or n_error or main.n_empty:
        err_console.print(f"warning: of {main.n_questions} questions, {main.n_missing} have no answer and "
                          f"{n_error} an 'error' status; {main.n_empty} empty selections in all, scored as "
                          "empty predictions (precision 0: no answer is not a perfect answer)")
    for status, why in _STATUS_WHY.items():  # an empty selection the runner decided, and why
        if statuses[status]:
            err_console.print(f"note: {statuses[status]} of {main.n_questions} answers have status {status}: {why}")
    if main.n_out_of_choice:
        err_console.print(f"note: {main.n_out_of_choice} answers select texts that are not among the choices (ignored)")
    n_repeats = sum(a.picks is not None and a.question_id in ids for a in answers)
    if n_repeats:
        how = ("counts every pick, as the released script does" if protocol == "crosshoi"
               else "counts each text once (sets); --protocol crosshoi counts every pick")
        err_console.print(f"note: {n_repeats} answers pick a text more than once; {protocol} {how}")
    if answers.n_truncated:
        err_console.print(f"note: {answers.n_truncated} truncated answer line ignored")
    if json_out is not None:
        from hoibench.results import file_stem

        record = mcq_record(results, model=model or scope.model or file_stem(answers_paths[0]),
                            benchmark=benchmark or Path(questions_path).name,
                            per_class=per_class, questions_file=str(questions_path), answers_file=str(answers_path),
                            **scope.provenance(), **extra)
        if json_out == "-":
            echo_json(record.to_json())
        else:
            write_record(record, json_out)


@click.command("from-detections")
@click.option("--questions", "questions_path", required=True, type=click.Path(dir_okay=False))
@click.option("--predictions", "predictions_path", required=True, type=click.Path(dir_okay=False),
              help="Detector output: hoibench, generic or qpic JSON, or a released CrossHOI-Bench "
                   "HOI-method file ({image: {h_boxes, o_boxes, ho_scores, ao_names}}).")
@click.option("--rule", type=click.Choice(["released", "paper"]), default="released", show_default=True,
              help="released: the released script's (the published numbers); paper: the paper's text "
                   "(k distinct classes). See docs/mcq.md.")
@click.option("--setting", type=click.IntRange(1, 3), default=None, help="Override the questions' setting.")
@click.option("--top-k", type=int, default=5, show_default=True,
              help="released: the image's k-th best score is the threshold; paper: distinct classes taken.")
@click.option("--iou", "iou_threshold", type=float, default=0.5, show_default=True,
              help="Target person match threshold (settings 2-3).")
@click.option("--strict-iou", is_flag=True,
              help="paper rule: match with IoU > threshold instead of >= (the released rule always uses >).")
@click.option("--box-shift", type=float, default=0.0, show_default=True,
              help="Released HOI-method files: pixels added to every box after the documented frame.")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False), help="Answers JSONL.")
def from_detections(questions_path: str, predictions_path: str, rule: str, setting: int | None, top_k: int,
                    iou_threshold: float, strict_iou: bool, box_shift: float, out_path: str) -> None:
    """Turn an HOI detector's scored triplets into answers by top-k matching."""
    from hoibench._io import file_id, read_json
    from hoibench.benchmarks.mcq import (
        answers_from_detections,
        answers_released_rule,
        text_detections,
    )
    from hoibench.formats import read_questions, write_answers
    from hoibench.formats.crosshoi_predictions import (
        is_released_hoi_file,
        looks_like_released_hoi,
        read_released_hoi,
        released_frame_hint,
    )
    from hoibench.formats.predictions import read_predictions

    qs = list(read_questions(questions_path, setting=setting))
    if is_released_hoi_file(predictions_path) and looks_like_released_hoi(data := read_json(predictions_path)):
        if rule == "paper":
            raise click.UsageError("--rule paper ranks classes of a label space; a released HOI-method file "
                                   "names its triplets by text: use --rule released")
        datasets = {q.meta.get("dataset", q.label_space) for q in qs}
        if len(datasets) != 1:
            raise click.UsageError(f"{questions_path}: questions of several datasets {sorted(datasets)}")
        detections = read_released_hoi(predictions_path, dataset=datasets.pop(), box_shift=box_shift, data=data)
        hint = released_frame_hint(qs, detections)
        if hint is not None:
            err_console.print(f"warning: {Path(predictions_path).name}: the top boxes fit the questions' target people "
                              f"better shifted by {hint.shift:+g} pixel (mean best IoU of {hint.n_boxes:,} people "
                              f"{hint.mean_iou:.3f} -> {hint.mean_iou_shifted:.3f}): the file may be in another "
                              f"frame than the released one; --box-shift {box_shift + hint.shift:g} sets it "
                              "(docs/mcq.md)", soft_wrap=True, highlight=False, markup=False)
        answers = answers_released_rule(qs, detections, top_k=top_k, iou_threshold=iou_threshold,
                                        name=Path(predictions_path).name)
    else:
        if box_shift:
            raise click.UsageError("--box-shift applies to released HOI-method files only")
        preds = read_predictions(predictions_path)
        if rule == "released":
            answers = answers_released_rule(qs, text_detections(preds), top_k=top_k, iou_threshold=iou_threshold,
                                            name=preds.name)
        else:
            answers = answers_from_detections(qs, preds, top_k=top_k, iou_threshold=iou_threshold,
                                              strict=strict_iou)

    # every question of the file is answered (setting: null), in the setting --setting gives them
    header = {"kind": "mcq_answers", "source": "detections", "predictions": str(predictions_path),
              "questions": file_id(questions_path), "rule": rule, "top_k": top_k,
              "iou_threshold": iou_threshold, "strict_iou": strict_iou if rule == "paper" else None,
              "box_shift": box_shift, "setting": None, "setting_override": setting}
    write_answers(out_path, answers, header=header)
    n_nomatch = sum(a.status == "no_person_match" for a in answers)
    n_empty = sum(not a.selected for a in answers)
    n_repeats = sum(a.picks is not None for a in answers)
    console.print(f"{len(answers)} answers ({rule} rule) → {out_path} ({n_empty} empty, {n_nomatch} without "
                  f"a person match, {n_repeats} picking a text more than once)")

