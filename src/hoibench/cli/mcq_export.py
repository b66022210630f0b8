"""``hoibench mcq export``: questions as datasets other tools read. Thin: each ``--to`` target's
code lives in a library module (fine-tuning: :mod:`hoibench.runners.finetune`)."""

from __future__ import annotations

import click

from hoibench.cli._common import console, echo_json

__all__ = ["export"]

#: --to targets and the family of each (fine-tuning frameworks)
FINETUNE = ("trl", "llamafactory", "swift")


@click.command("export")
@click.option("--questions", "questions_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Question JSONL; for fine-tuning, the training set (hoibench mcq build --split train).")
@click.option("--to", "target", required=True, type=click.Choice(FINETUNE),
              help="trl: TRL's conversational vision JSONL; llamafactory: sharegpt JSONL + dataset_info.json; "
                   "swift: ms-swift's messages JSONL.")
@click.option("--images", required=True, type=click.Path(exists=True, file_okay=False),
              help="Folder the questions' file names are relative to (a name that leaves it is refused).")
@click.option("--follow-symlinks", is_flag=True, help="Follow symlinks under --images that lead out of it.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--model", default="Qwen2.5-VL-7B-Instruct", show_default=True,
              help="Model to fine-tune (picks the box convention with --box-convention auto).")
@click.option("--box-convention", default="auto", show_default=True,
              type=click.Choice(["auto", "qwen2.5", "qwen3", "relative-1000", "original"]))
@click.option("--template", default="crosshoi", show_default=True, help="Bundled template name or YAML file.")
@click.option("--answer-format", default="letters", show_default=True, type=click.Choice(["letters", "answer_tag"]))
@click.option("--seed", type=int, default=0, show_default=True, help="Choice-order seed (as mcq run --seed).")
@click.option("--resize-images", is_flag=True,
              help="Write the resized images the runner sends (PNG, OUT/images/) instead of the originals' paths.")
@click.option("--name", default="hoibench_mcq_train", show_default=True,
              help="Dataset name (file stem; LLaMA-Factory's dataset_info.json key).")
@click.option("--json", "as_json", is_flag=True, help="Print the export summary as JSON.")
def export(questions_path: str, target: str, images: str, follow_symlinks: bool, out: str, model: str,
           box_convention: str, template: str, answer_format: str, seed: int, resize_images: bool, name: str,
           as_json: bool) -> None:
    """Export questions for a fine-tuning framework, in the prompts, box convention and image
    size that `hoibench mcq run` uses for the same model."""
    from hoibench.formats import read_questions
    from hoibench.runners.finetune import export_finetune

    qs = read_questions(questions_path)
    report = export_finetune(qs, out, target=target, images=images, model=model, box_convention=box_convention,
                             template=template, answer_format=answer_format, seed=seed,
                             resize_images=resize_images, name=name, follow_symlinks=follow_symlinks,
                             header=qs.header, questions_file=questions_path)
    if as_json:
        echo_json(report.summary)
        return
    per = ", ".join(f"setting {k}: {v}" for k, v in report.summary["examples_per_setting"].items())
    console.print(f"{report.summary['examples']} examples ({per}) → {report.files['data']}")
    for key, path in report.files.items():
        if key != "data":
            console.print(f"  {key}: {path}")
