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
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import urllib.request
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
    content: bytes

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


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


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
        self.max_idle = max_idle  # idle keep-alive connections kept (more open when needed, closed on return)

    async def _connect(self) -> _Conn:
        try:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self.ssl, limit=1 << 20,
                server_hostname=self.host if self.ssl is not None else None)
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailed(f"{type(exc).__name__}: {exc}") from exc
        return _Conn(reader, writer)

    async def post(self, path: str, body: bytes) -> HTTPReply:
        """``POST prefix + path`` with ``body``; a kept-alive connection that the server closed
        meanwhile is retried once on a fresh one (nothing was processed)."""
        head = (f"POST {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self._head
                + b"Content-Length: %d\r\n\r\n" % len(body))
        while self._idle:
            conn = self._idle.pop()
            if conn.reader.at_eof() or conn.writer.is_closing():
                conn.close()
                continue
            try:
                return await self._exchange(conn, head, body)
            except _Stale:
                continue
        try:
            return await self._exchange(await self._connect(), head, body, fresh=True)
        except _Stale as exc:  # pragma: no cover - a fresh connection closed before any byte
            raise TransportFailed("the server closed the connection without a reply") from exc

    async def _exchange(self, conn: _Conn, head: bytes, body: bytes, *, fresh: bool = False) -> HTTPReply:
        done = False
        got_any = False
        try:
            conn.writer.write(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                conn.writer.write(body)
            await conn.writer.drain()
            try:
                status_line = await conn.reader.readuntil(b"\r\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial and not fresh:
                    raise _Stale from exc
                raise
            got_any = True
            reply, keep = await self._read_reply(conn.reader, status_line)
            done = keep
            return reply
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            if not got_any and not fresh and isinstance(exc, ConnectionError):
                raise _Stale from exc
            raise TransportFailed(f"{type(exc).__name__}: {exc}") from exc
        finally:
            if done and len(self._idle) < self.max_idle:
                self._idle.append(conn)
            else:
                conn.close()

    async def _read_reply(self, reader: asyncio.StreamReader, status_line: bytes) -> tuple[HTTPReply, bool]:
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ValueError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
        status = int(parts[1])
        raw = await reader.readuntil(b"\r\n\r\n")
        headers: dict[str, str] = {}
        for line in raw.decode("latin-1").split("\r\n"):
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        keep = headers.get("connection", "").lower() != "close" and parts[0] != b"HTTP/1.0"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = []
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";", 1)[0].strip(), 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")  # no trailers expected: the final CRLF
                    break
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
            content = b"".join(chunks)
        elif "content-length" in headers:
            content = await reader.readexactly(int(headers["content-length"]))
        else:  # the body ends with the connection
            content = await reader.read()
            keep = False
        return HTTPReply(status, headers, content), keep

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        for conn in idle:
            with contextlib.suppress(OSError, ssl.SSLError):
                await conn.writer.wait_closed()


class _Stale(Exception):
    """A kept-alive connection the server had closed: retry on a fresh one."""
