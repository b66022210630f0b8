"""Person detection for setting 3 with an external detector (the multiple-choice paper's Table 6:
DETR), on the resumable loop: one record per image in a JSONL file that a killed run resumes,
then the detections file ``mcq run --detections`` reads.

The detector is not a chat model, so the task sends no requests: it decodes a chunk's images in
the loop's worker threads (one chunk ahead), runs the detector on batches of them and emits a
record per image. The loop still owns the header check, the resume by image name, the retry of
failed images, the progress bar and the final rewrite.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import (
    ImageFolder,
    atomic_write_bytes,
    atomic_write_json,
    dumps_json,
    ensure_dir,
    iter_jsonl,
)
from hoibench._version import __version__
from hoibench.models import BackendStats, ChatBackend, ChatRequest, ChatResponse, ObjectDetector
from hoibench.runners._loop import Batch, ChatTask, run_resumable

__all__ = ["IMAGE_SUFFIXES", "DetectSummary", "detect_people", "list_images", "records_path"]

#: file suffixes of the images a folder is searched for
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp"})


def list_images(folder: str | Path) -> list[str]:
    """Relative POSIX names of every image under ``folder`` (recursively), sorted."""
    root = Path(folder)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


def records_path(out: str | Path) -> Path:
    """The per-image record file beside a detections file (what a stopped run resumes)."""
    out = Path(out)
    return out.with_name(out.name + ".records.jsonl")


@dataclass(frozen=True)
class DetectSummary:
    """What a run did: images in total, kept from an earlier run, detected now, failed, people
    found, and the files written."""

    total: int
    resumed: int
    ok: int
    errors: int
    people: int
    forward_passes: int
    seconds: float
    out: str
    records: str

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class _NoChat(ChatBackend):
    """The loop's backend for a task that asks no chat model (it counts zero requests)."""

    name = "none"

    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        raise RuntimeError("person detection sends no chat requests")

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name}

    def stats(self) -> BackendStats:
        return BackendStats(requests=0)


@dataclass(frozen=True)
class _RecordsFile:
    """The JSONL record file (header line, one image a line) as the loop's record store."""

    path: Path
    noun: str = "detections"

    def read(self) -> tuple[Mapping[str, Any] | None, Sequence[dict[str, Any]]]:
        rows: list[dict[str, Any]] = []
        # the last line may be cut short by a kill: its image is redone
        for n, rec in iter_jsonl(self.path, torn=lambda lines, i: i == len(lines) - 1):
            if not isinstance(rec, dict) or (n > 0 and not isinstance(rec.get("file_name"), str)):
                raise FormatError("expected an object with a 'file_name'", file=self.path, record=n + 1)
            rows.append(rec)
        if not rows or rows[0].get("kind") != "person_detections":
            return None, rows
        return rows[0], rows[1:]

    @contextmanager
    def appender(self, header: Mapping[str, Any]) -> Iterator[_Appender]:
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        with open(self.path, "ab") as fh:
            if not fresh and not self.path.read_bytes().endswith(b"\n"):
                fh.write(b"\n")  # terminate a torn last line; read() skips it
            if fresh:
                fh.write(dumps_json(dict(header)) + b"\n")
            yield _Appender(fh)

    def rewrite(self, records: Sequence[dict[str, Any]], header: Mapping[str, Any]) -> None:
        atomic_write_bytes(self.path, b"".join(dumps_json(r) + b"\n" for r in [dict(header), *records]))


@dataclass
class _Appender:
    fh: Any

    def write(self, record: dict[str, Any]) -> None:
        self.fh.write(dumps_json(record) + b"\n")
        self.fh.flush()


@dataclass
class _PeopleTask(ChatTask[str, dict[str, Any]]):
    detector: ObjectDetector
    folder: ImageFolder
    labels: tuple[str, ...]
    batch_size: int
    forward_passes: int = field(default=0)

    noun = "image"
    progress_label = "detecting"
    rate_unit = "images/s"
    header_notes: ClassVar[Mapping[str, str]] = {"detector": "the detector or its threshold changed",
                                                 "images": "another image folder"}

    def item_id(self, item: str) -> str:
        return item

    def record_id(self, record: dict[str, Any]) -> str:
        return str(record["file_name"])

    def status(self, record: dict[str, Any]) -> str:
        return str(record.get("status", "error"))

    def check(self, items: Sequence[str]) -> None:
        for name in items:
            self.folder.path(name)  # a name that leaves the folder is refused before any work

    def prepare(self, chunk: Sequence[str]) -> Mapping[str, Callable[[], Any]]:
        return {name: (lambda n=name: self._load(n)) for name in chunk}

    def _load(self, name: str) -> Any:
        from PIL import Image

        try:
            with Image.open(self.folder.path(name)) as im:
                return im.convert("RGB")
        except OSError as exc:
            return exc

    def batches(self, chunk: Sequence[str], prepared: Mapping[str, Any],
                emit: Callable[[dict[str, Any]], None]) -> Iterable[Batch]:
        ready = []
        for name in chunk:
            im = prepared[name]
            if isinstance(im, BaseException):
                emit({"file_name": name, "status": "error", "error": f"cannot read image: {im}"})
            else:
                ready.append((name, im))
        for s in range(0, len(ready), self.batch_size):
            part = ready[s:s + self.batch_size]
            try:
                found = self.detector.detect([im for _, im in part])
            except (RuntimeError, ValueError) as exc:  # e.g. out of memory: asked again on resume
                for name, _ in part:
                    emit({"file_name": name, "status": "error", "error": f"{type(exc).__name__}: {exc}"})
                continue
            self.forward_passes += 1
            for (name, im), det in zip(part, found, strict=True):
                det = det.only(self.labels)
                emit({"file_name": name, "status": "ok", "width": im.width, "height": im.height,
                      "boxes": [list(b) for b in det.boxes], "scores": list(det.scores),
                      "labels": list(det.labels)})
        return iter(())


def detect_people(detector: ObjectDetector, images: str | Path, out: str | Path, *,
                  names: Sequence[str] | None = None, labels: Sequence[str] = ("person",),
                  batch_size: int = 8, chunk_size: int = 64, follow_symlinks: bool = False,
                  overwrite: bool = False, progress: bool = True) -> DetectSummary:
    """Detect ``labels`` (people) in every image of ``images`` (or only ``names``), resumably;
    write ``out``: ``{file name: {"boxes", "scores", "labels"}}``, the file
    :func:`hoibench.runners.mcq.load_detections` reads (it applies the score threshold and NMS).

    Records go to :func:`records_path` as they are made; a run with the same detector, threshold,
    labels and folder resumes it and redoes only the images without a record or with an error.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1; got {batch_size}")
    unknown = [lab for lab in labels if lab not in detector.label_names]
    if unknown:
        raise ConfigError(f"{detector.name}: has no class {unknown[0]!r} (its classes: "
                          f"{', '.join(detector.label_names[:8])}, ...)")
    folder = ImageFolder(Path(images), follow_symlinks=follow_symlinks)
    todo = list_images(images) if names is None else list(dict.fromkeys(names))
    if not todo:
        raise ConfigError(f"{images}: no images ({', '.join(sorted(IMAGE_SUFFIXES))}) to detect in")
    out = Path(out)
    ensure_dir(out.parent, for_path=out)
    store = _RecordsFile(records_path(out))
    header = {"kind": "person_detections", "hoibench": __version__, "detector": detector.fingerprint(),
              "labels": list(labels), **folder.describe()}
    task = _PeopleTask(detector, folder, tuple(labels), batch_size)
    res = run_resumable(task, todo, backend=_NoChat(), store=store, header=header,
                        overwrite=overwrite, chunk_size=chunk_size, progress=progress)
    done = [r for r in res.records if r is not None and r.get("status") == "ok"]
    atomic_write_json(out, {r["file_name"]: {"boxes": r["boxes"], "scores": r["scores"],
                                             "labels": r["labels"]} for r in done}, indent=False)
    return DetectSummary(total=len(todo), resumed=res.resumed, ok=len(done),
                         errors=res.counts.get("error", 0) + res.missing,
                         people=sum(len(r["boxes"]) for r in done), forward_passes=task.forward_passes,
                         seconds=res.seconds, out=os.fspath(out), records=os.fspath(store.path))
