"""``hoibench mcq export``: questions as files other tools read. Thin: each ``--to`` target's code
lives in a library module (VLMEvalKit: :mod:`hoibench.tasks.vlmevalkit`; lmms-eval:
:mod:`hoibench.tasks.lmms`)."""

from __future__ import annotations

from pathlib import Path

import click

from hoibench.cli._common import console, echo_json

__all__ = ["export"]

#: --to targets: evaluation harnesses
HARNESSES = ("vlmevalkit", "lmms-eval")


@click.command("export")
@click.option("--questions", "questions_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Question JSONL (hoibench mcq build).")
@click.option("--to", "target", required=True, type=click.Choice(HARNESSES),
              help="vlmevalkit: the benchmark TSV VLMEvalKit reads as a custom MCQ dataset; lmms-eval: "
                   "OUT/hoibench_mcq.jsonl for the hoibench_mcq tasks (LMMS_EVAL_PLUGINS=hoibench).")
@click.option("--images", default=None, type=click.Path(exists=True, file_okay=False),
              help="Folder the questions' file names are relative to (a name that leaves it is refused); "
                   "vlmevalkit embeds the images, lmms-eval reads them at run time ($HOIBENCH_MCQ_IMAGES).")
@click.option("--follow-symlinks", is_flag=True, help="Follow symlinks under --images that lead out of it.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--model", default="Qwen2.5-VL-7B-Instruct", show_default=True,
              help="Model to evaluate (picks the box convention with --box-convention auto).")
@click.option("--box-convention", default="auto", show_default=True,
              type=click.Choice(["auto", "qwen2.5", "qwen3", "relative-1000", "original"]))
@click.option("--template", default="crosshoi", show_default=True, help="Bundled template name or YAML file.")
@click.option("--answer-format", default="letters", show_default=True, type=click.Choice(["letters", "answer_tag"]))
@click.option("--seed", type=int, default=0, show_default=True, help="Choice-order seed (as mcq run --seed).")
@click.option("--permutation", type=int, default=0, show_default=True,
              help="Choice order (as mcq run --permutation); export several to score position sensitivity.")
@click.option("--setting", type=click.IntRange(1, 2), default=None, help="Export only this setting's questions.")
@click.option("--name", default="HOIBench_MCQ", show_default=True,
              help="Dataset name: the TSV is OUT/NAME.tsv, run as `python run.py --data NAME`.")
@click.option("--json", "as_json", is_flag=True, help="Print the export summary as JSON.")
def export(questions_path: str, target: str, images: str | None, follow_symlinks: bool, out: str, model: str,
           box_convention: str, template: str, answer_format: str, seed: int, permutation: int,
           setting: int | None, name: str, as_json: bool) -> None:
    """Export questions for an evaluation harness, in the prompts, box convention and image size
    that `hoibench mcq run` uses for the same model."""
    from hoibench._exceptions import ConfigError
    from hoibench._io import ImageFolder
    from hoibench.cli.mcq_bench import read_scored_questions
    from hoibench.runners.mcq import load_template, resolve_box_convention
    from hoibench.tasks.vlmevalkit import write_vlmevalkit_benchmark

    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"--name must be a plain file stem; got {name!r}")
    qs = read_scored_questions(questions_path, setting)
    if target == "lmms-eval":
        from hoibench.cli._common import reject_unused_options
        from hoibench.tasks.lmms import QUESTIONS_FILE, write_lmms_eval_questions

        # each task variant fixes its box convention; the prompt is rendered at run time
        reject_unused_options(click.get_current_context(), "with --to lmms-eval (the task variant picks the "
                              "box convention)", "images", "follow_symlinks", "model", "box_convention", "template",
                              "answer_format", "seed", "permutation", "name")

        path = Path(out) / QUESTIONS_FILE
        n = write_lmms_eval_questions(path, qs, source=questions_path)
        summary = {"target": target, "file": str(path), "questions": n, "name": QUESTIONS_FILE}
        if as_json:
            echo_json(summary)
            return
        console.print(f"{n} questions → {path}")
        from hoibench.tasks import TASKS_DIR

        console.print(f"  lmms-eval: cd {out} && HOIBENCH_MCQ_IMAGES=IMAGES lmms-eval --include_path {TASKS_DIR} "
                      "--tasks hoibench_mcq_qwen25 --model ...", markup=False, soft_wrap=True)
        return
    if images is None:
        raise ConfigError(f"--to {target} needs --images (the images are embedded in the TSV)")
    convention = resolve_box_convention(box_convention, model)
    path = Path(out) / f"{name}.tsv"
    n = write_vlmevalkit_benchmark(path, qs, ImageFolder(Path(images), follow_symlinks=follow_symlinks),
                                   box_convention=convention, template=load_template(template),
                                   answer_format=answer_format, seed=seed, permutation=permutation,
                                   questions_file=questions_path)
    summary = {"target": target, "file": str(path), "questions": n, "images": len({q.file_name for q in qs}),
               "box_convention": convention, "permutation": permutation, "name": name}
    if as_json:
        echo_json(summary)
        return
    console.print(f"{n} questions ({summary['images']} images, box convention {convention}) → {path}")
    console.print(f"  VLMEvalKit: copy it to $LMUData/{name}.tsv, run `python run.py --data {name} --model MODEL`, "
                  f"then score: hoibench mcq score --questions {questions_path} --answers "
                  f"outputs/MODEL/.../MODEL_{name}.xlsx", markup=False, soft_wrap=True)
