"""The resumable loop every chat-model task runs on: items in, one record per item out, appended
to a file as the responses arrive, so that a killed run loses only the requests in flight.

A task (:class:`ChatTask`) says what to ask and what the answers mean; this loop owns the rest:
the record file's header check and resume by item id (records with a retry status are asked
again), chunking, preparing a chunk's inputs in worker threads while the chunk before it is being
answered, the progress bar, the final rewrite (one record per item, in item order) and the counts
of requests and cache hits (from :meth:`~hoibench.models.ChatBackend.stats`).

A group of items is answered in *batches*: the task yields a :class:`Batch` of requests, the loop
sends it and calls back per response, and the task's generator continues once every response of
that batch is in (a later batch may depend on earlier answers, e.g. a detection before the
question).

Backends with a streaming session (:meth:`~hoibench.models.ChatBackend.session`, the HTTP
backend) run as one pipeline without barriers (:func:`_stream`): items are cut into small groups
(:meth:`ChatTask.group_key`, e.g. the questions of one image), a bounded window of groups is in
flight at once, each group's inputs are prepared in a worker pool off the event loop, and each
group moves on to its next batch the moment its own responses are in, whatever the other groups
do. The pipeline is a plain asyncio loop and a thread pool: a run waits on its servers, and
the loop's own work per request is small next to their latency and to preparing an image.
Offline backends, which batch on the accelerator, get chunks of ``chunk_size`` items
(:func:`_answer_chunks`).

One run at a time per record file: the loop holds ``PATH.lock`` while it runs, so a second run on
the same file stops at once with one line instead of interleaving its records.
"""

from __future__ import annotations

import abc
import asyncio
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from hoibench._exceptions import ConfigError, ValidationError
from hoibench._io import exclusive_lock
from hoibench._progress import make_progress
from hoibench.models import ChatBackend, ChatRequest, ChatResponse, ChatSession, ServerStats

__all__ = ["Batch", "ChatTask", "LoopResult", "RecordStore", "run_resumable"]

T = TypeVar("T")  # an item to answer
R = TypeVar("R")  # the record written for it

#: header keys that may differ between a run and the run it resumes
_UNCHECKED_HEADER_KEYS = frozenset({"hoibench"})


@dataclass(frozen=True)
class Batch:
    """Requests to send now, and what to do with each response as it arrives
    (``on_response(index into requests, response)``)."""

    requests: Sequence[ChatRequest]
    on_response: Callable[[int, ChatResponse], None]


class _Appender(Protocol[R]):
    def write(self, record: R) -> None: ...


class RecordStore(Protocol[R]):
    """The append-only record file of a run (e.g. an answers JSONL file with a header line)."""

    #: where the records live; the loop creates its folder and deletes it on ``overwrite``
    path: Path
    #: what the records are, for error messages ("answers" → "has no answers header")
    noun: str

    def read(self) -> tuple[Mapping[str, Any] | None, Sequence[R]]:
        """The header and the records of an existing, non-empty file."""
        ...

    def appender(self, header: Mapping[str, Any]) -> AbstractContextManager[_Appender[R]]:
        """Open the file for appending (writing ``header`` first when it is new)."""
        ...

    def rewrite(self, records: Sequence[R], header: Mapping[str, Any]) -> None:
        """Replace the file atomically with ``header`` and ``records``."""
        ...


class ChatTask(abc.ABC, Generic[T, R]):
    """What a task asks and how it reads the answers; :func:`run_resumable` runs it.

    Subclasses give ids of items and records, the status of a record, and :meth:`batches`; they
    may override :meth:`check`, :meth:`order` and :meth:`prepare`.
    """

    #: statuses of records that a resumed run asks again (failed requests)
    retry_statuses: frozenset[str] = frozenset({"error"})
    #: the status of a record that needs no attention (left out of the progress bar's issues)
    ok_status: str = "ok"
    #: what an item is, for messages ("question id 'q1' occurs more than once")
    noun: str = "item"
    #: the progress bar's label and throughput unit
    progress_label: str = "answering"
    rate_unit: str = "items/s"
    #: a sentence added to the resume error when this header key differs (what the user can do)
    header_notes: ClassVar[Mapping[str, str]] = {}
    #: header keys a resumed run may change (they describe the latest run, not the records)
    resume_free_keys: ClassVar[frozenset[str]] = frozenset()

    @abc.abstractmethod
    def item_id(self, item: T) -> str:
        """The id that pairs an item with its record in the file."""

    @abc.abstractmethod
    def record_id(self, record: R) -> str:
        """The id of the item a record answers."""

    @abc.abstractmethod
    def status(self, record: R) -> str:
        """``ok_status``, a retry status or any other outcome (counted in the summary)."""

    def check(self, items: Sequence[T]) -> None:
        """Reject items that cannot run (raise) before the record file is touched."""

    def order(self, items: list[T]) -> list[T]:
        """The order to ask the unanswered items in (chunks and groups are cut from it)."""
        return items

    def group_key(self, item: T) -> str:
        """Items next to each other in :meth:`order` with one key form one group of the streaming
        pipeline (prepared and answered together, e.g. the questions of one image)."""
        return self.item_id(item)

    def prepare(self, chunk: Sequence[T]) -> Mapping[str, Callable[[], Any]]:
        """Inputs of a chunk to build in worker threads, by name (e.g. decoded images); the loop
        builds them while the previous chunk is being answered and passes the results to
        :meth:`batches`."""
        return {}

    @abc.abstractmethod
    def batches(self, chunk: Sequence[T], prepared: Mapping[str, Any],
                emit: Callable[[R], None]) -> Iterable[Batch]:
        """Answer ``chunk``: yield batches of requests; call ``emit(record)`` once per item, from a
        response callback or directly (an item that needs no request)."""


@dataclass(frozen=True)
class LoopResult(Generic[R]):
    """What a run did: ``records`` in item order (``None``: no record, e.g. the run stopped),
    ``resumed`` records kept from an earlier run, ``counts`` per status of the final records,
    ``requests`` that went to the model, ``attempts`` sent for them (retries included; ``None``
    when the backend does not count), ``sends`` written to connections for them (an attempt
    re-sent on a fresh connection counts twice; ``None`` when not counted), ``cache_hits``
    answered without a request, and per-server counts of this run."""

    records: list[R | None]
    resumed: int
    counts: Mapping[str, int]
    requests: int
    cache_hits: int
    seconds: float
    attempts: int | None = None
    servers: tuple[ServerStats, ...] = ()
    sends: int | None = None

    @property
    def missing(self) -> int:
        return sum(r is None for r in self.records)


def run_resumable(task: ChatTask[T, R], items: Sequence[T], *, backend: ChatBackend,
                  store: RecordStore[R], header: Mapping[str, Any], overwrite: bool = False,
                  chunk_size: int = 256, progress: bool = True) -> LoopResult[R]:
    """Give every item a record in ``store``, keeping what an earlier run with the same
    ``header`` left there; at the end the file holds one record per item, in item order."""
    if chunk_size < 1:
        raise ConfigError(f"chunk_size must be >= 1; got {chunk_size}")
    start = time.perf_counter()
    store.path.parent.mkdir(parents=True, exist_ok=True)
    ids = [task.item_id(x) for x in items]
    if len(set(ids)) != len(ids):
        n = Counter(ids)
        dup = next(i for i in ids if n[i] > 1)
        raise ValidationError(f"{task.noun} id {dup!r} occurs more than once")
    task.check(items)
    with exclusive_lock(store.path, what=f"run writing these {store.noun}"):
        if overwrite and store.path.exists():
            store.path.unlink()
        records, others = _resume(task, store, header, set(ids))
        todo = task.order([x for x, i in zip(items, ids) if i not in records])
        resumed = len(items) - len(todo)
        stats0 = backend.stats()

        with store.appender(header) as writer, \
                _Progress(len(items), resumed, progress, task.progress_label, task.rate_unit) as bar:
            def emit(record: R) -> None:
                writer.write(record)
                records[task.record_id(record)] = record
                bar.advance(task.status(record), ok=task.ok_status)

            sent = _stream(task, todo, backend, emit)
            if sent is None:  # no streaming session: chunks for an offline engine
                chunks = [todo[s:s + chunk_size] for s in range(0, len(todo), chunk_size)]
                sent = _answer_chunks(task, chunks, backend, emit)

        final = [records.get(i) for i in ids]
        # one record per item, in item order (replaces retried errors and resumed duplicates);
        # records of items outside this run (an earlier run without --limit) are kept after them
        store.rewrite([r for r in final if r is not None] + others, header)
    counts = Counter(task.status(r) for r in final if r is not None)
    stats1 = backend.stats()
    reqs = (stats1.requests - stats0.requests
            if stats1.requests is not None and stats0.requests is not None else sent)
    attempts = (stats1.attempts - stats0.attempts
                if stats1.attempts is not None and stats0.attempts is not None else None)
    sends = stats1.sends - stats0.sends if stats1.sends is not None and stats0.sends is not None else None
    return LoopResult(records=final, resumed=resumed, counts=dict(counts), requests=reqs,
                      cache_hits=stats1.cache_hits - stats0.cache_hits,
                      seconds=time.perf_counter() - start, attempts=attempts,
                      servers=_server_delta(stats0.servers, stats1.servers), sends=sends)


def _server_delta(before: Sequence[ServerStats], after: Sequence[ServerStats]) -> tuple[ServerStats, ...]:
    """Per-server counts of this run (a backend's counters span its whole life)."""
    old = {s.url: s for s in before}
    out = []
    for s in after:
        o = old.get(s.url, ServerStats(s.url))
        sends = None if s.sends is None else s.sends - (o.sends or 0)
        out.append(ServerStats(s.url, s.attempts - o.attempts, s.failures - o.failures,
                               s.wait_seconds - o.wait_seconds, sends))
    return tuple(out)


def _resume(task: ChatTask[T, R], store: RecordStore[R], header: Mapping[str, Any],
            ids: set[str]) -> tuple[dict[str, R], list[R]]:
    """Records an earlier run with the same header left in the store for this run's items (retry
    statuses excluded), and its records of other items (kept as they are, in file order)."""
    path = store.path
    if not path.exists() or path.stat().st_size == 0:
        return {}, []
    old_header, old = store.read()
    if not old_header:
        raise ConfigError(f"{path}: exists and has no {store.noun} header; choose another --out")
    diff = sorted(k for k in set(old_header) | set(header)
                  if k not in _UNCHECKED_HEADER_KEYS | task.resume_free_keys
                  and old_header.get(k) != header.get(k))
    if diff:
        k = diff[0]
        note = task.header_notes.get(k)
        raise ConfigError(f"{path}: was written by a run with other settings ({k}: "
                          f"{old_header.get(k)!r} there, {header.get(k)!r} now); use another "
                          "--out or --overwrite" + (f" ({note})" if note else ""))
    mine = {task.record_id(r): r for r in old
            if task.record_id(r) in ids and task.status(r) not in task.retry_statuses}
    last: dict[str, R] = {}
    for r in old:  # the last record of an item wins, as in the reader
        if task.record_id(r) not in ids:
            last[task.record_id(r)] = r
    return mine, list(last.values())


#: threads that prepare the streaming pipeline's inputs: they mostly wait on the image worker
#: processes, and twice as many as CPUs keep those fed (``perf/bench_runner.py`` prepares its
#: images alone with as many)
PREPARE_THREADS = max(4, 2 * (os.cpu_count() or 1))


def _stream(task: ChatTask[T, R], todo: Sequence[T], backend: ChatBackend,
            emit: Callable[[R], None]) -> int | None:
    """Answer ``todo`` through the backend's streaming session, one pipeline without barriers;
    ``None`` when the backend has no session. Returns the number of requests sent."""
    if type(backend).session is ChatBackend.session:
        return None
    if not todo:
        return 0
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_stream_async(task, todo, backend, emit))
    box: list[Any] = []  # called from inside an event loop (a notebook): ours in a thread
    err: list[BaseException] = []

    def target() -> None:
        try:
            box.append(asyncio.run(_stream_async(task, todo, backend, emit)))
        except BaseException as exc:  # re-raised in the caller's thread
            err.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if err:
        raise err[0]
    return box[0]


def _groups(task: ChatTask[T, R], todo: Sequence[T]) -> Iterable[list[T]]:
    group: list[T] = []
    key = None
    for item in todo:
        k = task.group_key(item)
        if group and k != key:
            yield group
            group = []
        group.append(item)
        key = k
    if group:
        yield group


async def _stream_async(task: ChatTask[T, R], todo: Sequence[T], backend: ChatBackend,
                        emit: Callable[[R], None]) -> int | None:
    session = backend.session()
    if session is None:
        return None
    loop = asyncio.get_running_loop()
    sent = 0
    groups = _groups(task, todo)  # one iterator shared by every worker, in order
    pool = ThreadPoolExecutor(max_workers=PREPARE_THREADS, thread_name_prefix="prepare")

    async def worker() -> None:
        """Takes the next group whenever its last is answered: the groups in flight are bounded by
        the number of workers (no task and no semaphore per group)."""
        nonlocal sent
        for group in groups:
            futures = {name: loop.run_in_executor(pool, build) for name, build in task.prepare(group).items()}
            prepared = {name: await fut for name, fut in futures.items()}
            for batch in task.batches(group, prepared, emit):
                sent += len(batch.requests)
                await asyncio.gather(*(_answer(session, batch, i) for i in range(len(batch.requests))))

    # groups in flight: enough prepared work for every slot, bounded so memory stays small
    workers = [asyncio.ensure_future(worker()) for _ in range(min(len(todo), max(8, 2 * session.capacity)))]
    try:
        done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        failed = next((t.exception() for t in done if not t.cancelled() and t.exception() is not None), None)
    finally:
        for t in workers:
            t.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await session.aclose()
        pool.shutdown(cancel_futures=True)  # inputs not started are dropped; started ones end
    if failed is not None:
        raise failed
    return sent


async def _answer(session: ChatSession, batch: Batch, i: int) -> None:
    batch.on_response(i, await session.complete(batch.requests[i]))


def _answer_chunks(task: ChatTask[T, R], chunks: Sequence[Sequence[T]], backend: ChatBackend,
                   emit: Callable[[R], None]) -> int:
    """Send every chunk's batches to the backend, one chunk at a time, with the next chunk's
    inputs prepared in threads meanwhile (decoding, resizing and encoding release the GIL);
    returns the number of requests sent (backends without a streaming session: offline engines).
    """
    sent = 0
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        def submit(chunk: Sequence[T]) -> dict[str, Future[Any]]:
            return {name: pool.submit(build) for name, build in task.prepare(chunk).items()}

        pending = submit(chunks[0]) if chunks else None
        for k, chunk in enumerate(chunks):
            prepared = {name: fut.result() for name, fut in pending.items()}  # type: ignore[union-attr]
            pending = submit(chunks[k + 1]) if k + 1 < len(chunks) else None
            for batch in task.batches(chunk, prepared, emit):
                if batch.requests:
                    sent += len(batch.requests)
                    backend.generate(list(batch.requests), batch.on_response)
    return sent


class _Progress:
    """A rich progress bar with throughput, ETA and the counts of statuses other than ok (silent
    when disabled)."""

    def __init__(self, total: int, done: int, enabled: bool, label: str, unit: str) -> None:
        self.total, self.done, self.enabled = total, done, enabled
        self.label, self.unit = label, unit
        self.counts: dict[str, int] = {}
        self._p: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            self._p = make_progress(description=f"[bold]{self.label}", eta=True,
                                    extra=["{task.fields[rate]}"], trailing=["{task.fields[issues]}"])
            self._p.start()
            self._task = self._p.add_task("run", total=self.total, completed=self.done,
                                          rate="", issues="")
            self._t0 = time.perf_counter()
            self._n = 0
        return self

    def advance(self, status: str, *, ok: str = "ok") -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        if self._p is not None:
            self._n += 1
            rate = self._n / max(time.perf_counter() - self._t0, 1e-9)
            issues = " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()) if k != ok)
            self._p.update(self._task, advance=1, rate=f"{rate:.1f} {self.unit}", issues=issues)

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.stop()
