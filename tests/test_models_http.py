"""The lean HTTP/1.1 client of the OpenAI-compatible backend (``models/_http.py``) against raw
servers on 127.0.0.1: Content-Length, chunked and close-delimited replies, a kept-alive
connection the server closed meanwhile (retried once on a fresh one), refused connections, and
httpx where a proxy is configured."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess

import pytest

from hoibench.models import make_backend
from hoibench.models._http import ConnectFailed, HTTPPool, TransportFailed, uses_proxy
from hoibench.models._openai import _HttpxPool


async def _serve(replies: list[bytes], *, close_after_each: bool = False, dribble: bool = False,
                 tls: ssl.SSLContext | None = None):
    """A server that answers the k-th request with ``replies[k]`` (raw bytes); ``dribble``: one
    byte per write, so the client sees every split of the reply."""
    seen: list[bytes] = []
    connections: list[int] = []

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                seen.append(head + await reader.readexactly(length))
                reply = replies[len(seen) - 1]
                if reply is None:  # never answer this one: wait for the client to give up
                    await reader.read()
                    break
                for part in ([reply[i:i + 1] for i in range(len(reply))] if dribble else [reply]):
                    writer.write(part)
                    await writer.drain()
                    if dribble:
                        await asyncio.sleep(0.001)
                if close_after_each or b"Connection: close" in replies[len(seen) - 1]:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(client, "127.0.0.1", 0, ssl=tls)
    _serve.connections = connections  # type: ignore[attr-defined]
    scheme = "https" if tls is not None else "http"
    return server, f"{scheme}://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", seen


def _run(coro):
    return asyncio.run(coro)


def test_length_chunked_and_close_delimited_replies_on_one_pool():
    async def main():
        server, url, seen = await _serve([
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end",
        ])
        pool = HTTPPool(url, headers={"Authorization": "Bearer k"}, ssl_context=None)
        a = await pool.post("/chat/completions", b"{}")
        b = await pool.post("/chat/completions", b'{"x": 1}')
        c = await pool.post("/chat/completions", b"{}")
        await pool.aclose()
        server.close()
        return a, b, c, seen

    a, b, c, seen = _run(main())
    assert (a.status, a.content) == (200, b"hello")
    assert (b.status, b.content, b.headers["retry-after"]) == (429, b"abcde", "3")
    assert c.content == b"to the end"
    assert seen[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"Authorization: Bearer k\r\n" in seen[0] and seen[1].endswith(b'\r\n\r\n{"x": 1}')


def test_replies_split_at_every_byte_and_chunk_trailers():
    """The reply is parsed as it arrives (``data_received``): every split point, chunk
    extensions and trailers, an interim 100 before a 204 (no body), and the connection kept
    alive after each."""
    async def main():
        server, url, seen = await _serve([
            b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX-A: b:c\r\n\r\nhello world",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\n0\r\nX-T: 1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        ], dribble=True)
        pool = HTTPPool(url, headers={}, ssl_context=None)
        out = [await pool.post("/x", b"1"), await pool.post("/x", b"2"), await pool.post("/x", b"3")]
        out.append(await asyncio.wait_for(pool.post("/x", b"4"), 5))  # no body: not read to the end
        await pool.aclose()
        server.close()
        return out, seen, list(_serve.connections)  # type: ignore[attr-defined]

    (a, b, c, d), seen, connections = _run(main())
    assert (a.content, a.headers["x-a"]) == (b"hello world", "b:c")
    assert b.content == b"abcd" and c.content == b"" and c.status == 200
    assert (d.status, d.content) == (204, b"")  # after an interim 100
    assert len(seen) == 4 and len(connections) == 1  # one kept-alive connection for all four


def test_a_cancelled_request_never_leaves_its_connection_for_reuse():
    async def main():
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        server, url, _ = await _serve([None, ok])  # the first request is never answered
        pool = HTTPPool(url, headers={}, ssl_context=None)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(pool.post("/x", b"1"), 0.2)
        second = await asyncio.wait_for(pool.post("/x", b"2"), 5)  # not on the dead connection
        await pool.aclose()
        server.close()
        return second, list(_serve.connections)  # type: ignore[attr-defined]

    second, connections = _run(main())
    assert second.content == b"ok" and len(connections) == 2


def test_a_head_that_is_too_long_or_not_http_is_a_transport_failure(monkeypatch):
    from hoibench.models import _http

    monkeypatch.setattr(_http, "MAX_HEAD", 64)

    async def one(reply: bytes):
        server, url, _ = await _serve([reply])
        try:
            await HTTPPool(url, headers={}, ssl_context=None).post("/x", b"")
        finally:
            server.close()

    with pytest.raises(TransportFailed, match="longer than 64"):
        _run(one(b"HTTP/1.1 200 OK\r\nX-Long: " + b"x" * 200 + b"\r\n\r\n"))
    with pytest.raises(TransportFailed, match=r"not an HTTP/1\.1 status line"):
        _run(one(b"SSH-2.0-OpenSSH\r\n\r\n"))


def test_https_keeps_one_tls_connection_and_closes_it(tmp_path):
    """Hosted APIs are https: a self-signed certificate made here (the ``openssl`` command), two
    requests on one kept-alive TLS connection, chunked and Content-Length, and ``aclose`` ends."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    client_tls = ssl.create_default_context(cafile=str(cert))

    async def main():
        server, url, seen = await _serve([
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        ], tls=server_tls)
        pool = HTTPPool(url, headers={}, ssl_context=client_tls)
        a = await asyncio.wait_for(pool.post("/x", b"1"), 10)
        b = await asyncio.wait_for(pool.post("/x", b"2"), 10)
        await asyncio.wait_for(pool.aclose(), 5)
        server.close()
        return a, b, seen, list(_serve.connections)  # type: ignore[attr-defined]

    a, b, seen, connections = _run(main())
    assert (a.status, a.content) == (200, b"hello") and (b.status, b.content) == (200, b"abc")
    assert len(seen) == 2 and len(connections) == 1


def test_a_kept_alive_connection_closed_by_the_server_is_retried_once_fresh():
    async def main():
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        server, url, seen = await _serve([ok, ok], close_after_each=True)  # closes after each reply
        pool = HTTPPool(url, headers={}, ssl_context=None)
        first = await pool.post("/x", b"1")
        await asyncio.sleep(0.05)  # the server has closed the idle connection by now
        second = await pool.post("/x", b"2")
        await pool.aclose()
        server.close()
        return first, second, seen

    first, second, seen = _run(main())
    assert first.content == second.content == b"ok" and len(seen) == 2


def test_refused_and_broken_connections_raise_the_two_errors():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once closed

    async def refused():
        await HTTPPool(f"http://127.0.0.1:{port}/v1", headers={}, ssl_context=None).post("/x", b"")

    with pytest.raises(ConnectFailed):
        _run(refused())

    async def broken():
        server, url, _ = await _serve([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"], close_after_each=True)
        try:
            await HTTPPool(url, headers={}, ssl_context=None).post("/x", b"")
        finally:
            server.close()

    with pytest.raises(TransportFailed):
        _run(broken())
    with pytest.raises(ValueError, match="not an http"):
        HTTPPool("ftp://h/v1", headers={}, ssl_context=None)


def test_a_proxy_in_the_environment_hands_the_server_to_httpx(monkeypatch):
    pytest.importorskip("httpx")
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert not uses_proxy("http://10.0.0.5:8000/v1")
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    assert uses_proxy("http://10.0.0.5:8000/v1") and not uses_proxy("http://127.0.0.1:8000/v1")

    async def pools():
        session = make_backend("openai", model="m", base_urls=["http://10.0.0.5:8000/v1",
                                                               "http://127.0.0.1:8000/v1"]).session()
        kinds = [type(s.pool) for s in session.servers]
        await session.aclose()
        return kinds

    assert _run(pools()) == [_HttpxPool, HTTPPool]
