"""Prompt templates as versioned data (``prompts/*.yaml``) and the functions that render a
question into the exact text a model sees.

A template is loaded into a frozen :class:`PromptTemplate` that rejects unknown keys, so a typo
in a user's template is an error rather than a silently ignored field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import parse_yaml_mapping
from hoibench.data import Choice, MCQuestion, shown_choice_text

__all__ = ["ANSWER_FORMATS", "PromptTemplate", "RenderedQuestion", "load_template", "render_question"]

#: answer-format instructions; ``letters`` is the paper's main protocol
ANSWER_FORMATS = ("letters", "answer_tag", "reasoning_first", "answer_first")

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class PromptTemplate:
    """The texts of one prompt family; see ``prompts/crosshoi.yaml`` for the meaning of fields."""

    name: str
    version: str
    question_image: str
    question_person: str
    choices_header: str
    choice_line: str
    instructions: Mapping[str, str]
    detection: str
    image_size: str
    rename_no_interaction: bool = True
    pad_choices_to: int = 0
    pad_text: str = "None"
    source: str = ""
    #: setting 2 with person and object boxes ({box}, {object_box}); empty: not offered
    question_person_object: str = ""

    @property
    def tag(self) -> str:
        """``name@version``, recorded in answers headers."""
        return f"{self.name}@{self.version}"

    def instruction(self, answer_format: str) -> str:
        if answer_format not in self.instructions:
            raise ConfigError(f"answer_format must be one of {sorted(self.instructions)}; "
                              f"got {answer_format!r}")
        return self.instructions[answer_format]


def load_template(name_or_path: str | Path = "crosshoi") -> PromptTemplate:
    """Load a bundled template by name (``crosshoi``) or a user's YAML file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml", ".json") and path.exists():
        text, where = path.read_text(encoding="utf-8"), str(path)
    else:
        res = resources.files("hoibench.runners.mcq") / "prompts" / f"{name_or_path}.yaml"
        if not res.is_file():
            bundled = sorted(p.name.rsplit(".", 1)[0]
                             for p in (resources.files("hoibench.runners.mcq") / "prompts").iterdir()
                             if p.name.endswith(".yaml"))
            raise ConfigError(f"prompt template {str(name_or_path)!r} is neither a file nor one of "
                              f"the bundled templates {bundled}")
        text, where = res.read_text(encoding="utf-8"), f"prompts/{name_or_path}.yaml"
    raw = parse_yaml_mapping(text, where=where, what="a template")
    fields = {f.name: f for f in dataclasses.fields(PromptTemplate)}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise FormatError(f"unknown keys {unknown}; allowed: {sorted(fields)}", file=where)
    required = [n for n, f in fields.items()
                if f.default is dataclasses.MISSING and n not in raw]
    if required:
        raise FormatError(f"missing keys {required}", file=where)
    if not isinstance(raw["instructions"], dict) or "letters" not in raw["instructions"]:
        raise FormatError("must map answer formats to texts and include 'letters'", file=where,
                          field="instructions")
    if "{box}" not in raw["question_person"]:
        raise FormatError("must contain the {box} placeholder", file=where, field="question_person")
    raw["version"] = str(raw["version"])
    return PromptTemplate(**raw)


@dataclass(frozen=True)
class RenderedQuestion:
    """The prompt text of one question and the letter → choice-text table that parses its reply.

    ``letters`` maps every shown letter to the choice text as stored in the question, or to
    ``None`` for padding choices that are not part of the question.
    """

    text: str
    letters: Mapping[str, str | None]
    order: tuple[int, ...]
    #: the head (question with its box) and each letter's choice as shown, for harnesses that
    #: lay the choices out themselves (VLMEvalKit's ``A``-``D`` columns)
    head: str = ""
    shown: Mapping[str, str] = dataclasses.field(default_factory=dict)


def _display(choice: Choice, rename: bool) -> str:
    return shown_choice_text(choice.text) if rename else choice.text


def render_question(question: MCQuestion, template: PromptTemplate, *, setting: int | None = None,
                    box_text: str | None = None, object_box_text: str | None = None,
                    answer_format: str = "letters", seed: int = 0,
                    permutation: int = 0) -> RenderedQuestion:
    """The prompt of ``question`` in ``setting`` (default: the question's own).

    ``box_text`` is the target person's box already written in the model's coordinates
    (settings 2 and 3); ``object_box_text`` (setting 2) selects the person-and-object question.
    Choices appear in the order ``question.order(seed, permutation)``.
    """
    setting = question.setting if setting is None else setting
    if setting == 1:
        head = template.question_image
    else:
        if box_text is None:
            raise ConfigError(f"question {question.id!r}: setting {setting} needs a box text")
        if object_box_text is not None:
            if not template.question_person_object:
                raise ConfigError(f"template {template.tag} has no person-and-object question")
            head = (template.question_person_object.replace("{box}", box_text)
                    .replace("{object_box}", object_box_text))
        else:
            head = template.question_person.replace("{box}", box_text)
    order = question.order(seed, permutation)
    shown: list[tuple[str, str | None]] = [
        (_display(question.choices[i], template.rename_no_interaction), question.choices[i].text)
        for i in order]
    while len(shown) < template.pad_choices_to:
        shown.append((template.pad_text, None))
    lines = [template.choice_line.replace("{letter}", LETTERS[k]).replace("{text}", disp)
             for k, (disp, _) in enumerate(shown)]
    text = (head + template.choices_header + "\n".join(lines) + "\n"
            + template.instruction(answer_format))
    return RenderedQuestion(text, {LETTERS[k]: stored for k, (_, stored) in enumerate(shown)}, order,
                            head, {LETTERS[k]: disp for k, (disp, _) in enumerate(shown)})
