"""Prompt texts of the augmentation pipeline (data files in ``augment/prompts/``), the words they
are filled with (verb gerunds, objects with articles, boxes) and the parsing of the answers.

The paper (``002``, section 4.2-4.3, supplementary D) prints its prompts only as figures; the
files follow its wording where it is given in the text (the verification question and the basic
prompt "a photo of a person {verb}-ing a/an {object}") and its description elsewhere.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hoibench._exceptions import ConfigError
from hoibench.models import format_box

__all__ = [
    "BOX_FORMATS",
    "PROMPT_FIELDS",
    "PromptSet",
    "box_text",
    "object_phrase",
    "verb_gerund",
]

#: prompt name → the placeholders it may use (anything else is rejected when loading)
PROMPT_FIELDS: dict[str, frozenset[str]] = {
    "describe": frozenset({"verb", "verb_ing", "object", "a_object"}),
    "basic": frozenset({"verb", "verb_ing", "object", "a_object"}),
    "region_describe": frozenset({"verb", "verb_ing", "object", "a_object", "subject_box",
                                  "object_box"}),
    "verify": frozenset({"verb", "verb_ing", "object", "a_object", "description"}),
    "paraphrase": frozenset({"verb", "verb_ing", "object", "a_object", "prompt"}),
    "pseudo_label": frozenset({"verb", "verb_ing", "object", "a_object", "subject_box",
                               "object_box"}),
}

_IRREGULAR = {"open": "opening", "exit": "exiting", "control": "controlling", "tie": "tying",
              "lie": "lying", "die": "dying", "visit": "visiting", "listen": "listening"}
_VOWELS = set("aeiou")


def _gerund(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("ie"):
        return word[:-2] + "ying"
    if word.endswith("e") and not word.endswith(("ee", "ye", "oe")) and len(word) > 2:
        return word[:-1] + "ing"
    # short consonant-vowel-consonant words double their last letter (run → running)
    if (len(word) <= 4 and len(word) >= 3 and word[-1] not in _VOWELS | set("wxy")
            and word[-2] in _VOWELS and word[-3] not in _VOWELS):
        return word + word[-1] + "ing"
    return word + "ing"


def verb_gerund(verb: str) -> str:
    """``"ride"`` → ``"riding"``, ``"talk_on"`` → ``"talking on"``; ``no_interaction`` reads
    ``"not interacting with"``."""
    words = verb.replace("_", " ").split()
    if not words:
        raise ConfigError("empty verb name")
    if words == ["no", "interaction"]:
        return "not interacting with"
    return " ".join([_gerund(words[0].lower()), *words[1:]])


def object_phrase(obj: str) -> str:
    """``"apple"`` → ``"an apple"``, ``"baseball_bat"`` → ``"a baseball bat"``."""
    name = obj.replace("_", " ")
    return ("an " if name[:1].lower() in _VOWELS else "a ") + name


#: how boxes appear in region prompts: integer pixels (Ferret) or a 0–1000 grid (Qwen2-VL, InternVL)
BOX_FORMATS = ("pixel", "relative1000")


def box_text(box: Sequence[float], *, width: int, height: int, box_format: str = "pixel") -> str:
    """A box as the region VLM reads it: ``[x1, y1, x2, y2]`` in integer pixels (Ferret style) or
    in 0-1000 relative coordinates (Qwen2-VL / InternVL style) of a ``width x height`` image."""
    if box_format == "pixel":
        return format_box(box, decimals=0)
    if box_format == "relative1000":
        sx, sy = 1000.0 / max(width, 1), 1000.0 / max(height, 1)
        x1, y1, x2, y2 = (float(v) for v in box)
        return format_box((x1 * sx, y1 * sy, x2 * sx, y2 * sy), decimals=0)
    raise ConfigError(f"box_format must be one of {{'pixel', 'relative1000'}}; got {box_format!r}")


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


@dataclass(frozen=True)
class PromptSet:
    """The six prompt texts; ``load`` reads the packaged files, overridden per name by files."""

    describe: str
    basic: str
    region_describe: str
    verify: str
    paraphrase: str
    pseudo_label: str

    @classmethod
    def load(cls, overrides: dict[str, str | None] | None = None) -> PromptSet:
        """Packaged prompts, each replaceable by a text file (``{name: path}``)."""
        texts: dict[str, str] = {}
        overrides = overrides or {}
        unknown = set(overrides) - set(PROMPT_FIELDS)
        if unknown:
            raise ConfigError(f"unknown prompt {sorted(unknown)[0]!r}; "
                              f"expected one of {sorted(PROMPT_FIELDS)}")
        for name, allowed in PROMPT_FIELDS.items():
            path = overrides.get(name)
            if path is None:
                text = resources.files("hoibench.augment").joinpath("prompts", f"{name}.txt").read_text("utf-8")
                origin = f"packaged prompt {name}.txt"
            else:
                try:
                    text = Path(path).read_text("utf-8")
                except OSError as exc:
                    raise ConfigError(f"prompts.{name}: cannot read {path} ({exc.strerror})") from None
                origin = str(path)
            text = text.strip()
            try:
                used = _fields(text)
            except ValueError as exc:
                raise ConfigError(f"{origin}: malformed placeholder ({exc})") from None
            bad = used - allowed
            if bad:
                raise ConfigError(f"{origin}: unknown placeholder {{{sorted(bad)[0]}}}; "
                                  f"allowed: {', '.join(sorted(allowed))}")
            texts[name] = text
        return cls(**texts)

    def fill(self, name: str, *, verb: str, obj: str, **extra: str) -> str:
        """Fill prompt ``name`` for the HOI (verb, object) and any extra fields."""
        template = getattr(self, name)
        return template.format(verb=verb.replace("_", " "), verb_ing=verb_gerund(verb),
                               object=obj.replace("_", " "), a_object=object_phrase(obj), **extra)
