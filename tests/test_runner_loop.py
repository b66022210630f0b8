"""The generic resumable loop on its own (no images, no multiple-choice task): a toy task on a
``ScriptedBackend``, a JSONL record store, resume by id after a crash, header checks, batches that
depend on earlier answers, and the request and cache-hit counts."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.models import (
    BackendUnavailable,
    CachedBackend,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ChatSession,
    ScriptedBackend,
)
from hoibench.runners import Batch, ChatTask, run_resumable

Item = tuple[str, str]  # (id, word); an empty word needs no request
Record = dict[str, Any]


class Crash(Exception):
    """Stands in for a killed process."""


class JsonlStore:
    """A header line, then one JSON record a line; ``crash_after`` raises after that many writes."""

    noun = "records"

    def __init__(self, path: Path, crash_after: int | None = None) -> None:
        self.path = path
        self.crash_after = crash_after
        self.appended: list[str] = []

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(ln) for ln in self.path.read_text().splitlines()]

    def read(self) -> tuple[Mapping[str, Any] | None, Sequence[Record]]:
        lines = self.lines()
        return lines[0].get("header"), lines[1:]

    @contextmanager
    def appender(self, header: Mapping[str, Any]) -> Iterator[Any]:
        new = not self.path.exists() or self.path.stat().st_size == 0
        with self.path.open("a") as fh:
            if new:
                fh.write(json.dumps({"header": dict(header)}) + "\n")
            store = self

            class Writer:
                def write(self, record: Record) -> None:
                    if store.crash_after is not None and len(store.appended) >= store.crash_after:
                        raise Crash
                    fh.write(json.dumps(record) + "\n")
                    fh.flush()
                    store.appended.append(record["id"])

            yield Writer()

    def rewrite(self, records: Sequence[Record], header: Mapping[str, Any]) -> None:
        self.path.write_text("".join(json.dumps(x) + "\n" for x in [{"header": dict(header)}, *records]))


def text_of(req: ChatRequest) -> str:
    return req.messages[0].parts[0].text  # type: ignore[union-attr]


class Shout(ChatTask[Item, Record]):
    """Ask the model to shout each word; a word in ``broken`` makes the model fail."""

    noun = "word"

    def __init__(self) -> None:
        self.built: list[str] = []  # prepared inputs, in the order they were built

    def item_id(self, item: Item) -> str:
        return item[0]

    def record_id(self, record: Record) -> str:
        return record["id"]

    def status(self, record: Record) -> str:
        return record["status"]

    def _build(self, word: str) -> str:
        self.built.append(word)
        return f"shout {word}"

    def prepare(self, chunk: Sequence[Item]) -> Mapping[str, Callable[[], str]]:
        return {i: partial(self._build, w) for i, w in chunk if w}

    def batches(self, chunk: Sequence[Item], prepared: Mapping[str, Any],
                emit: Callable[[Record], None]) -> Iterator[Batch]:
        asked = [i for i, w in chunk if w]
        for i, w in chunk:
            if not w:
                emit({"id": i, "status": "empty", "text": None})

        def on_response(k: int, resp: ChatResponse) -> None:
            emit({"id": asked[k], "status": "ok" if resp.ok else "error", "text": resp.text})

        yield Batch([ChatRequest((ChatMessage.user(prepared[i]),)) for i in asked], on_response)


def shouter(broken: frozenset[str] = frozenset()) -> ScriptedBackend:
    def reply(req: ChatRequest) -> str:
        word = text_of(req).removeprefix("shout ")
        if word in broken:
            raise RuntimeError(f"model down for {word}")
        return word.upper()

    return ScriptedBackend(reply)


ITEMS: list[Item] = [(f"w{k}", w) for k, w in enumerate(["ant", "bee", "", "cat", "dog", "eel", "", "fox"])]
HEADER = {"kind": "toy", "model": "scripted", "hoibench": "1"}


def _run(store: JsonlStore, backend: Any, task: Shout | None = None, items: Sequence[Item] = ITEMS,
         **kw: Any):
    return run_resumable(task or Shout(), items, backend=backend, store=store, header=kw.pop("header", HEADER),
                         progress=kw.pop("progress", False), chunk_size=kw.pop("chunk_size", 3), **kw)


def test_one_record_per_item_in_item_order(tmp_path: Path) -> None:
    store, backend, task = JsonlStore(tmp_path / "sub" / "r.jsonl"), shouter(), Shout()
    res = _run(store, backend, task)
    lines = store.lines()
    assert lines[0] == {"header": HEADER}
    assert [r["id"] for r in lines[1:]] == [i for i, _ in ITEMS]
    assert [r["text"] for r in lines[1:]] == [w.upper() or None for _, w in ITEMS]
    assert res.counts == {"ok": 6, "empty": 2} and res.missing == 0 and res.resumed == 0
    # ScriptedBackend does not count requests: the loop counts what it sent
    assert res.requests == len(backend.calls) == 6 and res.cache_hits == 0
    assert sorted(task.built) == sorted(w for _, w in ITEMS if w)  # each input built once


def test_crash_then_resume_asks_exactly_for_the_rest(tmp_path: Path) -> None:
    crashed = JsonlStore(tmp_path / "r.jsonl", crash_after=4)
    with pytest.raises(Crash):
        _run(crashed, shouter())
    kept = set(crashed.appended)
    assert len(kept) == 4

    backend = shouter()
    res = _run(JsonlStore(tmp_path / "r.jsonl"), backend)
    asked = {text_of(r).removeprefix("shout ") for r in backend.calls}
    assert asked == {w for i, w in ITEMS if w and i not in kept}
    assert res.resumed == len(kept) and res.requests == len(asked)

    clean = JsonlStore(tmp_path / "clean.jsonl")
    _run(clean, shouter(), progress=True)
    assert crashed.lines() == clean.lines()  # the same file as a run never interrupted


def test_errors_are_kept_then_asked_again(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path / "r.jsonl")
    res = _run(store, shouter(frozenset({"bee", "fox"})))
    assert res.counts == {"ok": 4, "empty": 2, "error": 2}
    assert store.lines()[2] == {"id": "w1", "status": "error", "text": None}
    backend = shouter()
    res = _run(store, backend)
    assert [text_of(r) for r in backend.calls] == ["shout bee", "shout fox"]
    assert res.resumed == 6 and res.counts == {"ok": 6, "empty": 2}


def test_cached_backend_counts_requests_and_hits(tmp_path: Path) -> None:
    inner = shouter()
    cached = CachedBackend(inner, tmp_path / "cache.sqlite")
    first = _run(JsonlStore(tmp_path / "a.jsonl"), cached)
    again = _run(JsonlStore(tmp_path / "a.jsonl"), cached, overwrite=True)
    assert (first.requests, first.cache_hits) == (6, 0)
    assert (again.requests, again.cache_hits, again.resumed) == (0, 6, 0)
    assert len(inner.calls) == 6
    cached.cache.close()


def test_header_must_match_except_the_version(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path / "r.jsonl")
    _run(store, shouter())
    res = _run(store, shouter(), header={**HEADER, "hoibench": "2"})
    assert res.resumed == len(ITEMS) and res.requests == 0
    with pytest.raises(ConfigError, match=r"r\.jsonl: was written by a run with other settings "
                                          r"\(model: 'scripted' there, 'other' now\)"):
        _run(store, shouter(), header={**HEADER, "model": "other"})
    res = _run(store, shouter(), header={**HEADER, "model": "other"}, overwrite=True)
    assert res.resumed == 0 and store.lines()[0]["header"]["model"] == "other"

    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"id": "w0", "status": "ok", "text": "ANT"}\n')
    with pytest.raises(ConfigError, match=r"bare\.jsonl: exists and has no records header"):
        _run(JsonlStore(bare), shouter())


def test_duplicate_ids_are_rejected_before_the_file_is_touched(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path / "r.jsonl")
    with pytest.raises(ValidationError, match=r"word id 'w1' occurs more than once"):
        _run(store, shouter(), items=[*ITEMS, ("w1", "yak"), ("w0", "gnu")][1:])
    assert not store.path.exists()
    with pytest.raises(ConfigError, match="chunk_size"):
        _run(store, shouter(), chunk_size=0)


class Spell(Shout):
    """Two batches per chunk: the second asks about the first's answers; ``w3`` is never
    answered (a task that stops early leaves items without a record)."""

    def batches(self, chunk: Sequence[Item], prepared: Mapping[str, Any],
                emit: Callable[[Record], None]) -> Iterator[Batch]:
        asked = [i for i, w in chunk if w and i != "w3"]
        loud: dict[str, str] = {}

        def on_shout(k: int, resp: ChatResponse) -> None:
            loud[asked[k]] = str(resp.text)

        yield Batch([ChatRequest((ChatMessage.user(prepared[i]),)) for i in asked], on_shout)
        assert set(loud) == set(asked)  # every answer of the batch before is in

        def on_spell(k: int, resp: ChatResponse) -> None:
            emit({"id": asked[k], "status": "ok", "text": resp.text})

        yield Batch([ChatRequest((ChatMessage.user(f"shout {loud[i]}!"),)) for i in asked], on_spell)
        yield Batch([], on_spell)  # an empty batch sends nothing


def test_later_batches_see_earlier_answers_and_missing_records_are_counted(tmp_path: Path) -> None:
    store, backend = JsonlStore(tmp_path / "r.jsonl"), shouter()
    res = _run(store, backend, Spell())
    assert [text_of(r) for r in backend.calls[:4]] == ["shout ant", "shout bee", "shout ANT!", "shout BEE!"]
    assert res.requests == 10 and res.missing == 3 and res.counts == {"ok": 5}
    assert res.records[3] is None and "w3" not in {r["id"] for r in store.lines()[1:]}
    assert [r["text"] for r in store.lines()[1:]] == ["ANT!", "BEE!", "DOG!", "EEL!", "FOX!"]


# ----------------------------------------------------------------------------- the streaming pipeline

class Streaming(ScriptedBackend):
    """A scripted backend with a streaming session of ``capacity`` 2: each reply takes a few
    milliseconds; counts how many items are prepared but not yet answered at once."""

    def __init__(self, task: Shout, broken: frozenset[str] = frozenset()) -> None:
        super().__init__(lambda req: text_of(req).removeprefix("shout ").upper())
        self.task, self.broken = task, broken
        self.answered = 0
        self.peak_waiting = 0  # prepared items without an answer, at most, seen by a request
        self.started = 0
        self.cancelled = 0
        self.closed = False

    def session(self) -> ChatSession:
        backend = self

        class Session(ChatSession):
            capacity = 2

            async def complete(self, request: ChatRequest) -> ChatResponse:
                backend.started += 1
                backend.peak_waiting = max(backend.peak_waiting, len(backend.task.built) - backend.answered)
                word = text_of(request).removeprefix("shout ")
                try:
                    await asyncio.sleep(0.002 if word not in backend.broken else 0.0)
                except asyncio.CancelledError:
                    backend.cancelled += 1
                    raise
                if word in backend.broken:
                    raise BackendUnavailable(f"no server answers ({word})")
                backend.answered += 1
                return ChatResponse(word.upper())

            async def aclose(self) -> None:
                backend.closed = True

        return Session()


def test_streaming_answers_every_item_with_a_bounded_number_in_flight(tmp_path: Path) -> None:
    task = Shout()
    items = [(f"w{k}", f"word{k}") for k in range(60)]
    backend = Streaming(task)
    store = JsonlStore(tmp_path / "r.jsonl")
    res = _run(store, backend, task, items)
    assert res.counts == {"ok": 60} and res.requests == 60
    assert [r["text"] for r in store.lines()[1:]] == [f"WORD{k}" for k in range(60)]
    # the pipeline keeps max(8, 2 x capacity) groups in flight: never more prepared than that
    # ahead of the answers, and more than one at a time (it is a pipeline)
    assert 1 < backend.peak_waiting <= 8
    assert backend.closed


def test_streaming_stops_at_the_first_failure_and_cancels_the_rest(tmp_path: Path) -> None:
    task = Shout()
    items = [(f"w{k}", f"word{k}") for k in range(60)]
    backend = Streaming(task, broken=frozenset({"word5"}))
    store = JsonlStore(tmp_path / "r.jsonl")
    with pytest.raises(BackendUnavailable, match="word5"):
        _run(store, backend, task, items)
    assert backend.closed
    assert backend.started < 60  # nothing new was sent after the failure
    assert backend.cancelled >= 1  # the requests in flight were cancelled, not awaited
    kept = [r["id"] for r in store.lines()[1:]]
    assert "w5" not in kept and len(kept) == backend.answered  # every answer that came is kept


class BadInput(Shout):
    """Preparing ``word7``'s input fails (an unreadable image, say)."""

    def _build(self, word: str) -> str:
        if word == "word7":
            raise ValueError(f"cannot prepare {word}")
        return super()._build(word)


def test_streaming_stops_at_a_failed_preparation_and_leaves_no_thread(tmp_path: Path) -> None:
    """A preparation that raises ends the run with its own error; the session is closed, the
    preparation threads are gone when the run returns, and every answer that came is kept."""
    task = BadInput()
    items = [(f"w{k}", f"word{k}") for k in range(60)]
    backend = Streaming(task)
    store = JsonlStore(tmp_path / "r.jsonl")
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(ValueError, match="cannot prepare word7"):
        _run(store, backend, task, items)
    assert backend.closed
    assert not [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    kept = [r["id"] for r in store.lines()[1:]]
    assert "w7" not in kept and len(kept) == backend.answered


def test_streaming_inside_a_running_event_loop(tmp_path: Path) -> None:
    """Called from a coroutine (a notebook's loop): the pipeline runs in a thread of its own and
    answers as it does from plain code."""
    task = Shout()
    items = [(f"w{k}", f"word{k}") for k in range(20)]
    backend = Streaming(task)
    store = JsonlStore(tmp_path / "r.jsonl")

    async def main() -> Any:
        return _run(store, backend, task, items)

    res = asyncio.run(main())
    assert res.counts == {"ok": 20} and res.requests == 20
    assert [r["text"] for r in store.lines()[1:]] == [f"WORD{k}" for k in range(20)]
