"""``hoibench mcq compare``: two models' answers to the same questions, compared on the same
bootstrap resamples (the multiple-choice twin of ``hoibench analyze compare``)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from hoibench.cli._common import console, echo_json, err_console
from hoibench.cli.mcq_bench import count_unanswered_option

__all__ = ["compare"]


@click.command("compare")
@click.argument("answers_a", type=click.Path(dir_okay=False))
@click.argument("answers_b", type=click.Path(dir_okay=False))
@click.option("--questions", "questions_path", required=True, type=click.Path(dir_okay=False))
@click.option("--answers-format", type=click.Choice(["auto", "hoibench", "vlmevalkit", "lmms-eval"]), default="auto",
              show_default=True, help="auto: VLMEvalKit predictions for .xlsx/.tsv, lmms-eval samples by their "
                                      "first record, else answers JSONL.")
@click.option("--name", "names", multiple=True,
              help="The two model names (default: the models the answers files name, else the file names).")
@click.option("--protocol", type=click.Choice(["paper", "crosshoi"]), default="paper", show_default=True)
@click.option("--setting", type=click.IntRange(1, 3), default=None,
              help="Compare only questions of this setting (3: the setting-2 questions) [default: the "
                   "setting the answers files record they were asked, else every setting].")
@count_unanswered_option
@click.option("--permutation", type=int, default=0, show_default=True,
              help="Choice order compared, for files holding several.")
@click.option("--bootstrap", "n_bootstrap", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Bootstrap resamples, the same for both models.")
@click.option("--bootstrap-unit", type=click.Choice(["auto", "question", "image"]), default="auto",
              show_default=True, help="What is resampled (see `mcq score --bootstrap-unit`).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--zero-division", type=float, default=1.0, show_default=True,
              help="paper protocol: value of a ratio with an empty denominator.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              help="Write the comparison as JSON to this file; '-' prints it instead of the table.")
def compare(answers_a: str, answers_b: str, questions_path: str, answers_format: str, names: tuple[str, ...], protocol: str,
            setting: int | None, count_unanswered: bool, permutation: int, n_bootstrap: int,
            bootstrap_unit: str, seed: int, zero_division: float, json_out: str | None) -> None:
    """Paired comparison of answers A and B: each metric's difference A − B and its interval, on
    the questions both were asked (their recorded settings must agree)."""
    from hoibench._exceptions import ConfigError
    from hoibench._io import atomic_write_json
    from hoibench.cli.mcq_bench import scored_answers
    from hoibench.evaluation import mcq_compare
    from hoibench.formats import read_questions
    from hoibench.runners.mcq import select_questions

    if names and len(names) != 2:
        raise ConfigError(f"--name takes the two model names, in A B order; got {len(names)}")
    read = [scored_answers(questions_path, (path,), setting, answers_format, count_unanswered)
            for path in (answers_a, answers_b)]
    (_, scope_a), (_, scope_b) = read
    if scope_a.setting != scope_b.setting or scope_a.settings != scope_b.settings:
        raise ConfigError(f"{answers_b}: was asked {scope_b.label}, {answers_a} {scope_a.label}; compare "
                          "answers to the same questions (--setting picks one)")
    qs = list(scope_a.questions) if scope_a.recorded or not scope_b.recorded else list(scope_b.questions)
    if scope_a.recorded and scope_b.recorded and scope_a.ids() != scope_b.ids():
        raise ConfigError(f"{answers_b}: was asked {len(scope_b.questions)} questions, {answers_a} "
                          f"{len(scope_a.questions)} others; compare answers to the same questions")
    if not scope_a.recorded and not scope_b.recorded:  # the questions either answers
        either = scope_a.ids() | scope_b.ids()
        qs = [q for q in select_questions(read_questions(questions_path), setting=setting) if q.id in either]
    labels = tuple(names) or tuple(s.model or Path(p).name.split(".")[0]
                                   for s, p in ((scope_a, answers_a), (scope_b, answers_b)))
    if labels[0] == labels[1]:
        labels = ("A", "B")
    ids = {q.id for q in qs}
    sets = []
    for path, (answers, _) in zip((answers_a, answers_b), read):
        if permutation not in (answers.permutations() or [0]):
            raise ConfigError(f"{path}: no answers under choice order {permutation} "
                              f"(it holds {answers.permutations()}); pick one with --permutation")
        chosen = answers.for_permutation(permutation)
        if chosen and ids.isdisjoint(chosen):
            raise ConfigError(f"{path}: none of its {len(chosen)} answers is for a question of {questions_path}")
        n_missing = len(ids - set(chosen))
        if n_missing:
            err_console.print(f"warning: {path}: {n_missing} questions have no answer (scored as empty predictions)")
        sets.append(chosen)
    cmp = mcq_compare(sets[0], sets[1], qs, names=(labels[0], labels[1]), protocol=protocol,
                      zero_division=zero_division, n_bootstrap=n_bootstrap, random_state=seed,
                      bootstrap_unit=bootstrap_unit)
    out = {**cmp.to_json(), **scope_a.provenance(), "questions": str(questions_path)}
    if json_out == "-":
        echo_json(out)
        return
    if json_out is not None:
        atomic_write_json(json_out, out, indent=True)
    table = Table(title=f"hoibench mcq compare ({protocol}): {cmp.n_questions} questions, {cmp.n_images} images, "
                        f"{scope_a.label}")
    for col in ("metric", labels[0], labels[1], f"{labels[0]} − {labels[1]}", f"{cmp.confidence:.0%} interval",
                f"P({labels[0]} > {labels[1]})"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for r in cmp.rows():
        ci = "n/a" if r["ci_low"] != r["ci_low"] else f"[{100 * r['ci_low']:+.2f}, {100 * r['ci_high']:+.2f}]"
        table.add_row(r["metric"], f"{100 * r['a']:.2f}", f"{100 * r['b']:.2f}", f"{100 * r['difference']:+.2f}",
                      ci, f"{r['p_a_better']:.3f}")
    console.print(table)
    console.print(f"{cmp.n_bootstrap} paired bootstrap resamples of the {cmp.bootstrap_unit}s (seed {seed}); "
                  "percent points")
