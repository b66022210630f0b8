"""The multiple-choice run loop: questions + images + a chat backend → an answers JSONL file.

Each chunk of questions goes through up to three stages, each one batch of backend requests:
the perceived image size (``internvl`` convention, settings 2–3), person detection (setting 3
without external detections), and the questions. Answers are appended to the JSONL file as their
responses arrive; a re-run with the same arguments keeps every finished answer and asks only for
the rest (responses already in the cache cost no request). At the end the file is rewritten
atomically with one line per question, in question order.
"""

from __future__ import annotations

import hashlib
import io
import logging
import mimetypes
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.data import MCAnswer, MCQuestion
from hoibench.formats.questions import AnswerWriter, read_answers, write_answers
from hoibench.models._backend import (
    ChatBackend,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    GenerationParams,
    ImagePart,
)
from hoibench.runners.mcq._boxes import (
    QWEN_MAX_PIXELS,
    QWEN_MIN_PIXELS,
    ModelFrame,
    model_frame,
    resolve_box_convention,
)
from hoibench.runners.mcq._detections import match_person
from hoibench.runners.mcq._parsing import parse_detection, parse_image_size, parse_letters
from hoibench.runners.mcq._prompts import (
    ANSWER_FORMATS,
    PromptTemplate,
    load_template,
    render_question,
)

__all__ = ["MCQRunner", "RunSummary"]

log = logging.getLogger(__name__)

ANSWERS_KIND = "mcq_answers"


@dataclass(frozen=True)
class RunSummary:
    """What a run did: questions in total, answers kept from an earlier run, and the statuses of
    the answers in the file at the end; ``requests`` went to the model, ``cache_hits`` did not."""

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

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


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


class MCQRunner:
    """Run a chat backend on multiple-choice HOI questions.

    Parameters
    ----------
    backend:
        Any :class:`ChatBackend`; wrap it in :class:`CachedBackend` to never lose a response.
    images:
        Folder the questions' ``file_name`` values are relative to.
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
    """

    def __init__(self, backend: ChatBackend, *, images: str | Path, model: str | None = None,
                 setting: int | None = None, box_convention: str = "auto",
                 template: str | Path | PromptTemplate = "crosshoi", answer_format: str = "letters",
                 seed: int = 0, permutation: int = 0, params: GenerationParams | None = None,
                 detections: Mapping[str, np.ndarray] | None = None, detections_id: str | None = None,
                 iou_threshold: float = 0.5, strict_iou: bool = False,
                 strict_detection_parser: bool = False, box_shift: float = 0.0, min_pixels: int = QWEN_MIN_PIXELS,
                 max_pixels: int = QWEN_MAX_PIXELS, chunk_size: int = 256, progress: bool = True,
                 extra_header: Mapping[str, Any] | None = None) -> None:
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
        self.images = Path(images)
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

    # ------------------------------------------------------------------ header and resume
    def header(self) -> dict[str, Any]:
        """The provenance recorded on the first line; a resumed run must match it exactly."""
        from hoibench._version import __version__

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
            **self.extra_header, "hoibench": __version__,
        }

    def _resume(self, out: Path, header: dict[str, Any]) -> dict[str, MCAnswer]:
        """Answers an earlier run with the same settings left in ``out`` (errors excluded)."""
        if not out.exists() or out.stat().st_size == 0:
            return {}
        old = read_answers(out)
        if not old.header:
            raise ConfigError(f"{out}: exists and has no answers header; choose another --out")
        skip = {"hoibench"}
        diff = sorted(k for k in set(old.header) | set(header)
                      if k not in skip and old.header.get(k) != header.get(k))
        if diff:
            k = diff[0]
            raise ConfigError(f"{out}: was written by a run with other settings ({k}: "
                              f"{old.header.get(k)!r} there, {header.get(k)!r} now); use another "
                              "--out or --overwrite")
        return {a.question_id: a for a in old if a.status != "error"}

    # ------------------------------------------------------------------ images
    def _image_path(self, q: MCQuestion) -> Path:
        return self.images / q.file_name

    def _prepare_image(self, q: MCQuestion) -> _Image:
        from PIL import Image

        path = self._image_path(q)
        with Image.open(path) as im:
            width, height = im.size
            if q.width and q.height and (q.width, q.height) != (width, height):
                raise ValidationError(f"question {q.id!r}: image {path} is {width}x{height} but the "
                                      f"question says {q.width}x{q.height}")
            if self.box_convention == "internvl":
                frame = None
            else:
                frame = model_frame(self.box_convention, width, height,
                                    min_pixels=self.min_pixels, max_pixels=self.max_pixels)
            if frame is not None and frame.resized:
                # resize once, here; the server sees a size it will not change again
                rgb = im.convert("RGB").resize((frame.sent_width, frame.sent_height))
                buf = io.BytesIO()
                rgb.save(buf, format="PNG", compress_level=1)  # lossless; fast over small
                data = buf.getvalue()
                part = ImagePart(path=str(path), data=data, mime="image/png",
                                 digest=hashlib.sha256(data).hexdigest())
                return _Image(frame, part, width, height)
        raw = path.read_bytes()
        mime = mimetypes.guess_type(path.name)[0] or "image/jpeg"
        part = ImagePart(path=str(path), data=raw, mime=mime, digest=hashlib.sha256(raw).hexdigest())
        return _Image(frame, part, width, height)

    # ------------------------------------------------------------------ run
    def run(self, questions: Sequence[MCQuestion], out: str | Path, *,
            overwrite: bool = False) -> RunSummary:
        """Answer every question into ``out`` (JSONL), resuming what an earlier run left there."""
        start = time.perf_counter()
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        if self.setting is not None:
            questions = [q if q.setting == self.setting else q.with_setting(self.setting) for q in questions]
        ids = [q.id for q in questions]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValidationError(f"question id {dup!r} occurs more than once")
        missing = [q.file_name for q in questions if not self._image_path(q).is_file()]
        if missing:
            raise ConfigError(f"{len(missing)} image(s) not found under {self.images}, e.g. "
                              f"{self.images / missing[0]}")
        if any(q.setting == 3 for q in questions) and self.detections is not None:
            absent = [q.file_name for q in questions if q.setting == 3 and q.file_name not in self.detections]
            if absent:
                log.warning("%d image(s) have no external detections (no person match), e.g. %s",
                            len(absent), absent[0])
        if overwrite and out.exists():
            out.unlink()
        header = self.header()
        done = self._resume(out, header)
        todo = [q for q in questions if q.id not in done]
        # questions of one image in one chunk, so that each image is prepared once
        rank: dict[str, int] = {}
        for q in todo:
            rank.setdefault(q.file_name, len(rank))
        todo.sort(key=lambda q: rank[q.file_name])
        resumed = len(questions) - len(todo)
        stats0 = self.backend.stats()
        sent = [0]

        errors: dict[str, MCAnswer] = {}
        with AnswerWriter(out, header=header) as writer, \
                _Progress(len(questions), resumed, self.progress) as bar:
            def write(answer: MCAnswer, q: MCQuestion) -> None:
                writer.write(answer)
                (errors if answer.status == "error" else done)[q.id] = answer
                bar.advance(answer.status)

            chunks = [todo[s:s + self.chunk_size] for s in range(0, len(todo), self.chunk_size)]
            # decoding, resizing and encoding release the GIL: images are prepared in threads, and
            # the next chunk's while the current chunk's requests are in flight
            with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
                pending = self._prepare_chunk(pool, chunks[0]) if chunks else None
                for k, chunk in enumerate(chunks):
                    images = {name: fut.result() for name, fut in pending.items()}  # type: ignore[union-attr]
                    pending = self._prepare_chunk(pool, chunks[k + 1]) if k + 1 < len(chunks) else None
                    self._run_chunk(chunk, images, write, sent)

        final = [done.get(q.id) or errors.get(q.id) for q in questions]
        # one line per question, in question order (replaces retried errors and resumed duplicates)
        write_answers(out, [a for a in final if a is not None], header=header)
        counts = {k: 0 for k in ("ok", "parse_error", "no_person_match", "error")}
        for a in final:
            st = "error" if a is None else a.status
            counts[st] = counts.get(st, 0) + 1
        stats1 = self.backend.stats()
        hits = stats1.cache_hits - stats0.cache_hits
        reqs = (stats1.requests - stats0.requests
                if stats1.requests is not None and stats0.requests is not None else sent[0])
        return RunSummary(total=len(questions), resumed=resumed, ok=counts["ok"],
                          parse_error=counts["parse_error"], no_person_match=counts["no_person_match"],
                          error=counts["error"], requests=reqs, cache_hits=hits,
                          seconds=time.perf_counter() - start, out=str(out))

    def _generate(self, requests: list[ChatRequest],
                  on_response: Callable[[int, ChatResponse], None], sent: list[int]) -> None:
        if requests:
            sent[0] += len(requests)
            self.backend.generate(requests, on_response)

    def _request(self, image: _Image, text: str, **meta: Any) -> ChatRequest:
        return ChatRequest((ChatMessage.user(image.part, text),), self.params, meta=meta)

    def _prepare_chunk(self, pool: ThreadPoolExecutor, chunk: list[MCQuestion]) -> dict[str, Future[_Image]]:
        first: dict[str, MCQuestion] = {}
        for q in chunk:
            first.setdefault(q.file_name, q)
        return {name: pool.submit(self._prepare_image, q) for name, q in first.items()}

    def _run_chunk(self, chunk: list[MCQuestion], images: dict[str, _Image],
                   write: Callable[[MCAnswer, MCQuestion], None], sent: list[int]) -> None:
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
                    img.stage_meta["error"] = resp.error
                else:
                    img.frame = model_frame("internvl", img.width, img.height, perceived=size)

            self._generate(reqs, on_size, sent)
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
                    img.stage_meta.update(failed_stage="detection", error=resp.error)
                    return
                parsed = parse_detection(resp.text, strict=self.strict_detection_parser)
                frame = _frame(img)
                img.model_boxes = list(parsed.boxes)
                img.detections = np.asarray([frame.from_model(b) for b in parsed.boxes],
                                            dtype=np.float64).reshape(-1, 4)
                img.stage_meta.update(detection_raw=resp.text, detection_status=parsed.status,
                                      detection_dropped=parsed.dropped)

            self._generate(reqs, on_det, sent)
        elif self.detections is not None:
            for n in detect:
                images[n].detections = np.asarray(self.detections.get(n, np.zeros((0, 4))),
                                                  dtype=np.float64).reshape(-1, 4)

        # stage 3: the questions
        reqs: list[ChatRequest] = []
        asked: list[tuple[MCQuestion, Any, dict[str, Any]]] = []
        for q in chunk:
            img = images[q.file_name]
            meta: dict[str, Any] = dict(img.stage_meta)
            if img.failed is not None:
                write(MCAnswer(q.id, frozenset(), None, img.failed, meta=meta), q)
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
                    write(MCAnswer(q.id, frozenset(), None, "no_person_match", meta=meta), q)
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
                write(MCAnswer(q.id, frozenset(), None, "error", meta={**meta, "error": resp.error}), q)
                return
            parsed = parse_letters(resp.text, rendered.letters, answer_format=self.answer_format)
            texts = [rendered.letters[x] for x in sorted(parsed.letters)]
            meta["letters"] = sorted(parsed.letters)
            if parsed.invalid:
                meta["invalid_tokens"] = list(parsed.invalid)
            if any(t is None for t in texts):
                meta["padding_selected"] = True  # the "None" filler of a short question
            selected = frozenset(t for t in texts if t is not None)
            write(MCAnswer(q.id, selected, resp.text, parsed.status, meta=meta), q)

        self._generate(reqs, on_answer, sent)


class _Progress:
    """A rich progress bar with throughput and ETA (silent when disabled)."""

    def __init__(self, total: int, done: int, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, done, enabled
        self.counts: dict[str, int] = {}
        self._p: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from hoibench._progress import make_progress

            self._p = make_progress(description="[bold]answering", eta=True,
                                    extra=["{task.fields[rate]}"], trailing=["{task.fields[issues]}"])
            self._p.start()
            self._task = self._p.add_task("run", total=self.total, completed=self.done,
                                          rate="", issues="")
            self._t0 = time.perf_counter()
            self._n = 0
        return self

    def advance(self, status: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        if self._p is not None:
            self._n += 1
            rate = self._n / max(time.perf_counter() - self._t0, 1e-9)
            issues = " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()) if k != "ok")
            self._p.update(self._task, advance=1, rate=f"{rate:.1f} q/s", issues=issues)

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.stop()
