"""``hoibench mcq export``: questions as files other tools read. Thin: each ``--to`` target's code
lives in a library module (fine-tuning: :mod:`hoibench.runners.finetune`; VLMEvalKit:
:mod:`hoibench.tasks.vlmevalkit`; lmms-eval: :mod:`hoibench.tasks.lmms`)."""

from __future__ import annotations

from pathlib import Path

import click

from hoibench.cli._common import console, emit_json, json_option, reject_unused_options

__all__ = ["export"]

#: --to targets: fine-tuning frameworks
FINETUNE = ("trl", "llamafactory", "swift")
#: --to targets: evaluation harnesses
HARNESSES = ("vlmevalkit", "lmms-eval")
#: the --name of each target family when none is given
_DEFAULT_NAME = {"finetune": "hoibench_mcq_train", "vlmevalkit": "HOIBench_MCQ"}


@click.command("export")
@click.option("--questions", "questions_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Question JSONL (hoibench mcq build); for fine-tuning, the training set (--split train).")
@click.option("--to", "target", required=True, type=click.Choice(FINETUNE + HARNESSES),
              help="trl: TRL's conversational prompt-completion vision JSONL (loss on the answer only); llamafactory: sharegpt JSONL + dataset_info.json; "
                   "swift: ms-swift's messages JSONL; vlmevalkit: the benchmark TSV VLMEvalKit reads as a "
                   "custom MCQ dataset; lmms-eval: OUT/hoibench_mcq.jsonl for the hoibench_mcq tasks.")
@click.option("--images", default=None, type=click.Path(exists=True, file_okay=False),
              help="Folder the questions' file names are relative to (a name that leaves it is refused); "
                   "needed by every target but lmms-eval, which reads them at run time ($HOIBENCH_MCQ_IMAGES).")
@click.option("--follow-symlinks", is_flag=True, help="Follow symlinks under --images that lead out of it.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--model", default="Qwen2.5-VL-7B-Instruct", show_default=True,
              help="Model to fine-tune or evaluate (picks the box convention with --box-convention auto).")
@click.option("--box-convention", default="auto", show_default=True,
              type=click.Choice(["auto", "qwen2.5", "qwen3", "relative-1000", "original"]))
@click.option("--template", default="crosshoi", show_default=True, help="Bundled template name or YAML file.")
@click.option("--answer-format", default="letters", show_default=True, type=click.Choice(["letters", "answer_tag"]))
@click.option("--seed", type=int, default=0, show_default=True, help="Choice-order seed (as mcq run --seed).")
@click.option("--permutation", type=int, default=0, show_default=True,
              help="vlmevalkit: choice order (as mcq run --permutation); export several to score position "
                   "sensitivity.")
@click.option("--setting", type=click.IntRange(1, 2), default=None,
              help="vlmevalkit, lmms-eval: export only this setting's questions.")
@click.option("--resize-images", is_flag=True,
              help="Fine-tuning: write the resized images the runner sends (PNG, OUT/images/) instead of the "
                   "originals' paths.")
@click.option("--name", default=None,
              help="Dataset name: the file stem (fine-tuning default hoibench_mcq_train, also LLaMA-Factory's "
                   "dataset_info.json key; vlmevalkit default HOIBench_MCQ: OUT/NAME.tsv, run as "
                   "`python run.py --data NAME`).")
@json_option("The export summary")
def export(questions_path: str, target: str, images: str | None, follow_symlinks: bool, out: str, model: str,
           box_convention: str, template: str, answer_format: str, seed: int, permutation: int,
           setting: int | None, resize_images: bool, name: str | None, as_json: str | None) -> None:
    """Export questions for a fine-tuning framework or an evaluation harness, in the prompts, box
    convention and image size that `hoibench mcq run` uses for the same model."""
    from hoibench._exceptions import ConfigError

    ctx = click.get_current_context()
    if target == "lmms-eval":
        _export_lmms_eval(ctx, questions_path, setting, out, as_json)
        return
    family = "finetune" if target in FINETUNE else target
    name = name if name is not None else _DEFAULT_NAME[family]
    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"--name must be a plain file stem; got {name!r}")
    if images is None:
        raise ConfigError(f"--to {target} needs --images (the folder the questions' file names are relative to)")
    if family == "finetune":
        reject_unused_options(ctx, f"with --to {target} (a training set holds every setting in one order)",
                              "permutation", "setting")
        _export_finetune(questions_path, target, images, follow_symlinks, out, model, box_convention, template,
                         answer_format, seed, resize_images, name, as_json)
        return
    reject_unused_options(ctx, "with --to vlmevalkit (its TSV embeds the resized images)", "resize_images")
    _export_vlmevalkit(questions_path, images, follow_symlinks, out, model, box_convention, template,
                       answer_format, seed, permutation, setting, name, as_json)


def _export_finetune(questions_path: str, target: str, images: str, follow_symlinks: bool, out: str, model: str,
                     box_convention: str, template: str, answer_format: str, seed: int, resize_images: bool,
                     name: str, as_json: str | None) -> None:
    from hoibench.formats import read_questions
    from hoibench.runners.finetune import export_finetune

    qs = read_questions(questions_path)
    report = export_finetune(qs, out, target=target, images=images, model=model, box_convention=box_convention,
                             template=template, answer_format=answer_format, seed=seed,
                             resize_images=resize_images, name=name, follow_symlinks=follow_symlinks,
                             header=qs.header, questions_file=questions_path)
    if emit_json(report.summary, as_json):
        return
    per = ", ".join(f"setting {k}: {v}" for k, v in report.summary["examples_per_setting"].items())
    console.print(f"{report.summary['examples']} examples ({per}) → {report.files['data']}")
    for key, path in report.files.items():
        if key != "data":
            console.print(f"  {key}: {path}")


def _export_lmms_eval(ctx: click.Context, questions_path: str, setting: int | None, out: str,
                      as_json: str | None) -> None:
    from hoibench.cli.mcq_bench import read_scored_questions
    from hoibench.tasks import TASKS_DIR
    from hoibench.tasks.lmms import QUESTIONS_FILE, write_lmms_eval_questions

    # each task variant fixes its box convention; the prompt is rendered at run time
    reject_unused_options(ctx, "with --to lmms-eval (the task variant picks the box convention)", "images",
                          "follow_symlinks", "model", "box_convention", "template", "answer_format", "seed",
                          "permutation", "name", "resize_images")
    qs = read_scored_questions(questions_path, setting)
    path = Path(out) / QUESTIONS_FILE
    n = write_lmms_eval_questions(path, qs, source=questions_path)
    summary = {"target": "lmms-eval", "file": str(path), "questions": n, "name": QUESTIONS_FILE}
    if emit_json(summary, as_json):
        return
    console.print(f"{n} questions → {path}")
    console.print(f"  lmms-eval: cd {out} && HOIBENCH_MCQ_IMAGES=IMAGES lmms-eval --include_path {TASKS_DIR} "
                  "--tasks hoibench_mcq_qwen25 --model ...", markup=False, soft_wrap=True)


def _export_vlmevalkit(questions_path: str, images: str, follow_symlinks: bool, out: str, model: str,
                       box_convention: str, template: str, answer_format: str, seed: int, permutation: int,
                       setting: int | None, name: str, as_json: str | None) -> None:
    from hoibench._io import ImageFolder
    from hoibench.cli.mcq_bench import read_scored_questions
    from hoibench.runners.mcq import load_template, resolve_box_convention
    from hoibench.tasks.vlmevalkit import write_vlmevalkit_benchmark

    qs = read_scored_questions(questions_path, setting)
    convention = resolve_box_convention(box_convention, model)
    path = Path(out) / f"{name}.tsv"
    n = write_vlmevalkit_benchmark(path, qs, ImageFolder(Path(images), follow_symlinks=follow_symlinks),
                                   box_convention=convention, template=load_template(template),
                                   answer_format=answer_format, seed=seed, permutation=permutation,
                                   questions_file=questions_path)
    summary = {"target": "vlmevalkit", "file": str(path), "questions": n,
               "images": len({q.file_name for q in qs}), "box_convention": convention,
               "permutation": permutation, "name": name}
    if emit_json(summary, as_json):
        return
    console.print(f"{n} questions ({summary['images']} images, box convention {convention}) → {path}")
    console.print(f"  VLMEvalKit: copy it to $LMUData/{name}.tsv, run `python -m hoibench.tasks.vlmevalkit_run "
                  f"VLMEvalKit/run.py --data {name} --model MODEL` (mcq run's prompt), "
                  f"then score: hoibench mcq score --questions {questions_path} --answers "
                  f"outputs/MODEL/.../MODEL_{name}.xlsx", markup=False, soft_wrap=True)
