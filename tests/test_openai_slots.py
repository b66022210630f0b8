"""The OpenAI session's concurrency slots: never more requests at the servers than
``concurrency``, every request answered, and a request cancelled while it waits for a slot or
while it is in flight gives its slot back."""

from __future__ import annotations

import asyncio

from hoibench.models import ChatMessage, ChatRequest, make_backend
from hoibench.testing import FakeChatServer, FakeReply


def _request(text: str) -> ChatRequest:
    return ChatRequest((ChatMessage.user(text),))


def _counting(session) -> dict[str, int]:
    """Wrap the session's connection pool: count the posts in flight at once."""
    seen = {"now": 0, "peak": 0}
    pool = session.servers[0].pool
    post = pool.post

    async def counted(path: str, body: bytes):
        seen["now"] += 1
        seen["peak"] = max(seen["peak"], seen["now"])
        try:
            return await post(path, body)
        finally:
            seen["now"] -= 1

    pool.post = counted
    return seen


def test_never_more_requests_in_flight_than_the_concurrency() -> None:
    with FakeChatServer(lambda body: FakeReply("A", delay=0.02), record=False) as server:
        async def main():
            session = make_backend("openai", model="m", base_urls=[server.url], concurrency=3).session()
            seen = _counting(session)
            out = await asyncio.gather(*(session.complete(_request(f"q{k}")) for k in range(20)))
            await session.aclose()
            return out, seen

        out, seen = asyncio.run(main())
    assert all(r.ok and r.text == "A" for r in out)
    assert seen["peak"] == 3 and seen["now"] == 0


def test_a_cancelled_request_gives_its_slot_back() -> None:
    """One slot: a request cancelled in flight and one cancelled while it waits for the slot
    leave it free for the next request."""
    with FakeChatServer(lambda body: FakeReply("A", delay=5.0 if "hang" in str(body) else 0.0),
                        record=False) as server:
        async def main():
            session = make_backend("openai", model="m", base_urls=[server.url], concurrency=1).session()
            hung = asyncio.ensure_future(session.complete(_request("hang")))
            await asyncio.sleep(0.1)  # in flight, holding the only slot
            waiting = asyncio.ensure_future(session.complete(_request("queued")))
            await asyncio.sleep(0.05)  # waiting for that slot
            waiting.cancel()
            hung.cancel()
            await asyncio.gather(hung, waiting, return_exceptions=True)
            fine = await asyncio.wait_for(session.complete(_request("fine")), 3)
            await session.aclose()
            return hung, waiting, fine

        hung, waiting, fine = asyncio.run(main())
    assert hung.cancelled() and waiting.cancelled()
    assert fine.ok and fine.text == "A"
