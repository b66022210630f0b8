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
do. Offline backends, which batch on the accelerator, get chunks of ``chunk_size`` items
(:func:`_answer_chunks`).

When the run keeps the CPUs busy, the streaming loop *paces* its polls (:class:`_PacedSelector`,
:class:`_Pacer`): it asks the operating system for ready sockets at most once per quarter of the
requests' usual latency (at most every :data:`MAX_PACE` seconds), so that the replies and
prepared images that arrive in that time are handled in one wake-up of the loop's thread instead
of one each.

One run at a time per record file: the loop holds ``PATH.lock`` while it runs, so a second run on
the same file stops at once with one line instead of interleaving its records.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import contextlib
import os
import queue
import selectors
import sys
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


#: the longest a paced event loop waits before it polls for ready sockets (seconds); in
#: ``perf/bench_runner.py`` (concurrency 128, 200 ms server) 50 ms against 20 ms: 2.7 % less time
#: and CPU per question, faster in 7 of 8 alternated pairs; 100 ms no better than 50
MAX_PACE = 0.05
#: the pace as a share of the requests' usual latency: a reply waits on average half a pace
#: before it is handled (only while the run is CPU-bound and no request waits for a slot)
PACE_SHARE = 0.25
#: the share of the CPUs this process must keep busy (or of one CPU the loop's thread) for pacing
BUSY_SHARE = 0.75


class _PacedSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The platform's selector, polling at most once per ``pace`` seconds while the loop is busy.

    Why: at hundreds of requests a second every reply and every prepared image woke the loop's
    thread on its own, and each wake-up ran the loop's code from cold caches between the image
    threads' work (a question's choice order: 14 us in a warm loop, 42-80 us amid a run).
    Sleeping out the rest of the pace before the poll lets what arrives meanwhile be handled in
    one wake-up: in ``perf/bench_runner.py`` (concurrency 128, 200 ms server) the loop's thread
    spent 0.57-0.63 ms of CPU per question unpaced and 0.36-0.44 ms at a 20 ms pace, the fake
    server 0.20 -> 0.13 ms (it is sent bursts). Timers are not delayed (the pause ends at the
    loop's own timeout), a loop with callbacks ready does not pause, and ``pace = 0`` polls as
    usual."""

    pace = 0.0
    _last = float("-inf")

    def __init__(self) -> None:
        super().__init__()
        self._hurry = threading.Event()

    def hurry(self) -> None:
        """End the current pause now, and skip the next (thread-safe): an input that the rest
        of the run waits on is ready."""
        self._hurry.set()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if self.pace and (timeout is None or timeout > 0):
            pause = self._last + self.pace - time.monotonic()
            if pause > 0:
                if timeout is not None:
                    pause = min(pause, timeout)
                start = time.monotonic()
                self._hurry.wait(pause)
                if timeout is not None:
                    timeout = max(0.0, timeout - (time.monotonic() - start))
        self._hurry.clear()
        try:
            return super().select(timeout)
        finally:
            self._last = time.monotonic()


class _Pacer:
    """Sets a :class:`_PacedSelector`'s pace every :attr:`period` seconds: a quarter of the
    session's latency (:data:`PACE_SHARE`, at most :data:`MAX_PACE`) while the run is bound by
    CPU (this process's threads used :data:`BUSY_SHARE` of the CPUs since the last check, or the
    loop's thread that share of one) and not by its concurrency (no request found every slot
    taken since the last check); no pace otherwise. A run that waits on its servers has CPU to
    spare, and one whose slots are all taken would only see its latency, and so its rate, grow:
    concurrency 32 on a 200 ms server went from 0.96 to 0.92 of the ideal rate with
    placeholders, 0.91 to 0.86 with photographs, when paced regardless."""

    #: seconds between two updates of the pace
    period = 0.25

    def __init__(self, selector: _PacedSelector, session: ChatSession) -> None:
        self.selector, self.session = selector, session
        self.cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        self._handle: asyncio.TimerHandle | None = None
        self._mark = (time.monotonic(), time.process_time(), time.thread_time())
        self._waits = session.slot_waits

    def start(self) -> None:
        self._handle = asyncio.get_running_loop().call_later(self.period, self.update)

    def update(self) -> None:
        wall, cpu, own = time.monotonic(), time.process_time(), time.thread_time()
        span = max(wall - self._mark[0], 1e-9)
        busy = max((cpu - self._mark[1]) / span / self.cpus, (own - self._mark[2]) / span)
        self._mark = (wall, cpu, own)
        waits, self._waits = self.session.slot_waits - self._waits, self.session.slot_waits
        paced = busy >= BUSY_SHARE and not waits
        self.selector.pace = min(MAX_PACE, PACE_SHARE * self.session.latency) if paced else 0.0
        self.start()

    def stop(self) -> None:
        """No pace from now on (the end of a run, or its last inputs prepared)."""
        if self._handle is not None:
            self._handle.cancel()
        self.selector.pace = 0.0


#: threads that prepare the streaming pipeline's inputs (``perf/bench_runner.py`` prepares its
#: images alone with as many)
PREPARE_THREADS = max(4, 2 * (os.cpu_count() or 1))


class _Workers:
    """Threads that build inputs off the event loop (:meth:`submit` returns an asyncio future).
    Finished results reach the loop through one deque, with one wake-up for all that finished
    since the last: ``run_in_executor`` costs a concurrent future, an asyncio future chained to
    it and a wake-up per call, 15 us of the loop's CPU per call in a warm loop against 1 us here
    (and each image of a run is one call)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, n: int, *,
                 hurry: Callable[[], None] | None = None) -> None:
        self.loop = loop
        self.hurry = hurry  # called when a job ends with none queued: the run's last inputs
        self._jobs: queue.SimpleQueue[tuple[asyncio.Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._done: collections.deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = collections.deque()
        self._lock = threading.Lock()
        self._woken = False  # a drain is scheduled on the loop
        self._finished = False  # finish() has queued the threads' ends
        self._threads = [threading.Thread(target=self._work, name=f"prepare-{k}", daemon=True) for k in range(n)]
        for t in self._threads:
            t.start()

    def submit(self, build: Callable[[], Any]) -> asyncio.Future[Any]:
        fut = self.loop.create_future()
        self._jobs.put((fut, build))
        return fut

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fut, build = job
            if fut.cancelled():  # the run stopped: skip it (a stale read costs one build at most)
                continue
            try:
                result, error = build(), None
            except BaseException as exc:  # handed to the awaiting task, as an executor does
                result, error = None, exc
            hurry = self.hurry if self._jobs.empty() else None  # before the hand-off: the run may end
            with self._lock:
                self._done.append((fut, result, error))
                wake, self._woken = not self._woken, True
            if wake:
                with contextlib.suppress(RuntimeError):  # the loop closed: nobody awaits it
                    self.loop.call_soon_threadsafe(self._drain)
            if hurry is not None:
                hurry()  # the last inputs: handled at once, not after the loop's pace

    def _drain(self) -> None:
        with self._lock:
            done = list(self._done)
            self._done.clear()
            self._woken = False
        for fut, result, error in done:
            if fut.cancelled():
                continue
            if error is None:
                fut.set_result(result)
            else:
                fut.set_exception(error)

    def finish(self) -> None:
        """No more jobs will come: each thread ends after the jobs queued now (at a run's last
        inputs, so that the threads are gone before the run ends instead of joined after it)."""
        if not self._finished:
            self._finished = True
            for _ in self._threads:
                self._jobs.put(None)

    def shutdown(self) -> None:
        """Drop the jobs not started and wait for the threads to finish the ones they hold."""
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[0].cancel()
        self._finished = True
        for _ in self._threads:  # also where finish() queued its own: the loop above drops them
            self._jobs.put(None)
        for t in self._threads:
            t.join()


def _run_paced(main: Callable[[_PacedSelector | None], Any]) -> Any:
    """``asyncio.run(main(selector))`` on a :class:`_PacedSelector` loop (Windows: the default
    loop and no pacing, ``main(None)``)."""
    if sys.platform == "win32":  # pragma: no cover - the proactor loop has no selector to pace
        return asyncio.run(main(None))
    selector = _PacedSelector()
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(selector)) as runner:
            return runner.run(main(selector))
    loop = asyncio.SelectorEventLoop(selector)  # pragma: no cover - Python 3.10
    try:  # pragma: no cover
        return loop.run_until_complete(main(selector))
    finally:  # pragma: no cover
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _stream(task: ChatTask[T, R], todo: Sequence[T], backend: ChatBackend,
            emit: Callable[[R], None]) -> int | None:
    """Answer ``todo`` through the backend's streaming session, one pipeline without barriers;
    ``None`` when the backend has no session. Returns the number of requests sent."""
    if type(backend).session is ChatBackend.session or not todo:
        return None if type(backend).session is ChatBackend.session else 0

    def main(selector: _PacedSelector | None) -> Any:
        return _stream_async(task, todo, backend, emit, selector)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_paced(main)
    box: list[Any] = []  # called from inside an event loop (a notebook): ours in a thread
    err: list[BaseException] = []

    def target() -> None:
        try:
            box.append(_run_paced(main))
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
                        emit: Callable[[R], None], selector: _PacedSelector | None = None) -> int | None:
    session = backend.session()
    if session is None:
        return None
    loop = asyncio.get_running_loop()
    pacer = None if selector is None else _Pacer(selector, session)
    if pacer is not None:
        pacer.start()
    sent = 0
    # preparation threads mostly wait on the image worker processes: twice as many keep them fed
    pool = _Workers(loop, PREPARE_THREADS, hurry=None if selector is None else selector.hurry)
    groups = _groups(task, todo)
    preparing = 0  # groups started whose inputs are not prepared yet
    submitted_all = False

    def tail_check() -> None:
        """Every input prepared: the rest of the run waits on servers with CPU to spare, and its
        last replies are handled as they come (unpaced); the preparation threads can end."""
        if submitted_all and not preparing:
            pool.finish()
            if pacer is not None:
                pacer.stop()

    async def run_group(group: list[T]) -> None:
        nonlocal sent, preparing
        try:
            futures = {name: pool.submit(build) for name, build in task.prepare(group).items()}
            prepared = {name: await fut for name, fut in futures.items()}
        finally:
            preparing -= 1
            tail_check()
        for batch in task.batches(group, prepared, emit):
            if len(batch.requests) == 1:  # the usual batch (one question): no gather, no task
                sent += 1
                batch.on_response(0, await session.complete(batch.requests[0]))
            elif batch.requests:
                sent += len(batch.requests)
                await asyncio.gather(*(_answer(session, batch, i) for i in range(len(batch.requests))))

    async def worker() -> None:
        """Takes the next group whenever its last is answered: the groups in flight are bounded by
        the number of workers (no task and no semaphore per group)."""
        nonlocal preparing, submitted_all
        for group in groups:  # one iterator shared by every worker, in order
            preparing += 1
            await run_group(group)
            # the next group's inputs only after the loop's turn: the request that took this
            # group's slot is sent first, before a preparation thread wakes and takes the
            # interpreter lock (concurrency 32, 200 ms server: 8.30 -> 8.25 s, median of 14)
            await asyncio.sleep(0)
        submitted_all = True
        tail_check()

    # groups in flight: enough prepared work for every slot, bounded so memory stays small
    workers = [asyncio.ensure_future(worker()) for _ in range(min(len(todo), max(8, 2 * session.capacity)))]
    try:
        done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        failed = next((t.exception() for t in done if not t.cancelled() and t.exception() is not None), None)
    finally:
        if pacer is not None:
            pacer.stop()
        for t in workers:
            t.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await session.aclose()
        pool.shutdown()
    if failed is not None:
        raise failed
    return sent


async def _answer(session: ChatSession, batch: Batch, i: int) -> None:
    batch.on_response(i, await session.complete(batch.requests[i]))


def _answer_chunks(task: ChatTask[T, R], chunks: Sequence[Sequence[T]], backend: ChatBackend,
                   emit: Callable[[R], None]) -> int:
    """Send every chunk's batches to the backend, one chunk at a time, with the next chunk's
    inputs prepared in threads meanwhile (decoding, resizing and encoding release the GIL);
    returns the number of requests sent.

    The one place where requests meet the backend: a streaming pipeline across several servers
    replaces this function and leaves the task, the resume and the record file as they are.
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
