"""``hoibench mcq merge``: join the answers files of ``mcq run --shard I/N`` runs into one."""

from __future__ import annotations

import click

from hoibench.cli._common import console, emit_json, json_option

__all__ = ["merge"]


@click.command()
@click.argument("answers", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Merged answers JSONL.")
@click.option("--questions", "questions_path", default=None, type=click.Path(exists=True, dir_okay=False),
              help="The question file of the run: answers in its order, every question answered.")
@json_option("The summary")
def merge(answers: tuple[str, ...], out: str, questions_path: str | None, as_json: str | None) -> None:
    """Join the shards' answers files (headers must agree but for the shard; each shard once)
    into one answers file that `hoibench mcq score` reads like an unsharded run's."""
    from hoibench.formats import read_questions
    from hoibench.runners.mcq import merge_answers

    qs = list(read_questions(questions_path)) if questions_path is not None else None
    result = merge_answers(list(answers), out, questions=qs)
    if emit_json(result, as_json):
        return
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(result["statuses"].items()))
    console.print(f"merged {result['shards']} shards: {result['answers']} answers ({statuses}) → {out}")
