"""The OpenAI session's concurrency slots (``_Slots``): first come first served, a freed slot
handed to the longest waiter, cancelled waiters skipped, and never more holders than slots."""

from __future__ import annotations

import asyncio

import pytest

from hoibench.models._openai import _Slots


def test_slots_are_handed_out_in_arrival_order_and_never_exceed_their_number() -> None:
    async def main() -> list[int]:
        slots = _Slots(2)
        order: list[int] = []
        holding = 0
        peak = 0

        async def user(k: int) -> None:
            nonlocal holding, peak
            await slots.acquire()
            holding += 1
            peak = max(peak, holding)
            order.append(k)
            await asyncio.sleep(0.001)
            holding -= 1
            slots.release()

        await asyncio.gather(*(user(k) for k in range(10)))
        assert peak == 2
        assert slots.free == 2 and not slots.locked()
        return order

    assert asyncio.run(main()) == list(range(10))


def test_locked_says_whether_acquire_would_wait() -> None:
    async def main() -> None:
        slots = _Slots(1)
        assert not slots.locked()
        await slots.acquire()
        assert slots.locked()
        waiter = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0)
        assert slots.locked() and not waiter.done()
        slots.release()  # handed to the waiter, not freed
        await waiter
        assert slots.free == 0 and slots.locked()
        slots.release()
        assert slots.free == 1 and not slots.locked()

    asyncio.run(main())


@pytest.mark.parametrize("handed", [False, True], ids=["cancelled-while-waiting", "cancelled-once-handed"])
def test_a_cancelled_waiter_never_loses_the_slot(handed: bool) -> None:
    """A waiter cancelled while it waits is skipped; one cancelled after a slot was handed to it
    (before it ran) passes the slot on: the next waiter gets it either way."""

    async def main() -> None:
        slots = _Slots(1)
        await slots.acquire()
        first = asyncio.ensure_future(slots.acquire())
        second = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0)
        if handed:
            slots.release()  # handed to ``first`` ...
            first.cancel()  # ... which is cancelled before it runs
        else:
            first.cancel()
            await asyncio.sleep(0)
            slots.release()  # goes past the cancelled waiter
        await asyncio.gather(first, return_exceptions=True)
        assert first.cancelled()
        await asyncio.wait_for(second, 1)
        slots.release()
        assert slots.free == 1 and not slots.locked()

    asyncio.run(main())
