"""Label spaces as data: object, verb and HOI-class vocabularies shared by every package."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError

__all__ = ["COCO", "LabelSpace", "coco", "hico_det", "normalize_name", "swig_hoi_actions", "vcoco",
           "vcoco_annotated_objects", "vcoco_crosshoi_phrases"]


def normalize_name(name: str) -> str:
    """Compare class names across datasets: lower case, underscores and spaces unified."""
    return " ".join(name.replace("_", " ").lower().split())


@functools.cache
def _load(name: str) -> dict[str, Any]:
    with resources.files("hoibench.vocab").joinpath("data", name).open("rb") as fh:
        return json.load(fh)


@dataclass(frozen=True, eq=False)
class LabelSpace:
    """Objects, verbs and (optionally) HOI classes of one dataset.

    Attributes
    ----------
    name:
        ``"hico-det"`` or ``"v-coco"`` (or a custom name).
    objects:
        Object category names; a box label is an index into this tuple.
    verbs:
        Verb (interaction) names; an interaction's verb is an index into this tuple.
    hoi_verb_object:
        ``(n_hoi, 2)`` int array of (verb, object) per HOI class, or an empty array when the
        dataset has no closed list of HOI classes (V-COCO).
    person:
        Index of the ``person`` object category (the subject of every interaction).
    coco80:
        For each object, its index in COCO-80 order (the order COCO's category ids sort in).
    """

    name: str
    objects: tuple[str, ...]
    verbs: tuple[str, ...]
    hoi_verb_object: np.ndarray
    person: int
    coco80: np.ndarray
    _hoi_lookup: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        lookup = np.full((len(self.verbs), len(self.objects)), -1, dtype=np.int64)
        if len(self.hoi_verb_object):
            hv = self.hoi_verb_object
            lookup[hv[:, 0], hv[:, 1]] = np.arange(len(hv))
        object.__setattr__(self, "_hoi_lookup", lookup)

    @property
    def n_objects(self) -> int:
        return len(self.objects)

    @property
    def n_verbs(self) -> int:
        return len(self.verbs)

    @property
    def n_hois(self) -> int:
        return len(self.hoi_verb_object)

    def hoi_index(self, verb: np.ndarray | int, obj: np.ndarray | int) -> np.ndarray:
        """HOI class of (verb, object) pairs, ``-1`` where the pair is not a class (or no object)."""
        verb = np.asarray(verb, dtype=np.int64)
        obj = np.asarray(obj, dtype=np.int64)
        if verb.shape == obj.shape and (obj >= 0).all():  # the usual case: 4x faster without masks
            return np.asarray(self._hoi_lookup[verb, obj])
        out = np.full(np.broadcast(verb, obj).shape, -1, dtype=np.int64)
        ok = obj >= 0
        out[ok] = self._hoi_lookup[np.broadcast_to(verb, out.shape)[ok], np.broadcast_to(obj, out.shape)[ok]]
        return out

    def hoi_name(self, hoi: int) -> str:
        """``"<verb> <object>"`` with the dataset's own spelling (``"ride horse"``)."""
        v, o = self.hoi_verb_object[hoi]
        return f"{self.verbs[v]} {self.objects[o]}"

    def object_index(self, name: str) -> int:
        """Index of an object category by name (underscores and spaces are interchangeable)."""
        return _index(self.objects, name, "object", self.name)

    def verb_index(self, name: str) -> int:
        """Index of a verb by name (underscores and spaces are interchangeable)."""
        return _index(self.verbs, name, "verb", self.name)

    def object_from_coco91(self, ids: np.ndarray | int) -> np.ndarray:
        """Object index for COCO-91 category ids; ``-1`` where the id is not a COCO category."""
        c = COCO.from91(ids)
        inv = np.full(81, -1, dtype=np.int64)
        inv[self.coco80] = np.arange(len(self.coco80))
        return np.where(c >= 0, inv[np.where(c >= 0, c, 80)], -1)

    def object_to_coco91(self, objects: np.ndarray | int) -> np.ndarray:
        """COCO-91 category ids of object indices."""
        return COCO.to91(self.coco80[np.asarray(objects, dtype=np.int64)])

    def rare_classes(self, threshold: int = 10) -> np.ndarray:
        """HOI classes with fewer than ``threshold`` official train instances (HICO-DET only)."""
        counts = self.train_counts_official()
        return np.flatnonzero(counts < threshold)

    def train_counts_official(self) -> np.ndarray:
        """Official per-class train pair counts (HICO-DET's 117,871 pairs)."""
        if self.name != "hico-det":
            raise ConfigError(f"official train counts exist for hico-det only, not {self.name!r}")
        return np.asarray(_load("hico_det.json")["train_counts_official"], dtype=np.int64)

    def zero_shot_unseen(self, setting: str) -> np.ndarray:
        """Unseen HOI classes of a zero-shot setting: rare_first, non_rare_first, unseen_object,
        unseen_verb (aliases RF-UC, NF-UC, UO, UV)."""
        if self.name != "hico-det":
            raise ConfigError(f"zero-shot lists exist for hico-det only, not {self.name!r}")
        key = ZERO_SHOT_ALIASES.get(setting.lower(), setting.lower())
        lists = _load("hico_det.json")["zero_shot"]
        if key not in lists:
            raise ConfigError(
                f"zero-shot setting must be one of {sorted(lists) + sorted(ZERO_SHOT_ALIASES)}; got {setting!r}"
            )
        return np.asarray(sorted(lists[key]), dtype=np.int64)

    def valid_objects_for_verb(self) -> list[np.ndarray]:
        """For each verb, the objects it forms an HOI class with."""
        return [self.hoi_verb_object[self.hoi_verb_object[:, 0] == v, 1] for v in range(self.n_verbs)]

    def valid_verbs_for_object(self) -> list[np.ndarray]:
        """For each object, the verbs it forms an HOI class with."""
        return [self.hoi_verb_object[self.hoi_verb_object[:, 1] == o, 0] for o in range(self.n_objects)]


ZERO_SHOT_ALIASES = {
    "rf-uc": "rare_first",
    "nf-uc": "non_rare_first",
    "uo": "unseen_object",
    "uv": "unseen_verb",
}


def _index(names: tuple[str, ...], name: str, kind: str, space: str) -> int:
    wanted = normalize_name(name)
    for i, n in enumerate(names):
        if normalize_name(n) == wanted:
            return i
    raise ConfigError(f"unknown {kind} {name!r} in the {space} label space")


class _Coco:
    """COCO's 80 categories and their 91-id numbering (``category_id`` in COCO-style files)."""

    def __init__(self) -> None:
        data = _load("coco.json")
        self.names: tuple[str, ...] = tuple(data["names"])
        self.ids91 = np.asarray(data["ids91"], dtype=np.int64)
        self._inv91 = np.full(92, -1, dtype=np.int64)
        self._inv91[self.ids91] = np.arange(80)

    def to91(self, idx80: np.ndarray | int) -> np.ndarray:
        """COCO-80 index (0..79) → COCO-91 category id (1..90)."""
        return self.ids91[np.asarray(idx80, dtype=np.int64)]

    def from91(self, ids91: np.ndarray | int) -> np.ndarray:
        """COCO-91 category id → COCO-80 index; ``-1`` for ids that are not categories."""
        a = np.asarray(ids91, dtype=np.int64)
        ok = (a >= 0) & (a < 92)
        return np.where(ok, self._inv91[np.where(ok, a, 0)], -1)


COCO = _Coco()


def coco() -> _Coco:
    """The COCO category table (names in COCO order, 91-id numbering)."""
    return COCO


def _coco80_of(objects: tuple[str, ...]) -> np.ndarray:
    by_name = {normalize_name(n): i for i, n in enumerate(COCO.names)}
    return np.asarray([by_name[normalize_name(o)] for o in objects], dtype=np.int64)


@functools.cache
def hico_det() -> LabelSpace:
    """HICO-DET: 80 objects (HICO's alphabetical order), 117 verbs, 600 HOI classes."""
    d = _load("hico_det.json")
    objects = tuple(d["objects"])
    return LabelSpace(
        name="hico-det",
        objects=objects,
        verbs=tuple(d["verbs"]),
        hoi_verb_object=np.asarray(d["hoi_verb_object"], dtype=np.int64),
        person=objects.index("person"),
        coco80=_coco80_of(objects),
    )


@functools.cache
def vcoco() -> LabelSpace:
    """V-COCO: COCO's 80 objects (COCO order) and the 29 action-role verbs of PPDM/QPIC.

    V-COCO has no closed list of HOI classes; ``hoi_verb_object`` holds the (verb, object) pairs
    QPIC treats as valid (``corre_vcoco.npy``).
    """
    d = _load("vcoco.json")
    valid = np.asarray(d["verb_object_valid"], dtype=bool)
    vo = np.argwhere(valid).astype(np.int64)
    objects = COCO.names
    return LabelSpace(
        name="v-coco",
        objects=objects,
        verbs=tuple(d["verbs"]),
        hoi_verb_object=vo,
        person=objects.index("person"),
        coco80=np.arange(80, dtype=np.int64),
    )


def vcoco_actions() -> list[dict[str, Any]]:
    """The 26 V-COCO actions with ``action_name``, ``role_name`` and allowed objects (``include``)."""
    return list(_load("vcoco.json")["actions"])


def vcoco_annotated_objects() -> dict[str, tuple[str, ...]]:
    """For each of the 24 role verbs that take an object, the COCO objects V-COCO annotates it
    with (trainval and test alike: 236 pairs; the vcoco toolkit's ``action_to_object``)."""
    return {v: tuple(objs) for v, objs in _load("vcoco.json")["verb_objects_annotated"].items()}


def vcoco_crosshoi_phrases() -> dict[str, str]:
    """The English phrase of each of those 24 role verbs as CrossHOI-Bench's V-COCO choice texts
    spell it (``look_obj`` → ``"look at"``, ``lay_instr`` → ``"lie on"``)."""
    return dict(_load("vcoco.json")["crosshoi_phrases"])


@functools.cache
def swig_hoi_actions() -> tuple[str, ...]:
    """The 407 action names of SWiG-HOI v1.0 in id order (``"adjusting"`` … ``"yanking"``).

    Only the actions: hoibench has no SWiG-HOI object list, so there is no SWiG-HOI
    :class:`LabelSpace`; CrossHOI-Bench's SWiG-HOI choices are bare action names.
    """
    return tuple(_load("swig_hoi.json")["actions"])


def get_label_space(name: str) -> LabelSpace:
    """Label space by name: ``hico-det`` or ``v-coco``."""
    key = name.lower().replace("_", "-")
    if key in ("hico-det", "hicodet", "hico"):
        return hico_det()
    if key in ("v-coco", "vcoco"):
        return vcoco()
    raise ConfigError(f"label space must be one of ['hico-det', 'v-coco']; got {name!r}")
