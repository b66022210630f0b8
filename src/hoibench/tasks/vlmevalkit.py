"""hoibench's multiple-choice questions as a VLMEvalKit benchmark, and VLMEvalKit's predictions
back as hoibench answers.

VLMEvalKit (open-compass/VLMEvalKit) reads a benchmark as ``$LMUData/NAME.tsv``: the base64
``image`` cell (a short cell names the ``index`` of the row that holds the image, so an image is
stored once) and the text cells. Left to itself it treats an unknown ``NAME`` with ``A`` and
``B`` columns as a ``CustomMCQDataset`` and writes its own frame around the cells (``Hint:`` /
``Question:`` / ``Options:`` / a closing sentence, or the model class's own MCQ prompt). So the
exported row also holds ``hoibench_prompt``, the text ``mcq run`` sends, and
:func:`vlmevalkit_dataset_class` is the VLMEvalKit dataset whose ``build_prompt`` sends the
image and that text, nothing around it (``force_use_dataset_prompt``: no model's MCQ prompt
either); :mod:`hoibench.tasks.vlmevalkit_run` registers it for the exported names and runs
VLMEvalKit's ``run.py``. Inference writes ``{model}_{NAME}.xlsx`` with every column but
``image`` plus ``prediction``.

Its built-in MCQ score extracts *one* letter per reply and compares it with ``answer``: that is
single-answer accuracy, and hoibench's questions have one to four correct choices. So the score
comes back here: the ``hoibench_*`` columns survive into the prediction file, and
:func:`read_vlmevalkit_answers` turns each reply into an answer with the letters of *that* row's
choice order, ready for ``hoibench mcq score`` (all six metrics, both protocols).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import ImageFolder, read_bytes
from hoibench._version import __version__
from hoibench.data import MCAnswer, MCQuestion
from hoibench.data._questions import LETTERS
from hoibench.formats.questions import AnswerSet
from hoibench.formats.vlmevalkit import read_vlmevalkit_table, write_vlmevalkit_tsv
from hoibench.runners.finetune import without_image_tag
from hoibench.runners.mcq import (
    PromptTemplate,
    answer_from_reply,
    check_single_turn,
    prepare_question,
)

__all__ = ["PROMPT_COLUMN", "VLMEVALKIT_COLUMNS", "VLMEVALKIT_FAIL_MSG", "read_vlmevalkit_answers",
           "register_vlmevalkit_datasets", "vlmevalkit_dataset_class", "vlmevalkit_message", "vlmevalkit_rows",
           "write_vlmevalkit_benchmark"]

#: the cell holding the text ``mcq run`` sends after the image (what the model reads, byte for byte)
PROMPT_COLUMN = "hoibench_prompt"

#: the columns before the choice letters and after them (``hoibench_*``: read back by hoibench)
_HEAD = ("index", "image", "hint", "question")
_TAIL = ("answer", "category", PROMPT_COLUMN, "hoibench_id", "hoibench_setting", "hoibench_permutation", "hoibench_order",
         "hoibench_answer_format", "hoibench_box_convention", "hoibench_template", "hoibench_version")
VLMEVALKIT_COLUMNS = (*_HEAD, "A", "B", "C", "D", *_TAIL)


#: what VLMEvalKit's API wrappers return for a call that got no answer (``BaseAPI.fail_msg``; its
#: inference re-runs rows holding it, and keeps it where the re-run fails too)
VLMEVALKIT_FAIL_MSG = "Failed to obtain answer via API."


def _vlmevalkit_question(head: str) -> str:
    """hoibench's question head without its ``<image>`` placeholder (VLMEvalKit places the image)
    and without the template's ``Question:`` label (VLMEvalKit writes its own before this cell)."""
    text = without_image_tag(head).strip()
    return re.sub(r"(^|\n)Question:[ \t]*", r"\1", text)


def vlmevalkit_rows(questions: Sequence[MCQuestion], images: ImageFolder, *, box_convention: str,
                    template: PromptTemplate, answer_format: str = "letters", seed: int = 0,
                    permutation: int = 0, box_shift: float = 0.0, questions_file: str | None = None,
                    ) -> Iterator[dict[str, Any]]:
    """One VLMEvalKit row per question: the image prepared for ``box_convention`` (base64, once
    per image), the question with its box in that image's coordinates, the choices in the order
    ``question.order(seed, permutation)``, the correct letters, and the ``hoibench_*`` columns."""
    for q in questions:
        check_single_turn(box_convention, q.setting)
    first: dict[str, int] = {}
    for index, q in enumerate(questions):
        path = images.path(q.file_name, file=questions_file, record=repr(q.id))
        if not path.is_file():
            raise ConfigError(f"question {q.id!r}: image {path} not found")
        prep = prepare_question(q, path, box_convention=box_convention, template=template,
                                answer_format=answer_format, seed=seed, permutation=permutation,
                                box_shift=box_shift)
        if q.file_name in first:
            image = str(first[q.file_name])  # VLMEvalKit: a short cell is the index of the image's row
        else:
            first[q.file_name] = index
            data, _ = prep.image_bytes(read_bytes(path))
            image = base64.b64encode(data).decode("ascii")
        letters = prep.rendered.letters
        correct = set(q.correct_texts)
        row: dict[str, Any] = {
            "index": index, "image": image, "hint": template.instruction(answer_format).strip(),
            "question": _vlmevalkit_question(prep.rendered.head),
            # not the template's "None" padding: pandas reads that cell as NaN, VLMEvalKit drops it
            **{k: v for k, v in prep.rendered.shown.items() if letters[k] is not None},
            "answer": "".join(k for k, t in letters.items() if t is not None and t in correct),
            "category": f"setting {q.setting}", PROMPT_COLUMN: prep.rendered.text, "hoibench_id": q.id, "hoibench_setting": q.setting,
            "hoibench_permutation": permutation, "hoibench_order": ",".join(map(str, prep.rendered.order)),
            "hoibench_answer_format": answer_format, "hoibench_box_convention": box_convention,
            "hoibench_template": template.tag, "hoibench_version": __version__}
        yield row


def write_vlmevalkit_benchmark(path: str | Path, questions: Sequence[MCQuestion], images: ImageFolder,
                               **kwargs: Any) -> int:
    """Write :func:`vlmevalkit_rows` as ``path`` (a TSV named like the dataset); returns the row count."""
    qs = list(questions)
    n_letters = max([4, *(len(q.choices) for q in qs)])
    columns = (*_HEAD, *LETTERS[:n_letters], *_TAIL)
    return write_vlmevalkit_tsv(path, columns, vlmevalkit_rows(qs, images, **kwargs))


#: the column :func:`vlmevalkit_dataset_class` adds to the rows it serves, so the prediction file
#: says the model got ``hoibench_prompt`` (a file without it: VLMEvalKit's own MCQ frame)
ROUTE_COLUMN = "hoibench_route"


def vlmevalkit_message(line: Mapping[str, Any], images: str | Sequence[str], *, file: str | None = None,
                       ) -> list[dict[str, str]]:
    """``mcq run``'s message for an exported row in VLMEvalKit's form: the image(s) first, then
    the row's ``hoibench_prompt`` cell as the one text part, nothing around it (``mcq run`` sends
    one user message, image then text, no system prompt)."""
    text = line.get(PROMPT_COLUMN) if hasattr(line, "get") else None
    if not isinstance(text, str) or not text:
        raise FormatError("no prompt: a TSV of `hoibench mcq export --to vlmevalkit` (re-export it with this "
                          "hoibench) holds the text mcq run sends here", file=file,
                          record=f"index {line.get('index') if hasattr(line, 'get') else '?'}", field=PROMPT_COLUMN)
    paths = [images] if isinstance(images, str) else list(images)
    return [*({"type": "image", "value": str(p)} for p in paths), {"type": "text", "value": text}]


def vlmevalkit_dataset_class(base: type | None = None) -> type:
    """The VLMEvalKit dataset of exported TSVs: ``base`` (default VLMEvalKit's
    ``CustomMCQDataset``, which loads ``$LMUData/NAME.tsv`` and decodes its images) with
    ``build_prompt`` = :func:`vlmevalkit_message`, and ``force_use_dataset_prompt`` so that a
    model class's own MCQ prompt does not replace it. ``DATASET_NAMES``: the names it serves."""
    if base is None:
        from vlmeval.dataset import CustomMCQDataset as base
    assert base is not None

    class HOIBenchMCQDataset(base):  # type: ignore[misc, valid-type]
        """hoibench's questions with the message ``mcq run`` sends (:mod:`hoibench.tasks.vlmevalkit`)."""

        force_use_dataset_prompt = True
        DATASET_NAMES: tuple[str, ...] = ()

        @classmethod
        def supported_datasets(cls) -> list[str]:
            return list(cls.DATASET_NAMES)

        def post_build(self, dataset: str) -> None:
            super().post_build(dataset)
            self.data[ROUTE_COLUMN] = PROMPT_COLUMN  # kept in the prediction file: read back by mcq score

        def build_prompt(self, line: Any) -> list[dict[str, str]]:
            if isinstance(line, int):
                line = self.data.iloc[line]
            return vlmevalkit_message(line, self.dump_image(line), file=f"{self.dataset_name}.tsv")

    return HOIBenchMCQDataset


def register_vlmevalkit_datasets(*names: str) -> type:
    """Make VLMEvalKit's ``build_dataset``/``DATASET_TYPE`` (and ``--data-config``'s
    ``"class": "HOIBenchMCQDataset"``) find the dataset of :func:`vlmevalkit_dataset_class` for
    ``names``, ahead of its ``CustomMCQDataset`` fallback; returns the class."""
    import vlmeval.dataset as vd

    cls = getattr(vd, "HOIBenchMCQDataset", None) or vlmevalkit_dataset_class()
    cls.DATASET_NAMES = tuple(dict.fromkeys((*cls.DATASET_NAMES, *names)))
    if cls not in vd.DATASET_CLASSES:
        vd.DATASET_CLASSES.insert(0, cls)
        vd.HOIBenchMCQDataset = cls
    vd.SUPPORTED_DATASETS.extend(n for n in names if n not in vd.SUPPORTED_DATASETS)
    return cls


def read_vlmevalkit_answers(path: str | Path, questions: Iterable[MCQuestion]) -> AnswerSet:
    """Answers from a VLMEvalKit prediction file of a :func:`write_vlmevalkit_benchmark` TSV:
    each ``prediction`` parsed as ``mcq run`` parses a reply, with the letters of the row's own
    choice order (``hoibench_order``); ``hoibench_permutation`` keeps choice orders apart. A row
    holding VLMEvalKit's failure text (:data:`VLMEVALKIT_FAIL_MSG`) is an ``error`` answer, not
    an empty reply, so ``mcq score`` counts and names it. The header's ``prompt`` says what the
    model was sent: ``hoibench`` (mcq run's message, every row served by
    :func:`vlmevalkit_dataset_class`) or ``vlmevalkit`` (VLMEvalKit's own MCQ frame)."""
    by_id = {q.id: q for q in questions}
    rows = read_vlmevalkit_table(path, required=("index", "prediction", "hoibench_id", "hoibench_order"))
    answers: list[MCAnswer] = []
    seen: dict[tuple[str, int], str] = {}
    for row in rows:
        qid, where = row["hoibench_id"], f"index {row['index']}"
        try:
            perm = int(row.get("hoibench_permutation") or 0)
            order = [int(x) for x in row["hoibench_order"].split(",")]
        except ValueError:
            raise FormatError("expected comma-separated integers", file=path, record=where,
                              field="hoibench_order") from None
        key = (qid, perm)
        if key in seen:
            raise FormatError(f"question {qid!r} (order {perm}) is also the row of {seen[key]}", file=path,
                              record=where, field="hoibench_id")
        seen[key] = where
        meta = {"permutation": perm, "order": order, "vlmevalkit_index": row["index"]}
        q = by_id.get(qid)
        if q is None:  # scored as an answer to an unknown question (mcq score says how many)
            answers.append(MCAnswer(qid, frozenset(), row["prediction"], "ok", meta))
            continue
        if sorted(order) != list(range(len(q.choices))):
            raise FormatError(f"{order} is not an order of question {qid!r}'s {len(q.choices)} choices "
                              "(a prediction file of another question file?)", file=path, record=where,
                              field="hoibench_order")
        if VLMEVALKIT_FAIL_MSG in row["prediction"]:  # no reply: an error, as mcq run counts one
            answers.append(MCAnswer(qid, frozenset(), row["prediction"], "error",
                                    {**meta, "error": row["prediction"].strip()}))
            continue
        letters: dict[str, str | None] = {LETTERS[k]: q.choices[i].text for k, i in enumerate(order)}
        answers.append(answer_from_reply(qid, row["prediction"], letters,
                                         answer_format=row.get("hoibench_answer_format") or "letters",
                                         meta=meta))
    # the rows HOIBenchMCQDataset served carry its mark; others got VLMEvalKit's own MCQ frame
    prompt = "hoibench" if rows and all(r.get(ROUTE_COLUMN) == PROMPT_COLUMN for r in rows) else "vlmevalkit"
    return AnswerSet(tuple(answers), {"kind": "mcq_answers", "source": "vlmevalkit", "predictions": str(path),
                                      "prompt": prompt})
