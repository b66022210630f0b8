"""An attempt's deadline cancels the request's own task (no task per attempt,
``models/_openai.py``): the deadline must read as a timeout and leave the task uncancelled, while a
cancel of the run itself must stay a cancel, also when it lands in the same loop turn as the
deadline."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from hoibench.models import ChatMessage, ChatRequest, make_backend
from hoibench.testing import FakeChatServer, FakeReply

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10 runs each attempt in a task")


def _request(text: str) -> ChatRequest:
    return ChatRequest((ChatMessage.user(text),))


@pytest.fixture
def server():
    with FakeChatServer(lambda body: FakeReply("A", delay=30.0) if "hang" in str(body) else "B",
                        record=False) as s:
        yield s


def _session(url: str, timeout: float):
    return make_backend("openai", model="m", base_urls=[url], timeout=timeout, max_retries=0,
                        concurrency=4).session()


def test_the_deadline_is_a_timeout_and_leaves_the_task_uncancelled(server):
    async def main():
        session = _session(server.url, 0.3)
        t0 = time.perf_counter()
        hung = await session.complete(_request("hang"))
        took = time.perf_counter() - t0
        task = asyncio.current_task()
        cancelling = task.cancelling()  # type: ignore[union-attr]
        await asyncio.sleep(0.01)  # no cancel left pending on this task
        after = await session.complete(_request("fine"))
        await session.aclose()
        return hung, took, cancelling, after

    hung, took, cancelling, after = asyncio.run(main())
    assert not hung.ok and "Timeout: no complete reply within 0.3 s" in hung.error
    assert 0.25 < took < 2.0
    assert cancelling == 0
    assert after.ok and after.text == "B"


def test_a_cancel_of_the_run_stays_a_cancel(server):
    async def main():
        session = _session(server.url, 0.3)
        t = asyncio.ensure_future(session.complete(_request("hang")))
        await asyncio.sleep(0.1)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        await session.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("first", ["deadline", "run"])
def test_a_cancel_of_the_run_in_the_deadlines_loop_turn_stays_a_cancel(server, first):
    """The loop blocked past the deadline, then the run's cancel: landing before the deadline's
    look (``run``) or after it in the same turn (``deadline``), the request's task ends
    cancelled, never with a timeout answer."""
    async def main():
        session = _session(server.url, 0.2)
        t = asyncio.ensure_future(session.complete(_request("hang")))
        await asyncio.sleep(0.05)  # the attempt is in flight
        if first == "run":  # ready before the overdue look at the attempts runs
            time.sleep(0.35)
            t.cancel()
        else:  # the overdue look runs first in the turn, then this cancel
            asyncio.get_running_loop().call_later(0.3, t.cancel)
            time.sleep(0.35)
        with pytest.raises(asyncio.CancelledError):
            await t
        await session.aclose()

    asyncio.run(main())


def test_a_stalled_attempt_gives_its_slot_back_and_takes_one_again(server):
    """Older than four times the usual latency (at least 0.5 s): its slot goes to the next
    request, and the attempt takes a slot again before it ends, so the count stays whole."""
    async def main():
        session = _session(server.url, 5.0)
        session._slots = asyncio.Semaphore(1)  # one slot: a second request waits for it
        session.latency = 0.05
        hung = asyncio.ensure_future(session.complete(_request("hang")))
        await asyncio.sleep(0.05)
        t0 = time.perf_counter()
        fine = await asyncio.wait_for(session.complete(_request("fine")), 3)
        waited = time.perf_counter() - t0
        hung.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hung
        free = session._slots._value  # type: ignore[attr-defined]
        await session.aclose()
        return fine, waited, free

    fine, waited, free = asyncio.run(main())
    assert fine.ok and 0.3 < waited < 1.5  # released at ~0.5 s, long before the 5 s deadline
    assert free == 1
