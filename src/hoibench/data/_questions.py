"""Multiple-choice HOI questions and answers: the model shared by the question builder, the
CrossHOI-Bench loader, the VLM runners and the scorer (``001_*.txt`` sections 2–3).

A question asks which of its (usually four) choices describe the interactions of the people in
an image (setting 1), of a given target person (setting 2), or of the detected person matching
the target (setting 3). Choices keep their display text exactly as in the source file and, where
the text names an HOI class of the label space, that class. The order shown to a model is not
stored: :meth:`MCQuestion.order` derives it from ``(seed, question id, permutation)``, so every
run is reproducible (the reference code shuffles with an unseeded RNG).
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hoibench._exceptions import ValidationError

__all__ = ["ANSWER_STATUSES", "Choice", "MCAnswer", "MCQuestion", "choice_order"]

Box = tuple[float, float, float, float]
LETTERS = string.ascii_uppercase


@dataclass(frozen=True)
class Choice:
    """One answer option.

    ``hoi``/``verb``/``object`` index the question's label space; ``-1`` marks an
    out-of-vocabulary choice (a negative that is not a class of the dataset).
    """

    text: str
    hoi: int = -1
    verb: int = -1
    object: int = -1

    @property
    def in_vocabulary(self) -> bool:
        return self.hoi >= 0


def choice_order(seed: int, question_id: str, n: int, permutation: int = 0) -> tuple[int, ...]:
    """Deterministic order of ``n`` choices for a question: a permutation drawn from a generator
    seeded by sha256 of ``(seed, question id, permutation)``: numpy's
    ``Generator(PCG64(h)).permutation(n)`` of the digest's first 16 bytes ``h`` (little-endian).
    Answers files record these orders, so they must never change: numpy does not promise a
    ``Generator``'s streams across releases, and ``tests/test_choice_order.py`` pins known orders
    so that one which moves them fails."""
    digest = hashlib.sha256(f"{seed}\x1f{question_id}\x1f{permutation}".encode()).digest()
    rng = np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))
    return tuple(rng.permutation(n).tolist())


@dataclass(frozen=True)
class MCQuestion:
    """A multiple-answer multiple-choice HOI question.

    Attributes
    ----------
    id:
        Unique id; for CrossHOI-Bench files the image file name (``<file_name>#QA_k`` when an
        image holds several questions).
    file_name:
        Image file name.
    setting:
        1 (whole image), 2 (target person box given), 3 (the model detects people first).
    choices:
        The options in their stored order.
    correct:
        Indices (into ``choices``) of the correct options; may be empty (released data has a few).
    person_box, object_box:
        Target person (settings 2–3) and optional object box, 0-based pixel xyxy.
    width, height:
        Image size when known (0 otherwise).
    label_space:
        Name of the label space the choices' classes index (``"hico-det"``, ``"v-coco"``, ...).
    meta:
        Free-form provenance (source file, builder parameters, pair ids).
    """

    id: str
    file_name: str
    setting: int
    choices: tuple[Choice, ...]
    correct: frozenset[int]
    person_box: Box | None = None
    object_box: Box | None = None
    width: int = 0
    height: int = 0
    label_space: str = "hico-det"
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.setting not in (1, 2, 3):
            raise ValidationError(f"question {self.id!r}: setting must be 1, 2 or 3; got {self.setting!r}")
        if not self.choices:
            raise ValidationError(f"question {self.id!r}: no choices")
        if len(self.choices) > len(LETTERS):
            raise ValidationError(f"question {self.id!r}: more than {len(LETTERS)} choices")
        bad = [i for i in self.correct if not 0 <= i < len(self.choices)]
        if bad:
            raise ValidationError(f"question {self.id!r}: correct indices {bad} outside the choices")
        if self.setting in (2, 3) and self.person_box is None:
            raise ValidationError(f"question {self.id!r}: setting {self.setting} needs a person box")

    @property
    def correct_texts(self) -> frozenset[str]:
        return frozenset(self.choices[i].text for i in self.correct)

    @property
    def choice_texts(self) -> tuple[str, ...]:
        return tuple(c.text for c in self.choices)

    def order(self, seed: int = 0, permutation: int = 0) -> tuple[int, ...]:
        """Presentation order (indices into ``choices``) for a seed and permutation number."""
        return choice_order(seed, self.id, len(self.choices), permutation)

    def lettered(self, seed: int = 0, permutation: int = 0) -> list[tuple[str, Choice]]:
        """``[("A", choice), ("B", choice), ...]`` in the presentation order."""
        return [(LETTERS[k], self.choices[i]) for k, i in enumerate(self.order(seed, permutation))]

    def letters_to_texts(self, letters: set[str] | frozenset[str], seed: int = 0,
                         permutation: int = 0) -> frozenset[str]:
        """Map answer letters (in this seed's order) back to choice texts; unknown letters raise."""
        table = dict((k, c.text) for k, c in self.lettered(seed, permutation))
        unknown = sorted(set(letters) - set(table))
        if unknown:
            raise ValidationError(f"question {self.id!r}: letters {unknown} are not among {sorted(table)}")
        return frozenset(table[x] for x in letters)

    def with_setting(self, setting: int) -> MCQuestion:
        """The same question in another setting (settings 2 and 3 share their questions)."""
        from dataclasses import replace

        return replace(self, setting=setting)


ANSWER_STATUSES = ("ok", "parse_error", "no_person_match", "error", "missing")


@dataclass(frozen=True)
class MCAnswer:
    """A model's answer to one question.

    ``selected`` holds choice texts exactly as in the question (a set). ``status`` says how it
    came about: ``ok``, ``parse_error`` (no valid letters in the reply), ``no_person_match``
    (setting 3: no detected person overlapped the target), ``error`` (the request failed),
    ``missing`` (no answer in the file; scored as an empty prediction).

    ``picks`` keeps what a set cannot: a text picked more than once — a question that shows one
    text under two letters (a text listed twice in a CrossHOI-Bench file), or a reply naming a
    letter twice. It holds every pick, sorted, repeats kept, and is ``None`` whenever no text
    repeats (then ``selected`` says everything); ``set(picks) == selected`` always. Only the
    ``crosshoi`` scoring protocol reads it (the released script counts a list of picks); the
    ``paper`` protocol and every other caller use the set. Build one with :meth:`from_picks`.
    """

    question_id: str
    selected: frozenset[str]
    raw: str | None = None
    status: str = "ok"
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)
    picks: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.status not in ANSWER_STATUSES:
            raise ValidationError(f"answer status must be one of {list(ANSWER_STATUSES)}; got {self.status!r}")
        if self.picks is not None:
            picks = tuple(sorted(self.picks))
            if frozenset(picks) != self.selected:
                raise ValidationError(f"answer {self.question_id!r}: picks {list(picks)} are not the texts of "
                                      f"selected {sorted(self.selected)}")
            object.__setattr__(self, "picks", picks if len(picks) > len(self.selected) else None)

    @classmethod
    def from_picks(cls, question_id: str, picks: Iterable[str], raw: str | None = None, status: str = "ok",
                   meta: Mapping[str, Any] | None = None) -> MCAnswer:
        """An answer from its picks in any order, repeats kept (``selected`` is their set)."""
        picks = tuple(picks)
        return cls(question_id, frozenset(picks), raw, status, {} if meta is None else meta, picks)

    @property
    def selections(self) -> tuple[str, ...]:
        """Every pick, sorted; a text picked twice appears twice (``picks``, else ``selected``)."""
        return self.picks if self.picks is not None else tuple(sorted(self.selected))
