"""The OpenAI-compatible runner against servers that misbehave the way real ones do (all on
127.0.0.1, bounded in time): a request the server takes and drops is re-sent at most once and
every send is counted; gzip replies; a 408 or stray bytes on an idle connection never read as
the next reply; per-question failures that do not stall the run; a server that accepts
connections and never answers declared down; one-line error messages with a rerun hint only
where a rerun helps."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from hoibench.cli import main
from hoibench.data import Choice, MCQuestion
from hoibench.formats import read_answers
from hoibench.formats.questions import write_questions
from hoibench.models import BackendUnavailable, ChatMessage, ChatRequest, make_backend
from hoibench.models._http import HTTPPool, TransportFailed
from hoibench.runners import MCQRunner
from hoibench.testing import FakeChatServer, FakeReply, request_text

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def _completion(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}).encode()


def _reply(body: bytes, status: str = "200 OK", headers: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"{headers}\r\n").encode() + body


class _RawServer:
    """An HTTP/1.1 server on 127.0.0.1 in a thread, scripted per request:
    ``handler(head, body, k)`` (``k``: the request's number on its connection) gives the raw
    reply, or ``None`` to close the connection without one. ``idle``: once a connection has been
    idle that long after a reply, ``after`` is sent, and the connection closed when ``close``."""

    def __init__(self, handler: Callable[[bytes, bytes, int], bytes | None], *, idle: float | None = None,
                 after: bytes = b"", close: bool = True) -> None:
        self.handler, self.idle, self.after, self.close = handler, idle, after, close
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.connections = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> _RawServer:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        k = 0
        try:
            while True:
                if self.idle is not None and k:
                    try:
                        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle)
                    except asyncio.TimeoutError:
                        writer.write(self.after)
                        await writer.drain()
                        if self.close:
                            return
                        head = await reader.readuntil(b"\r\n\r\n")
                else:
                    head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
                body = await reader.readexactly(length)
                self.heads.append(head)
                self.bodies.append(body)
                reply = self.handler(head, body, k)
                k += 1
                if reply is None:
                    return
                writer.write(reply)
                await writer.drain()
                if b"connection: close" in reply.lower():
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _generate(url: str, texts: list[str], **kw):
    backend = make_backend("openai", model="m", base_urls=[url], backoff=kw.pop("backoff", 0.01),
                           max_backoff=kw.pop("max_backoff", 1.0), **kw)
    responses = backend.generate([ChatRequest((ChatMessage.user(t),)) for t in texts])
    return responses, backend.stats()


# --------------------------------------------------------------------------- item 7: re-sends


def test_a_dropped_request_goes_out_at_most_twice_and_every_send_is_counted():
    """The server answers the warm-up requests and takes-then-drops ``drop`` (closes without a
    reply) on every connection: with five idle kept-alive connections the request goes out on
    one of them and once more on a fresh one, never once per idle connection."""
    def handler(head, body, k):
        return None if body == b"drop" else OK

    async def main(url):
        pool = HTTPPool(url, headers={}, ssl_context=None)
        await asyncio.gather(*(pool.post("/x", b"warm") for _ in range(5)))  # five idle connections
        with pytest.raises(TransportFailed, match="without a reply"):
            await pool.post("/x", b"drop")
        sends = getattr(pool, "sends", None)
        await pool.aclose()
        return sends

    with _RawServer(handler) as server:
        sends = asyncio.run(main(server.url))
    assert server.bodies.count(b"drop") == 2  # the reused connection, then one fresh
    assert sends == len(server.bodies) == 7


def _questions(n: int, per_image: int = 10) -> list[MCQuestion]:
    return [MCQuestion(id=f"q{i}", file_name=f"im{i // per_image}.jpg", setting=1,
                       choices=(Choice(f"hold a/an obj{i}"), Choice(f"ride a/an obj{i}"),
                                Choice(f"no_interaction with a/an obj{i}"), Choice(f"feed a/an obj{i}")),
                       correct=frozenset({0}))
            for i in range(n)]


@pytest.fixture
def images(tmp_path: Path) -> Path:
    d = tmp_path / "images"
    d.mkdir()
    for k in range(10):
        Image.new("RGB", (32, 24), (20 * k, 90, 200)).save(d / f"im{k}.jpg", quality=90)
    return d


def _qnum(text: str) -> int:
    return int(re.search(r"obj(\d+)", text).group(1))  # type: ignore[union-attr]


def _runner(urls, images, *, concurrency=8, max_retries=2, backoff=0.02, max_backoff=5.0, timeout=30.0):
    backend = make_backend("openai", model=MODEL, base_urls=urls, concurrency=concurrency, backoff=backoff,
                           max_backoff=max_backoff, timeout=timeout, max_retries=max_retries)
    return MCQRunner(backend, images=images, model=MODEL, box_convention="original", progress=False)


def test_the_run_summary_counts_every_send_of_a_dropped_question(tmp_path, images):
    """q3 is taken and dropped on every connection: with ``max_retries=1`` it is sent at most
    twice per attempt (a reused connection, then a fresh one) and the summary's ``sends`` equals
    what the server received."""
    def handler(head, body, k):
        n = _qnum(json.loads(body)["messages"][-1]["content"][-1]["text"])
        return None if n == 3 else _reply(_completion("A"))

    with _RawServer(handler) as server:
        s = _runner([server.url], images, concurrency=2, max_retries=1).run(_questions(10), tmp_path / "a.jsonl")
    dropped = sum(b"obj3" in b for b in server.bodies)
    assert s.ok == 9 and s.error == 1 and s.attempts == 11
    assert 2 <= dropped <= 2 * 2  # two attempts, each re-sent at most once
    assert s.sends == len(server.bodies) and s.servers[0]["sends"] == s.sends


# --------------------------------------------------------------------------- item 8: encodings


@pytest.mark.parametrize("always", [False, True], ids=["unless-identity", "always"])
def test_a_server_that_gzips_its_replies(always):
    """A server may use any coding when the client names none: it gzips unless asked for
    identity, or (a broken one) always; either way every reply is read. Requests carry
    ``Accept-Encoding: identity`` and a hoibench User-Agent."""
    def handler(head, body, k):
        if always or b"accept-encoding: identity" not in head.lower():
            return _reply(gzip.compress(_completion("A")), headers="Content-Encoding: gzip\r\n")
        return _reply(_completion("A"))

    with _RawServer(handler) as server:
        responses, _ = _generate(server.url, ["a", "b", "c"], max_retries=0)
    assert [r.text for r in responses] == ["A", "A", "A"], [r.error for r in responses]
    head = server.heads[0].lower()
    assert b"accept-encoding: identity\r\n" in head and re.search(rb"user-agent: hoibench/\d", head)


def test_a_coding_the_client_cannot_decode_is_named_in_the_error():
    def handler(head, body, k):
        return _reply(b"\x1b\x00\xf8brotli", headers="Content-Encoding: br\r\n")

    with _RawServer(handler) as server:
        (resp,), _ = _generate(server.url, ["a"], max_retries=0)
    assert not resp.ok and "Content-Encoding: br" in (resp.error or "") and not resp.retryable


# --------------------------------------------------------------------------- item 9: idle connections


@pytest.mark.parametrize("after, close", [
    (b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", True),
    (b"", True),  # a plain close
    (b"stray bytes\r\n\r\n", False),  # bytes nobody asked for, the connection left open
], ids=["408-close", "close", "stray"])
def test_what_arrives_on_an_idle_connection_is_never_read_as_the_next_reply(after, close):
    """The server sends ``after`` on a connection idle for 50 ms. The client's event loop is
    blocked meanwhile (a busy run), so those bytes still wait in the socket when the next
    request picks a connection: the pool sees them and takes a fresh connection."""
    async def main(url):
        pool = HTTPPool(url, headers={}, ssl_context=None)
        first = await pool.post("/x", b"1")
        time.sleep(0.3)  # blocks the loop: what the server sends now is not read yet
        second = await asyncio.wait_for(pool.post("/x", b"2"), 5)
        sends = getattr(pool, "sends", None)
        await pool.aclose()
        return first, second, sends

    with _RawServer(lambda head, body, k: OK, idle=0.05, after=after, close=close) as server:
        first, second, sends = asyncio.run(main(server.url))
    assert (first.status, first.content) == (second.status, second.content) == (200, b"ok")
    assert len(server.bodies) == 2 and server.connections == 2
    assert sends == 2


def test_a_408_and_close_in_answer_to_a_request_on_a_reused_connection_is_sent_once_more():
    """A server that timed out an idle connection just as the request arrived answers 408 and
    closes: the request was not taken, so it goes out once more on a fresh connection, and the
    backend counts one attempt, two sends."""
    timeout = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"

    def handler(head, body, k):
        return timeout if k == 1 else _reply(_completion("A"))

    with _RawServer(handler) as server:
        backend = make_backend("openai", model="m", base_urls=[server.url], concurrency=1, max_retries=0)
        responses = backend.generate([ChatRequest((ChatMessage.user(t),)) for t in "ab"])
        stats = backend.stats()
    assert [r.text for r in responses] == ["A", "A"], [r.error for r in responses]
    assert stats.attempts == 2 and len(server.bodies) == 3
    assert stats.sends == 3


# --------------------------------------------------------------------------- item 10: the breaker


FAILING = {97, 98, 99}


def test_three_questions_that_always_fail_do_not_stall_the_run(tmp_path, images):
    """3 of 100 questions answered 500 every time (the last ones, so that their retries meet no
    success in between): the run ends within twice a clean run's time, those 3 are recorded as
    failed after 1 + max_retries sends each, and no question is sent more often. Wall-clock
    ratios on a shared machine: up to three clean/failing pairs, the best counts."""
    qs = _questions(100)
    max_retries = 3

    def clean(body):
        return FakeReply("A", delay=0.05)

    def failing(body):
        n = _qnum(request_text(body))
        return FakeReply("boom", status=500, delay=0.05) if n in FAILING else FakeReply("A", delay=0.05)

    pairs = []
    counted = []  # (the summary's sends, the server's count, retryable errors) per failing run
    for attempt in range(3):
        with FakeChatServer(clean) as server:
            t0 = time.perf_counter()
            s0 = _runner([server.url], images, max_retries=max_retries).run(qs, tmp_path / f"c{attempt}.jsonl")
            t_clean = time.perf_counter() - t0
        with FakeChatServer(failing) as server:
            t0 = time.perf_counter()
            s1 = _runner([server.url], images, max_retries=max_retries).run(qs, tmp_path / f"f{attempt}.jsonl")
            t_fail = time.perf_counter() - t0
            sent = Counter(_qnum(request_text(b)) for b in server.bodies)
        assert s0.ok == 100 and s1.ok == 97 and s1.error == 3
        failed = {a.question_id for a in read_answers(tmp_path / f"f{attempt}.jsonl") if a.status == "error"}
        assert failed == {f"q{n}" for n in FAILING}
        assert max(sent.values()) <= 1 + max_retries and all(sent[n] == 1 + max_retries for n in FAILING)
        counted.append((getattr(s1, "sends", None), sum(sent.values()), getattr(s1, "retryable_errors", None)))
        pairs.append((t_fail, t_clean))
        if t_fail <= 2 * t_clean:
            break
    assert min(f / c for f, c in pairs) <= 2, pairs
    assert all(sends == n and k == 3 for sends, n, k in counted), counted


def test_a_server_that_accepts_connections_and_never_answers_is_declared_down(tmp_path, images):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # the kernel accepts connections; nobody ever reads or answers
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        t0 = time.perf_counter()
        with pytest.raises(BackendUnavailable, match=r"no server answers.*Timeout"):
            _runner([url], images, concurrency=4, max_retries=5, backoff=0.05, max_backoff=1.0,
                    timeout=0.3).run(_questions(20), tmp_path / "a.jsonl")
        assert time.perf_counter() - t0 < 5
    finally:
        sock.close()


# --------------------------------------------------------------------------- error lines

NGINX_413 = (b"<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
             b"<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n"
             b"</body>\r\n</html>\r\n")


def _html(status: str, body: bytes, headers: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n{headers}\r\n"
            ).encode() + body


@pytest.mark.parametrize("raw, expect, retryable", [
    (_html("413 Request Entity Too Large", NGINX_413), "HTTP 413 Request Entity Too Large from {url}: nginx/1.24.0",
     False),
    (_html("301 Moved Permanently", b"<html><body><h1>301 Moved Permanently</h1></body></html>",
           "Location: https://api.example.org/v1/chat/completions\r\n"),
     "HTTP 301 Moved Permanently from {url} (redirected to https://api.example.org/v1/chat/completions", False),
    (_html("307 Temporary Redirect", b"", "Location: http://10.0.0.2:8000/v1/chat/completions\r\n"),
     "(redirected to http://10.0.0.2:8000/v1/chat/completions", False),
    (_reply(b'{"error": {"message": "Invalid API key", "type": "auth"}}', "401 Unauthorized"),
     "HTTP 401 Unauthorized from {url}: Invalid API key", False),
    (_reply(b'{"detail": "Not Found"}', "404 Not Found"), "HTTP 404 Not Found from {url}: Not Found", False),
    (_html("502 Bad Gateway", b"<html><head><title>502 Bad Gateway</title></head><body>" + b"x" * 500
           + b"</body></html>"), "gave up after 1 attempts; last: HTTP 502 Bad Gateway from {url}: xxx", True),
])
def test_error_replies_are_one_short_line(raw, expect, retryable):
    with _RawServer(lambda head, body, k: raw) as server:
        (resp,), _ = _generate(server.url, ["a"], max_retries=0)
    error = resp.error or ""
    assert expect.format(url=server.url) in error, error
    assert "\n" not in error and "<" not in error and len(error) < 400
    assert resp.retryable is retryable


def test_cli_breaker_options_and_a_rerun_hint_only_where_a_rerun_helps(tmp_path, images, capsys):
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(4), header={"seed": 0})
    args = ["mcq", "run", "--questions", str(qpath), "--images", str(images), "--model", MODEL,
            "--no-progress", "--json", "--max-retries", "1", "--backoff", "0.01", "--max-backoff", "0.5",
            "--failure-threshold", "2"]
    with _RawServer(lambda head, body, k: _html("413 Request Entity Too Large", NGINX_413)) as server, \
            pytest.raises(SystemExit) as exc:
        main([*args, "--base-url", server.url, "--out", str(tmp_path / "a.jsonl")])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert exc.value.code == 1 and len(err.splitlines()) == 1, err
    assert "HTTP 413 Request Entity Too Large" in err and "<" not in err and "run the same command" not in err
    assert json.loads(captured.out)["sends"] == len(server.bodies) == 4  # a 4xx is not retried
    with FakeChatServer(lambda body: FakeReply("overloaded", status=503)) as server:
        with pytest.raises(SystemExit):
            main([*args, "--base-url", server.url, "--out", str(tmp_path / "b.jsonl")])
        err = capsys.readouterr().err.strip()
        assert server.count == 8  # 1 + --max-retries each
    assert "HTTP 503 Service Unavailable" in err and err.endswith("run the same command again to ask them again")
    with pytest.raises(SystemExit) as exc:
        main([*args, "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "c.jsonl"),
              "--backoff", "2", "--max-backoff", "1"])
    assert exc.value.code == 2 and "max_backoff (1.0) must be >= backoff (2.0)" in capsys.readouterr().err
