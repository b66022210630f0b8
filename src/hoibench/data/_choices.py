"""Choice texts of the multiple-choice benchmark in CrossHOI-Bench's spelling (``"ride a/an horse"``):
how an HOI class is written as a choice, and how a text maps back to a class and to the key the
released evaluation script counts it under. Shared by the builder, the loader and the scorer."""

from __future__ import annotations

import functools

from hoibench.data._questions import Choice
from hoibench.vocab import (
    LabelSpace,
    hico_det,
    normalize_name,
    swig_hoi_actions,
    vcoco_annotated_objects,
    vcoco_crosshoi_phrases,
)

__all__ = ["ARTICLE", "NO_INTERACTION", "REFERENCE_CLASS_TABLES", "choice_text", "parse_choice_text",
           "reference_class_key", "reference_class_keys", "shown_choice_text"]


ARTICLE = " a/an "


NO_INTERACTION = "no_interaction"


def choice_text(verb: str, obj: str) -> str:
    """Display text of an HOI class in CrossHOI-Bench's spelling (``"ride a/an horse"``;
    ``"no_interaction with a/an cow"``)."""
    if verb == NO_INTERACTION:
        return f"{NO_INTERACTION} with{ARTICLE}{obj}"
    return f"{verb}{ARTICLE}{obj}"


def shown_choice_text(text: str) -> str:
    """A choice as the released prompts show it: ``"no_interaction a/an cow"`` (and
    ``"no_interaction with a/an cow"``) → ``"no_interaction with cow"``; other texts unchanged.
    Applying it twice changes nothing, so a prompt's line maps back to its choice."""
    if NO_INTERACTION in text:
        at = text.find(ARTICLE)
        if at >= 0:
            return "no_interaction with" + text[at + 5:]
    return text


def reference_class_key(text: str) -> tuple[str, str]:
    """The ``(action, object)`` key the released evaluation script files a choice text under:
    spaces → underscores, any ``no_interaction…`` verb → ``no_interaction``; texts without
    ``" a/an "`` (SWiG-HOI) are ``(text, "person")``."""
    if ARTICLE in text:
        act, obj = text.split(ARTICLE, 1)
        act = act.replace(" ", "_")
        obj = obj.replace(" ", "_")
        if NO_INTERACTION in act:
            act = NO_INTERACTION
        return act, obj
    return text, "person"


def _underscored(name: str) -> str:
    return name.replace(" ", "_")


#: label spaces with a class table in the released evaluation script
REFERENCE_CLASS_TABLES = ("hico-det", "v-coco", "swig-hoi")


@functools.cache
def reference_class_keys(label_space: str) -> frozenset[tuple[str, str]] | None:
    """The ``(action, object)`` keys the released evaluation script's Macro-F1 table holds for
    questions of a label space, built from hoibench's own vocabularies; ``None`` for a label
    space the script has no table for (then every text counts).

    - ``hico-det``: the 600 HICO-DET classes (verb, object).
    - ``v-coco``: those 600 and the 236 (verb, object) pairs V-COCO annotates, each role verb
      under its CrossHOI-Bench phrase (``look_obj`` → ``look_at``): 707 keys.
    - ``swig-hoi``: the 407 SWiG-HOI actions, each with ``"person"``.

    Spaces become underscores, as :func:`reference_class_key` files a text.
    """
    if label_space == "swig-hoi":
        return frozenset((a, "person") for a in swig_hoi_actions())
    if label_space not in REFERENCE_CLASS_TABLES:
        return None
    h = hico_det()
    keys = {(_underscored(h.verbs[v]), _underscored(h.objects[o])) for v, o in h.hoi_verb_object}
    if label_space == "v-coco":
        phrases = vcoco_crosshoi_phrases()
        keys |= {(_underscored(phrases[v]), _underscored(o))
                 for v, objects in vcoco_annotated_objects().items() for o in objects}
    return frozenset(keys)


class ChoiceParser:
    """Maps choice texts to classes of a label space (cached lookups by normalised name)."""

    def __init__(self, vocab: LabelSpace | None) -> None:
        self.vocab = vocab
        if vocab is not None:
            self.verbs = {normalize_name(v): i for i, v in enumerate(vocab.verbs)}
            self.objects = {normalize_name(o): i for i, o in enumerate(vocab.objects)}
        self.cache: dict[str, Choice] = {}

    def __call__(self, text: str) -> Choice:
        hit = self.cache.get(text)
        if hit is None:
            hit = self.cache[text] = self._parse(text)
        return hit

    def _parse(self, text: str) -> Choice:
        if self.vocab is None or ARTICLE not in text:
            return Choice(text)
        act, obj = reference_class_key(text)
        v = self.verbs.get(normalize_name(act), -1)
        o = self.objects.get(normalize_name(obj), -1)
        hoi = int(self.vocab.hoi_index(v, o)) if v >= 0 and o >= 0 else -1
        return Choice(text, hoi=hoi, verb=v, object=o)


def parse_choice_text(text: str, vocab: LabelSpace | None = None) -> Choice:
    """A :class:`~hoibench.data.Choice` for a CrossHOI-Bench text; ``hoi == -1`` when the text
    names no class of ``vocab`` (default HICO-DET)."""
    return ChoiceParser(hico_det() if vocab is None else vocab)(text)
