"""Any OpenAI-compatible chat server (``vllm serve``, SGLang, hosted APIs) over a lean HTTP/1.1
client (:mod:`hoibench.models._http`; httpx behind a proxy): one long-lived pool per server (one SSL context for all), each request routed to the server with
the fewest requests outstanding, a circuit breaker per server (consecutive failures open it for a
backoff period, one half-open probe closes it again), ``Retry-After`` honoured, backoff waits
that hold no concurrency slot, and ``timeout`` as a total deadline per attempt (connect to last
byte). Several base URLs scale a run out (one server per GPU or node); one URL of a
data-parallel server or router is the simplest.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hashlib
import os
import random
import ssl
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from hoibench._exceptions import ConfigError, MissingExtraError
from hoibench._io import base64_text
from hoibench.models._backend import (
    BackendStats,
    BackendUnavailable,
    ChatBackend,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ChatSession,
    ImagePart,
    ServerStats,
    TextPart,
)
from hoibench.models._http import ConnectFailed, HTTPPool, HTTPReply, TransportFailed, uses_proxy

__all__ = ["ROUTINGS", "OpenAIBackend", "openai_messages"]

#: how a request picks its server: the fewest requests outstanding, or by its image (affinity)
ROUTINGS = ("least-outstanding", "image-affinity")


def _image_url(part: ImagePart, memo: dict[Any, str]) -> str:
    key = part.digest or id(part)
    url = memo.get(key)
    if url is None:
        b64 = part.b64 if part.b64 is not None else base64_text(part.read_bytes())
        url = f"data:{part.mime};base64,{b64}"
        memo[key] = url
    return url


def openai_messages(messages: Sequence[ChatMessage], memo: dict[Any, str] | None = None
                    ) -> list[dict[str, Any]]:
    """Chat messages in the OpenAI format; images as base64 data URLs (image first, as sent)."""
    memo = {} if memo is None else memo
    out = []
    for m in messages:
        content: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, TextPart):
                content.append({"type": "text", "text": p.text})
            else:
                content.append({"type": "image_url", "image_url": {"url": _image_url(p, memo)}})
        out.append({"role": m.role, "content": content})
    return out


class _Retry(Exception):
    """An attempt that may succeed elsewhere or later: ``down`` when the server is unreachable
    (connection refused; a hung server only opens its circuit), ``after`` a server-given wait."""

    def __init__(self, message: str, *, down: bool = False, after: float | None = None) -> None:
        super().__init__(message)
        self.down = down
        self.after = after


class _Fatal(Exception):
    """An attempt that no retry can fix (a 4xx other than 408/409/429, a malformed body)."""


def _reply_text(content: bytes) -> str:
    """The assistant text of a chat-completion response body; ``content: null`` (or a missing
    message) is a failed attempt to retry, never an empty answer to cache."""
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        raise _Fatal(f"the response is not JSON: {content[:200]!r}") from exc
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise _Fatal(f"no choices in the response: {content[:200]!r}")
    message = choices[0].get("message")
    text = message.get("content") if isinstance(message, dict) else None
    if text is None:
        raise _Retry(f"the server sent no content (content: null): {content[:200]!r}")
    if not isinstance(text, str):
        raise _Fatal(f"content is not a string: {content[:200]!r}")
    return text


def _retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header (delta-seconds only; HTTP dates are ignored)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _image_digest(request: ChatRequest) -> str | None:
    """The content hash of a request's first image (the key of image-affinity routing)."""
    for m in request.messages:
        for p in m.parts:
            if isinstance(p, ImagePart):
                return p.content_hash()
    return None


#: tasks count their cancel requests and can take one back (Python 3.11+): an attempt's
#: deadline then cancels the request's own task and tells it from the run's own cancel
_CAN_UNCANCEL = sys.version_info >= (3, 11)


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve a cancelled attempt's outcome (no "exception was never retrieved" noise)."""
    if not task.cancelled():
        task.exception()


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """One SSL context (certificate store loaded once, ~50 ms) for every client of the process."""
    return ssl.create_default_context()


@dataclass
class _Server:
    """A server's live state: requests outstanding, counts, and its circuit."""

    url: str
    pool: Any  # the long-lived connections of this server (HTTPPool, or _HttpxPool behind a proxy)
    outstanding: int = 0
    attempts: int = 0
    failures: int = 0
    wait: float = 0.0
    consecutive: int = 0  # failures in a row
    open_until: float = 0.0  # circuit open (no requests) until this monotonic time
    opened: int = 0  # times opened in a row (the backoff doubles)
    probing: bool = False  # a half-open probe is in flight
    last_down: bool = False  # the last failure was a refused connection or a timeout
    ever_ok: bool = False

    def stats(self) -> ServerStats:
        return ServerStats(self.url, self.attempts, self.failures, self.wait)


class _HttpxPool:
    """httpx for a server behind a proxy (``HTTP(S)_PROXY``; :class:`HTTPPool` speaks no proxy
    protocol), with :class:`HTTPPool`'s interface and errors."""

    def __init__(self, httpx: Any, url: str, *, headers: Mapping[str, str], connections: int,
                 timeout: float) -> None:
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self._httpx = httpx
        self._client = httpx.AsyncClient(base_url=url, headers=dict(headers), limits=limits,
                                         timeout=httpx.Timeout(timeout), verify=_ssl_context())

    async def post(self, path: str, body: bytes) -> HTTPReply:
        httpx = self._httpx
        try:
            resp = await self._client.post(path, content=body)
        except httpx.ConnectError as exc:
            raise ConnectFailed(str(exc)) from exc
        except httpx.TimeoutException as exc:
            raise TransportFailed(f"{type(exc).__name__}: no reply in time") from exc
        except httpx.TransportError as exc:
            raise TransportFailed(f"{type(exc).__name__}: {exc}") from exc
        return HTTPReply(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, resp.content)

    async def aclose(self) -> None:
        await self._client.aclose()


class OpenAIBackend(ChatBackend):
    """Chat completions from one or more OpenAI-compatible servers.

    Parameters
    ----------
    model:
        Model name as the server knows it.
    base_urls:
        One or more ``http://host:port/v1`` URLs. Each request goes to the server with the fewest
        requests outstanding; a retry goes to another server when there is one.
    concurrency:
        Requests in flight at once, over all servers (a backoff wait holds no slot).
    max_retries, backoff, max_backoff:
        Retries of a failed attempt (429, 408/409, 5xx, timeout, connection error, a reply with
        no content) with exponential backoff ``backoff * 2**attempt`` (jittered, capped at
        ``max_backoff`` seconds); a ``Retry-After`` header sets the wait instead.
    timeout:
        Seconds one attempt may take in all, connect to last byte (a server that trickles its
        reply is cut here); then the attempt counts as hung and is retried.
    failure_threshold:
        Consecutive failures that open a server's circuit: no requests go to it for a backoff
        period (doubling up to ``max_backoff``), then one probe request decides.
    api_key:
        Defaults to ``$OPENAI_API_KEY``, else ``"EMPTY"`` (what local vLLM/SGLang servers accept).
    extra_body:
        Extra JSON fields sent with every request (server-specific sampling options); part of the
        cache key.
    routing:
        ``least-outstanding`` (default) or ``image-affinity``: every request with the same image
        goes to the same server (rendezvous hashing of the image's sha256 and the server URLs),
        so a vLLM server's prefix cache serves the K orders of ``--permutations`` and the stages
        of setting 3; when that server's circuit is open the next server in the image's own order
        takes it (only the dead server's images move). Not part of the cache key.
    """

    name = "openai"

    def __init__(self, *, model: str, base_urls: Sequence[str] = ("http://127.0.0.1:8000/v1",),
                 concurrency: int = 16, max_retries: int = 5, backoff: float = 1.0,
                 max_backoff: float = 60.0, timeout: float = 600.0, failure_threshold: int = 3,
                 api_key: str | None = None, extra_body: Mapping[str, Any] | None = None,
                 routing: str = "least-outstanding") -> None:
        if routing not in ROUTINGS:
            raise ConfigError(f"routing must be one of {list(ROUTINGS)}; got {routing!r}")
        if not base_urls:
            raise ConfigError("base_urls must name at least one server")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1; got {concurrency}")
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0; got {max_retries}")
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0; got {timeout}")
        if failure_threshold < 1:
            raise ConfigError(f"failure_threshold must be >= 1; got {failure_threshold}")
        self.model = model
        self.base_urls = tuple(u.rstrip("/") for u in base_urls)
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.timeout = timeout
        self.failure_threshold = failure_threshold
        self.api_key = api_key
        self.extra_body = dict(extra_body or {})
        self.routing = routing
        self.requests = 0  # requests finished (answered or given up on)
        self.attempts = 0  # attempts sent, retries included
        self._servers: dict[str, ServerStats] = {u: ServerStats(u) for u in self.base_urls}

    def fingerprint(self) -> dict[str, Any]:
        # base URLs are left out on purpose: scaling out must not invalidate the cache
        return {"backend": "openai", "model": self.model, "extra_body": self.extra_body}

    def stats(self) -> BackendStats:
        return BackendStats(requests=self.requests, attempts=self.attempts,
                            servers=tuple(self._servers.values()))

    def session(self) -> _OpenAISession:
        return _OpenAISession(self)

    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._generate(requests, on_response))
        # called from inside an event loop (a notebook): run ours in a thread
        box: list[Any] = []
        thread = threading.Thread(target=lambda: box.append(asyncio.run(self._generate(requests, on_response))))
        thread.start()
        thread.join()
        return box[0]

    async def _generate(self, requests: Sequence[ChatRequest],
                        on_response: Callable[[int, ChatResponse], None] | None) -> list[ChatResponse]:
        session = self.session()
        out: list[ChatResponse | None] = [None] * len(requests)

        async def one(i: int, req: ChatRequest) -> None:
            out[i] = await session.complete(req)
            if on_response is not None:
                on_response(i, out[i])  # type: ignore[arg-type]

        try:
            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        finally:
            await session.aclose()
        return [r if r is not None else ChatResponse(None, error="no response") for r in out]


#: the longest an attempt past its deadline (or stalled) waits to be noticed, in seconds
WATCH_SECONDS = 0.05


class _Flight:
    """One attempt in flight: the task its deadline cancels, when it started, what befell it."""

    __slots__ = ("released", "start", "task", "timed_out")

    def __init__(self, task: asyncio.Task[Any], start: float) -> None:
        self.task, self.start = task, start
        self.timed_out = self.released = False


class _Slots:
    """The session's concurrency slots: FIFO, a freed slot handed straight to the longest waiter,
    O(1) per call.

    Why not :class:`asyncio.Semaphore`: from Python 3.11 its ``locked()``, which its ``acquire()``
    calls too, looks at every waiter while a released slot has not reached its waiter yet, and
    a run keeps up to ``concurrency`` requests waiting with their inputs prepared; in
    ``perf/bench_runner.py`` (concurrency 128) that scan was 3 % of the event loop's Python
    time."""

    __slots__ = ("_waiters", "free")

    def __init__(self, n: int) -> None:
        self.free = n
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def locked(self) -> bool:
        """Whether an :meth:`acquire` now would wait."""
        return self.free <= 0 or bool(self._waiters)

    async def acquire(self) -> None:
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a slot, then cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():  # a cancelled waiter is skipped
                fut.set_result(None)
                return
        self.free += 1


class _OpenAISession(ChatSession):
    """The backend opened in one event loop: clients, routing, circuits and the concurrency slots."""

    def __init__(self, backend: OpenAIBackend) -> None:
        self.b = backend
        self.capacity = backend.concurrency
        key = backend.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.servers = [_Server(u, self._pool(u, headers)) for u in backend.base_urls]
        for s in self.servers:  # counts carry on from earlier sessions of the same backend
            old = backend._servers.get(s.url)
            if old is not None:
                s.attempts, s.failures, s.wait = old.attempts, old.failures, old.wait_seconds
        self._slots = _Slots(backend.concurrency)
        self._rng = random.Random()
        self._turn = 0
        self._last_ok = time.monotonic()
        self.latency = 0.0  # moving average of successful attempts: stall detection, loop pacing
        self.slot_waits = 0  # attempts that found every slot taken
        self._flights: dict[_Flight, None] = {}  # attempts in flight, in the order they started
        self._watching: asyncio.TimerHandle | None = None
        # data URLs of the images in recent requests (questions of one image are sent together)
        self._memo: dict[Any, str] = {}
        self._orders: dict[str, list[_Server]] = {}  # image digest -> its server order (affinity)

    def _pool(self, url: str, headers: Mapping[str, str]) -> Any:
        """The lean client (:mod:`hoibench.models._http`: a fraction of httpx's CPU per request),
        or httpx where a proxy serves ``url``; room for every slot on any one server (the others
        may be down) and for attempts whose slot was given back (stalled)."""
        if uses_proxy(url):
            try:
                import httpx
            except ImportError as exc:  # pragma: no cover - httpx comes with the base install
                raise MissingExtraError("httpx", "openai", "the OpenAI-compatible backend behind a proxy") from exc
            return _HttpxPool(httpx, url, headers=headers, connections=2 * self.b.concurrency,
                              timeout=self.b.timeout)
        try:
            return HTTPPool(url, headers=headers, ssl_context=_ssl_context() if url.startswith("https:") else None,
                            max_idle=2 * self.b.concurrency)
        except ValueError as exc:
            raise ConfigError(f"--base-url {url!r}: {exc}") from None

    async def aclose(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            self._watching = None
        for s in self.servers:
            await s.pool.aclose()

    # ------------------------------------------------------------------ routing
    def _choose(self, avoid: set[str], affinity: str | None = None) -> _Server | None:
        """The server for the next attempt: a half-open probe when one is due, else the closed
        circuit with the fewest outstanding requests, or with ``affinity`` (an image digest under
        ``image-affinity`` routing) the first closed circuit in that image's own server order
        (``avoid``: servers this request just failed on, used only when nothing else is open);
        ``None`` when every circuit is open."""
        n = len(self.servers)
        if n == 1 and not self.servers[0].open_until:  # one healthy server: the usual case
            return self.servers[0]
        now = time.monotonic()
        if affinity is not None:
            order = self._affinity_order(affinity)
        else:
            self._turn = (self._turn + 1) % n
            order = [self.servers[(self._turn + k) % n] for k in range(n)]
        due = [s for s in order if s.open_until and now >= s.open_until and not s.probing]
        closed = [s for s in order if not s.open_until]
        probe = [s for s in due if s.url not in avoid] or ([] if closed else due)
        if probe and (affinity is None or not closed or probe[0] is order[0]):
            probe[0].probing = True
            return probe[0]
        if not closed:
            return None
        fresh = [s for s in closed if s.url not in avoid] or closed
        return fresh[0] if affinity is not None else min(fresh, key=lambda s: s.outstanding)

    def _affinity_order(self, digest: str) -> list[_Server]:
        """The servers in ``digest``'s own order (rendezvous hashing: stable for a given set of
        URLs, and a server's absence moves only its own images)."""
        order = self._orders.get(digest)
        if order is None:
            order = sorted(self.servers, key=lambda s: hashlib.sha256(f"{digest} {s.url}".encode()).digest(),
                           reverse=True)
            if len(self._orders) > 8 * self.capacity:
                self._orders.clear()
            self._orders[digest] = order
        return order

    def _wait_for_open(self) -> float:
        now = time.monotonic()
        due = [s.open_until - now for s in self.servers if s.open_until and not s.probing]
        return max(0.01, min(due)) if due else 0.05

    def _check_down(self) -> None:
        """Every circuit open on servers that refuse connections, and no answer for a while (none
        at all yet, or none for ``max_backoff``): stop the run rather than retry forever."""
        if not all(s.open_until and s.last_down for s in self.servers):
            return
        never = not any(s.ever_ok for s in self.servers)
        if never or time.monotonic() - self._last_ok > self.b.max_backoff:
            urls = ", ".join(s.url for s in self.servers)
            raise BackendUnavailable(f"no server answers ({urls}); last: {self._last_error}")

    _last_error = ""

    def _failed(self, s: _Server, message: str, *, down: bool) -> None:
        s.failures += 1
        s.consecutive += 1
        s.last_down = down
        self._last_error = message
        if s.probing or s.consecutive >= self.b.failure_threshold:
            s.opened += 1
            period = min(self.b.max_backoff, self.b.backoff * 2 ** (s.opened - 1))
            s.open_until = time.monotonic() + period * (0.75 + self._rng.random() / 2)
        s.probing = False

    def _succeeded(self, s: _Server, seconds: float) -> None:
        s.consecutive = 0
        s.open_until = 0.0
        s.opened = 0
        s.probing = False
        s.ever_ok = True
        self._last_ok = time.monotonic()
        self.latency = seconds if not self.latency else 0.9 * self.latency + 0.1 * seconds

    # ------------------------------------------------------------------ one request
    def _payload(self, req: ChatRequest) -> bytes:
        params = req.params
        payload = {"model": self.b.model, "messages": openai_messages(req.messages, self._memo),
                   "max_tokens": params.max_tokens, "temperature": params.temperature,
                   "top_p": params.top_p, **({"seed": params.seed} if params.seed is not None else {}),
                   **self.b.extra_body}
        if len(self._memo) > 4 * self.capacity:
            self._memo.clear()
        return orjson.dumps(payload)

    async def _post(self, s: _Server, body: bytes) -> str:
        try:
            resp = await s.pool.post("/chat/completions", body)
        except ConnectFailed as exc:
            raise _Retry(f"ConnectError: {exc} ({s.url})", down=True) from exc
        except TransportFailed as exc:
            raise _Retry(f"{exc} ({s.url})") from exc
        code = resp.status
        if code == 200:
            return _reply_text(resp.content)
        detail = resp.text[:200]
        if code == 429 or code in (408, 409) or code >= 500:
            raise _Retry(f"HTTP {code} from {s.url}: {detail}",
                         after=_retry_after(resp.headers.get("retry-after")))
        raise _Fatal(f"HTTP {code} from {s.url}: {detail}")

    async def _attempt(self, s: _Server, body: bytes) -> str:
        """One attempt within the total deadline; a stalled attempt (far slower than the usual
        reply) gives its concurrency slot back so that healthy servers stay busy.

        Both limits are kept by :meth:`_watch`, and the deadline cancels the request's own task
        (as ``asyncio.timeout`` does): no task, timer, ``wait_for`` or ``wait`` per attempt,
        which at hundreds of requests a second cost the loop's thread a task, its steps, a
        wake-up of the caller and two timers per request. Python 3.10, whose tasks cannot tell
        their own cancel from the run's, runs the request in a task of its own."""
        loop = asyncio.get_running_loop()
        if _CAN_UNCANCEL:
            task: Any = asyncio.current_task()
            base = task.cancelling()  # cancels requested before this attempt are not its own
        else:  # pragma: no cover - Python 3.10
            task = loop.create_task(self._post(s, body))
        flight = _Flight(task, loop.time())
        self._flights[flight] = None
        if self._watching is None:
            self._watching = loop.call_later(self._tick, self._watch)
        try:
            return await (self._post(s, body) if _CAN_UNCANCEL else task)
        except asyncio.CancelledError as exc:
            if not flight.timed_out or (_CAN_UNCANCEL and task.uncancel() > base):
                raise  # this request was cancelled (the run stops), not timed out
            raise _Retry(f"Timeout: no complete reply within {self.b.timeout:g} s ({s.url})") from exc
        finally:
            del self._flights[flight]
            if not _CAN_UNCANCEL and not task.done():  # pragma: no cover - Python 3.10
                task.cancel()
                task.add_done_callback(_consume)
            if flight.released:
                await self._slots.acquire()

    @property
    def _tick(self) -> float:
        """Seconds between two looks at the attempts in flight: how late a deadline or a stall
        can be noticed."""
        return min(WATCH_SECONDS, self.b.timeout / 4)

    def _watch(self) -> None:
        """Cancel the attempts past the deadline; give back the slots of those that stalled
        (older than four times the usual latency, at least 0.5 s). Attempts are kept in the order
        they started, so the look ends at the first one young enough for both."""
        self._watching = None
        if not self._flights:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        deadline = self.b.timeout
        stall = max(0.5, 4 * self.latency) if self.latency else float("inf")
        for f in self._flights:
            age = now - f.start
            if age < deadline and age < stall:
                break
            if age >= deadline and not f.timed_out:
                f.timed_out = True
                f.task.cancel()
            if age >= stall and not f.released:
                f.released = True
                self._slots.release()
        self._watching = loop.call_later(self._tick, self._watch)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        body = self._payload(request)
        affinity = _image_digest(request) if self.b.routing == "image-affinity" and len(self.servers) > 1 else None
        avoid: set[str] = set()
        last = ""
        attempt = 0
        while True:
            if self._slots.locked():
                self.slot_waits += 1
            await self._slots.acquire()
            s = self._choose(avoid, affinity)  # chosen with a slot in hand: the health of now, not of the queue
            if s is None:
                self._slots.release()
                self._check_down()
                await asyncio.sleep(self._wait_for_open())
                continue
            s.outstanding += 1
            s.attempts += 1
            self.b.attempts += 1
            t0 = time.perf_counter()
            err: _Retry | _Fatal | None = None
            try:
                text = await self._attempt(s, body)
            except (_Retry, _Fatal) as exc:
                err = exc
            finally:
                dt = time.perf_counter() - t0
                s.outstanding -= 1
                s.wait += dt
                self._slots.release()
            self.b._servers[s.url] = s.stats()
            attempt += 1
            if err is None:
                self._succeeded(s, dt)
                self.b.requests += 1
                return ChatResponse(text, meta={**request.meta, "attempts": attempt})
            if isinstance(err, _Fatal):  # the server is up; this request is what fails
                self._succeeded(s, dt)
                s.failures += 1
                self.b._servers[s.url] = s.stats()
                self.b.requests += 1
                return ChatResponse(None, error=str(err), meta=dict(request.meta))
            last = str(err)
            self._failed(s, last, down=err.down)
            self.b._servers[s.url] = s.stats()
            if attempt > self.b.max_retries:
                self.b.requests += 1
                return ChatResponse(None, error=f"gave up after {attempt} attempts; last: {last}",
                                    meta=dict(request.meta))
            avoid = {s.url}
            if err.after is not None:  # the server said when: it gets nothing before then
                s.open_until = max(s.open_until, time.monotonic() + err.after)
            if any(o is not s and not o.open_until for o in self.servers):
                continue  # another healthy server takes the retry at once
            delay = err.after if err.after is not None else min(
                self.b.max_backoff, self.b.backoff * 2 ** (attempt - 1)) * (0.5 + self._rng.random() / 2)
            await asyncio.sleep(delay)  # no slot held
