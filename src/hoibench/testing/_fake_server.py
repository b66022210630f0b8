"""A tiny OpenAI-compatible chat server for tests, benchmarks and dry runs.

It speaks just enough HTTP/1.1 (keep-alive, ``Content-Length`` bodies) for the ``openai`` client:
``POST …/chat/completions`` and ``GET …/models``. A handler function decides each reply: a text,
an HTTP error (500, 429, …) or a delay (a hang, when longer than the client's timeout). It runs
its own event loop in a background thread, so a test can start it on 127.0.0.1 next to the code
under test.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = ["FakeChatServer", "FakeReply", "request_image", "request_text"]


@dataclass(frozen=True)
class FakeReply:
    """What the fake server does with one request: wait ``delay`` seconds, then answer ``text``
    with ``status`` (an error body when ``status`` is not 200; ``text=None`` sends
    ``content: null``) and extra ``headers`` (e.g. ``Retry-After``)."""

    text: str | None = ""
    status: int = 200
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


def request_text(body: dict[str, Any]) -> str:
    """The concatenated text parts of the last user message of a chat request."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def request_image(body: dict[str, Any]) -> bytes | None:
    """The bytes of the first image of the last message (data URLs only), or ``None``."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return None
    for p in content:
        if p.get("type") == "image_url":
            url = p["image_url"]["url"]
            if url.startswith("data:"):
                return base64.b64decode(url.split(",", 1)[1])
    return None


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}


class FakeChatServer:
    """``with FakeChatServer(handler) as server: ... server.url ...``

    ``handler(body) -> str | FakeReply`` receives the decoded JSON request. ``count`` is the
    number of chat requests received; ``bodies`` keeps them when ``record=True``.
    """

    def __init__(self, handler: Callable[[dict[str, Any]], str | FakeReply] | None = None, *,
                 host: str = "127.0.0.1", port: int = 0, record: bool = True,
                 model: str = "fake-model") -> None:
        self.handler = handler or (lambda body: "A")
        self.host = host
        self.port = port
        self.record = record
        self.model = model
        self.count = 0
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None  # why the server could not start

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> FakeChatServer:
        self._thread = threading.Thread(target=self._serve, name="fake-chat-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake chat server did not start")
        if self._error is not None:  # e.g. the port is taken: the caller's OSError
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        conns: set[_Connection] = set()
        server = await self._loop.create_server(lambda: _Connection(self, conns), self.host, self.port,
                                                backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for conn in list(conns):
                conn.close()

    def _reply(self, method: str, path: str, raw: bytes) -> tuple[bytes, float]:
        """The whole HTTP reply to one request, and the seconds to wait before it is sent."""
        status, payload, delay, extra = self._dispatch(method, path, raw)
        data = orjson.dumps(payload)
        more = "".join(f"{k}: {v}\r\n" for k, v in extra.items())
        return (f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
                f"content-type: application/json\r\ncontent-length: {len(data)}\r\n{more}"
                "connection: keep-alive\r\n\r\n".encode() + data), delay

    def _dispatch(self, method: str, path: str, raw: bytes
                  ) -> tuple[int, dict[str, Any], float, Mapping[str, str]]:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}, 0.0, {}
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {method} {path}"}}, 0.0, {}
        body = orjson.loads(raw)
        with self._lock:
            self.count += 1
            if self.record:
                self.bodies.append(body)
        try:
            reply = self.handler(body)
        except Exception as exc:
            reply = FakeReply(f"handler failed: {exc}", status=500)
        if isinstance(reply, str):
            reply = FakeReply(reply)
        if reply.status != 200:
            return reply.status, {"error": {"message": reply.text or "fake error",
                                            "type": "server_error", "code": reply.status}}, reply.delay, reply.headers
        return 200, {
            "id": f"chatcmpl-{self.count}", "object": "chat.completion", "created": 0,
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply.text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }, reply.delay, reply.headers


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed as their bytes arrive, answered one at a time in
    arrival order (a delayed reply is a timer, not a task), so that a benchmark's server spends
    little of the machine's CPU that the client under test also runs on. A malformed request
    (no HTTP request line, a head over 64 KiB, a bad ``Content-Length``) closes the connection."""

    def __init__(self, server: FakeChatServer, conns: set[_Connection]) -> None:
        self.server, self.conns = server, conns
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.busy = False  # a delayed reply is pending: later requests wait for it

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.conns.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.conns.discard(self)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._serve()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _serve(self) -> None:
        while not self.busy and self.transport is not None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > 65536:
                    self.close()
                return
            try:
                lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    if k.strip().lower() == "content-length":
                        length = int(v)
                if length < 0:
                    raise ValueError(length)
            except ValueError:
                self.close()
                return
            if len(self.buf) < end + 4 + length:
                return
            raw = bytes(self.buf[end + 4:end + 4 + length])
            del self.buf[:end + 4 + length]
            reply, delay = self.server._reply(method, path, raw)
            if delay:
                self.busy = True
                asyncio.get_running_loop().call_later(delay, self._send_later, reply)
            else:
                self.transport.write(reply)

    def _send_later(self, reply: bytes) -> None:
        self.busy = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(reply)
            self._serve()
