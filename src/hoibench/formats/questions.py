"""Question and answer files of the multiple-choice HOI benchmark.

Questions (written by ``hoibench mcq build``): JSONL, a first line ``{"header": {...}}`` with
parameters and provenance, then one question per line::

    {"id": ..., "file_name": ..., "setting": 2, "choices": [{"text": "ride a/an horse", "hoi": 418,
     "verb": 76, "object": 41}, ...], "correct": [0, 2], "person_box": [x1, y1, x2, y2] | null,
     "object_box": ... | null, "width": 640, "height": 480, "label_space": "hico-det", "meta": {...}}

Boxes are hoibench's 0-based pixel xyxy. :func:`read_questions` also reads CrossHOI-Bench files
(:mod:`hoibench.formats.crosshoi`), detected from the content.

Answers (written by ``hoibench mcq run`` and ``hoibench mcq from-detections``, read by
``hoibench mcq score``): JSONL, an optional first line ``{"header": {...}}``, then one
``{"question_id", "selected": [...], "raw", "status"}`` per line. ``selected`` holds choice texts
exactly as in the question, or letters in the question's deterministic order for the header's
``seed`` (and the line's or header's ``permutation``). Lines are appended as answers arrive
(:class:`AnswerWriter`); a truncated last line (a crash mid-write) is ignored on reading, and a
later line for the same question replaces an earlier one (a resumed run).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from hoibench._exceptions import ConfigError, FormatError, ValidationError
from hoibench._io import (
    atomic_write,
    check_json_start,
    dumps_json,
    ensure_dir,
    read_bytes,
    refuses_deep_nesting,
)
from hoibench.data import Choice, MCAnswer, MCQuestion
from hoibench.data._questions import ANSWER_STATUSES, LETTERS
from hoibench.formats import crosshoi
from hoibench.vocab import LabelSpace, get_label_space

__all__ = [
    "AnswerSet",
    "AnswerWriter",
    "QuestionSet",
    "answer_permutation",
    "answer_to_dict",
    "question_from_dict",
    "question_to_dict",
    "read_answers",
    "read_questions",
    "write_answers",
    "write_questions",
]

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class QuestionSet(Sequence[MCQuestion]):
    """Questions with the header of their file (parameters, provenance)."""

    questions: tuple[MCQuestion, ...]
    header: Mapping[str, Any] = field(default_factory=dict)
    path: str | None = None

    def __len__(self) -> int:
        return len(self.questions)

    def __getitem__(self, i: Any) -> Any:
        return self.questions[i]

    def __iter__(self) -> Iterator[MCQuestion]:
        return iter(self.questions)

    def by_id(self) -> dict[str, MCQuestion]:
        return {q.id: q for q in self.questions}

    @property
    def seed(self) -> int:
        """Seed of the presentation order recorded in the header (0 when absent)."""
        return int(self.header.get("seed", 0) or 0)


@dataclass(frozen=True)
class AnswerSet(Sequence[MCAnswer]):
    """Answers read from a file, with its header and what reading had to skip."""

    answers: tuple[MCAnswer, ...]
    header: Mapping[str, Any] = field(default_factory=dict)
    n_replaced: int = 0
    n_truncated: int = 0

    def __len__(self) -> int:
        return len(self.answers)

    def __getitem__(self, i: Any) -> Any:
        return self.answers[i]

    def __iter__(self) -> Iterator[MCAnswer]:
        return iter(self.answers)

    def by_id(self) -> dict[str, MCAnswer]:
        """Answers by question id (the first permutation's when a file holds several)."""
        out: dict[str, MCAnswer] = {}
        for a in self.answers:
            out.setdefault(a.question_id, a)
        return out

    def permutations(self) -> list[int]:
        """Permutation numbers present (answers without one count as permutation 0)."""
        return sorted({answer_permutation(a) for a in self.answers})

    def for_permutation(self, permutation: int) -> dict[str, MCAnswer]:
        """Answers of one presentation order, by question id."""
        return {a.question_id: a for a in self.answers if answer_permutation(a) == permutation}


def answer_permutation(a: MCAnswer) -> int:
    """The presentation order an answer was given under (``meta["permutation"]``, default 0)."""
    return int(a.meta.get("permutation", 0) or 0)


# ----------------------------------------------------------------------------- questions

def _box_out(box: Any) -> list[float] | None:
    return None if box is None else [float(v) for v in box]


def question_to_dict(q: MCQuestion) -> dict[str, Any]:
    """One question as the JSON object of a question line."""
    return {
        "id": q.id,
        "file_name": q.file_name,
        "setting": q.setting,
        "choices": [{"text": c.text, "hoi": c.hoi, "verb": c.verb, "object": c.object} for c in q.choices],
        "correct": sorted(q.correct),
        "person_box": _box_out(q.person_box),
        "object_box": _box_out(q.object_box),
        "width": q.width,
        "height": q.height,
        "label_space": q.label_space,
        "meta": dict(q.meta),
    }


def _need(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], file: object, record: int) -> Any:
    if key not in obj:
        raise FormatError("missing", file=file, record=record, field=key)
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise FormatError(f"expected {getattr(kind, '__name__', kind)}, got {value!r}", file=file,
                          record=record, field=key)
    return value


def _box_in(value: Any, file: object, record: int, field: str) -> tuple[float, float, float, float] | None:
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 4
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
        raise FormatError(f"expected null or a box of 4 numbers, got {value!r}", file=file,
                          record=record, field=field)
    x1, y1, x2, y2 = (float(v) for v in value)
    if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
        raise FormatError(f"non-finite coordinate {value!r}", file=file, record=record, field=field)
    if x2 < x1 or y2 < y1:
        raise FormatError(f"inverted box (x2 < x1 or y2 < y1): {value!r}", file=file, record=record, field=field)
    return (x1, y1, x2, y2)


def _size(obj: Mapping[str, Any], key: str, file: object, record: int) -> int:
    value = obj.get(key) or 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FormatError(f"expected a non-negative integer, got {value!r}", file=file, record=record, field=key)
    return value


def _known_label_space(name: object) -> LabelSpace | None:
    """The label space a question's class ids index, where hoibench has it (not ``swig-hoi``)."""
    try:
        return get_label_space(name) if isinstance(name, str) else None
    except ConfigError:
        return None


def _check_classes(ids: list[int], vocab: LabelSpace | None, file: object, record: int, where: str) -> None:
    """A choice's ``hoi``, ``verb`` and ``object`` ids (-1: none) lie in ``vocab`` and agree with
    one another: a class outside it would be silently left out of every per-class count."""
    sizes = (vocab.n_hois, vocab.n_verbs, vocab.n_objects) if vocab is not None else (None, None, None)
    for key, v, n in zip(("hoi", "verb", "object"), ids, sizes):
        if v < -1 or (n is not None and v >= n):
            known = f"0..{n - 1} in {vocab.name}" if vocab is not None else "0 or more"
            raise FormatError(f"{v} is not a {key} class ({known}, or -1 for none)", file=file, record=record,
                              field=f"{where}.{key}")
    hoi, verb, obj = ids
    if vocab is not None and hoi >= 0:
        want = tuple(int(x) for x in vocab.hoi_verb_object[hoi])
        if (verb, obj) != want and (verb, obj) != (-1, -1):
            raise FormatError(f"HOI class {hoi} is verb {want[0]}, object {want[1]} in {vocab.name}, "
                              f"not verb {verb}, object {obj}", file=file, record=record, field=f"{where}.hoi")


def question_from_dict(obj: Any, *, file: object = None, record: int = 0) -> MCQuestion:
    """Parse one question line; problems name the file, the line and the field."""
    if not isinstance(obj, dict):
        raise FormatError(f"expected an object, got {type(obj).__name__}", file=file, record=record)
    vocab = _known_label_space(obj.get("label_space", "hico-det"))
    choices = []
    for k, c in enumerate(_need(obj, "choices", list, file, record)):
        if isinstance(c, str):
            choices.append(Choice(c))
            continue
        if not isinstance(c, dict) or not isinstance(c.get("text"), str):
            raise FormatError(f"expected {{text, hoi, verb, object}}, got {c!r}", file=file,
                              record=record, field=f"choices[{k}]")
        ids = []
        for key in ("hoi", "verb", "object"):
            v = c.get(key, -1)
            if isinstance(v, bool) or not isinstance(v, int):
                raise FormatError(f"expected an integer, got {v!r}", file=file, record=record,
                                  field=f"choices[{k}].{key}")
            ids.append(v)
        _check_classes(ids, vocab, file, record, f"choices[{k}]")
        choices.append(Choice(c["text"], *ids))
    correct = _need(obj, "correct", list, file, record)
    for v in correct:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(choices):
            raise FormatError(f"{v!r} is not a choice index (0..{len(choices) - 1})", file=file,
                              record=record, field="correct")
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        raise FormatError(f"expected an object, got {meta!r}", file=file, record=record, field="meta")
    try:
        return MCQuestion(
            id=str(_need(obj, "id", (str, int), file, record)),
            file_name=_need(obj, "file_name", str, file, record),
            setting=_need(obj, "setting", int, file, record),
            choices=tuple(choices),
            correct=frozenset(correct),
            person_box=_box_in(obj.get("person_box"), file, record, "person_box"),
            object_box=_box_in(obj.get("object_box"), file, record, "object_box"),
            width=_size(obj, "width", file, record),
            height=_size(obj, "height", file, record),
            label_space=str(obj.get("label_space", "hico-det")),
            meta=meta,
        )
    except ValidationError as exc:
        raise FormatError(str(exc), file=file, record=record) from None


def write_questions(path: PathLike, questions: Iterable[MCQuestion], *,
                    header: Mapping[str, Any] | None = None) -> None:
    """Write questions as JSONL with a header line; atomic and byte-stable for equal input."""
    with atomic_write(path, "wb") as fh:
        fh.write(dumps_json({"header": dict(header or {})}) + b"\n")
        for q in questions:
            fh.write(dumps_json(question_to_dict(q)) + b"\n")


#: stands for the unparsable last line of a file whose writer was interrupted
_TRUNCATED: Any = object()


def _jsonl_lines(data: bytes, file: object) -> Iterator[tuple[int, Any, bool]]:
    """``(line number, parsed object, is_last)`` for each non-empty line; a line that is not JSON
    raises, except the last one of a file that does not end with a newline (yielded as
    :data:`_TRUNCATED`, so that a line holding ``null`` is still an error of its own)."""
    lines = data.split(b"\n")
    ends_cleanly = data.endswith(b"\n")
    last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield i + 1, orjson.loads(line), i == last
        except orjson.JSONDecodeError as exc:
            if i == last and not ends_cleanly:
                yield i + 1, _TRUNCATED, True
                return
            raise FormatError(f"not valid JSON ({exc})", file=file, record=i + 1) from None


def _is_jsonl(data: bytes) -> bool:
    head = data.lstrip()[:1]
    if head != b"{":
        return False
    first = data.lstrip().split(b"\n", 1)[0]
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and ("header" in obj or "choices" in obj or "question_id" in obj)


@refuses_deep_nesting
def read_questions(path: PathLike, *, setting: int | None = None) -> QuestionSet:
    """Read questions from our JSONL files or from CrossHOI-Bench JSON files (auto-detected).

    ``setting`` overrides the setting of every question (e.g. 3 to run setting 3 on the
    person-box questions); questions of setting 1 cannot be turned into 2–3 (no person box).
    """
    p = Path(path)
    data = read_bytes(check_json_start(p, what="question JSONL or a CrossHOI-Bench JSON file"))
    if _is_jsonl(data):
        header: dict[str, Any] = {}
        questions = []
        seen: set[str] = set()
        for line, obj, _ in _jsonl_lines(data, p):
            if obj is _TRUNCATED:
                raise FormatError("truncated last line", file=p, record=line)
            if isinstance(obj, dict) and "header" in obj and not questions and not header:
                if not isinstance(obj["header"], dict):
                    raise FormatError("expected an object", file=p, record=line, field="header")
                header = obj["header"]
                continue
            q = question_from_dict(obj, file=p, record=line)
            if q.id in seen:
                raise FormatError(f"duplicate question id {q.id!r}", file=p, record=line, field="id")
            seen.add(q.id)
            questions.append(q)
        out = questions
    else:
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise FormatError(f"neither question JSONL nor a CrossHOI-Bench JSON file ({exc})", file=p) from None
        if not crosshoi.looks_like_crosshoi(parsed):
            raise FormatError("neither question JSONL (first line {\"header\": ...}) nor a "
                              "CrossHOI-Bench file ({file_name: {gt_choices, wrong_choices}})", file=p)
        out = crosshoi.read_crosshoi(p, data=parsed, setting=setting)
        header = {"source": "crosshoi-bench", "file": p.name, "seed": 0}
        setting = None
    if setting is not None:
        out = [_with_setting(q, setting, p) for q in out]
    return QuestionSet(tuple(out), header, str(p))


def _with_setting(q: MCQuestion, setting: int, file: object) -> MCQuestion:
    if setting in (2, 3) and q.person_box is None:
        raise FormatError(f"question {q.id!r} has no person box, so it cannot be asked in setting {setting}",
                          file=file)
    return q.with_setting(setting)


# ----------------------------------------------------------------------------- answers

def answer_to_dict(a: MCAnswer) -> dict[str, Any]:
    """One answers-JSONL line: ``selected`` is the sorted texts, a text picked twice listed twice
    (``MCAnswer.selections``), so equal answers give equal bytes."""
    out: dict[str, Any] = {"question_id": a.question_id, "selected": list(a.selections),
                           "raw": a.raw, "status": a.status}
    if "permutation" in a.meta:
        out["permutation"] = int(a.meta["permutation"])
    if a.meta:
        out["meta"] = dict(a.meta)
    return out


def write_answers(path: PathLike, answers: Iterable[MCAnswer], *,
                  header: Mapping[str, Any] | None = None) -> None:
    """Write all answers at once (atomic); ``selected`` is written as sorted choice texts (a
    text picked twice, twice)."""
    with atomic_write(path, "wb") as fh:
        if header is not None:
            fh.write(dumps_json({"header": dict(header)}) + b"\n")
        for a in answers:
            fh.write(dumps_json(answer_to_dict(a)) + b"\n")


class AnswerWriter:
    """Append answers to a JSONL file as they arrive, so an interrupted run can resume.

    Each answer is one ``write`` of a complete line followed by a flush; a crash can at worst
    leave a truncated last line, which :func:`read_answers` ignores. ``done`` holds the ids already
    in the file when it was opened.

    >>> with AnswerWriter("answers.jsonl", header={"model": "m"}) as w:  # doctest: +SKIP
    ...     if q.id not in w.done:
    ...         w.write(answer)
    """

    def __init__(self, path: PathLike, *, header: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.header = dict(header or {})
        self.done: set[str] = set()
        #: ``(question id, permutation)`` of the answers already in the file
        self.done_keys: set[tuple[str, int]] = set()
        self._fh: IO[bytes] | None = None

    def __enter__(self) -> AnswerWriter:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Open for appending: a new file gets the header, an existing one is resumed (its
        answers fill ``done``; a truncated last line is cut off first)."""
        ensure_dir(self.path.parent, for_path=self.path)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if not fresh:
            data = self.path.read_bytes()
            if not data.endswith(b"\n"):  # drop a truncated last line before appending
                cut = data.rfind(b"\n") + 1
                with open(self.path, "r+b") as fh:
                    fh.truncate(cut)
                fresh = not data[:cut].strip()  # only a truncated header: start over
        if not fresh:
            previous = read_answers(self.path)
            self.done = {a.question_id for a in previous}
            self.done_keys = {(a.question_id, answer_permutation(a)) for a in previous}
        self._fh = open(self.path, "ab")  # noqa: SIM115 - closed in close()
        if fresh:
            self._fh.write(dumps_json({"header": self.header}) + b"\n")
            self._fh.flush()

    def write(self, answer: MCAnswer) -> None:
        """Append one answer as a complete line and flush it (opens the file if needed)."""
        if self._fh is None:
            self.open()
        assert self._fh is not None
        self._fh.write(dumps_json(answer_to_dict(answer)) + b"\n")
        self._fh.flush()
        self.done.add(answer.question_id)
        self.done_keys.add((answer.question_id, answer_permutation(answer)))

    def close(self) -> None:
        """Flush, fsync and close (safe to call twice)."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None


def _resolve_selected(items: list[str], q: MCQuestion | None, seed: int, permutation: int,
                      file: object, record: int) -> list[str]:
    """Choice texts from texts and/or letters (letters need the question), in the given order
    with repeats (two letters of one text give it twice)."""
    if q is None:
        return list(items)
    texts = set(q.choice_texts)
    letters = {s.upper() for s in items if s not in texts and len(s) == 1 and s.upper() in LETTERS}
    table: dict[str, str] = {}
    if letters:
        try:
            q.letters_to_texts(letters, seed=seed, permutation=permutation)  # unknown letters raise
        except ValidationError as exc:
            raise FormatError(str(exc), file=file, record=record, field="selected") from None
        table = {k: c.text for k, c in q.lettered(seed, permutation)}
    # a text that is not a choice is kept: counted as out-of-choice by the scorer
    return [s if s in texts or s.upper() not in letters else table[s.upper()] for s in items]


def _order_number(obj: Mapping[str, Any], header: Mapping[str, Any], key: str, file: object,
                  record: int) -> int:
    """``seed`` / ``permutation`` of an answer line: the line's, else the header's, else 0."""
    value = obj.get(key, header.get(key, 0))
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FormatError(f"expected a non-negative integer, got {value!r}", file=file, record=record, field=key)
    return value


@refuses_deep_nesting
def read_answers(
    path: PathLike,
    questions: Sequence[MCQuestion] | Mapping[str, MCQuestion] | None = None,
    *,
    seed: int | None = None,
    permutation: int | None = None,
) -> AnswerSet:
    """Read an answers JSONL file.

    A text listed twice in ``selected`` (or two letters that show one text) is kept as a repeated
    pick (``MCAnswer.picks``): the ``crosshoi`` protocol counts it twice, as the released script
    counts its list of picks; everything else sees the set ``MCAnswer.selected``.

    Parameters
    ----------
    questions:
        Needed to turn letters into choice texts (letters follow each question's deterministic
        order for ``seed``/``permutation``, taken from the arguments, else the line, else the
        header, else 0).
    """
    p = Path(path)
    data = read_bytes(check_json_start(p, what="answer JSONL"))
    by_id: Mapping[str, MCQuestion] | None
    if questions is None:
        by_id = None
    elif isinstance(questions, Mapping):
        by_id = questions
    else:
        by_id = {q.id: q for q in questions}
    header: dict[str, Any] = {}
    answers: dict[tuple[str, int], MCAnswer] = {}
    replaced = truncated = 0
    if not data.strip():
        raise FormatError("empty file: no header and no answers", file=p)
    for line, obj, _is_last in _jsonl_lines(data, p):
        if obj is _TRUNCATED:
            truncated += 1
            continue
        if isinstance(obj, dict) and "header" in obj and not answers and not header:
            if not isinstance(obj["header"], dict):
                raise FormatError("expected an object", file=p, record=line, field="header")
            header = obj["header"]
            continue
        if not isinstance(obj, dict):
            raise FormatError(f"expected an object, got {type(obj).__name__}", file=p, record=line)
        qid = obj.get("question_id")
        if not isinstance(qid, (str, int)) or isinstance(qid, bool):
            raise FormatError(f"expected a string, got {qid!r}", file=p, record=line, field="question_id")
        qid = str(qid)
        sel = obj.get("selected", [])
        if sel is None:
            sel = []
        if not isinstance(sel, list) or not all(isinstance(s, str) for s in sel):
            raise FormatError(f"expected a list of strings, got {sel!r}", file=p, record=line, field="selected")
        status = obj.get("status", "ok")
        if status not in ANSWER_STATUSES:
            raise FormatError(f"must be one of {list(ANSWER_STATUSES)}; got {status!r}", file=p,
                              record=line, field="status")
        raw = obj.get("raw")
        s = seed if seed is not None else _order_number(obj, header, "seed", p, line)
        k = permutation if permutation is not None else _order_number(obj, header, "permutation", p, line)
        q = None if by_id is None else by_id.get(qid)
        selected = _resolve_selected(sel, q, s, k, p, line)
        meta = dict(obj["meta"]) if isinstance(obj.get("meta"), dict) else {}
        if "permutation" in obj:
            meta["permutation"] = k
        key = (qid, k)
        if key in answers:
            replaced += 1
        answers[key] = MCAnswer.from_picks(qid, selected, raw if raw is None or isinstance(raw, str) else str(raw),
                                           status, meta)
    if not answers and not header:
        raise FormatError("no header and no complete answer line (not an answers JSONL file?)", file=p)
    if truncated:
        logger.warning("%s: the last line is truncated (interrupted write); ignored", p)
    if replaced:
        logger.warning("%s: %d questions answered more than once; the last answer counts", p, replaced)
    return AnswerSet(tuple(answers.values()), header, replaced, truncated)
