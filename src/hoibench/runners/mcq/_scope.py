"""Which questions an answers file answers: the one place that picks a run's questions
(:func:`select_questions`, what ``mcq run`` asks) and reads that choice back from an answers
file's header (:func:`answer_scope`, what ``mcq score|analyze|compare`` score by default).

An answers file of ``mcq run`` records in its header the setting it asked (``setting``; ``null``:
each question in its own setting), the question file (``questions``: name and SHA-256), the shard
and ``--limit`` of the run, the choice order (``seed``, ``permutation``) and the model. Scoring it
against all questions of a file that holds several settings would count the questions of the
settings it was never asked as misses; its scope is the questions it was asked. A file that
records none of this (other tools, hand-made files) is scored on the questions it answers, with a
note saying how many were left out: an unanswered question counts as a miss only when asked for
(``count_unanswered``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench._io import file_id
from hoibench.data import MCAnswer, MCQuestion
from hoibench.runners.mcq._shard import parse_shard, shard_questions

__all__ = ["AnswerScope", "answer_scope", "scope_label", "select_questions"]


def select_questions(questions: Iterable[MCQuestion], *, setting: int | None = None, shard: str | None = None,
                     limit: int | None = None) -> list[MCQuestion]:
    """The questions a run asks: those of ``setting`` in that setting (3: the setting-2 person-box
    questions asked with detection first; ``None``: every question in its own), then shard
    ``I/N``, then the first ``limit``."""
    out = list(questions)
    if setting is not None:
        want = (2, 3) if setting == 3 else (setting,)
        out = [q if q.setting == setting else q.with_setting(setting) for q in out if q.setting in want]
    if shard is not None:
        out = shard_questions(out, *parse_shard(shard))
    if limit is not None:
        out = out[:limit]
    return out


def scope_label(setting: int | None, settings: Sequence[int]) -> str:
    """``setting 2`` / ``settings 1+2``: how results and messages name the setting scored."""
    if setting is not None:
        return f"setting {setting}"
    return ("settings " if len(settings) > 1 else "setting ") + "+".join(map(str, settings))


@dataclass(frozen=True)
class AnswerScope:
    """The questions to score an answers file on, and what the user should be told about them.

    ``setting`` is the one setting they were asked in (``None`` when several); ``settings`` the
    settings present; ``recorded`` whether the file's header records what it was asked;
    ``notes`` one-line messages (questions left out, a file that cannot be checked); ``model``
    the model its header names (``""`` when none)."""

    questions: tuple[MCQuestion, ...]
    setting: int | None
    settings: tuple[int, ...]
    recorded: bool
    notes: tuple[str, ...] = ()
    model: str = ""

    @property
    def label(self) -> str:
        return scope_label(self.setting, self.settings)

    def ids(self) -> set[str]:
        return {q.id for q in self.questions}

    def provenance(self) -> dict[str, Any]:
        """Keys a result derived from these answers records (``setting``; ``settings`` when mixed)."""
        out: dict[str, Any] = {"setting": self.setting}
        if self.setting is None:
            out["settings"] = list(self.settings)
        return out


def _recorded_setting(header: Mapping[str, Any], answers_path: str) -> int | None:
    value = header.get("setting")
    if value is not None and (isinstance(value, bool) or value not in (1, 2, 3)):
        raise ConfigError(f"{answers_path}: header field 'setting' must be 1, 2, 3 or null; got {value!r}")
    return value


def _check_question_file(header: Mapping[str, Any], questions_path: str, answers_path: str) -> str | None:
    """Refuse answers recorded for another question file; a note when the header cannot tell."""
    recorded = header.get("questions")
    digest = str(recorded).rpartition(":sha256:")[2] if isinstance(recorded, str) and ":sha256:" in recorded else ""
    if not digest:
        return (f"note: {answers_path} does not record the SHA-256 of its question file; "
                f"not checked against {questions_path}")
    here = file_id(questions_path)
    if here.rpartition(":sha256:")[2] != digest:
        raise ConfigError(f"{answers_path}: was answered on another question file ({recorded}; {questions_path} "
                          f"is {here}); give --questions the file of the run")
    return None


def answer_scope(questions: Sequence[MCQuestion], answer_sets: Sequence[tuple[str, Mapping[str, Any],
                                                                              Iterable[MCAnswer]]],
                 *, questions_path: str, setting: int | None = None,
                 count_unanswered: bool = False) -> AnswerScope:
    """The questions to score the answers of one or more files on (several files: choice orders
    of one run, which must have been asked the same questions).

    ``answer_sets`` holds ``(path, header, answers)`` per file. A file whose header records its
    ``setting`` (``mcq run``, ``mcq from-detections``, ``mcq merge``) is scored on the questions
    :func:`select_questions` gives for its setting and shard, its question file checked by hash
    (another file is refused); ``setting`` must then agree with the recorded one, or pick one
    setting of a file asked in each question's own. A file without that record is scored on
    the questions it answers (``count_unanswered``: on all, unanswered ones as misses), with a
    note saying how many were left out. Raises :class:`ConfigError` with one line when nothing
    is left to score.
    """
    notes: list[str] = []
    scopes: list[tuple[str, list[MCQuestion], int | None]] = []
    models: list[str] = []
    for path, header, answers in answer_sets:
        answered = {a.question_id for a in answers}
        model = header.get("model")
        if isinstance(model, str) and model:
            models.append(model)
        if "setting" not in header:  # no record of the questions asked
            chosen = select_questions(questions, setting=setting)
            if not count_unanswered:
                kept = [q for q in chosen if q.id in answered]
                left = len(chosen) - len(kept)
                if left and kept:
                    where = f" of setting {setting}" if setting is not None else ""
                    notes.append(f"note: {path} does not record which questions it was asked: scoring the "
                                 f"{len(kept)} it answers; {left} questions{where} of {questions_path} have no "
                                 "answer and are left out (--count-unanswered scores them as misses)")
                chosen = kept or chosen  # none answered: the caller's 'none of its answers' error
            scopes.append((path, chosen, setting))
            continue
        asked = _recorded_setting(header, path)
        note = _check_question_file(header, questions_path, path)
        if note:
            notes.append(note)
        if setting is not None and asked is not None and setting != asked:
            raise ConfigError(f"{path}: its answers were asked in setting {asked}, not {setting}; "
                              f"drop --setting or give --setting {asked}")
        shard = header.get("shard")
        chosen = select_questions(questions, setting=setting if asked is None else asked,
                                  shard=None if shard is None else str(shard))
        limit = header.get("limit")
        if limit is not None:
            kept = [q for q in chosen if q.id in answered]
            if len(kept) < len(chosen):
                notes.append(f"note: {path} was written by a run with --limit {limit}: scoring the {len(kept)} "
                             f"questions it answers, {len(chosen) - len(kept)} were not asked")
            chosen = kept
        # from-detections answers every question, each in the setting it overrides them with
        label = header.get("setting_override") if asked is None else asked
        scopes.append((path, chosen, setting if label is None else int(label)))
    first_path, chosen, asked = scopes[0]
    for path, other, _ in scopes[1:]:
        if [q.id for q in other] != [q.id for q in chosen]:
            raise ConfigError(f"{path}: was asked other questions than {first_path} ({len(other)} vs "
                              f"{len(chosen)}); score the files of one run together")
    if not chosen:
        what = f"setting {asked}" if asked is not None else "the answers"
        raise ConfigError(f"{questions_path}: no questions of {what}")
    settings = tuple(sorted({asked} if asked is not None else {q.setting for q in chosen}))
    one = asked if asked is not None else (settings[0] if len(settings) == 1 else None)
    model = models[0] if models and all(m == models[0] for m in models) else ""
    return AnswerScope(tuple(chosen), one, settings, recorded=all("setting" in h for _, h, _ in answer_sets),
                       notes=tuple(notes), model=model)
