"""The functions hoibench's lmms-eval task files name (``hoibench/tasks/*.yaml``, through
``_lmms_entry.py``, which stops the run where ``hoibench`` cannot be imported), and the question
file they load.

lmms-eval loads the plugin with ``LMMS_EVAL_PLUGINS=hoibench``: this package's folder joins its
task search path. Each task is one setting (1 or 2) under one box convention, passed as
``lmms_eval_specific_kwargs.default.box_convention`` (lmms-eval picks model kwargs by model
*class*, not by VLM family, so the convention is a task variant). Per question:

- ``doc_to_visual`` — the image :func:`~hoibench.runners.mcq.prepare_question` prepares (resized
  for the Qwen conventions, as ``mcq run`` sends it), read from ``$HOIBENCH_MCQ_IMAGES`` or else
  lmms-eval's ``$LMMS_EVAL_MEDIA_ROOT`` (names that leave the folder are refused);
- ``doc_to_text`` — hoibench's prompt (bundled ``crosshoi`` template, letters format, choice
  order of seed 0, permutation 0) with the box in that image's coordinates;
- ``process_results`` — the reply, kept with its question; the six aggregations parse every reply
  as ``mcq run`` does and return :func:`~hoibench.evaluation.mcq_metrics`'s numbers (``paper``
  protocol, fractions), so lmms-eval reports what ``hoibench mcq score`` reports.

The questions are a JSONL file ``datasets`` loads (:func:`write_lmms_eval_questions`; no header
line, provenance in every row), found as ``hoibench_mcq.jsonl`` in the folder lmms-eval runs in.

lmms-eval's ``--log_samples`` file (``{date}_samples_{task}.jsonl``) keeps, per question, what
:func:`process_results` returned — the question row and the reply — so
:func:`read_lmms_eval_samples` turns it back into answers for ``mcq score``, ``analyze`` and
``compare`` (intervals, the image bootstrap, paired comparisons).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import ImageFolder, atomic_write, dumps_json, iter_jsonl, read_bytes
from hoibench._version import __version__
from hoibench.data import MCAnswer, MCQuestion
from hoibench.evaluation import MCQ_METRIC_NAMES, MCQResult, mcq_metrics
from hoibench.formats.questions import AnswerSet, question_from_dict, question_to_dict
from hoibench.runners.mcq import (
    PreparedQuestion,
    PromptTemplate,
    answer_from_reply,
    load_template,
    prepare_question,
    render_question,
)

__all__ = [
    "IMAGES_ENV",
    "QUESTIONS_FILE",
    "aggregate_avg_precision",
    "aggregate_avg_recall",
    "aggregate_exact_match",
    "aggregate_instance_f1",
    "aggregate_macro_f1",
    "aggregate_micro_f1",
    "doc_to_target",
    "doc_to_text",
    "doc_to_visual",
    "is_lmms_eval_samples",
    "process_results",
    "question_of",
    "read_lmms_eval_samples",
    "setting_1_docs",
    "setting_2_docs",
    "write_lmms_eval_questions",
]

#: the data file the task files load (``datasets`` resolves it in the working folder)
QUESTIONS_FILE = "hoibench_mcq.jsonl"
#: where the images are looked up, first set wins
IMAGES_ENV = ("HOIBENCH_MCQ_IMAGES", "LMMS_EVAL_MEDIA_ROOT")
TEMPLATE = "crosshoi"


def write_lmms_eval_questions(path: str | Path, questions: Iterable[MCQuestion], *, source: str | Path) -> int:
    """Questions as a ``datasets``-loadable JSONL file: one question per line (hoibench's
    question object, ``meta`` as a JSON string so every row has one schema), and the provenance
    in every row (``source_file``, ``source_sha256``, ``hoibench_version``), no header line."""
    digest = hashlib.sha256(read_bytes(source)).hexdigest()
    n = 0
    with atomic_write(path, "wb") as fh:
        for q in questions:
            row = question_to_dict(q)
            row["meta_json"] = json.dumps(row.pop("meta"), sort_keys=True)
            row.update(source_file=Path(source).name, source_sha256=digest, hoibench_version=__version__)
            fh.write(dumps_json(row) + b"\n")
            n += 1
    return n


def question_of(doc: Mapping[str, Any], *, file: str | Path = QUESTIONS_FILE, record: Any = None) -> MCQuestion:
    """The question of one row of :func:`write_lmms_eval_questions`' file (errors name ``file``
    and ``record``, by default the question file and the row's id)."""
    obj = {k: v for k, v in doc.items() if k != "meta_json"}
    try:
        obj["meta"] = json.loads(doc.get("meta_json") or "{}")
    except (TypeError, ValueError):
        raise FormatError("expected a JSON object as text", file=file, record=record or doc.get("id"),
                          field="meta_json") from None
    return question_from_dict(obj, file=file, record=doc.get("id") if record is None else record)


def setting_1_docs(dataset: Any) -> Any:
    """``process_docs`` of the setting-1 tasks."""
    return dataset.filter(lambda d: d["setting"] == 1)


def setting_2_docs(dataset: Any) -> Any:
    """``process_docs`` of the setting-2 tasks."""
    return dataset.filter(lambda d: d["setting"] == 2)


@lru_cache(maxsize=1)
def _template() -> PromptTemplate:
    return load_template(TEMPLATE)


def _images() -> ImageFolder:
    for name in IMAGES_ENV:
        root = os.environ.get(name, "").strip()
        if root:
            return ImageFolder(Path(root).expanduser())
    raise ConfigError(f"hoibench lmms-eval tasks: set {IMAGES_ENV[0]} (or {IMAGES_ENV[1]}) to the images folder")


_PREPARED: OrderedDict[tuple[str, str, str], PreparedQuestion] = OrderedDict()


def _convention(kwargs: Mapping[str, Any] | None) -> str:
    conv = (kwargs or {}).get("box_convention")
    if not conv:
        raise ConfigError("hoibench lmms-eval task without lmms_eval_specific_kwargs.box_convention")
    return str(conv)


def _prepared(doc: Mapping[str, Any], kwargs: Mapping[str, Any] | None) -> PreparedQuestion:
    """One prepared question per (question, convention), shared by doc_to_visual and doc_to_text."""
    conv = _convention(kwargs)
    images = _images()
    key = (str(doc["id"]), conv, str(images.resolved))
    hit = _PREPARED.get(key)
    if hit is None:
        q = question_of(doc)
        path = images.path(q.file_name, file=QUESTIONS_FILE, record=repr(q.id))
        if not path.is_file():
            raise ConfigError(f"question {q.id!r}: image {path} not found")
        hit = _PREPARED[key] = prepare_question(q, path, box_convention=conv, template=_template())
        while len(_PREPARED) > 256:
            _PREPARED.popitem(last=False)
    return hit


def doc_to_visual(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> list[Any]:
    """The image the model family expects (a PIL image at the size sent)."""
    return [_prepared(doc, lmms_eval_specific_kwargs).image]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """hoibench's prompt, the box in the coordinates of :func:`doc_to_visual`'s image."""
    return _prepared(doc, lmms_eval_specific_kwargs).rendered.text


def _letters(q: MCQuestion) -> Mapping[str, str | None]:
    # the letter table depends on the choice order only, not on the box: any box text will do
    return render_question(q, _template(), box_text="[]").letters


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The correct letters (e.g. ``A,C``), for lmms-eval's logs."""
    q = question_of(doc)
    correct = set(q.correct_texts)
    return ",".join(k for k, t in _letters(q).items() if t is not None and t in correct)


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """The reply with its question, under every metric name (the aggregations score them all)."""
    reply = results[0] if results else None
    if hasattr(reply, "text"):  # lmms-eval's GenerationResult
        reply = reply.text
    item = {"doc": dict(doc), "reply": None if reply is None else str(reply)}
    return {name: item for name in MCQ_METRIC_NAMES}


_LAST: list[Any] = [None, None]  # (key, result): the six aggregations score the same items once


def _score(items: Sequence[Mapping[str, Any]]) -> MCQResult:
    key = tuple((str(i["doc"]["id"]), i["reply"]) for i in items)
    if _LAST[0] != key:
        qs = [question_of(i["doc"]) for i in items]
        answers: list[MCAnswer] = [answer_from_reply(q.id, i["reply"], _letters(q)) for q, i in zip(qs, items)]
        _LAST[:] = [key, mcq_metrics(answers, qs, protocol="paper")]
    return _LAST[1]


def _aggregation(metric: str) -> Callable[[Sequence[Mapping[str, Any]]], float]:
    def aggregate(items: Sequence[Mapping[str, Any]]) -> float:
        return float(getattr(_score(items), metric))

    aggregate.__name__ = f"aggregate_{metric}"
    aggregate.__doc__ = f"hoibench's {metric} (paper protocol, a fraction) of the replies."
    return aggregate


aggregate_macro_f1 = _aggregation("macro_f1")
aggregate_instance_f1 = _aggregation("instance_f1")
aggregate_micro_f1 = _aggregation("micro_f1")
aggregate_exact_match = _aggregation("exact_match")
aggregate_avg_precision = _aggregation("avg_precision")
aggregate_avg_recall = _aggregation("avg_recall")


#: the keys that tell an lmms-eval ``--log_samples`` record (lmms-eval 0.7: ``doc_id``,
#: ``target``, ``filtered_resps``, ... and one entry per metric holding process_results' item)
_SAMPLE_KEYS = ("doc_id", "filtered_resps")


def is_lmms_eval_samples(path: str | Path) -> bool:
    """Whether ``path`` is an lmms-eval ``--log_samples`` file: its first line is a JSON object with
    ``doc_id`` and ``filtered_resps`` (an answers file of hoibench never has them)."""
    try:
        if not Path(path).is_file():  # a FIFO or device would block here; the reader refuses it
            return False
        with open(path, "rb") as fh:
            first = fh.readline(1 << 24).strip()
    except OSError:
        return False  # the answers reader says what is wrong with the path
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply: the reader names it
        return False
    return isinstance(record, dict) and all(k in record for k in _SAMPLE_KEYS)


def read_lmms_eval_samples(path: str | Path, questions: Iterable[MCQuestion]) -> AnswerSet:
    """Answers from lmms-eval's ``--log_samples`` file of a ``hoibench_mcq`` task: each record's
    reply (kept by :func:`process_results`) read with the letters of the task's prompt, as the
    task's aggregations read it. A record whose question differs from ``questions``' (another
    question file) or that holds no hoibench item (another task's file) is refused."""
    by_id = {q.id: q for q in questions}
    metric = MCQ_METRIC_NAMES[0]
    answers: list[MCAnswer] = []
    seen: dict[str, int] = {}
    for n, record in iter_jsonl(path, torn=lambda lines, k: False):
        where = n + 1
        item = record.get(metric) if isinstance(record, dict) else None
        if not isinstance(item, dict) or not isinstance(item.get("doc"), dict) or "reply" not in item:
            raise FormatError(f"no hoibench item under {metric!r}: not a samples file of a hoibench_mcq task",
                              file=path, record=where, field=metric)
        doc, reply = item["doc"], item["reply"]
        if reply is not None and not isinstance(reply, str):
            raise FormatError(f"expected a string or null, got {type(reply).__name__}", file=path, record=where,
                              field=f"{metric}.reply")
        asked = question_of(doc, file=path, record=where)
        if asked.id in seen:
            raise FormatError(f"question {asked.id!r} is also record {seen[asked.id]}", file=path, record=where,
                              field=f"{metric}.doc.id")
        seen[asked.id] = where
        meta = {"lmms_eval_doc_id": record.get("doc_id")}
        q = by_id.get(asked.id)
        if q is None:  # scored as an answer to an unknown question (mcq score says how many)
            answers.append(MCAnswer(asked.id, frozenset(), reply, "ok", meta))
            continue
        if asked != q:
            raise FormatError(f"question {q.id!r} is not the one of the question file (choices, answer or box "
                              "differ: a samples file of another question file?)", file=path, record=where,
                              field=f"{metric}.doc")
        answers.append(answer_from_reply(q.id, reply, _letters(q), meta=meta))
    return AnswerSet(tuple(answers), {"kind": "mcq_answers", "source": "lmms-eval", "samples": str(path)})
