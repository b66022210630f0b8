"""A persistent SQLite response cache and :class:`CachedBackend`, the wrapper that uses it.

Every successful response is stored as it arrives: at once in :meth:`CachedBackend.generate`;
in a streaming session (``mcq run``) within :data:`FLUSH_SECONDS` of arriving, in one transaction
with those that arrived with it (a commit per response cost more CPU than the rest of the
runner's work on a request). A killed run loses at most the requests in flight and the responses
of those last milliseconds, whose answers ``mcq run`` has already written to its answers file
(what a resumed run reads) when they are answers. Keys are sha256 of (backend fingerprint, messages with image *content*
hashes, generation parameters): renaming an image folder keeps the cache valid, changing a pixel
or a prompt does not. Only deterministic requests are cached (greedy decoding, or sampling with a
fixed seed); errors are never cached, so a re-run retries them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench._io import check_input_file, dumps_json, ensure_dir, exclusive_lock
from hoibench.models._backend import (
    BackendStats,
    ChatBackend,
    ChatRequest,
    ChatResponse,
    ChatSession,
    ImagePart,
    TextPart,
)

__all__ = ["FLUSH_SECONDS", "CachedBackend", "ResponseCache", "request_key"]

#: the longest a streaming session's response waits before its transaction commits
FLUSH_SECONDS = 0.05


def request_key(fingerprint: dict[str, Any], request: ChatRequest) -> str:
    """sha256 identifying what a request would return from this backend."""
    messages = []
    for m in request.messages:
        parts: list[Any] = []
        for p in m.parts:
            if isinstance(p, TextPart):
                parts.append(["text", p.text])
            elif isinstance(p, ImagePart):
                parts.append(["image", p.content_hash()])
            else:  # pragma: no cover - the interface allows only the two parts
                raise TypeError(f"unknown message part {type(p).__name__}")
        messages.append([m.role, parts])
    payload = {"backend": fingerprint, "messages": messages, "params": request.params.as_dict()}
    return hashlib.sha256(dumps_json(payload, sort_keys=True)).hexdigest()


class ResponseCache:
    """key → response text in one SQLite file (WAL journal): :meth:`put` commits one response,
    :meth:`put_later` queues one for the next :meth:`flush` (one transaction for all queued).

    ``exclusive=True`` holds ``PATH.lock`` until :meth:`close`: a second process that opens the
    same cache stops at once with one line (SQLite's WAL needs shared memory, so a cache must not
    be shared across machines either: give each shard its own)."""

    def __init__(self, path: str | Path, *, exclusive: bool = False) -> None:
        self.path = Path(path)
        ensure_dir(self.path.parent, for_path=self.path)
        self._held = exclusive_lock(self.path, what="hoibench run (response cache)") if exclusive else None
        if self._held is not None:
            self._held.__enter__()
        self._lock = threading.Lock()
        try:  # a file that is no SQLite database, a folder, a read-only place: one line naming it
            if self.path.exists():
                check_input_file(self.path)  # a folder or FIFO: refused before SQLite sees it
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL,"
                             " created REAL NOT NULL)")
            # a cache held alone and empty at the start holds only what this process puts: a
            # lookup needs no query (an unheld one may gain rows from another process)
            self._only_ours: set[str] | None = set() if exclusive and self._db.execute(
                "SELECT 1 FROM responses LIMIT 1").fetchone() is None else None
        except sqlite3.Error as exc:
            raise ConfigError(f"{self.path}: cannot use it as the response cache (SQLite: {exc})") from None
        self._pending: dict[str, tuple[str, str, float]] = {}
        self._failed: ConfigError | None = None  # a deferred commit's error, raised at the next call

    def get(self, key: str) -> str | None:
        with self._lock:
            queued = self._pending.get(key)
            if queued is not None:
                return queued[1]
            if self._only_ours is not None and key not in self._only_ours:
                return None
            row = self._db.execute("SELECT text FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        with self._lock:
            out = {k: self._pending[k][1] for k in keys if k in self._pending}
            keys = [k for k in keys if k not in out]
            for start in range(0, len(keys), 500):
                chunk = list(keys[start:start + 500])
                marks = ",".join("?" * len(chunk))
                out.update(self._db.execute(
                    f"SELECT key, text FROM responses WHERE key IN ({marks})", chunk).fetchall())
        return out

    def put(self, key: str, text: str) -> None:
        """Store one response now (its own commit)."""
        self.put_later(key, text)
        self.flush()

    def put_later(self, key: str, text: str) -> bool:
        """Queue one response for the next :meth:`flush`; ``True`` when the queue was empty (the
        caller schedules that flush). Lookups see it at once."""
        with self._lock:
            self._raise_failed()
            first = not self._pending
            self._pending[key] = (key, text, time.time())
            if self._only_ours is not None:
                self._only_ours.add(key)
        return first

    def flush(self) -> None:
        """Commit every queued response in one transaction. A failure (a full disk, a file gone
        read-only) is raised here and by every later call: no response is dropped silently."""
        with self._lock:
            self._raise_failed()
            if not self._pending:
                return
            rows = list(self._pending.values())
            try:
                with self._db:  # one transaction
                    self._db.execute("BEGIN")
                    self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?)", rows)
            except sqlite3.Error as exc:
                self._failed = ConfigError(f"{self.path}: could not store {len(rows)} response(s) in the "
                                           f"response cache (SQLite: {exc})")
                raise self._failed from None
            self._pending.clear()

    def _raise_failed(self) -> None:
        if self._failed is not None:
            raise self._failed

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Commit what is queued, close the file and release its lock (also when the commit
        fails: the error is raised after both)."""
        try:
            self.flush()
        finally:
            with self._lock:
                self._db.close()
            if self._held is not None:
                held, self._held = self._held, None
                held.__exit__(None, None, None)

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _deterministic(request: ChatRequest) -> bool:
    return request.params.temperature == 0 or request.params.seed is not None


class CachedBackend(ChatBackend):
    """Wrap ``backend`` so that responses come from ``cache`` when present and are stored there as
    they arrive. Counts ``hits`` and ``misses`` (requests sent to the wrapped backend)."""

    def __init__(self, backend: ChatBackend, cache: ResponseCache | str | Path) -> None:
        self.backend = backend
        self.cache = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
        self.name = backend.name
        self.hits = 0
        self.misses = 0

    def fingerprint(self) -> dict[str, Any]:
        return self.backend.fingerprint()

    def stats(self) -> BackendStats:
        inner = self.backend.stats()
        return BackendStats(requests=self.misses, cache_hits=self.hits, attempts=inner.attempts,
                            servers=inner.servers, sends=inner.sends)

    def session(self) -> ChatSession | None:
        inner = self.backend.session()
        return None if inner is None else _CachedSession(self, inner)

    def _lookup(self, request: ChatRequest) -> tuple[str | None, ChatResponse | None]:
        """The request's cache key (``None``: not cacheable) and its cached response, if any."""
        if not _deterministic(request):
            return None, None
        key = request_key(self.backend.fingerprint(), request)
        text = self.cache.get(key)
        if text is None:
            return key, None
        self.hits += 1
        return key, ChatResponse(text, meta={**request.meta, "cached": True})

    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        fp = self.backend.fingerprint()
        keys = [request_key(fp, r) if _deterministic(r) else None for r in requests]
        found = self.cache.get_many([k for k in keys if k is not None])
        out: list[ChatResponse | None] = [None] * len(requests)
        todo: list[int] = []
        for i, (req, key) in enumerate(zip(requests, keys)):
            if key is not None and key in found:
                out[i] = ChatResponse(found[key], meta={**req.meta, "cached": True})
                self.hits += 1
                if on_response is not None:
                    on_response(i, out[i])  # type: ignore[arg-type]
            else:
                todo.append(i)
        if todo:
            self.misses += len(todo)

            def store(j: int, resp: ChatResponse) -> None:
                i = todo[j]
                key = keys[i]
                if key is not None and resp.ok:
                    self.cache.put(key, resp.text)  # type: ignore[arg-type]
                out[i] = resp
                if on_response is not None:
                    on_response(i, resp)

            self.backend.generate([requests[i] for i in todo], store)
        return [r if r is not None else ChatResponse(None, error="no response") for r in out]


class _CachedSession(ChatSession):
    """:class:`CachedBackend` streaming: a hit answers at once, a miss goes to the inner session
    and is stored within :data:`FLUSH_SECONDS` of arriving, with the responses that arrived with
    it in one transaction (errors never)."""

    def __init__(self, owner: CachedBackend, inner: ChatSession) -> None:
        self.owner = owner
        self.inner = inner
        self.capacity = inner.capacity

    async def complete(self, request: ChatRequest) -> ChatResponse:
        key, hit = self.owner._lookup(request)
        if hit is not None:
            return hit
        self.owner.misses += 1
        resp = await self.inner.complete(request)
        if key is not None and resp.ok:
            cache = self.owner.cache
            if cache.put_later(key, resp.text):  # type: ignore[arg-type]
                asyncio.get_running_loop().call_later(FLUSH_SECONDS, self._flush)
        return resp

    def _flush(self) -> None:
        with contextlib.suppress(ConfigError):  # kept by the cache: its next call raises it
            self.owner.cache.flush()

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self.owner.cache.flush()
