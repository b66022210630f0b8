"""The streaming loop's paced polls (``hoibench.runners._loop``): the selector waits out the
rest of its pace before it polls (so what arrives meanwhile is handled in one wake-up), never
delays a timer or a loop with callbacks ready; the pacer paces only a run bound by CPU; a paced
run answers exactly what an unpaced one does."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import pytest
from PIL import Image

from hoibench.data import Choice, MCQuestion
from hoibench.formats import read_answers
from hoibench.models import ChatSession, make_backend
from hoibench.runners import MCQRunner, _loop
from hoibench.testing import FakeChatServer, FakeReply


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_paced_selector_waits_out_its_pace_then_reports_what_arrived(pair) -> None:
    a, b = pair
    sel = _loop._PacedSelector()
    sel.register(b, 1)  # EVENT_READ
    sel.pace = 0.2
    a.send(b"x")
    t0 = time.monotonic()
    assert len(sel.select(None)) == 1  # the first poll: nothing to wait out
    first = time.monotonic() - t0
    a.send(b"y")  # ready at once, but the next poll comes a pace after the last
    assert len(sel.select(None)) == 1
    second = time.monotonic() - t0
    assert first < 0.15 and second >= 0.19, (first, second)
    sel.close()


def test_hurry_ends_the_pause_and_the_last_job_of_the_workers_hurries(pair) -> None:
    """``hurry`` (another thread) ends a pause at once; ``_Workers`` calls it when a job ends
    with none queued (the run's last inputs), not for the jobs before."""
    a, b = pair
    sel = _loop._PacedSelector()
    sel.register(b, 1)
    sel.pace = 2.0
    sel.select(0)  # marks the last poll: the next one would wait 2 s
    a.send(b"x")
    threading.Timer(0.1, sel.hurry).start()
    t0 = time.monotonic()
    assert len(sel.select(None)) == 1
    assert time.monotonic() - t0 < 1.0
    sel.close()

    calls: list[int] = []
    gate = threading.Event()

    async def main() -> list[int]:
        pool = _loop._Workers(asyncio.get_running_loop(), 1, hurry=lambda: calls.append(len(done)))
        done: list[int] = []
        futs = [pool.submit(lambda: gate.wait(5))] + [pool.submit(lambda k=k: done.append(k)) for k in range(3)]
        gate.set()
        await asyncio.gather(*futs)
        pool.shutdown()
        return done

    done = asyncio.run(main())
    assert done == [0, 1, 2] and calls == [3]  # once, after the last queued job


def test_paced_selector_never_delays_a_timer_or_ready_callbacks(pair) -> None:
    _, b = pair
    sel = _loop._PacedSelector()
    sel.register(b, 1)
    sel.pace = 0.5
    sel.select(0)  # marks the last poll
    t0 = time.monotonic()
    assert sel.select(0.05) == []  # a timer due in 50 ms: the pause ends there
    assert sel.select(0) == []  # callbacks ready: no pause
    assert time.monotonic() - t0 < 0.3
    sel.pace = 0.0
    t0 = time.monotonic()
    sel.select(0.01)
    sel.select(0.01)
    assert time.monotonic() - t0 < 0.2  # unpaced: plain polls
    sel.close()


class _Slow(ChatSession):
    latency = 0.5

    async def complete(self, request):  # pragma: no cover - not called
        raise AssertionError


@pytest.mark.parametrize(("cpu_share", "own_share", "waits", "paced"),
                         [(0.9, 0.0, 0, True), (0.0, 0.9, 0, True), (0.3, 0.3, 0, False), (0.9, 0.9, 3, False)])
def test_pacer_paces_only_a_run_bound_by_cpu_not_by_its_slots(cpu_share: float, own_share: float, waits: int,
                                                             paced: bool) -> None:
    async def main() -> float:
        sel = _loop._PacedSelector()
        session = _Slow()
        pacer = _loop._Pacer(sel, session)
        wall, cpu, own = time.monotonic(), time.process_time(), time.thread_time()
        # as if the last second had used these shares of the CPUs and of the loop's thread, and
        # ``waits`` requests had found every slot taken
        pacer._mark = (wall - 1.0, cpu - cpu_share * pacer.cpus, own - own_share)
        session.slot_waits += waits
        pacer.update()
        pace = sel.pace
        pacer.stop()
        assert sel.pace == 0.0
        sel.close()
        return pace

    pace = asyncio.run(main())
    # PACE_SHARE of the session's 0.5 s latency, at most MAX_PACE
    assert pace == (min(_loop.MAX_PACE, _loop.PACE_SHARE * 0.5) if paced else 0.0)


def _images(d: Path, n: int) -> Path:
    d.mkdir()
    for k in range(n):
        Image.new("RGB", (64, 48), (4 * k, 90, 200)).save(d / f"im{k}.jpg", quality=95)
    return d


def test_a_paced_run_answers_as_an_unpaced_one_and_its_tail_is_unpaced(tmp_path: Path, monkeypatch) -> None:
    images = _images(tmp_path / "images", 40)
    qs = [MCQuestion(id=f"q{i}", file_name=f"im{i % 40}.jpg", setting=1,
                     choices=(Choice(f"hold obj{i}"), Choice(f"ride obj{i}"), Choice(f"feed obj{i}")),
                     correct=frozenset({0})) for i in range(80)]
    model = "Qwen/Qwen2.5-VL-7B-Instruct"
    polls: list[tuple[float, float]] = []  # (when, pace) of every poll
    prepared: list[float] = []  # when each image was ready
    stops: list[float] = []  # when the pacer stopped
    select = _loop._PacedSelector.select
    prepare = MCQRunner._prepare_image
    stop = _loop._Pacer.stop

    def spy_select(self, timeout=None):
        polls.append((time.monotonic(), self.pace))
        return select(self, timeout)

    def spy_stop(self):
        stops.append(time.monotonic())
        stop(self)

    def slow_prepare(self, q):  # preparation that lasts while replies come in (0.3 s in all)
        time.sleep(0.03)
        try:
            return prepare(self, q)
        finally:
            prepared.append(time.monotonic())

    def run(out: Path) -> list:
        backend = make_backend("openai", model=model, base_urls=[server.url], concurrency=96)
        MCQRunner(backend, images=images, model=model, progress=False).run(qs, out)
        return [(a.question_id, a.selected, a.status) for a in read_answers(out)]

    monkeypatch.setattr(MCQRunner, "_prepare_image", slow_prepare)
    with FakeChatServer(lambda body: FakeReply("A, C", delay=0.1), record=False) as server:
        plain = run(tmp_path / "plain.jsonl")
        monkeypatch.setattr(_loop, "BUSY_SHARE", 0.0)  # every run counts as bound by CPU
        monkeypatch.setattr(_loop._Pacer, "period", 0.02)
        monkeypatch.setattr(_loop._PacedSelector, "select", spy_select)
        monkeypatch.setattr(_loop._Pacer, "stop", spy_stop)
        prepared.clear()
        paced = run(tmp_path / "paced.jsonl")
        end = time.monotonic()
    assert paced == plain and len(paced) == len(qs)
    assert any(p > 0 for t, p in polls if t < max(prepared))  # paced while images were being prepared
    # unpaced once the last image was ready, while the last replies (100 ms) were still awaited
    assert max(prepared) <= stops[0] < end - 0.05
    assert not any(p for t, p in polls if t > stops[0])


def test_workers_hand_back_results_and_errors_and_drop_unstarted_jobs_on_shutdown() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        workers = _loop._Workers(loop, 2)
        futs = [workers.submit(lambda k=k: k * k) for k in range(20)]
        assert [await f for f in futs] == [k * k for k in range(20)]

        def boom() -> None:
            raise ValueError("bad image")

        with pytest.raises(ValueError, match="bad image"):
            await workers.submit(boom)
        gate = threading.Event()
        busy = [workers.submit(gate.wait) for _ in range(2)]  # both threads held
        waiting = workers.submit(lambda: "never")
        threading.Timer(0.05, gate.set).start()
        await asyncio.sleep(0.01)
        workers.shutdown()  # the held jobs finish, the waiting one is dropped
        assert waiting.cancelled()
        await asyncio.sleep(0.01)
        assert all(f.done() for f in busy)

    asyncio.run(main())


def test_finished_workers_end_after_the_jobs_queued_and_before_shutdown() -> None:
    """``finish`` (a run's last inputs are queued): the threads do what is queued, then end on
    their own, so that the run's end does not wait on them."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        workers = _loop._Workers(loop, 2)
        gate = threading.Event()
        futs = [workers.submit(lambda k=k: gate.wait(5) and k) for k in range(5)]
        workers.finish()
        workers.finish()  # twice is once
        assert all(t.is_alive() for t in workers._threads)
        gate.set()
        assert [await f for f in futs] == list(range(5))  # every queued job was done
        for t in workers._threads:
            t.join(5)
        assert not any(t.is_alive() for t in workers._threads)
        workers.shutdown()  # nothing left to wait for

    asyncio.run(main())
