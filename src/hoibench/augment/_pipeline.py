"""The B-RIGHT generate-and-filter loop (paper ``002``, sections 4.2-4.3, supplementary D, F).

Per class with a deficit: **retrieve** a real image of the class, **describe** it into a prompt
(VLM), **generate** an image, **detect** people and objects, **verify** each person-object pair
(region VLM description → LLM yes/no), and on "no" **paraphrase** the prompt (LLM) and
regenerate, until the class has its missing instances or ``max_attempts`` images were made. The
annotations of a kept image come from **pseudo-labelling** every person-object candidate pair
with region-VLM yes/no questions; a kept image counts for as many instances of the target class
as the pseudo-labels confirm.

Everything is seeded from the run seed, the class and the attempt number (never from the order
of work), so shards, resumed runs and uninterrupted runs make the same images and decisions.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import (
    ImageFolder,
    atomic_folder,
    atomic_write_bytes,
    atomic_write_json,
    file_sha256,
    owned_folder,
    read_json,
    write_folder_provenance,
)
from hoibench.augment._chat_stages import ChatStages, derive_seed
from hoibench.augment._config import AugmentConfig, ChatStageConfig
from hoibench.augment._manifest import Manifest, manifest_image_name, manifest_name, read_manifests
from hoibench.augment._models import (
    Detection,
    Detector,
    ImageGenerator,
    WatermarkFilter,
    build_detector,
    build_generator,
)
from hoibench.augment._prompts import PromptSet
from hoibench.augment._review import DECISIONS_FILE, final_records, read_decisions, review_cards
from hoibench.augment._run_progress import RunProgress
from hoibench.augment._shard import shard_targets
from hoibench.augment._targets import TargetClass
from hoibench.data import DatasetBuilder, HOIDataset
from hoibench.formats import write_hicodet, write_ppdm
from hoibench.models import (
    CachedBackend,
    ChatBackend,
    ChatRequest,
    GenerationParams,
    ScriptedBackend,
    make_backend,
)
from hoibench.vocab import LabelSpace

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "AugmentPipeline",
    "AugmentResult",
    "augment_deficits",
    "check_reference_images",
    "collect_augmented",
    "filter_images",
    "write_augmented",
]

logger = logging.getLogger(__name__)

#: files of an output folder
IMAGES_DIR = "images"
PPDM_FILE = "annotations/trainval_augment.json"
HICODET_FILE = "annotations/instances_augment.json"
SUMMARY_FILE = "summary.json"
RUN_FILE = "run.json"


# --------------------------------------------------------------------------------- the stages
class AugmentPipeline:
    """The models of a run: generator, detector and the chat stages, plus the run settings.

    Build it from a config with :meth:`from_config`, or pass stage objects directly (tests inject
    a tiny generator, a fake detector and scripted chat backends).
    """

    def __init__(self, *, generator: ImageGenerator | None, detector: Detector, chat: ChatStages,
                 config: AugmentConfig, watermark: WatermarkFilter | None = None) -> None:
        self.generator = generator
        self.detector = detector
        self.chat = chat
        self.config = config
        #: the watermark stage (``config.watermark.enabled``), run before detection
        self.watermark = watermark

    @classmethod
    def from_config(cls, config: AugmentConfig, *, out_dir: str | os.PathLike[str] | None = None,
                    generate: bool = True, generator: ImageGenerator | None = None,
                    describe: bool = True) -> AugmentPipeline:
        """Load the models a config names (``generate=False`` skips the generator and the
        describe VLM: filtering; ``describe=False`` skips the describe VLM: a run without
        reference images; ``generator`` replaces the configured one)."""
        out = Path(out_dir) if out_dir is not None else None
        # filtering and runs without references never describe an image: no describe_vlm
        roles = _ROLES if generate and describe else ("region_vlm", "llm")
        backends = {role: _backend(getattr(config, role), out) for role in roles}
        backends.setdefault("describe_vlm", ScriptedBackend(_unused, model="unused"))
        if generate and generator is None:
            generator = build_generator(config.generator)
        detector = build_detector(config.detector)
        return cls(generator=generator if generate else None, detector=detector,
                   chat=_chat_stages(config, backends), config=config,
                   watermark=_watermark(config, detector))

    @classmethod
    def with_stages(cls, *, generator: ImageGenerator | None, detector: Detector,
                    describe_vlm: ChatBackend, region_vlm: ChatBackend, llm: ChatBackend,
                    config: AugmentConfig | None = None,
                    watermark_detector: Detector | None = None) -> AugmentPipeline:
        """A pipeline from ready-made stages and the prompts and settings of ``config``
        (``watermark_detector`` replaces the configured one when ``config.watermark.enabled``)."""
        config = config or AugmentConfig()
        chat = _chat_stages(config, {"describe_vlm": describe_vlm, "region_vlm": region_vlm, "llm": llm})
        return cls(generator=generator, detector=detector, chat=chat, config=config,
                   watermark=_watermark(config, detector, watermark_detector))

    def models(self) -> dict[str, Any]:
        """Model versions and settings (recorded in ``run.json``)."""
        return {"generator": None if self.generator is None else self.generator.fingerprint(),
                "detector": self.detector.fingerprint(),
                "watermark": None if self.watermark is None else self.watermark.fingerprint(),
                **self.chat.fingerprint()}

    # ------------------------------------------------------------------------- steps 4 to 6
    def inspect(self, image_path: Path, image: Image.Image, target: TargetClass, vocab: LabelSpace,
                key: Sequence[object], on_stage: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Detect, verify and pseudo-label one image for ``target``; the manifest fields.
        ``on_stage`` is told each stage as it starts (the progress bar's text)."""
        stage = on_stage or (lambda _name: None)
        verb, obj = vocab.verbs[target.verb], vocab.objects[target.object]
        w, h = image.width, image.height
        rec: dict[str, Any] = {"width": w, "height": h, "detections": [], "pairs": [], "labels": [],
                               "annotation": None, "target_instances": 0}
        if self.watermark is not None:
            stage("watermark")
            marked, marks = self.watermark.check(image)
            rec["watermark"] = [_det_dict(d) for d in marks]
            if marked:
                return {**rec, "status": "rejected", "reason": "watermark detected"}
        person_target = target.object == vocab.person
        queries = ["person"] if person_target else ["person", obj.replace("_", " ")]
        stage("detect")
        dets = self.detector.detect(image, queries)
        obj_query = 0 if person_target else 1
        pairs = [(i, j) for i, hd in enumerate(dets) if hd.query == 0
                 for j, od in enumerate(dets) if od.query == obj_query and i != j]
        rec["detections"] = [_det_dict(d) for d in dets]
        if not pairs:
            return {**rec, "status": "rejected", "reason": "no person-object pair detected"}
        stage("verify")
        verdicts = self.chat.verify(image_path, width=w, height=h, verb=verb, obj=obj, key=key,
                                    pairs=[(dets[i].box, dets[j].box) for i, j in pairs])
        rec["pairs"] = [{"subject": i, "object": j, "description": v.description, "answer": v.answer,
                         "verdict": v.yes} for (i, j), v in zip(pairs, verdicts, strict=True)]
        if not any(v.yes for v in verdicts):
            return {**rec, "status": "rejected", "reason": "verification answered no"}
        stage("pseudo-label")
        verbs = self._candidate_verbs(target, vocab)
        cands = [(i, j, v) for i, j in pairs for v in verbs]
        answers = self.chat.pseudo_label(image_path, width=w, height=h, obj=obj, key=key,
                                         candidates=[(dets[i].box, dets[j].box, vocab.verbs[v])
                                                     for i, j, v in cands])
        rec["labels"] = [{"subject": i, "object": j, "verb": v, "answer": a, "yes": y}
                         for (i, j, v), (a, y) in zip(cands, answers, strict=True)]
        confirmed = [(i, j, v) for (i, j, v), (_, y) in zip(cands, answers, strict=True) if y]
        n_target = sum(1 for _, _, v in confirmed if v == target.verb)
        rec["annotation"] = _annotation(dets, confirmed, vocab, target.object)
        rec["target_instances"] = n_target
        if n_target == 0:
            return {**rec, "status": "rejected", "reason": "pseudo-labelling confirmed no target pair"}
        return {**rec, "status": "kept", "reason": None}

    def _candidate_verbs(self, target: TargetClass, vocab: LabelSpace) -> list[int]:
        no_interaction = vocab.verbs.index("no_interaction") if "no_interaction" in vocab.verbs else -1
        if self.config.pseudo_label_verbs == "target" or target.verb == no_interaction:
            return [target.verb]
        verbs = [int(v) for v in vocab.valid_verbs_for_object()[target.object] if v != no_interaction]
        return verbs if target.verb in verbs else [*verbs, target.verb]


_ROLES = ("describe_vlm", "region_vlm", "llm")


def _watermark(config: AugmentConfig, detector: Detector,
               override: Detector | None = None) -> WatermarkFilter | None:
    """The watermark stage a config asks for: its own detector, or the pipeline's."""
    wm = config.watermark
    if not wm.enabled:
        return None
    det = override or (build_detector(wm.detector) if wm.detector is not None else detector)
    return WatermarkFilter(det, tuple(wm.queries), wm.threshold)


def _unused(_request: ChatRequest) -> str:
    raise ConfigError("this pipeline was built without a describe_vlm (generate=False or describe=False)")


def _chat_stages(config: AugmentConfig, backends: dict[str, ChatBackend]) -> ChatStages:
    return ChatStages(**backends, prompts=PromptSet.load(config.prompts), seed=config.seed,
                      box_format=config.box_format,
                      params={role: _params(getattr(config, role)) for role in _ROLES})


def _params(cfg: ChatStageConfig) -> GenerationParams:
    return GenerationParams(max_tokens=cfg.max_tokens, temperature=cfg.temperature)


def _backend(cfg: ChatStageConfig, out: Path | None) -> ChatBackend:
    if cfg.kind == "constant":
        reply = cfg.reply
        backend: ChatBackend = ScriptedBackend(lambda _req: reply, model=f"constant:{reply}")
    else:
        if not cfg.model:
            raise ConfigError(f"a {cfg.kind} chat stage needs a model name")
        backend = make_backend(cfg.kind, model=cfg.model, **cfg.options)
    if cfg.cache is not None and out is not None:
        cache = Path(cfg.cache) if os.path.isabs(cfg.cache) else out / cfg.cache
        cache.parent.mkdir(parents=True, exist_ok=True)
        backend = CachedBackend(backend, cache)
    return backend


def _det_dict(d: Detection) -> dict[str, Any]:
    return {"box": [float(v) for v in d.box], "query": int(d.query), "score": round(float(d.score), 4)}


def _annotation(dets: Sequence[Detection], confirmed: Sequence[tuple[int, int, int]],
                vocab: LabelSpace, obj: int) -> dict[str, Any]:
    """Boxes used by confirmed pairs (person or target object) and the pairs, locally indexed."""
    used = sorted({i for i, _, _ in confirmed} | {j for _, j, _ in confirmed})
    local = {d: k for k, d in enumerate(used)}
    return {"boxes": [[float(v) for v in dets[d].box] for d in used],
            "labels": [vocab.person if dets[d].query == 0 else obj for d in used],
            "pairs": [[local[i], local[j], v] for i, j, v in confirmed]}


# --------------------------------------------------------------------------------- run state
@dataclass
class _ClassState:
    attempts: int = 0
    filled: int = 0
    kept: int = 0
    prompt: str | None = None  # prompt of the next attempt (a paraphrase), None: describe anew
    descriptions: dict[int, str] = field(default_factory=dict)
    generated: dict[int, dict[str, Any]] = field(default_factory=dict)


def _states(records: Sequence[dict[str, Any]]) -> dict[int, _ClassState]:
    states: dict[int, _ClassState] = {}
    attempts: dict[tuple[int, int], dict[str, Any]] = {}
    for rec in records:
        st = states.setdefault(int(rec.get("hoi", -1)), _ClassState())
        ev = rec["event"]
        if ev == "describe":
            st.descriptions[int(rec["slot"])] = rec["prompt"]
        elif ev == "generated":
            st.generated[int(rec["attempt"])] = rec
        elif ev == "attempt":
            attempts[(int(rec["hoi"]), int(rec["attempt"]))] = rec
    for (hoi, _), rec in sorted(attempts.items()):
        st = states[hoi]
        st.attempts += 1
        if rec["status"] == "kept":
            st.kept += 1
            st.filled += int(rec["target_instances"])
            st.prompt = None
        else:
            st.prompt = rec.get("next_prompt")
    return states


#: where a dataset's images may lie under the images folder: in it, or in HICO-DET's sub-folders
_REFERENCE_FOLDERS = ("", "train2015/", "test2015/", "images/train2015/", "images/test2015/")


class _Retriever:
    """Reference images of a class: the images containing it, in a seeded order; slot ``k`` of a
    class uses the ``k``-th (cycling), so every kept image starts from a different real image.

    The images of ``hois`` are looked up (and their names checked) when it is made, so a bad
    name refuses the run before its first request; other classes' images on first use."""

    def __init__(self, dataset: HOIDataset | None, images_dir: Path | None, seed: int, *,
                 follow_symlinks: bool = False, hois: Sequence[int] = ()) -> None:
        self.dataset = dataset
        self.images = None if images_dir is None else ImageFolder(images_dir, follow_symlinks=follow_symlinks)
        self.seed = seed
        self._pair_hoi = None if dataset is None else dataset.pair_hoi
        self._found: dict[int, Path | None] = {}
        for hoi in hois if dataset is not None and self.images is not None else ():
            for row in self._rows(hoi):
                self._lookup(int(row))

    def _rows(self, hoi: int) -> np.ndarray:
        assert self.dataset is not None and self._pair_hoi is not None
        return np.unique(self.dataset.pair_image[self._pair_hoi == hoi])

    def _lookup(self, row: int) -> Path | None:
        """The checked path of image ``row``, or None when no candidate location holds it."""
        if row not in self._found:
            assert self.dataset is not None and self.images is not None
            self._found[row] = _find_image(self.images, self.dataset.file_names[row],
                                           file=self.dataset.name or None, record=row)
        return self._found[row]

    def reference(self, hoi: int, slot: int) -> tuple[str, Path] | None:
        if self.dataset is None or self.images is None:
            return None
        rows = self._rows(hoi)
        if len(rows) == 0:
            return None
        order = np.random.default_rng(derive_seed(self.seed, "retrieve", hoi)).permutation(rows)
        row = int(order[slot % len(order)])
        name = self.dataset.file_names[row]
        path = self._lookup(row)
        if path is None or not path.is_file():
            raise FormatError(f"reference image not found under {self.images.root} (also tried "
                              "train2015/, test2015/)", file=name)
        return name, path


def _find_image(images: ImageFolder, name: str, *, file: object = None, record: object = None) -> Path | None:
    """The image ``name`` in the folder, or in HICO-DET's ``train2015/`` / ``test2015/``
    sub-folders (the first that holds a file), checked by ``images``; None when none does."""
    rel = images.relative(name, file=file, record=record)
    for sub in _REFERENCE_FOLDERS:
        if images.resolved.joinpath(sub + rel).is_file():
            return images.path(sub + rel, file=file, record=record)
    return None


def check_reference_images(targets: Sequence[TargetClass], *, dataset: HOIDataset,
                           images_dir: str | os.PathLike[str], follow_symlinks: bool = False) -> None:
    """Refuse, with one line naming the annotation file, record and image, a dataset whose
    reference images for ``targets`` include a name that leaves ``images_dir``
    (:class:`hoibench._io.ImageFolder`). :func:`augment_deficits` checks this too; call it first
    to fail before loading any model. A folder holding none of those images (the wrong level of
    the dataset's folders, most often) is refused too."""
    found = _Retriever(dataset, Path(images_dir), 0, follow_symlinks=follow_symlinks,
                       hois=[t.hoi for t in targets])._found
    if found and all(path is None for path in found.values()):
        raise ConfigError(f"{images_dir}: holds none of the {len(found)} reference images of these "
                          f"classes (looked in it and its {', '.join(f for f in _REFERENCE_FOLDERS if f)}); "
                          "give --images the folder that holds train2015/, or leave --images out to "
                          "prompt from text only")


def _png_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


# ------------------------------------------------------------------------------------ the run
@dataclass(frozen=True)
class AugmentResult:
    """What an output folder holds after a run: the augmented dataset (images under
    ``images_root``), one summary row per class, and the counts of this call's work."""

    dataset: HOIDataset
    classes: list[dict[str, Any]]
    images_root: Path
    generated: int = 0
    reused: int = 0
    #: the people's review that was applied (:func:`collect_augmented`), or None
    review: dict[str, Any] | None = None

    @property
    def unfilled(self) -> list[dict[str, Any]]:
        return [c for c in self.classes if c["filled"] < c["need"]]


#: manifest events that stand for produced work: a verdict on an image
_PRODUCED = ("attempt", "filtered")


def _check_run_file(out: Path, header: dict[str, Any]) -> str | None:
    """Start, resume or restart the run of ``out``; the line to tell the user on a restart.

    A folder whose ``run.json`` matches ``header`` resumes. One made with other parameters is
    refused, naming the first parameter that differs, while it holds produced work (a verdict on
    an image). A folder without one (a first start that failed before its first verdict: a
    server down, a wrong model name) is restarted in place: its manifests (descriptions, at most
    one generated image per shard) and those images go, then ``run.json`` is replaced
    atomically; a kill half-way leaves the old ``run.json``, so the next start restarts again."""
    path = out / RUN_FILE
    if not path.exists():
        atomic_write_json(path, header, indent=True)
        return None
    old = read_json(path)
    # what the user gave comes first: a model's version differs because the --images did
    named = {k: header[k] for k in sorted(header, key=lambda k: k == "models")}
    differs = _difference(old if isinstance(old, dict) else {}, named)
    if differs is None:
        return None
    key, was, now = differs
    top = re.match(r"[^.\[]*", key).group(0)  # type: ignore[union-attr]
    key = _HEADER_NAMES.get(top, top) + key[len(top):]
    what = f"a different {key} ({_short(was)}, now {_short(now)})"
    produced = sum(rec["event"] in _PRODUCED for rec in read_manifests(out))
    if produced:
        raise ConfigError(f"{out} holds the work ({_count(produced, 'image')} with a verdict) of a run "
                          f"with {what}; use a new --out folder, or the same {key} to resume")
    for manifest in sorted(out.glob("manifest*.jsonl")):
        manifest.unlink()
    unverified = sorted((out / IMAGES_DIR).glob("aug_h*.png"))
    for image in unverified:
        image.unlink()
    atomic_write_json(path, header, indent=True)
    dropped = f" ({_count(len(unverified), 'image')} never verified, removed)" if unverified else ""
    return f"{out}: restarting in place with {what}; its earlier run produced nothing{dropped}"


#: what the user calls the parameters ``run.json`` records
_HEADER_NAMES = {"kind": "command", "classes": "deficits (classes)", "images": "--images folder",
                 "follow_symlinks": "--follow-symlinks", "images_root": "--images folder",
                 "dataset_sha256": "dataset content"}


def _difference(old: Any, new: Any, where: str = "") -> tuple[str, Any, Any] | None:
    """The first parameter that differs (its path, old and new value); None when all agree."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*new, *(k for k in old if k not in new)]:
            found = _difference(old.get(key), new.get(key), f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = _difference(a, b, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    return None if old == new else (where, old, new)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _short(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} entries"
    text = "none" if value is None else str(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _header(kind: str, pipeline: AugmentPipeline, targets: Sequence[TargetClass],
            extra: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "config": pipeline.config.fingerprint(),
            "classes": [[t.hoi, t.need] for t in targets], "models": pipeline.models(), **extra}


def augment_deficits(
    targets: Sequence[TargetClass],
    *,
    vocab: LabelSpace,
    out_dir: str | os.PathLike[str],
    pipeline: AugmentPipeline,
    dataset: HOIDataset | None = None,
    images_dir: str | os.PathLike[str] | None = None,
    follow_symlinks: bool = False,
    max_attempts: int | None = None,
    shard: tuple[int, int] = (0, 1),
    progress: bool = False,
) -> AugmentResult:
    """Generate, filter and pseudo-label images until every target class has its ``need`` new
    instances or ``max_attempts`` generated images (default: the config's).

    ``dataset`` and ``images_dir`` give the real images to retrieve references from; without them
    the paper's basic prompt is used (its ablation (a)) and each ``describe`` record says so
    (``prompt_from: basic``, ``no_reference``). The names of this shard's reference
    images are checked before anything else (see :func:`check_reference_images`;
    ``follow_symlinks`` follows links that leave ``images_dir``). ``shard=(i, n)`` processes the classes
    :func:`~hoibench.augment.shard_targets` gives shard ``i``; results of all shards land in the
    same ``out_dir`` and :func:`collect_augmented` merges them. Resumes from ``out_dir``; an
    ``out_dir`` left by a run with other parameters that produced nothing is restarted in place
    (see :func:`_check_run_file`). ``progress`` shows a bar in a terminal, else a line per attempt.
    """
    if pipeline.generator is None:
        raise ConfigError("this pipeline has no generator (built with generate=False)")
    limit = pipeline.config.max_attempts if max_attempts is None else int(max_attempts)
    if limit < 1:
        raise ConfigError(f"max_attempts must be >= 1; got {limit}")
    index, n_shards = shard
    mine = shard_targets(targets, n_shards)[index]
    retriever = _Retriever(dataset, None if images_dir is None else Path(images_dir), pipeline.config.seed,
                           follow_symlinks=follow_symlinks, hois=[t.hoi for t in mine])
    out = Path(out_dir)
    (out / IMAGES_DIR).mkdir(parents=True, exist_ok=True)
    images = retriever.images.describe() if retriever.images is not None else {"images": None}
    restarted = _check_run_file(out, _header(
        "augment_generate", pipeline, targets,
        {"dataset": None if dataset is None else dataset.name,
         "dataset_sha256": None if dataset is None else dataset.content_hash(), **images}))
    if restarted is not None:
        logger.warning("%s", restarted)
    manifest = Manifest(out / manifest_name(index, n_shards))
    states = _states(read_manifests(out))
    total = sum(t.need for t in mine)
    done = sum(min(states.get(t.hoi, _ClassState()).filled, t.need) for t in mine)
    with RunProgress(progress, total=total, unit="instances", done=done) as shown:
        shown.line(f"augment: {len(mine)} classes, {total} instances to fill ({done} filled before), "
                   f"at most {limit} attempts per class; "
                   + ("references from " + str(retriever.images.root) if retriever.images is not None
                      else "no reference images: every prompt is the basic text prompt"))
        for k, target in enumerate(mine):
            st = states.setdefault(target.hoi, _ClassState())
            _fill_class(pipeline, target, st, vocab=vocab, out=out, manifest=manifest,
                        retriever=retriever, limit=limit, shown=shown,
                        where=f"{target.name} (class {k + 1} of {len(mine)})")
    result = collect_augmented(out, vocab)
    return AugmentResult(result.dataset, result.classes, result.images_root,
                         generated=shown.counts.get("generated", 0), reused=shown.counts.get("reused", 0),
                         review=result.review)


def _fill_class(pipeline: AugmentPipeline, target: TargetClass, st: _ClassState, *, vocab: LabelSpace,
                out: Path, manifest: Manifest, retriever: _Retriever, limit: int,
                shown: RunProgress, where: str) -> None:
    verb, obj = vocab.verbs[target.verb], vocab.objects[target.object]
    chat = pipeline.chat
    seed = pipeline.config.seed
    while st.filled < target.need and st.attempts < limit:
        attempt, slot = st.attempts, st.kept
        at = f"{where}, attempt {attempt + 1}/{limit}"
        prompt = st.prompt or st.descriptions.get(slot)
        if prompt is None:
            shown.stage(at, "retrieve")
            ref = retriever.reference(target.hoi, slot)
            source: dict[str, Any] = {"prompt_from": "reference"}
            if ref is None:
                prompt = chat.basic_prompt(verb, obj)
                source = {"prompt_from": "basic", "no_reference": "no images folder given"
                          if retriever.images is None else "no real image of the class"}
                shown.count("basic prompt")
            else:
                shown.stage(at, "describe")
                prompt = chat.describe(ref[1], verb=verb, obj=obj, key=(target.hoi, "slot", slot))
                shown.count("described")
            manifest.append({"event": "describe", "hoi": target.hoi, "slot": slot,
                             "reference": None if ref is None else ref[0], **source, "prompt": prompt})
            st.descriptions[slot] = prompt
        gen_seed = derive_seed(seed, "generate", target.hoi, attempt)
        name = f"aug_h{target.hoi:03d}_a{attempt:04d}.png"
        path = out / IMAGES_DIR / name
        image = _reuse(st.generated.get(attempt), path, prompt, gen_seed)
        if image is None:
            assert pipeline.generator is not None
            shown.stage(at, "generate")
            image = pipeline.generator.generate(prompt, seed=gen_seed)
            data = _png_bytes(image)
            atomic_write_bytes(path, data)
            manifest.append({"event": "generated", "hoi": target.hoi, "attempt": attempt, "slot": slot,
                             "prompt": prompt, "seed": gen_seed, "image": f"{IMAGES_DIR}/{name}",
                             "sha256": hashlib.sha256(data).hexdigest()})
            shown.count("generated")
        else:
            shown.count("reused")
        rec = pipeline.inspect(path, image, target, vocab, key=(target.hoi, attempt),
                               on_stage=lambda name, at=at: shown.stage(at, name))
        next_prompt = None
        if rec["status"] != "kept":
            shown.stage(at, "paraphrase")
            next_prompt = chat.paraphrase(prompt, verb=verb, obj=obj, key=(target.hoi, attempt))
        manifest.append({"event": "attempt", "hoi": target.hoi, "attempt": attempt, "slot": slot,
                         "prompt": prompt, "seed": gen_seed, "image": f"{IMAGES_DIR}/{name}", **rec,
                         "next_prompt": next_prompt})
        st.attempts += 1
        gained = 0
        if rec["status"] == "kept":
            st.kept += 1
            gained = min(int(rec["target_instances"]), target.need - st.filled)
            st.filled += int(rec["target_instances"])
            st.prompt = None
        else:
            st.prompt = next_prompt
        shown.outcome(at, rec, gained)
    if st.filled < target.need:
        logger.warning("%s: %d of %d instances after %d attempts (limit reached)", target.name,
                       st.filled, target.need, st.attempts)


def _reuse(gen: dict[str, Any] | None, path: Path, prompt: str, seed: int) -> Image.Image | None:
    """The image an earlier run generated for this attempt, if it is intact and matches."""
    if gen is None or gen.get("prompt") != prompt or gen.get("seed") != seed or not path.is_file():
        return None
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != gen.get("sha256"):
        return None
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image.convert("RGB")


def filter_images(
    items: Sequence[tuple[str | os.PathLike[str], TargetClass]],
    *,
    vocab: LabelSpace,
    images_root: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    pipeline: AugmentPipeline,
    follow_symlinks: bool = False,
    progress: bool = False,
) -> AugmentResult:
    """Steps 4-6 (detect, verify, pseudo-label) on existing images, e.g. crawled ones (supp. F).

    ``items`` pairs each image path (under ``images_root``) with the class it was collected for;
    a class with ``need > 0`` stops once it has that many instances. Resumes from ``out_dir``.
    Every path must lie inside ``images_root`` (:class:`hoibench._io.ImageFolder`; symlinks
    leading out of it only with ``follow_symlinks``); all are checked before the first request.
    """
    from PIL import Image, UnidentifiedImageError

    folder = ImageFolder(Path(images_root), follow_symlinks=follow_symlinks)
    # every item checked before the first request: its name relative to the folder, on the text
    # of the path given (not through its symlinks), then the folder's symlink rule
    base = os.path.abspath(folder.root)
    checked = []
    for path, target in items:
        name = Path(os.path.relpath(os.path.abspath(path), base)).as_posix()
        file = folder.path(name, file=path, field=None)
        checked.append((file.relative_to(folder.resolved).as_posix(), file, target))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    targets = sorted({t.hoi: t for _, t in items}.values(), key=lambda t: t.hoi)
    restarted = _check_run_file(out, _header("augment_filter", pipeline, targets,
                                             {"images_root": str(folder.resolved)}))
    if restarted is not None:
        logger.warning("%s", restarted)
    manifest = Manifest(out / manifest_name())
    done = {rec["image"]: rec for rec in read_manifests(out) if rec["event"] == "filtered"}
    filled: dict[int, int] = {}
    for rec in done.values():
        if rec["status"] == "kept":
            filled[rec["hoi"]] = filled.get(rec["hoi"], 0) + int(rec["target_instances"])
    with RunProgress(progress, total=len(items), unit="images", label="augment filter") as shown:
        for k, (rel, file, target) in enumerate(checked):
            if rel in done or (target.need > 0 and filled.get(target.hoi, 0) >= target.need):
                shown.done += 1
                continue
            at = f"{rel} ({target.name}, image {k + 1} of {len(checked)})"
            try:
                with Image.open(file) as im:
                    image = im.convert("RGB")
            except (OSError, UnidentifiedImageError) as exc:
                raise FormatError(f"cannot read image ({exc})", file=file) from None
            rec = pipeline.inspect(file, image, target, vocab, key=(target.hoi, "file", rel),
                                   on_stage=lambda name, at=at: shown.stage(at, name))
            manifest.append({"event": "filtered", "hoi": target.hoi, "image": rel, **rec})
            shown.outcome(at, rec, 1)
            done[rel] = rec
            if rec["status"] == "kept":
                filled[target.hoi] = filled.get(target.hoi, 0) + int(rec["target_instances"])
    return collect_augmented(out, vocab)


# ------------------------------------------------------------------------------------ outputs
def collect_augmented(out_dir: str | os.PathLike[str], vocab: LabelSpace, *,
                      write: bool = True, reviewed_only: bool = False) -> AugmentResult:
    """Merge the manifests of every shard into the augmented dataset and the per-class summary,
    and (``write=True``) write them: ``annotations/trainval_augment.json`` (PPDM/QPIC layout),
    ``annotations/instances_augment.json`` (hicodet layout) and ``summary.json``.

    The review's decisions (``review_decisions.json``, :func:`write_review_page`) are honoured:
    a rejected image leaves the dataset; with ``reviewed_only`` so does every kept image nobody
    accepted. The summary counts accepted, rejected and unreviewed images."""
    out = Path(out_dir)
    run = read_json(out / RUN_FILE)
    needs = {int(h): int(n) for h, n in run["classes"]}
    limit_cfg = run.get("config", {})
    kept = final_records(read_manifests(out))
    decided = read_decisions(out, review_cards(out)) if (out / DECISIONS_FILE).exists() else {}
    review = {"file": DECISIONS_FILE if decided or (out / DECISIONS_FILE).exists() else None,
              "reviewed_only": reviewed_only, "accepted": 0, "rejected": 0, "unreviewed": 0}
    per_class: dict[int, dict[str, Any]] = {h: {"attempts": 0, "kept_images": 0, "filled": 0}
                                            for h in needs}
    b = DatasetBuilder(vocab)
    for (hoi, _), rec in kept.items():
        row = per_class.setdefault(hoi, {"attempts": 0, "kept_images": 0, "filled": 0})
        row["attempts"] += 1
        if rec["status"] != "kept":
            continue
        verdict = decided.get((hoi, str(rec["image"])))
        review["accepted" if verdict == "accept" else "rejected" if verdict == "reject" else "unreviewed"] += 1
        if verdict == "reject" or (reviewed_only and verdict is None):
            continue
        row["kept_images"] += 1
        row["filled"] += int(rec["target_instances"])
        ann = rec["annotation"]
        pairs = ann["pairs"]
        name = manifest_image_name(rec)  # a kept record always names its image
        b.add_image(name, ann["boxes"], ann["labels"], [p[0] for p in pairs], [p[1] for p in pairs],
                    [p[2] for p in pairs], width=int(rec["width"]), height=int(rec["height"]))
    ds = b.build(name=f"augmented:{out}")
    classes = []
    for hoi in sorted(per_class):
        row = per_class[hoi]
        need = needs.get(hoi, 0)
        status = "filled" if row["filled"] >= need and need > 0 else (
            "open" if need == 0 else "unfilled")
        classes.append({"hoi": hoi, "name": vocab.hoi_name(hoi), "need": need, **row, "status": status})
    root = out / IMAGES_DIR if run["kind"] == "augment_generate" else Path(run.get("images_root", out))
    result = AugmentResult(ds, classes, root, review=review)
    if write:
        write_augmented(result, out, seed=limit_cfg.get("seed"))
    return result


def write_augmented(result: AugmentResult, out_dir: str | os.PathLike[str], *, seed: int | None = None) -> None:
    """Write the dataset in both layouts and the summary.

    ``annotations/`` is built beside itself and swapped in as a whole (a kill leaves the old pair
    of files or the new pair, never one of each), with a ``provenance.json`` naming the run and
    the hashes of the manifests it was merged from; ``summary.json`` follows and records the
    hashes of the two files it summarises."""
    out = Path(out_dir)
    folder = out / Path(PPDM_FILE).parent
    names = [Path(PPDM_FILE).name, Path(HICODET_FILE).name]
    run = read_json(out / RUN_FILE) if (out / RUN_FILE).is_file() else {}
    manifests = {p.name: f"sha256:{file_sha256(p)}" for p in sorted(out.glob("manifest*.jsonl"))}
    with atomic_folder(folder, owned=owned_folder(names)) as stage:
        write_ppdm(result.dataset, stage / names[0])
        write_hicodet(result.dataset, stage / names[1])
        write_folder_provenance(stage, writer="augment", inputs=manifests, parameters={
            "kind": run.get("kind"), "config": run.get("config"), "classes": run.get("classes")})
    atomic_write_json(out / SUMMARY_FILE, {
        "kind": "augment_summary", "seed": seed, "images_root": str(result.images_root),
        "images": result.dataset.n_images, "instances": result.dataset.n_pairs,
        "review": result.review,
        "annotations": {n: f"sha256:{file_sha256(folder / n)}" for n in names},
        "classes": result.classes}, indent=True)
