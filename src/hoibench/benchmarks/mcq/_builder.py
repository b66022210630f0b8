"""Build the multiple-choice HOI benchmark from annotations (``001_*.txt`` sec. 2.2, App. A, C.3).

Pipeline, deterministic for a seed:

1. **People and scenes.** Per image, people are subject boxes merged at IoU ≥ ``person_iou``
   (HICO-DET repeats one person's box, slightly moved, in every pair), objects are object boxes
   merged per category. A person's positives are the HOI classes of their pairs.
2. **Easy cases removed** (``remove_easy``): one person with one object; several people who all
   share an interaction (:func:`~hoibench.benchmarks._distribution.people_share_hoi`). The paper did
   this by hand; these are its two stated criteria made mechanical.
3. **Choices.** Four per question, at least one correct: up to four positives (sampled when a
   person has more); negatives from the candidate pool = HOI classes valid for the positives'
   objects minus the positives, minus the other time-sensitive classes (App. A) of the same object
   when a positive is time-sensitive (``board``/``exit airplane`` can both be true). Hard negatives
   first: in setting 2 the interactions of *other people* in the image that the target does not
   do (at most ``max_other_person``), then *visually similar verbs* with the same object (at most
   ``max_similar``, table ``data/similar_verbs.json``); the rest at random from the pool.
4. **Negative filtering** (optional): a :class:`~hoibench.benchmarks.mcq.NegativeFilter` of VLM
   judges removes plausible candidates of the *selected* images (after step 5, in one batch, so
   the judges see ~15 candidates per image instead of every person's pool); negatives are then
   drawn from what survives, and an image left without enough negatives is dropped from both
   settings. Default: none, recorded in the header.
5. **Redistribution** (``redistribute``): candidate (image, target person) questions are taken
   rarest train class first and kept while every class of the question is below
   ``max_per_class``, one question per image. This flattens the class distribution (KL to train
   up, head/tail ratio down; see ``hoibench mcq stats``).
6. **Setting 1** questions ask about the whole image (positives: all people's classes) for the
   same images; settings 2 and 3 share the setting-2 questions.

The training set of App. C.3 (:func:`build_mcq_training_set`) makes, per image, a setting-1
question, a setting-2 question about one person and a setting-3 (detection) question that carries
every annotated person box in ``meta["person_boxes"]``; no easy-case removal, no redistribution.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError
from hoibench._random import check_random_state
from hoibench.benchmarks._build import check_seed
from hoibench.benchmarks._distribution import image_people, people_share_hoi
from hoibench.benchmarks.mcq._stats import class_distribution
from hoibench.data import Choice, HOIDataset, MCQuestion, choice_text
from hoibench.formats import write_questions
from hoibench.vocab import LabelSpace

__all__ = [
    "MCQBuild",
    "build_mcq_benchmark",
    "build_mcq_training_set",
    "similar_verbs",
    "temporal_partners",
    "time_sensitive_classes",
]

BUILDER_VERSION = "1"


@functools.cache
def _data(name: str) -> dict[str, Any]:
    with resources.files("hoibench.benchmarks.mcq").joinpath("data", name).open("rb") as fh:
        return json.load(fh)


def time_sensitive_classes(vocab: LabelSpace) -> np.ndarray:
    """HOI class ids of the 68 time-sensitive classes of App. A (HICO-DET names)."""
    pairs = _data("time_sensitive.json")["classes"]
    ids = [int(vocab.hoi_index(vocab.verb_index(v), vocab.object_index(o))) for v, o in pairs]
    return np.asarray(sorted(i for i in ids if i >= 0), dtype=np.int64)


def temporal_partners(vocab: LabelSpace) -> dict[int, frozenset[int]]:
    """For each time-sensitive HOI class, the classes a still image cannot tell it from (the
    pairs of ``data/temporal_pairs.json``: board ↔ exit airplane, catch ↔ throw frisbee, ...);
    classes without a partner are absent."""
    out: dict[int, set[int]] = {}
    for obj, a, b, _why in _data("temporal_pairs.json")["pairs"]:
        o = vocab.object_index(obj)
        ia, ib = (int(vocab.hoi_index(vocab.verb_index(v), o)) for v in (a, b))
        if ia >= 0 and ib >= 0:
            out.setdefault(ia, set()).add(ib)
            out.setdefault(ib, set()).add(ia)
    return {k: frozenset(v) for k, v in out.items()}


def similar_verbs(vocab: LabelSpace) -> list[set[int]]:
    """For each verb index, the verbs that look alike (the union of its groups, itself excluded)."""
    out: list[set[int]] = [set() for _ in range(vocab.n_verbs)]
    names = {n: i for i, n in enumerate(vocab.verbs)}
    for group in _data("similar_verbs.json")["groups"]:
        ids = [names[v] for v in group if v in names]
        for a in ids:
            out[a].update(b for b in ids if b != a)
    return out


@dataclass(frozen=True)
class _Person:
    box: tuple[float, float, float, float]
    hois: frozenset[int]


@dataclass(frozen=True)
class _Scene:
    index: int
    people: tuple[_Person, ...]
    n_objects: int

    @property
    def hois(self) -> frozenset[int]:
        return frozenset().union(*(p.hois for p in self.people)) if self.people else frozenset()


def _scenes(ds: HOIDataset, person_iou: float,
            progress: Callable[[int, int], None] | None = None) -> Iterator[_Scene]:
    for i in range(ds.n_images):
        if progress is not None and (i % 256 == 0 or i == ds.n_images - 1):
            progress(i + 1, ds.n_images)
        person, obj, hoi = image_people(ds, i, iou_threshold=person_iou)
        ok = hoi >= 0
        if not ok.any():
            continue
        im = ds.image(i)
        people = []
        for p in np.unique(person[ok]):
            sel = ok & (person == p)
            first = int(np.flatnonzero(sel)[0])
            box = tuple(float(v) for v in im.boxes[im.pairs[first, 0]])
            people.append(_Person(box, frozenset(int(h) for h in hoi[sel])))  # type: ignore[arg-type]
        yield _Scene(i, tuple(people), len(np.unique(obj[ok & (obj >= 0)])))


def _is_easy(scene: _Scene, common: np.ndarray) -> str | None:
    """Why a scene is easy (None if it is not). Only scenes whose interactions are all *common*
    classes count as easy: "obvious at a glance" for a rare interaction is not a given."""
    if not all(common[h] for h in scene.hois):
        return None
    if len(scene.people) == 1 and scene.n_objects <= 1:
        return "single person, single object"
    if len(scene.people) >= 2:
        person = np.concatenate([np.full(len(p.hois), k) for k, p in enumerate(scene.people)])
        hoi = np.concatenate([np.asarray(sorted(p.hois)) for p in scene.people])
        if people_share_hoi(person, hoi):
            return "several people, same interaction"
    return None


@dataclass
class _Tables:
    vocab: LabelSpace
    by_object: list[np.ndarray]
    time_sensitive: frozenset[int]
    similar: list[set[int]]
    partners: dict[int, frozenset[int]]
    temporal_positives: bool = False

    @classmethod
    def of(cls, vocab: LabelSpace, *, temporal_positives: bool = False) -> _Tables:
        hv = vocab.hoi_verb_object
        by_object = [np.flatnonzero(hv[:, 1] == o) for o in range(vocab.n_objects)]
        hico = vocab.name == "hico-det"
        ts = frozenset(time_sensitive_classes(vocab).tolist()) if hico else frozenset()
        return cls(vocab, by_object, ts, similar_verbs(vocab), temporal_partners(vocab) if hico else {},
                   temporal_positives)

    def text(self, hoi: int) -> Choice:
        v, o = self.vocab.hoi_verb_object[hoi]
        return Choice(choice_text(self.vocab.verbs[v], self.vocab.objects[o]), hoi=int(hoi), verb=int(v), object=int(o))

    def temporal_twins(self, positives: frozenset[int]) -> set[int]:
        """Time-sensitive classes sharing the object of a time-sensitive positive (App. A): a still
        image cannot rule them out, so they are never negatives."""
        hv = self.vocab.hoi_verb_object
        out: set[int] = set()
        for h in positives & self.time_sensitive:
            out.update(c for c in self.by_object[int(hv[h, 1])].tolist() if c in self.time_sensitive)
        return out

    def temporal_alternatives(self, positives: frozenset[int]) -> set[int]:
        """The temporally plausible alternatives of the positives (their partners in
        ``data/temporal_pairs.json``): what ``temporal_positives`` makes correct."""
        return set().union(*(self.partners.get(h, frozenset()) for h in positives)) - positives

    def pool(self, positives: frozenset[int]) -> list[int]:
        """Classes valid for the positives' objects, minus positives and their temporal twins."""
        hv = self.vocab.hoi_verb_object
        objects = sorted({int(hv[h, 1]) for h in positives})
        excluded = set(positives) | self.temporal_twins(positives)
        return [int(c) for o in objects for c in self.by_object[o].tolist() if c not in excluded]

    def similar_to(self, positives: frozenset[int], pool: set[int]) -> list[int]:
        hv = self.vocab.hoi_verb_object
        out = set()
        for h in positives:
            v, o = int(hv[h, 0]), int(hv[h, 1])
            for v2 in self.similar[v]:
                c = int(self.vocab.hoi_index(v2, o))
                if c >= 0 and c in pool:
                    out.add(c)
        return sorted(out)


@dataclass
class _Draft:
    """A question before negatives are drawn: positives and ranked negative candidates."""

    scene: _Scene
    setting: int
    person: _Person | None
    positives: list[int]
    tiers: list[list[int]]  # other-person, similar-verb, rest of pool
    added: list[int] = field(default_factory=list)  # temporal twins made correct (not annotated)

    @property
    def annotated(self) -> list[int]:
        return [c for c in self.positives if c not in self.added]


def _positives(hois: frozenset[int], n_choices: int, rng: np.random.Generator) -> list[int]:
    pos = sorted(hois)
    if len(pos) > n_choices:
        pos = sorted(int(x) for x in rng.choice(pos, size=n_choices, replace=False))
    return pos


def _draft(scene: _Scene, person: _Person | None, tables: _Tables, n_choices: int,
           rng: np.random.Generator) -> _Draft:
    hois = person.hois if person is not None else scene.hois
    positives = _positives(hois, n_choices, rng)
    pool = tables.pool(frozenset(hois))
    pool_set = set(pool)
    others: list[int] = []
    if person is not None:
        twins = tables.temporal_twins(frozenset(hois))
        others = sorted(set().union(*(p.hois for p in scene.people if p is not person)) - hois - twins)
    similar = [c for c in tables.similar_to(frozenset(hois), pool_set) if c not in others]
    rest = [c for c in pool if c not in set(others) | set(similar)]
    added: list[int] = []
    if tables.temporal_positives and len(positives) < n_choices - 1:
        twins = sorted(tables.temporal_alternatives(frozenset(hois)))
        if twins:
            room = n_choices - 1 - len(positives)  # keep at least one wrong choice
            added = sorted(int(c) for c in rng.permutation(twins)[:room])
            positives = sorted(positives + added)
    return _Draft(scene, 1 if person is None else 2, person, positives, [others, similar, rest], added)


def _draw_negatives(d: _Draft, n_choices: int, max_other: int, max_similar: int,
                    rng: np.random.Generator) -> list[int] | None:
    need = n_choices - len(d.positives)
    if need <= 0:
        return []
    tiers = [list(rng.permutation(t)) if t else [] for t in d.tiers]
    caps = [max_other, max_similar, need]
    chosen: list[int] = []
    for tier, cap in zip(tiers, caps, strict=True):
        take = tier[:min(cap, need - len(chosen))]
        chosen.extend(int(c) for c in take)
    leftovers = [int(c) for t in tiers for c in t if int(c) not in chosen]
    chosen.extend(leftovers[:need - len(chosen)])
    return chosen if len(chosen) == need else None


def _question(d: _Draft, negatives: list[int], ds: HOIDataset, tables: _Tables, rng: np.random.Generator,
              suffix: str, meta: dict[str, Any]) -> MCQuestion:
    ids = d.positives + negatives
    hard = {"other_person": [c for c in negatives if c in d.tiers[0]],
            "similar_verb": [c for c in negatives if c in d.tiers[1]]}
    order = rng.permutation(len(ids))  # stored order; presentation order comes from MCQuestion.order
    choices = tuple(tables.text(ids[k]) for k in order)
    correct = frozenset(int(np.flatnonzero(order == k)[0]) for k in range(len(d.positives)))
    i = d.scene.index
    m = dict(meta)
    m.update(n_people=len(d.scene.people), n_objects=d.scene.n_objects,
             hard_negatives={k: [tables.text(c).text for c in v] for k, v in hard.items() if v})
    if d.person is not None:
        m["target_hois"] = sorted(d.person.hois)
    if d.added:
        m["temporal_positives"] = [tables.text(c).text for c in d.added]
    return MCQuestion(
        id=f"{ds.file_names[i]}#{suffix}", file_name=ds.file_names[i], setting=d.setting,
        choices=choices, correct=correct, person_box=None if d.person is None else d.person.box,
        width=int(ds.widths[i]), height=int(ds.heights[i]), label_space=ds.vocab.name, meta=m,
    )


@dataclass(frozen=True)
class MCQBuild:
    """Built questions, the header to write with them, and what each stage removed (``report``,
    the build's statistics: :meth:`stats`)."""

    questions: tuple[MCQuestion, ...]
    header: dict[str, Any]
    report: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        settings = sorted({q.setting for q in self.questions})
        return (f"MCQBuild(kind={self.header.get('kind')!r}, dataset={self.header.get('dataset')!r}, "
                f"seed={self.header.get('seed')}, questions={len(self.questions)}, settings={settings})")

    def stats(self) -> dict[str, Any]:
        """What each stage kept and removed; written as the ``report`` of the file's header."""
        return dict(self.report)

    def write(self, out: str | os.PathLike[str]) -> dict[str, Path]:
        """Write the questions as one JSONL file ``out`` (atomically), its header line holding
        :attr:`header` and the ``report`` (:meth:`stats`); returns ``{"questions": path}``.

        Unlike the split builders' ``out``, this names the file: the benchmark is one file.
        """
        path = Path(out)
        write_questions(path, self.questions, header={**self.header, "report": self.stats()})
        return {"questions": path}


def _train_counts(vocab: LabelSpace, train_counts: np.ndarray | None) -> np.ndarray | None:
    if train_counts is not None:
        return np.asarray(train_counts, dtype=np.float64)
    if vocab.name == "hico-det":
        return vocab.train_counts_official().astype(np.float64)
    return None


def _judge_pool(drafts: list[_Draft], judges: Any, ds: HOIDataset) -> dict[str, int]:
    items = []
    where = []
    for k, d in enumerate(drafts):
        box = None if d.person is None else d.person.box
        for t, tier in enumerate(d.tiers):
            for c in tier:
                v, o = ds.vocab.hoi_verb_object[c]
                items.append((ds.file_names[d.scene.index], choice_text(ds.vocab.verbs[v], ds.vocab.objects[o]), box))
                where.append((k, t, c))
    keep = judges.keep(items)
    dropped = 0
    for (k, t, c), ok in zip(where, keep, strict=True):
        if not ok:
            drafts[k].tiers[t].remove(c)
            dropped += 1
    return {"asked": len(items), "dropped": dropped}


def build_mcq_benchmark(
    dataset: HOIDataset,
    *,
    random_state: int = 0,
    settings: Sequence[int] = (1, 2),
    n_choices: int = 4,
    person_iou: float = 0.5,
    remove_easy: bool = True,
    easy_min_train_count: int = 100,
    redistribute: bool = True,
    max_per_class: int = 3,
    head_exponent: float = 0.3,
    max_other_person: int = 2,
    max_similar: int = 1,
    temporal_positives: bool = False,
    judges: Any = None,
    train_counts: np.ndarray | None = None,
    provenance: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MCQBuild:
    """Questions for the evaluation benchmark (see the module docstring for each stage).

    Parameters
    ----------
    random_state:
        Seed (an int, recorded in the header; the output is byte-identical for the same inputs).
    settings:
        Which question kinds to emit: 1 (whole image) and/or 2 (target person; also setting 3).
    easy_min_train_count:
        A scene is removed as easy only when all its classes have at least this many train
        instances (0: every scene matching the two criteria is removed).
    max_per_class:
        Redistribution cap on setting-2 questions per correct class (for a class with the median
        train count when ``head_exponent`` > 0).
    head_exponent:
        Cap of class ``c`` = ``max(1, round(max_per_class · (n_c / median n)^head_exponent))``:
        0 flattens completely, 1 keeps the train distribution's shape up to the caps.
    temporal_positives:
        Also make the temporally plausible alternatives of a positive correct (the paper's
        "harder positives", both boarding and exiting): its partners in
        ``data/temporal_pairs.json`` (:func:`temporal_partners`), leaving at least one wrong
        choice. Default off. Either way every time-sensitive class of a time-sensitive
        positive's object is kept out of the negatives (a still image cannot rule it out).
    judges:
        A :class:`NegativeFilter` (or anything with ``keep(items)`` and ``describe()``), or None.
        Its ``check(dataset)``, when it has one, runs first: a dataset naming an image outside
        the judges' image folder is refused before any scene is analysed or request sent.
    progress:
        Called as ``progress(images done, images)`` while scenes are analysed.
    train_counts:
        Per-class train counts used to rank rarity and for the reported KL and head/tail ratio
        (default: HICO-DET's official counts).
    """
    seed = check_seed(random_state)
    bad = sorted(set(settings) - {1, 2})
    if bad or not settings:
        raise ConfigError(f"settings must be a non-empty subset of {{1, 2}} (3 reuses 2); got {list(settings)}")
    if n_choices < 2:
        raise ConfigError(f"n_choices must be >= 2; got {n_choices}")
    if max_per_class < 1:
        raise ConfigError(f"max_per_class must be >= 1; got {max_per_class}")
    if not 0.0 <= head_exponent <= 1.0:
        raise ConfigError(f"head_exponent must be in [0, 1]; got {head_exponent!r}")
    if dataset.vocab.n_hois == 0:
        raise ConfigError(f"the {dataset.vocab.name} label space has no HOI classes to ask about")
    check_images = getattr(judges, "check", None)
    if check_images is not None:
        check_images(dataset)
    rng = check_random_state(seed)
    tables = _Tables.of(dataset.vocab, temporal_positives=temporal_positives)
    train = _train_counts(dataset.vocab, train_counts)
    rarity = train if train is not None else np.asarray(dataset.hoi_counts(), dtype=np.float64)
    report: dict[str, Any] = {"images": dataset.n_images}
    scenes = list(_scenes(dataset, person_iou, progress))
    report["images_with_pairs"] = len(scenes)
    if remove_easy:
        reasons: dict[str, int] = {}
        common = rarity >= easy_min_train_count
        kept = []
        for s in scenes:
            why = _is_easy(s, common)
            if why is None:
                kept.append(s)
            else:
                reasons[why] = reasons.get(why, 0) + 1
        report["removed_easy"] = reasons
        scenes = kept
    # candidate target people: every person of every remaining scene
    drafts2 = [_draft(s, p, tables, n_choices, rng) for s in scenes for p in s.people]
    negatives = [_draw_negatives(d, n_choices, max_other_person, max_similar, rng) for d in drafts2]
    report["too_few_negatives"] = sum(n is None for n in negatives)
    cands = [(d, n) for d, n in zip(drafts2, negatives, strict=True) if n is not None]
    # one target per image; redistribution takes rarest classes first under a per-class cap
    shuffled = [cands[k] for k in rng.permutation(len(cands))]
    if redistribute:
        key = [float(min(rarity[c] for c in d.annotated)) for d, _ in shuffled]
        order = np.argsort(np.asarray(key), kind="stable")
        count = np.zeros(dataset.vocab.n_hois, dtype=np.int64)
        scale = rarity / max(float(np.median(rarity[rarity > 0])), 1.0) if (rarity > 0).any() else np.ones_like(rarity)
        caps = np.maximum(1, np.round(max_per_class * np.power(np.maximum(scale, 1e-9), head_exponent)))
    else:
        order = np.arange(len(shuffled))
        count = None
    chosen: dict[int, tuple[_Draft, list[int]]] = {}
    for k in order:
        d, n = shuffled[k]
        if d.scene.index in chosen:
            continue
        if count is not None:
            if any(count[c] >= caps[c] for c in d.annotated):
                continue
            count[d.annotated] += 1
        chosen[d.scene.index] = (d, n)
    images = sorted(chosen)
    base_meta = {"builder": "hoibench.mcq", "version": BUILDER_VERSION}
    questions: list[MCQuestion] = []
    s1_dropped = 0
    if judges is None:
        for i in images:
            d2, n2 = chosen[i]
            if 1 in settings:
                d1 = _draft(d2.scene, None, tables, n_choices, rng)
                n1 = _draw_negatives(d1, n_choices, 0, max_similar, rng)
                if n1 is None:
                    s1_dropped += 1
                else:
                    questions.append(_question(d1, n1, dataset, tables, rng, "s1", base_meta))
            if 2 in settings:
                questions.append(_question(d2, n2, dataset, tables, rng, "s2", base_meta))
    else:
        # judge only the selected images' candidates (one batch), then draw from what survives;
        # an image that runs out of negatives in either setting is dropped from both
        d1s = {i: _draft(chosen[i][0].scene, None, tables, n_choices, rng) for i in images} if 1 in settings else {}
        report["judges"] = _judge_pool([chosen[i][0] for i in images if 2 in settings] + list(d1s.values()),
                                       judges, dataset)
        kept_images = []
        for i in images:
            d2 = chosen[i][0]
            n2 = _draw_negatives(d2, n_choices, max_other_person, max_similar, rng) if 2 in settings else []
            n1 = _draw_negatives(d1s[i], n_choices, 0, max_similar, rng) if i in d1s else []
            if n1 is None or n2 is None:
                s1_dropped += n1 is None
                continue
            kept_images.append(i)
            if i in d1s:
                questions.append(_question(d1s[i], n1, dataset, tables, rng, "s1", base_meta))
            if 2 in settings:
                questions.append(_question(d2, n2, dataset, tables, rng, "s2", base_meta))
        report["judges"]["images_dropped"] = len(images) - len(kept_images)
        images = kept_images
    report["setting1_too_few_negatives"] = s1_dropped
    report["selected_images"] = len(images)
    report["questions"] = len(questions)
    header = {
        "kind": "mcq_questions",
        "builder": "hoibench.mcq",
        "builder_version": BUILDER_VERSION,
        "dataset": dataset.name,
        "label_space": dataset.vocab.name,
        "seed": seed,
        "settings": sorted(set(settings)),
        "params": {"n_choices": n_choices, "person_iou": person_iou, "remove_easy": remove_easy,
                   "easy_min_train_count": easy_min_train_count, "redistribute": redistribute, "max_per_class": max_per_class,
                   "head_exponent": head_exponent, "max_other_person": max_other_person,
                   "max_similar": max_similar, "temporal_positives": temporal_positives,
                   "temporal_pairs": _data("temporal_pairs.json")["version"] if temporal_positives else None},
        "negative_filter": None if judges is None else judges.describe(),
        "negative_filter_note": ("no judge: negatives are not checked by VLMs, so unannotated but true "
                                 "interactions can appear as wrong choices") if judges is None else None,
        "box_convention": "0-based pixel xyxy",
        "provenance": dict(provenance or {}),
    }
    if train is not None:
        # the figures `mcq stats` prints for the same file (one definition: class_distribution)
        report.update(class_distribution(questions, dataset.vocab.n_hois, train_counts=train,
                                         label_space=dataset.vocab.name))
    return MCQBuild(tuple(questions), header, report)


def build_mcq_training_set(
    dataset: HOIDataset,
    *,
    random_state: int = 0,
    n_choices: int = 4,
    person_iou: float = 0.5,
    max_other_person: int = 2,
    max_similar: int = 1,
    provenance: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MCQBuild:
    """The training questions of App. C.3: per image with a pair, a setting-1 question, a
    setting-2 question about one (random) person and a setting-3 detection question whose
    ``meta["person_boxes"]`` lists every annotated person (the detection target)."""
    seed = check_seed(random_state)
    rng = check_random_state(seed)
    tables = _Tables.of(dataset.vocab)
    questions: list[MCQuestion] = []
    dropped = 0
    meta = {"builder": "hoibench.mcq.train", "version": BUILDER_VERSION}
    for scene in _scenes(dataset, person_iou, progress):
        target = scene.people[int(rng.integers(len(scene.people)))]
        d1 = _draft(scene, None, tables, n_choices, rng)
        d2 = _draft(scene, target, tables, n_choices, rng)
        n1 = _draw_negatives(d1, n_choices, 0, max_similar, rng)
        n2 = _draw_negatives(d2, n_choices, max_other_person, max_similar, rng)
        if n1 is not None:
            questions.append(_question(d1, n1, dataset, tables, rng, "s1", meta))
        else:
            dropped += 1
        if n2 is not None:
            q2 = _question(d2, n2, dataset, tables, rng, "s2", meta)
            questions.append(q2)
            m3 = dict(q2.meta)
            m3["person_boxes"] = [list(p.box) for p in scene.people]
            questions.append(replace(q2, id=f"{dataset.file_names[scene.index]}#s3", setting=3, meta=m3))
        else:
            dropped += 2
    header = {
        "kind": "mcq_training_questions",
        "builder": "hoibench.mcq.train",
        "builder_version": BUILDER_VERSION,
        "dataset": dataset.name,
        "label_space": dataset.vocab.name,
        "seed": seed,
        "params": {"n_choices": n_choices, "person_iou": person_iou,
                   "max_other_person": max_other_person, "max_similar": max_similar},
        "negative_filter": None,
        "box_convention": "0-based pixel xyxy",
        "provenance": dict(provenance or {}),
    }
    return MCQBuild(tuple(questions), header, {"questions": len(questions), "dropped_too_few_negatives": dropped})
