"""A lean HTTP/1.1 keep-alive client on asyncio streams, for the OpenAI-compatible backend.

Why not httpx for every request: profiled on the instant-server case of ``perf/bench_runner.py``,
httpx/httpcore spent most of the runner's main-thread time per request (its pool scans every
connection and checks its socket on each request start and finish; URL parsing, cookies, anyio
wrappers). A chat completion needs little of that: one ``POST`` of a JSON body to a fixed path,
a ``Content-Length`` or chunked reply, keep-alive. This client does only that; the backend falls
back to httpx where a proxy is configured for a server (``HTTP(S)_PROXY``), which it does not
speak.

Errors: :class:`ConnectFailed` (nothing listens: the server is down) and :class:`TransportFailed`
(the connection broke mid-request); the caller's deadline cancels a request in flight (its
connection is then dropped, never reused).

Re-sends: a request goes out again at most once, and only when it went out on a kept-alive
connection that the server closed without a byte of reply (or answered ``408`` and closed: the
server says it never took the request); a pooled connection with anything to read (a late
``408``, stray bytes, its close) is dropped before reuse, never read as the next reply.
:attr:`HTTPPool.sends` counts every request written, re-sends included.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import urllib.request
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["ConnectFailed", "HTTPPool", "HTTPReply", "TransportFailed", "uses_proxy"]



class ConnectFailed(OSError):
    """No connection could be made (refused, unreachable, DNS)."""


class TransportFailed(OSError):
    """The connection broke or the reply was not HTTP/1.1."""


@dataclass(frozen=True)
class HTTPReply:
    status: int
    headers: Mapping[str, str]  # lower-case names
    content: bytes  # decoded when the server sent gzip or deflate anyway (see ``encoding``)
    reason: str = ""  # the status line's reason phrase

    @property
    def encoding(self) -> str:
        """The reply's ``Content-Encoding`` as sent (``""``: none); gzip and deflate bodies are
        decoded, any other coding is left as it came."""
        return self.headers.get("content-encoding", "").strip().lower()

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def uses_proxy(url: str) -> bool:
    """Whether the environment routes ``url`` through a proxy (then httpx serves it)."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if parts.scheme not in proxies and "all" not in proxies:
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


#: the longest status line and headers accepted (a reply whose head is longer is refused)
MAX_HEAD = 1 << 20


class _Conn(asyncio.Protocol):
    """One keep-alive connection, parsing its reply as the bytes arrive (``data_received``):
    the request's task wakes once, when the reply is whole, instead of once per read of a
    stream reader (status line, headers, body), which at hundreds of requests a second was a
    large part of the event loop's work per request."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future[None]
        self.closed = False  # the server closed it, or it broke: never reused
        self.waiter: asyncio.Future[tuple[HTTPReply, bool]] | None = None
        self.buf = bytearray()
        self.got_any = False  # a byte of the current reply arrived
        self._head: tuple[int, dict[str, str], bool] | None = None  # status, headers, keep-alive
        self._reason = ""
        self._body_at = 0  # where the body starts in ``buf``
        self._mode = ""  # "length", "chunked" or "close"
        self._length = 0
        self._scan = 0  # chunked: where the next chunk's size line starts; head: search start
        self._chunks: list[bytes] = []

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.lost = asyncio.get_running_loop().create_future()  # done once the socket is closed

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.waiter.done():  # bytes nobody asked for: never reuse it
            self.close()
            return
        self.got_any = True
        self.buf += data
        try:
            reply = self._parse()
        except ValueError as exc:
            self._fail(TransportFailed(f"ValueError: {exc}"))
            return
        if reply is not None:
            self.waiter.set_result(reply)

    def eof_received(self) -> bool:
        self._ended(None)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended(exc)
        if not self.lost.done():
            self.lost.set_result(None)

    # ------------------------------------------------------------------ one exchange
    def start(self, waiter: asyncio.Future[tuple[HTTPReply, bool]]) -> None:
        self.waiter = waiter
        self.buf.clear()
        self.got_any = False
        self._head = None
        self._scan = 0
        self._chunks = []

    def _ended(self, exc: Exception | None) -> None:
        self.closed = True
        w = self.waiter
        if w is None or w.done():
            return
        if self._head is not None and self._mode == "close":  # the body ends with the connection
            status, headers, _ = self._head
            w.set_result((HTTPReply(status, headers, bytes(self.buf[self._body_at:]), self._reason), False))
        elif not self.got_any:
            w.set_exception(_Stale(f"{type(exc).__name__}: {exc}" if exc else "closed before a reply"))
        else:
            what = f"{type(exc).__name__}: {exc}" if exc else "the connection closed mid-reply"
            w.set_exception(TransportFailed(f"IncompleteRead: {what}"))

    def _fail(self, exc: Exception) -> None:
        self.close(abort=True)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    def _parse(self) -> tuple[HTTPReply, bool] | None:
        buf = self.buf
        if self._head is None:
            end = buf.find(b"\r\n\r\n", max(0, self._scan - 3))
            if (end if end >= 0 else len(buf)) > MAX_HEAD:
                raise ValueError(f"a reply head longer than {MAX_HEAD} bytes")
            if end < 0:
                self._scan = len(buf)
                return None
            lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
            parts = lines[0].split(None, 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
                raise ValueError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
            headers: dict[str, str] = {}
            for line in lines[1:]:
                k, sep, v = line.partition(":")
                if sep:
                    headers[k.strip().lower()] = v.strip()
            keep = headers.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
            status = int(parts[1])
            if 100 <= status < 200:  # an interim reply (100 Continue): the real one follows
                del buf[:end + 4]
                self._scan = 0
                return self._parse()
            self._head = (status, headers, keep)
            self._reason = parts[2].strip() if len(parts) > 2 else ""
            self._body_at = self._scan = end + 4
            if status in (204, 304):  # no body, whatever the headers say
                self._mode, self._length = "length", 0
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                self._mode = "chunked"
            elif "content-length" in headers:
                self._mode, self._length = "length", int(headers["content-length"])
                if self._length < 0:
                    raise ValueError(f"Content-Length {self._length}")
            else:
                self._mode = "close"
        status, headers, keep = self._head
        if self._mode == "length":
            end = self._body_at + self._length
            if len(buf) < end:
                return None
            return HTTPReply(status, headers, bytes(buf[self._body_at:end]), self._reason), keep and len(buf) == end
        if self._mode == "chunked":
            return self._chunked(status, headers, keep)
        return None  # "close": whole at the connection's end

    def _chunked(self, status: int, headers: dict[str, str], keep: bool) -> tuple[HTTPReply, bool] | None:
        buf = self.buf
        while True:
            eol = buf.find(b"\r\n", self._scan)
            if eol < 0:
                return None
            size = int(bytes(buf[self._scan:eol]).split(b";", 1)[0].strip(), 16)
            if size == 0:  # the last chunk, then trailers (ignored) up to an empty line
                pos = eol + 2
                while True:
                    nxt = buf.find(b"\r\n", pos)
                    if nxt < 0:
                        return None
                    if nxt == pos:
                        return (HTTPReply(status, headers, b"".join(self._chunks), self._reason),
                                keep and len(buf) == nxt + 2)
                    pos = nxt + 2
            if len(buf) < eol + 2 + size + 2:
                return None
            self._chunks.append(bytes(buf[eol + 2:eol + 2 + size]))
            self._scan = eol + 2 + size + 2

    def close(self, *, abort: bool = False) -> None:
        self.closed = True
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()


class HTTPPool:
    """Keep-alive connections to one server (``base_url`` such as ``http://host:8000/v1``);
    :meth:`post` sends one request on an idle connection or a new one."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str], ssl_context: ssl.SSLContext | None,
                 max_idle: int = 256) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = ssl_context if parts.scheme == "https" else None
        self.prefix = parts.path.rstrip("/")
        host = self.host if parts.port is None else f"{self.host}:{parts.port}"
        if ":" in self.host and not host.startswith("["):
            host = f"[{self.host}]" if parts.port is None else f"[{self.host}]:{parts.port}"
        self._head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": host, **headers}.items()).encode("latin-1")
        self._idle: list[_Conn] = []
        self._open: set[_Conn] = set()  # every connection not closed yet (closed by aclose)
        self.max_idle = max_idle  # idle keep-alive connections kept (more open when needed, closed on return)
        self.sends = 0  # requests written to a connection, re-sends included

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(
                _Conn, self.host, self.port, ssl=self.ssl,
                server_hostname=self.host if self.ssl is not None else None)
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailed(f"{type(exc).__name__}: {exc}") from exc
        self._open.add(conn)
        return conn

    def _reusable(self) -> _Conn | None:
        """An idle connection that is still clean: not closed, and with nothing to read. Bytes or
        an EOF waiting on an idle connection (a ``408`` or close already on its way) would
        otherwise be read as the reply to the next request; as httpcore does, such a connection
        is dropped."""
        while self._idle:
            conn = self._idle.pop()
            transport = conn.transport
            if conn.closed or transport is None or transport.is_closing() or _readable(transport):
                conn.close(abort=True)
                self._open.discard(conn)
                continue
            return conn
        return None

    async def post(self, path: str, body: bytes) -> HTTPReply:
        """``POST prefix + path`` with ``body``. Sent again, once, on a fresh connection only when
        it went out on a kept-alive connection that the server closed before any byte of a
        reply (or answered ``408`` and closed); a fresh connection's failure is never re-sent."""
        head = (f"POST {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self._head
                + b"Content-Length: %d\r\n\r\n" % len(body))
        conn = self._reusable()
        if conn is not None:
            try:
                reply, keep = await self._exchange(conn, head, body)
            except _Stale:
                pass  # nothing came back: the server closed it before taking the request
            else:
                if not (reply.status == 408 and not keep):
                    return reply  # a 408 and close on a reused connection: the request was not taken
        try:
            reply, _ = await self._exchange(await self._connect(), head, body)
        except _Stale as exc:  # a fresh connection closed before any byte
            raise TransportFailed(f"the server closed the connection without a reply ({exc})") from None
        return reply

    async def _exchange(self, conn: _Conn, head: bytes, body: bytes) -> tuple[HTTPReply, bool]:
        waiter: asyncio.Future[tuple[HTTPReply, bool]] = asyncio.get_running_loop().create_future()
        conn.start(waiter)
        keep = False
        try:
            transport = conn.transport
            assert transport is not None
            self.sends += 1
            if len(body) < 65536:
                transport.write(head + body)
            else:  # no copy of a large body
                transport.write(head)
                transport.write(body)
            reply, keep = await waiter
            return _decoded(reply), keep
        finally:
            conn.waiter = None
            if keep and not conn.closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
            else:  # cancelled (the deadline), broken, or not kept alive: never reused
                conn.close(abort=not keep)  # what it still had to send is dropped
                self._open.discard(conn)

    async def aclose(self) -> None:
        conns, self._idle = list(self._open), []
        self._open = set()
        for conn in conns:
            conn.close()
        pending = [c.lost for c in conns if not c.lost.done()]
        if pending:  # plain sockets close in one turn of the loop; TLS ones say goodbye first
            await asyncio.wait(pending, timeout=1.0)


def _readable(transport: asyncio.BaseTransport) -> bool:
    """Whether an idle connection's socket has anything to read (bytes, or the peer's close):
    one ``poll`` with no wait."""
    sock = transport.get_extra_info("socket")
    try:
        fd = sock.fileno() if sock is not None else -1
    except OSError:
        return True
    if fd < 0:
        return sock is not None  # closed under us: not reusable; no socket (a test double): trust it
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    ready, _, _ = select.select([fd], [], [], 0)  # pragma: no cover - Windows
    return bool(ready)


#: content codings decoded (a server may use any when a client says nothing; this client asks for
#: ``identity``, and some servers compress all the same)
_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def _decoded(reply: HTTPReply) -> HTTPReply:
    """``reply`` with a gzip or deflate body decoded; any other coding is left for the caller,
    who names it (:attr:`HTTPReply.encoding`)."""
    coding = reply.encoding
    if not coding or coding == "identity" or coding not in _DECODERS or not reply.content:
        return reply
    try:
        d = zlib.decompressobj(_DECODERS[coding])
        content = d.decompress(reply.content) + d.flush()
    except zlib.error as exc:
        if coding != "deflate":
            raise TransportFailed(f"the reply's body (Content-Encoding: {coding}) does not decode: {exc}") from None
        try:  # "deflate" as raw deflate, as some servers send it
            content = zlib.decompress(reply.content, -zlib.MAX_WBITS)
        except zlib.error:
            raise TransportFailed(f"the reply's body (Content-Encoding: {coding}) does not decode: {exc}") from None
    return HTTPReply(reply.status, reply.headers, content, reply.reason)


class _Stale(Exception):
    """A kept-alive connection the server had closed: retry on a fresh one."""
