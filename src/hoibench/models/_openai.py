"""Any OpenAI-compatible chat server (``vllm serve``, SGLang, hosted APIs) over a lean HTTP/1.1
client (:mod:`hoibench.models._http`; httpx behind a proxy): one long-lived pool per server (one SSL context for all), each request routed to the server with
the fewest requests outstanding, a circuit breaker per server, ``Retry-After`` honoured, backoff
waits that hold no concurrency slot, and ``timeout`` as a total deadline per attempt (connect to
last byte). Several base URLs scale a run out (one server per GPU or node); one URL of a
data-parallel server or router is the simplest.

The breaker judges a server on server-wide evidence only: ``failure_threshold`` *distinct*
requests failing on it with no success in between open its circuit (one question that fails
every time is that question's problem: it gives up after its own retries and holds nobody); one
half-open probe then decides, and the wait doubles only when a probe fails with a request that
had not failed there before. When every circuit is open on failures without an HTTP reply
(refused connections, timeouts, broken connections) and nothing has answered for a while, the
run stops (:class:`~hoibench.models.BackendUnavailable`) instead of waiting on a server that
accepts connections and never answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import html
import http
import itertools
import os
import random
import re
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
from hoibench._version import __version__
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
    """An attempt that may succeed elsewhere or later: ``down`` when no HTTP reply came (refused
    or broken connection, timeout: evidence that the server itself is down or hung), ``after`` a
    server-given wait."""

    def __init__(self, message: str, *, down: bool = False, after: float | None = None) -> None:
        super().__init__(message)
        self.down = down
        self.after = after


class _Fatal(Exception):
    """An attempt that no retry can fix (a 4xx other than 408/409/429, a malformed body)."""


def _reply_text(content: bytes, encoding: str = "") -> str:
    """The assistant text of a chat-completion response body; ``content: null`` (or a missing
    message) is a failed attempt to retry, never an empty answer to cache. ``encoding``: the
    reply's Content-Encoding, named in the error when the body is not JSON."""
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        coded = f" (Content-Encoding: {encoding})" if encoding and encoding != "identity" else ""
        raise _Fatal(f"the response is not JSON{coded}: {content[:200]!r}") from exc
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


#: codings the HTTP client decodes (a server may compress although asked for ``identity``)
_DECODED = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})
#: the longest excerpt of an error body in an error line (characters)
EXCERPT = 120


def _excerpt(resp: HTTPReply) -> str:
    """A short one-line excerpt of an error reply's body: the ``message`` of a JSON error, the
    text of an HTML page (tags, scripts and the repeated status line dropped), else the text."""
    if resp.encoding not in _DECODED:
        return f"a {resp.encoding}-compressed body of {len(resp.content)} bytes"
    text = resp.content[:4096].decode("utf-8", "replace")
    try:
        data = orjson.loads(resp.content)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        msg = err.get("message") or err.get("detail") if isinstance(err, dict) else err
        msg = msg if msg is not None else data.get("detail") or data.get("message")
        if msg is not None:
            text = msg if isinstance(msg, str) else orjson.dumps(msg).decode()
    elif "html" in resp.headers.get("content-type", "").lower() or text.lstrip().startswith("<"):
        text = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", text)
        text = html.unescape(re.sub(r"(?s)<[^>]*>", " ", text))
    text = " ".join(text.split())  # one line
    status = f"{resp.status} {resp.reason}".strip().lower()
    while status and text.lower().startswith(status):  # nginx repeats the status line in title and h1
        text = text[len(status):].lstrip(" :-")
    return text if len(text) <= EXCERPT else text[:EXCERPT - 1].rstrip() + "…"


def _status_error(resp: HTTPReply, url: str) -> str:
    """One line for an HTTP error reply: status, reason, the redirect target of a 3xx, and a
    short excerpt of the body."""
    reason = resp.reason
    if not reason:
        try:
            reason = http.HTTPStatus(resp.status).phrase
        except ValueError:
            reason = ""
    line = f"HTTP {resp.status}{' ' + reason if reason else ''} from {url}"
    if 300 <= resp.status < 400:
        location = resp.headers.get("location")
        line += (f" (redirected to {location}; give that URL as --base-url)" if location
                 else " (a redirect without a Location)")
    excerpt = _excerpt(resp)
    return f"{line}: {excerpt}" if excerpt else line


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
    sends_before: int = 0  # sends of earlier sessions of the same backend
    failed: set[int] = dataclasses.field(default_factory=set)  # requests failed since its last success
    open_until: float = 0.0  # circuit open (no requests) until this monotonic time
    opened: int = 0  # the open period is backoff * 2**(opened - 1)
    probe: int | None = None  # the request of the half-open probe in flight
    probe_at: float = 0.0  # when it went out
    last_down: bool = False  # the last failure had no HTTP reply (refused, broken, timed out)
    replied: bool = False  # an HTTP reply came, an error status included: the server is up

    @property
    def probing(self) -> bool:
        return self.probe is not None

    def stats(self) -> ServerStats:
        return ServerStats(self.url, self.attempts, self.failures, self.wait,
                           sends=self.sends_before + self.pool.sends)


class _HttpxPool:
    """httpx for a server behind a proxy (``HTTP(S)_PROXY``; :class:`HTTPPool` speaks no proxy
    protocol), with :class:`HTTPPool`'s interface and errors."""

    def __init__(self, httpx: Any, url: str, *, headers: Mapping[str, str], connections: int,
                 timeout: float) -> None:
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self._httpx = httpx
        self._client = httpx.AsyncClient(base_url=url, headers=dict(headers), limits=limits,
                                         timeout=httpx.Timeout(timeout), verify=_ssl_context())
        self.sends = 0  # posts (httpx's own re-sends on stale connections are not seen)

    async def post(self, path: str, body: bytes) -> HTTPReply:
        httpx = self._httpx
        self.sends += 1
        try:
            resp = await self._client.post(path, content=body)
        except httpx.ConnectError as exc:
            raise ConnectFailed(str(exc)) from exc
        except httpx.TimeoutException as exc:
            raise TransportFailed(f"{type(exc).__name__}: no reply in time") from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise TransportFailed(f"{type(exc).__name__}: {exc}") from exc
        headers = {k.lower(): v for k, v in resp.headers.items()}
        if headers.get("content-encoding", "").lower() in _DECODED:
            headers.pop("content-encoding")  # httpx has decoded it
        return HTTPReply(resp.status_code, headers, resp.content, resp.reason_phrase)

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
        Distinct requests failing on a server with no success in between that open its circuit:
        no requests go to it for ``backoff`` seconds (doubling, up to ``max_backoff``, each time
        a probe fails with a request that had not failed there before), then one probe request
        decides. A request failing again and again counts once.
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
        if backoff < 0:
            raise ConfigError(f"backoff must be >= 0; got {backoff}")
        if max_backoff < backoff:
            raise ConfigError(f"max_backoff ({max_backoff}) must be >= backoff ({backoff})")
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
        servers = tuple(self._servers.values())
        return BackendStats(requests=self.requests, attempts=self.attempts, servers=servers,
                            sends=sum(s.sends or 0 for s in servers))

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


class _OpenAISession(ChatSession):
    """The backend opened in one event loop: clients, routing, circuits and the concurrency slots."""

    def __init__(self, backend: OpenAIBackend) -> None:
        self.b = backend
        self.capacity = backend.concurrency
        key = backend.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        # identity: a server may use any coding when a client says nothing (RFC 9110); a
        # User-Agent: some hosted endpoints refuse requests without one
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                   "Accept-Encoding": "identity", "User-Agent": f"hoibench/{__version__}"}
        self.servers = [_Server(u, self._pool(u, headers)) for u in backend.base_urls]
        for s in self.servers:  # counts carry on from earlier sessions of the same backend
            old = backend._servers.get(s.url)
            if old is not None:
                s.attempts, s.failures, s.wait = old.attempts, old.failures, old.wait_seconds
                s.sends_before = old.sends or 0
        self._keys = itertools.count()  # one key per request: the breaker counts distinct requests
        self._slots = asyncio.Semaphore(backend.concurrency)
        self._rng = random.Random()
        self._turn = 0
        self._last_reply = time.monotonic()
        self.latency = 0.0  # moving average of successful attempts: stall and stale-probe detection
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
            self.b._servers[s.url] = s.stats()

    # ------------------------------------------------------------------ routing
    def _choose(self, avoid: set[str], affinity: str | None = None, key: int = -1) -> _Server | None:
        """The server for the next attempt: a half-open probe when one is due, else the closed
        circuit with the fewest outstanding requests, or with ``affinity`` (an image digest under
        ``image-affinity`` routing) the first closed circuit in that image's own server order
        (``avoid``: servers this request just failed on, used only when nothing else is open);
        ``None`` when every circuit is open. ``key``: the request, recorded as a probe's."""
        n = len(self.servers)
        if n == 1 and not self.servers[0].open_until:  # one healthy server: the usual case
            return self.servers[0]
        now = time.monotonic()
        if affinity is not None:
            order = self._affinity_order(affinity)
        else:
            self._turn = (self._turn + 1) % n
            order = [self.servers[(self._turn + k) % n] for k in range(n)]
        stale = max(0.5, 4 * self.latency)  # a probe out this long (one question that hangs) holds nobody
        due = [s for s in order if s.open_until and now >= s.open_until
               and (not s.probing or now - s.probe_at > stale)]
        closed = [s for s in order if not s.open_until]
        probe = [s for s in due if s.url not in avoid] or ([] if closed else due)
        if probe and (affinity is None or not closed or probe[0] is order[0]):
            probe[0].probe, probe[0].probe_at = key, now
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
        return max(0.01, min(due)) if due else 0.05  # a probe in flight: look again soon

    def _check_down(self) -> None:
        """Every circuit open on failures without an HTTP reply (refused or broken connections,
        timeouts: also a server that accepts connections and never answers), and no answer for a
        while (no HTTP reply at all yet, or none for ``max_backoff``; an error status is a reply:
        that server is up): stop the run rather than retry forever."""
        if not all(s.open_until and s.last_down for s in self.servers):
            return
        never = not any(s.replied for s in self.servers)
        if never or time.monotonic() - self._last_reply > self.b.max_backoff:
            urls = ", ".join(s.url for s in self.servers)
            raise BackendUnavailable(f"no server answers ({urls}); last: {self._last_error}")

    _last_error = ""

    def _failed(self, s: _Server, key: int, message: str, *, down: bool) -> None:
        """Request ``key`` failed on ``s``. Only server-wide evidence opens the circuit:
        ``failure_threshold`` distinct requests failing with no success in between; a failed
        probe reopens it, for twice as long only when its request had not failed there before
        (a question that always fails is no news about the server)."""
        s.failures += 1
        s.last_down = down
        self._last_error = message
        new = key not in s.failed
        s.failed.add(key)
        if s.probe == key:  # the half-open probe failed
            s.probe = None
            s.opened += new
            self._open(s)
        elif not s.open_until and len(s.failed) >= self.b.failure_threshold:
            s.opened = 1
            self._open(s)

    def _open(self, s: _Server) -> None:
        period = min(self.b.max_backoff, self.b.backoff * 2 ** (max(1, s.opened) - 1))
        s.open_until = time.monotonic() + max(period * (0.75 + self._rng.random() / 2), 1e-3)

    def _succeeded(self, s: _Server, seconds: float) -> None:
        s.failed.clear()
        s.open_until = 0.0
        s.opened = 0
        s.probe = None
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
            raise _Retry(f"{exc} ({s.url})", down=True) from exc
        code = resp.status
        if code == 200:
            if resp.encoding not in _DECODED:
                raise _Fatal(f"HTTP 200 from {s.url}: the body is {resp.encoding}-compressed "
                             f"(Content-Encoding: {resp.encoding}), which hoibench does not decode "
                             "(it asks for identity)")
            return _reply_text(resp.content, resp.encoding)
        if code == 429 or code in (408, 409) or code >= 500:
            raise _Retry(_status_error(resp, s.url), after=_retry_after(resp.headers.get("retry-after")))
        raise _Fatal(_status_error(resp, s.url))

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
            raise _Retry(f"Timeout: no complete reply within {self.b.timeout:g} s ({s.url})", down=True) from exc
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
        key = next(self._keys)
        while True:
            await self._slots.acquire()
            s = self._choose(avoid, affinity, key)  # chosen with a slot in hand: the health of now, not of the queue
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
            if not (isinstance(err, _Retry) and err.down):  # an HTTP reply: the server is up
                s.replied = True
                self._last_reply = time.monotonic()
            if err is None:
                self._succeeded(s, dt)
                self.b.requests += 1
                return ChatResponse(text, meta={**request.meta, "attempts": attempt})
            if isinstance(err, _Fatal):  # the server is up; this request is what fails
                self._succeeded(s, dt)
                s.failures += 1
                self.b._servers[s.url] = s.stats()
                self.b.requests += 1
                return ChatResponse(None, error=str(err), meta=dict(request.meta), retryable=False)
            last = str(err)
            self._failed(s, key, last, down=err.down)
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
