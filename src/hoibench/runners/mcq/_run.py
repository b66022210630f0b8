"""The multiple-choice task: questions + images + a chat backend → an answers JSONL file.

:class:`MCQRunner` is a :class:`~hoibench.runners.ChatTask` on the resumable loop
(:func:`~hoibench.runners.run_resumable`), which owns the answers file, resume, chunking and
progress. Each chunk of questions is answered in up to three batches of backend requests: the
perceived image size (``internvl`` convention, settings 2–3), person detection (setting 3 without
external detections), and the questions.
"""

from __future__ import annotations

import hashlib
import io
import logging
import mimetypes
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench._io import ImageFolder
from hoibench._version import __version__
from hoibench.data import MCAnswer, MCQuestion
from hoibench.formats.questions import AnswerWriter, read_answers, write_answers
from hoibench.models import (
    ChatBackend,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    GenerationParams,
    ImagePart,
)
from hoibench.runners._loop import Batch, ChatTask, run_resumable
from hoibench.runners.mcq._boxes import (
    QWEN_MAX_PIXELS,
    QWEN_MIN_PIXELS,
    ModelFrame,
    model_frame,
    resolve_box_convention,
)
from hoibench.runners.mcq._detections import match_person
from hoibench.runners.mcq._frames import FrameStore, PreparedFile, frame_file, frame_pool
from hoibench.runners.mcq._parsing import parse_detection, parse_image_size, parse_letters
from hoibench.runners.mcq._prompts import (
    ANSWER_FORMATS,
    PromptTemplate,
    load_template,
    render_question,
)

__all__ = ["FrameCache", "MCQRunner", "RunSummary"]

log = logging.getLogger(__name__)

ANSWERS_KIND = "mcq_answers"
#: distinct images from which a run resizes them in worker processes (fewer: in threads)
_POOL_MIN_IMAGES = 64
#: where images are prepared (``MCQRunner(image_workers=...)``)
IMAGE_WORKERS = ("auto", "threads", "processes")
#: conventions whose frame may resize the image (prepared in the workers)
_RESIZING = frozenset({"qwen2.5", "qwen3"})


@dataclass(frozen=True)
class RunSummary:
    """What a run did: questions in total, answers kept from an earlier run, and the statuses of
    the answers in the file at the end. ``requests`` went to the model (one per question and
    stage), ``attempts`` were sent for them (``retries`` = attempts - requests; ``None`` when the
    backend does not count), ``cache_hits`` needed no request; ``servers`` gives each server's
    attempts, failures and seconds spent waiting on it; ``sends`` counts the requests written to
    connections (an attempt re-sent once on a fresh connection, after a kept-alive one closed
    unanswered, counts twice); ``first_error`` is the cause of the first failed question (item
    order); ``retryable_errors`` how many of the ``error`` questions a rerun may answer (not a
    4xx refusal or a malformed reply, which a rerun sends again the same way)."""

    total: int
    resumed: int
    ok: int
    parse_error: int
    no_person_match: int
    error: int
    requests: int
    cache_hits: int
    seconds: float
    out: str
    attempts: int | None = None
    servers: tuple[dict[str, Any], ...] = ()
    first_error: str | None = None
    sends: int | None = None
    retryable_errors: int = 0

    @property
    def retries(self) -> int | None:
        return None if self.attempts is None else self.attempts - self.requests

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "servers": list(self.servers), "retries": self.retries}


class FrameCache:
    """Prepared images by content: the sha256 of the file's bytes and the frame settings → the
    bytes to send and their frame, so that the K orders of ``--permutations`` (one runner each,
    sharing one cache) and every stage of setting 3 prepare an image once. Bounded by
    ``max_bytes`` (least recently used out first). ``store``: a :class:`FrameStore` (or its
    folder) that keeps resized frames on disk for later runs too."""

    def __init__(self, max_bytes: int = 1 << 30, *, store: FrameStore | str | Path | None = None) -> None:
        self.max_bytes = max_bytes
        self.store = store if store is None or isinstance(store, FrameStore) else FrameStore(store)
        self.hits = 0
        self._items: dict[tuple[Any, ...], tuple[ModelFrame | None, ImagePart, int, int]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> tuple[ModelFrame | None, ImagePart, int, int] | None:
        with self._lock:
            hit = self._items.pop(key, None)
            if hit is not None:
                self._items[key] = hit  # most recently used last
                self.hits += 1
            return hit

    @staticmethod
    def _size(part: ImagePart) -> int:
        return len(part.data or b"") + len(part.b64 or "")

    def put(self, key: tuple[Any, ...], value: tuple[ModelFrame | None, ImagePart, int, int]) -> None:
        size = self._size(value[1])
        with self._lock:
            if key in self._items or size > self.max_bytes:
                return
            self._items[key] = value
            self._bytes += size
            while self._bytes > self.max_bytes:
                old = self._items.pop(next(iter(self._items)))
                self._bytes -= self._size(old[1])


@dataclass
class _Image:
    frame: ModelFrame | None  # None until the perceived size is known (internvl)
    part: ImagePart
    width: int
    height: int
    detections: np.ndarray | None = None  # original pixels
    model_boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    stage_meta: dict[str, Any] = field(default_factory=dict)
    failed: str | None = None  # status when a pre-stage makes the question unanswerable


def _frame(img: _Image) -> ModelFrame:
    if img.frame is None:  # pragma: no cover - every path sets a frame or marks the image failed
        raise RuntimeError("internal error: image frame missing")
    return img.frame


class MCQRunner(ChatTask[MCQuestion, MCAnswer]):
    """Run a chat backend on multiple-choice HOI questions: the multiple-choice task on the
    resumable loop (:func:`~hoibench.runners.run_resumable`).

    Parameters
    ----------
    backend:
        Any :class:`ChatBackend`; wrap it in :class:`CachedBackend` to never lose a response.
    images:
        Folder the questions' ``file_name`` values are relative to. A name that leaves it (``..``,
        an absolute or drive name, a symlink out of it) is refused before any request is sent
        (:class:`hoibench._io.ImageFolder`); the header records the folder's real path.
    follow_symlinks:
        Follow symlinks that lead out of ``images`` (a link farm on purpose); names must still
        stay inside it on their text.
    model:
        Model name (for ``box_convention="auto"`` and the header).
    setting:
        1, 2 or 3; ``None`` keeps each question's own setting.
    box_convention:
        ``auto`` or one of :data:`~hoibench.runners.BOX_CONVENTIONS`.
    template, answer_format:
        Prompt template (bundled name or YAML path) and which answer instruction to use.
    seed, permutation:
        Choice order, ``question.order(seed, permutation)``.
    detections:
        Setting 3: person boxes per file name in original pixels (from :func:`load_detections`);
        ``None`` asks the model to detect people itself.
    iou_threshold, strict_iou:
        Setting 3 match of a detected person to the target: IoU >= 0.5 (paper) or > 0.5
        (``strict_iou=True``, released code).
    strict_detection_parser:
        Read detection replies only from a fenced JSON block, like the released parser.
    box_shift:
        Added to the target box before it is written into a setting-2 prompt. hoibench boxes are
        0-based; the released code prints HICO-DET's 1-based file boxes, so ``box_shift=1``
        reproduces its prompts digit for digit on CrossHOI-Bench HICO-DET files.
    frames:
        A :class:`FrameCache` to share prepared images with other runners (``--permutations``);
        default: one of this runner's own.
    image_workers:
        Where images are resized and encoded: ``threads`` (every step of :func:`frame_file`
        but a little Python releases the interpreter lock; no copies between processes),
        ``processes`` (worker processes: no interpreter lock shared with the event loop, at the
        price of pickling every PNG back), or ``auto`` (threads on up to 4 CPUs, where they cost
        a quarter less CPU per image in ``perf/bench_runner.py``; processes above). Runs with
        fewer than 64 distinct images always use threads. The bytes are the same either way.
    """

    def __init__(self, backend: ChatBackend, *, images: str | Path, follow_symlinks: bool = False,
                 model: str | None = None,
                 setting: int | None = None, box_convention: str = "auto",
                 template: str | Path | PromptTemplate = "crosshoi", answer_format: str = "letters",
                 seed: int = 0, permutation: int = 0, params: GenerationParams | None = None,
                 detections: Mapping[str, np.ndarray] | None = None, detections_id: str | None = None,
                 iou_threshold: float = 0.5, strict_iou: bool = False,
                 strict_detection_parser: bool = False, box_shift: float = 0.0, min_pixels: int = QWEN_MIN_PIXELS,
                 max_pixels: int = QWEN_MAX_PIXELS, chunk_size: int = 256, progress: bool = True,
                 extra_header: Mapping[str, Any] | None = None, frames: FrameCache | None = None,
                 image_workers: str = "auto") -> None:
        if image_workers not in IMAGE_WORKERS:
            raise ConfigError(f"image_workers must be one of {list(IMAGE_WORKERS)}; got {image_workers!r}")
        if setting not in (None, 1, 2, 3):
            raise ConfigError(f"setting must be 1, 2 or 3; got {setting!r}")
        if answer_format not in ANSWER_FORMATS:
            raise ConfigError(f"answer_format must be one of {list(ANSWER_FORMATS)}; got {answer_format!r}")
        if not 0 < iou_threshold <= 1:
            raise ConfigError(f"iou_threshold must be in (0, 1]; got {iou_threshold}")
        if chunk_size < 1:
            raise ConfigError(f"chunk_size must be >= 1; got {chunk_size}")
        if detections is not None and setting not in (None, 3):
            raise ConfigError("detections are only used in setting 3")
        self.backend = backend
        self.images = ImageFolder(Path(images), follow_symlinks=follow_symlinks)
        self._paths: dict[str, str] = {}  # file name -> checked path (filled by check)
        self._questions_file: str | None = None
        self.model = model or str(backend.fingerprint().get("model", backend.name))
        self.setting = setting
        self.box_convention = resolve_box_convention(box_convention, self.model)
        self.template = template if isinstance(template, PromptTemplate) else load_template(template)
        self.template.instruction(answer_format)
        self.answer_format = answer_format
        self.seed = seed
        self.permutation = permutation
        self.params = params if params is not None else GenerationParams()
        self.detections = detections
        self.detections_id = detections_id
        self.iou_threshold = iou_threshold
        self.strict_iou = strict_iou
        self.strict_detection_parser = strict_detection_parser
        self.box_shift = float(box_shift)
        self.min_pixels = min_pixels
        self.max_pixels = max_pixels
        self.chunk_size = chunk_size
        self.progress = progress
        self.extra_header = dict(extra_header or {})
        self.frames = frames if frames is not None else FrameCache()
        self.image_workers = image_workers
        self._pool: ProcessPoolExecutor | None = None  # resize workers, started on first need
        self._pool_lock = threading.Lock()
        self._no_pool = False  # set for small runs and when worker processes cannot start

    noun = "question"
    rate_unit = "q/s"
    header_notes: ClassVar[Mapping[str, str]] = {
        "images": "the response cache is keyed by image content, not path: after moving the folder, "
                  "--overwrite answers unchanged images from the cache without new requests",
    }
    #: ``limit`` says how far the latest run went; the answers of an earlier, longer run stay valid
    resume_free_keys: ClassVar[frozenset[str]] = frozenset({"limit"})

    # ------------------------------------------------------------------ header
    def header(self) -> dict[str, Any]:
        """The provenance recorded on the first line; a resumed run must match it exactly."""
        return {
            "kind": ANSWERS_KIND, "model": self.model, "backend": self.backend.fingerprint(),
            "setting": self.setting, "box_convention": self.box_convention,
            "template": self.template.tag, "template_source": self.template.source,
            "answer_format": self.answer_format, "seed": self.seed, "permutation": self.permutation,
            "params": self.params.as_dict(), "iou_threshold": self.iou_threshold,
            "strict_iou": self.strict_iou, "strict_detection_parser": self.strict_detection_parser,
            "box_shift": self.box_shift,
            "min_pixels": self.min_pixels, "max_pixels": self.max_pixels,
            "detections": self.detections_id if self.detections is not None else None,
            **self.images.describe(), **self.extra_header, "hoibench": __version__,
        }

    # ------------------------------------------------------------------ images
    def _image_path(self, q: MCQuestion) -> str:
        """The checked path of a question's image (the one place a name becomes a path)."""
        path = self._paths.get(q.file_name)
        if path is None:
            path = self._paths[q.file_name] = self.images.file(
                q.file_name, file=self._questions_file, record=repr(q.id))
        return path

    def _prepare_image(self, q: MCQuestion) -> _Image:
        """The image as the model will see it (resized once here when the convention resizes),
        from :attr:`frames` when the same content was prepared with the same settings before."""
        path = self._image_path(q)
        with open(path, "rb") as f:
            raw = f.read()
        digest = hashlib.sha256(raw).hexdigest()
        key = (digest, self.box_convention, self.min_pixels, self.max_pixels)
        hit = self.frames.get(key)
        if hit is None:
            hit = self._encode(path, raw, digest)
            self.frames.put(key, hit)
        frame, part, width, height = hit
        if q.width and q.height and (q.width, q.height) != (width, height):
            raise ValidationError(f"question {q.id!r}: image {path} is {width}x{height} but the "
                                  f"question says {q.width}x{q.height}")
        if part.path != path:  # the same content under another name
            part = ImagePart(path=path, data=part.data, mime=part.mime, digest=part.digest, b64=part.b64)
        return _Image(frame, part, width, height)

    def _encode(self, path: str, raw: bytes, digest: str) -> tuple[ModelFrame | None, ImagePart, int, int]:
        if self.box_convention in _RESIZING:
            # everything but the hash in one worker call: size, frame, resize, PNG and its sha256;
            # the server sees a size it will not change again. A frame store serves it when it can.
            store, key, prep = self.frames.store, "", None
            bounds = {"min_pixels": self.min_pixels, "max_pixels": self.max_pixels}
            if store is not None:
                key = store.key(digest, self.box_convention, **bounds)
                prep = store.load(key, raw, self.box_convention, **bounds)
            if prep is None:
                prep = self._prepare(path, raw, digest)
                if store is not None:
                    store.save(key, prep)
            frame = prep.frame
            width, height = frame.width, frame.height
            if prep.png is not None:
                part = ImagePart(path=path, data=prep.png, mime="image/png", digest=prep.sha256, b64=prep.b64)
                return frame, part, width, height
        else:
            from PIL import Image

            with Image.open(io.BytesIO(raw)) as im:  # the header only: size and frame
                width, height = im.size
            frame = None if self.box_convention == "internvl" else model_frame(
                self.box_convention, width, height, min_pixels=self.min_pixels, max_pixels=self.max_pixels)
        mime = mimetypes.guess_type(path)[0] or "image/jpeg"
        return frame, ImagePart(path=path, data=raw, mime=mime, digest=digest), width, height

    def _threads_only(self, n_images: int) -> bool:
        """Whether a run over ``n_images`` distinct images prepares them in threads only."""
        workers = self.image_workers
        if workers == "auto":
            workers = "threads" if (os.cpu_count() or 1) <= 4 else "processes"
        return workers == "threads" or n_images < _POOL_MIN_IMAGES

    def _prepare(self, path: str, raw: bytes, digest: str) -> PreparedFile:
        """:func:`frame_file` in a worker process (which reads ``path`` itself and checks it
        against ``digest``); in this thread for small runs (starting the workers costs more than
        they save) and when processes cannot start (a ``__main__`` without a main guard, a sandbox
        without semaphores)."""
        kwargs = {"min_pixels": self.min_pixels, "max_pixels": self.max_pixels}
        with self._pool_lock:
            if self._pool is None and not self._no_pool:
                try:
                    self._pool = frame_pool()
                except (OSError, ImportError, NotImplementedError):
                    self._no_pool = True
            pool = self._pool
        if pool is not None:
            try:
                return pool.submit(frame_file, path, self.box_convention, sha256=digest, **kwargs).result()
            except (BrokenProcessPool, RuntimeError, OSError):
                with self._pool_lock:
                    if not self._no_pool:
                        log.warning("image workers could not start; preparing images in threads")
                    self._no_pool = True
        return frame_file(raw, self.box_convention, **kwargs)

    # ------------------------------------------------------------------ run
    def run(self, questions: Sequence[MCQuestion], out: str | Path, *,
            overwrite: bool = False, questions_file: str | Path | None = None) -> RunSummary:
        """Answer every question into ``out`` (JSONL), resuming what an earlier run left there.

        ``questions_file`` (default: a :class:`~hoibench.formats.QuestionSet`'s path) is named in
        the error about a bad image name."""
        source = questions_file if questions_file is not None else getattr(questions, "path", None)
        self._questions_file = None if source is None else str(source)
        self._paths.clear()
        self._no_pool = self._threads_only(len({q.file_name for q in questions}))
        if self.setting is not None:
            questions = [q if q.setting == self.setting else q.with_setting(self.setting) for q in questions]
        try:
            res = run_resumable(self, questions, backend=self.backend, store=_AnswersFile(Path(out)),
                                header=self.header(), overwrite=overwrite, chunk_size=self.chunk_size,
                                progress=self.progress)
        finally:
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
                self._pool = None
        counts = res.counts
        retryable = sum(r is None or (r.status == "error" and r.meta.get("retryable", True))
                        for r in res.records)
        first = next((r for r in res.records if r is None or r.status == "error"), False)
        first_error = (None if first is False else "no answer (the run stopped)" if first is None
                       else f"question {first.question_id!r}: {first.meta.get('error') or 'error'}")
        return RunSummary(total=len(questions), resumed=res.resumed, ok=counts.get("ok", 0),
                          parse_error=counts.get("parse_error", 0),
                          no_person_match=counts.get("no_person_match", 0),
                          error=counts.get("error", 0) + res.missing, requests=res.requests,
                          cache_hits=res.cache_hits, seconds=res.seconds, out=str(out),
                          attempts=res.attempts, servers=tuple(x.as_dict() for x in res.servers),
                          first_error=first_error, sends=res.sends, retryable_errors=retryable)

    # ------------------------------------------------------------------ the task protocol
    def item_id(self, item: MCQuestion) -> str:
        return item.id

    def record_id(self, record: MCAnswer) -> str:
        return record.question_id

    def status(self, record: MCAnswer) -> str:
        return record.status

    def check(self, items: Sequence[MCQuestion]) -> None:
        """Every image name resolved and checked before the first request: a bad name late in the
        file cannot leave a run that already sent the images before it."""
        missing = self.images.missing(dict.fromkeys(self._image_path(q) for q in items))
        if missing:
            raise ConfigError(f"{len(missing)} image(s) not found under {self.images.root}, e.g. "
                              f"{missing[0]}")
        if any(q.setting == 3 for q in items) and self.detections is not None:
            absent = [q.file_name for q in items if q.setting == 3 and q.file_name not in self.detections]
            if absent:
                log.warning("%d image(s) have no external detections (no person match), e.g. %s",
                            len(absent), absent[0])

    def order(self, items: list[MCQuestion]) -> list[MCQuestion]:
        """Questions of one image next to each other, so that each image is prepared once."""
        rank: dict[str, int] = {}
        for q in items:
            rank.setdefault(q.file_name, len(rank))
        return sorted(items, key=lambda q: rank[q.file_name])

    def group_key(self, item: MCQuestion) -> str:
        """The questions of one image form a group: prepared once, detected once (setting 3)."""
        return item.file_name

    def prepare(self, chunk: Sequence[MCQuestion]) -> dict[str, Callable[[], _Image]]:
        first: dict[str, MCQuestion] = {}
        for q in chunk:
            first.setdefault(q.file_name, q)
        return {name: partial(self._prepare_image, q) for name, q in first.items()}

    def _request(self, image: _Image, text: str, **meta: Any) -> ChatRequest:
        return ChatRequest((ChatMessage.user(image.part, text),), self.params, meta=meta)

    def batches(self, chunk: Sequence[MCQuestion], prepared: Mapping[str, Any],
                emit: Callable[[MCAnswer], None]) -> Iterator[Batch]:
        """Up to three batches: perceived image sizes (internvl), person detections (setting 3
        without external detections), the questions."""
        images: dict[str, _Image] = dict(prepared)
        boxed = {q.file_name for q in chunk if q.setting in (2, 3)}
        names = list(images)

        # stage 1: the perceived image size (InternVL, as in the paper)
        if self.box_convention == "internvl":
            need = [n for n in names if n in boxed]
            reqs = [self._request(images[n], self.template.image_size, stage="image_size") for n in need]

            def on_size(i: int, resp: ChatResponse) -> None:
                img = images[need[i]]
                size = parse_image_size(resp.text) if resp.ok else None
                img.stage_meta["perceived_size"] = list(size) if size else None
                img.stage_meta["image_size_raw"] = resp.text
                if size is None:
                    img.failed = "error" if not resp.ok else "parse_error"
                    img.stage_meta["failed_stage"] = "image_size"
                    img.stage_meta.update(_error_meta(resp))
                else:
                    img.frame = model_frame("internvl", img.width, img.height, perceived=size)

            yield Batch(reqs, on_size)
            for n in names:  # setting 1 needs no box frame
                if n not in boxed:
                    images[n].frame = model_frame("original", images[n].width, images[n].height)

        # stage 2: person detection by the model itself (setting 3)
        detect = [n for n in names if images[n].failed is None
                  and any(q.setting == 3 and q.file_name == n for q in chunk)]
        if self.detections is None and detect:
            reqs = [self._request(images[n], self.template.detection, stage="detection") for n in detect]

            def on_det(i: int, resp: ChatResponse) -> None:
                img = images[detect[i]]
                if not resp.ok:
                    img.failed = "error"
                    img.stage_meta.update(failed_stage="detection", **_error_meta(resp))
                    return
                parsed = parse_detection(resp.text, strict=self.strict_detection_parser)
                frame = _frame(img)
                img.model_boxes = list(parsed.boxes)
                img.detections = np.asarray([frame.from_model(b) for b in parsed.boxes],
                                            dtype=np.float64).reshape(-1, 4)
                img.stage_meta.update(detection_raw=resp.text, detection_status=parsed.status,
                                      detection_dropped=parsed.dropped)

            yield Batch(reqs, on_det)
        elif self.detections is not None:
            for n in detect:
                images[n].detections = np.asarray(self.detections.get(n, np.zeros((0, 4))),
                                                  dtype=np.float64).reshape(-1, 4)

        # stage 3: the questions
        reqs = []
        asked: list[tuple[MCQuestion, Any, dict[str, Any]]] = []
        for q in chunk:
            img = images[q.file_name]
            meta: dict[str, Any] = dict(img.stage_meta)
            if img.failed is not None:
                emit(MCAnswer(q.id, frozenset(), None, img.failed, meta=meta))
                continue
            frame = _frame(img)
            box_text = object_box_text = None
            if q.setting == 2:
                shifted = [v + self.box_shift for v in q.person_box]  # type: ignore[union-attr]
                box_text = frame.format(frame.to_model(shifted))
                if q.object_box is not None and self.template.question_person_object:
                    obj = [v + self.box_shift for v in q.object_box]
                    object_box_text = frame.format(frame.to_model(obj))
            elif q.setting == 3:
                k, iou = match_person(q.person_box, img.detections if img.detections is not None  # type: ignore[arg-type]
                                      else np.zeros((0, 4)), iou_threshold=self.iou_threshold,
                                      strict=self.strict_iou)
                meta.update(n_detected=0 if img.detections is None else len(img.detections),
                            match_iou=round(iou, 4))
                if k < 0:
                    emit(MCAnswer(q.id, frozenset(), None, "no_person_match", meta=meta))
                    continue
                if self.detections is None:
                    model_box = img.model_boxes[k]  # as the model wrote it
                else:
                    model_box = frame.to_model(img.detections[k])  # type: ignore[index]
                meta["matched_box"] = [round(float(v), 2) for v in frame.from_model(model_box)]
                box_text = frame.format(model_box)
            rendered = render_question(q, self.template, box_text=box_text,
                                       object_box_text=object_box_text, answer_format=self.answer_format, seed=self.seed,
                                       permutation=self.permutation)
            meta["prompt_box"] = box_text
            if object_box_text is not None:
                meta["prompt_object_box"] = object_box_text
            reqs.append(self._request(img, rendered.text, stage="question", question_id=q.id))
            asked.append((q, rendered, meta))

        def on_answer(i: int, resp: ChatResponse) -> None:
            q, rendered, meta = asked[i]
            meta = {**meta, "order": list(rendered.order)}
            if not resp.ok:
                emit(MCAnswer(q.id, frozenset(), None, "error", meta={**meta, **_error_meta(resp)}))
                return
            parsed = parse_letters(resp.text, rendered.letters, answer_format=self.answer_format)
            texts = [rendered.letters[x] for x in parsed.tokens]  # a letter named twice: two picks
            meta["letters"] = sorted(parsed.letters)
            if parsed.invalid:
                meta["invalid_tokens"] = list(parsed.invalid)
            if any(t is None for t in texts):
                meta["padding_selected"] = True  # the "None" filler of a short question
            emit(MCAnswer.from_picks(q.id, [t for t in texts if t is not None], resp.text, parsed.status, meta))

        yield Batch(reqs, on_answer)


@dataclass(frozen=True)
class _AnswersFile:
    """The answers JSONL file (header line, one answer a line) as the loop's record store."""

    path: Path
    noun: str = "answers"

    def read(self) -> tuple[Mapping[str, Any] | None, Sequence[MCAnswer]]:
        old = read_answers(self.path)
        return old.header, list(old)

    def appender(self, header: Mapping[str, Any]) -> AnswerWriter:
        return AnswerWriter(self.path, header=header)

    def rewrite(self, records: Sequence[MCAnswer], header: Mapping[str, Any]) -> None:
        write_answers(self.path, records, header=header)


def _error_meta(resp: ChatResponse) -> dict[str, Any]:
    """A failed response's meta: its error, and ``retryable: false`` when a rerun would only send
    the same refused request again (a 4xx, a malformed reply)."""
    return {"error": resp.error, **({} if resp.retryable else {"retryable": False})}
