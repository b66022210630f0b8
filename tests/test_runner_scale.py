"""The VLM runner at scale, against fake servers on 127.0.0.1: no barrier (a hung request, a dead
or stopped server cost little), a trickling reply cut at the deadline, Retry-After, bad replies,
one run per answers file, honest exit codes and counts, shards merged into the unsharded file,
and exact resume after SIGKILLs at random moments. Question counts are scaled down; the asserts
are ratios against a clean run measured in the same test."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from PIL import Image

from hoibench._io import exclusive_lock
from hoibench.cli import main
from hoibench.data import Choice, MCQuestion
from hoibench.formats import read_answers
from hoibench.formats.questions import write_questions
from hoibench.models import BackendUnavailable, CachedBackend, make_backend
from hoibench.runners import MCQRunner
from hoibench.runners.mcq import parse_letters, shard_questions
from hoibench.testing import FakeChatServer, FakeReply, request_text

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"


def _questions(n: int, n_images: int = 3, setting: int = 2) -> list[MCQuestion]:
    return [MCQuestion(id=f"q{i}", file_name=f"im{i % n_images}.jpg", setting=setting,
                       choices=(Choice(f"hold a/an obj{i}"), Choice(f"ride a/an obj{i}"),
                                Choice(f"no_interaction with a/an obj{i}"), Choice(f"feed a/an obj{i}")),
                       correct=frozenset({0}), person_box=(310.0, 19.0, 362.0, 123.0) if setting > 1 else None)
            for i in range(n)]


@pytest.fixture
def images(tmp_path: Path) -> Path:
    d = tmp_path / "images"
    d.mkdir()
    for k in range(8):
        Image.new("RGB", (64, 48), (30 * k, 90, 200)).save(d / f"im{k}.jpg", quality=95)
    return d


def _qnum(body: dict) -> int:
    return int(re.search(r"obj(\d+)", request_text(body)).group(1))  # type: ignore[union-attr]


def _run(urls, images, qs, out, *, concurrency=8, timeout=30.0, max_retries=5, **kw):
    backend = make_backend("openai", model=MODEL, base_urls=urls, concurrency=concurrency,
                           backoff=0.05, max_backoff=2.0, timeout=timeout, max_retries=max_retries)
    runner = MCQRunner(backend, images=images, model=MODEL, box_convention="original", progress=False, **kw)
    t0 = time.perf_counter()
    summary = runner.run(qs, out)
    return summary, time.perf_counter() - t0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- replies


def test_markup_under_the_letters_format_is_a_parse_error_not_a_partial_answer():
    valid = {"A": 0, "B": 1, "C": 2, "D": 3}
    assert parse_letters("<answer>A,C,D</answer>", valid).status == "parse_error"
    assert parse_letters("<answer>A,C,D</answer>", valid).letters == frozenset()
    assert parse_letters("A, C, D", valid).letters == frozenset("ACD")  # unchanged
    assert parse_letters("<answer>A,C</answer>", valid, answer_format="answer_tag").letters == frozenset("AC")


def test_null_content_is_retried_and_never_cached(tmp_path, images):
    seen: dict[int, int] = {}

    def handler(body):
        n = _qnum(body)
        seen[n] = seen.get(n, 0) + 1
        return FakeReply(None) if seen[n] == 1 else "B"

    with FakeChatServer(handler) as server:
        backend = CachedBackend(make_backend("openai", model=MODEL, base_urls=[server.url], backoff=0.01),
                                tmp_path / "c.sqlite")
        s = MCQRunner(backend, images=images, model=MODEL, progress=False).run(_questions(4), tmp_path / "a.jsonl")
    assert s.ok == 4 and server.count == 8 and s.attempts == 8 and s.retries == 4
    assert {a.raw for a in read_answers(tmp_path / "a.jsonl")} == {"B"}


def test_retry_after_is_honoured(tmp_path, images):
    first = threading.Event()

    def handler(body):
        if not first.is_set():
            first.set()
            return FakeReply(status=429, headers={"Retry-After": "1"})
        return "A"

    with FakeChatServer(handler) as server:
        s, dt = _run([server.url], images, _questions(1), tmp_path / "a.jsonl", concurrency=1)
    assert s.ok == 1 and server.count == 2
    assert dt >= 1.0  # not the 0.05 s backoff


# --------------------------------------------------------------------------- servers that misbehave


def test_one_hung_request_does_not_hold_up_the_run(tmp_path, images):
    qs = _questions(160)

    def clean(body):
        return FakeReply("A", delay=0.1)

    hung = threading.Event()

    def one_hangs(body):
        # the first request the server gets hangs: the bound is then about the runner, not about
        # when a given question happens to be sent (one sent at 65 % of the run cannot finish
        # before its own timeout, whatever the runner does: 1.21x measured for a question 5 sent
        # at 1.34 s of a 2.06 s run, under a machine fast enough to run the clean one at its ideal)
        if not hung.is_set():
            hung.set()
            return FakeReply("A", delay=30.0)
        return FakeReply("A", delay=0.1)

    # wall-clock ratios on a shared 2-core machine: the clean and the hung run are measured side
    # by side up to three times and the best pair counts (a load spike in one run is not the runner)
    pairs = []
    for attempt in range(3):
        hung.clear()
        with FakeChatServer(clean, record=False) as server:
            s0, t_clean = _run([server.url], images, qs, tmp_path / f"clean{attempt}.jsonl", timeout=1.0)
        with FakeChatServer(one_hangs, record=False) as server:
            s1, t_hung = _run([server.url], images, qs, tmp_path / f"hung{attempt}.jsonl", timeout=1.0)
        assert s0.ok == s1.ok == len(qs) and hung.is_set()
        assert s1.retries == 1
        pairs.append((t_hung, t_clean))
        if t_hung <= 1.2 * t_clean:
            break
    assert min(h / c for h, c in pairs) <= 1.2, pairs


def test_a_dead_server_among_three_costs_little_and_fails_nothing(tmp_path, images):
    qs = _questions(240)
    slow = lambda body: FakeReply("A", delay=0.1)  # noqa: E731
    pairs = []  # side by side up to three times, the best pair counts (as for the hung request)
    with FakeChatServer(slow, record=False) as a, FakeChatServer(slow, record=False) as b:
        for attempt in range(3):
            s0, t_two = _run([a.url, b.url], images, qs, tmp_path / f"two{attempt}.jsonl", concurrency=12)
            dead = f"http://127.0.0.1:{_free_port()}/v1"
            s1, t_dead = _run([a.url, dead, b.url], images, qs, tmp_path / f"dead{attempt}.jsonl", concurrency=12)
            assert s0.ok == s1.ok == len(qs) and s1.error == 0  # every attempt: no question fails
            by_url = {x["url"]: x for x in s1.servers}
            assert by_url[dead]["attempts"] <= 20 and by_url[dead]["failures"] == by_url[dead]["attempts"]
            pairs.append((t_dead, t_two))
            if t_dead <= 1.3 * t_two:
                break
    assert min(d / t for d, t in pairs) <= 1.3, pairs


SERVER_PROCESS = """
import sys
from hoibench.testing import FakeChatServer, FakeReply
s = FakeChatServer(lambda body: FakeReply("A", delay=0.1), record=False).start()
print(s.port, flush=True)
sys.stdin.read()
"""


def test_a_stopped_server_among_three_costs_little(tmp_path, images):
    qs = _questions(360)
    proc = subprocess.Popen([sys.executable, "-c", SERVER_PROCESS], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())  # type: ignore[union-attr]
        slow = lambda body: FakeReply("A", delay=0.1)  # noqa: E731
        os.kill(proc.pid, signal.SIGSTOP)
        stopped = f"http://127.0.0.1:{port}/v1"
        pairs = []  # side by side up to three times, the best pair counts (as for the hung request)
        with FakeChatServer(slow, record=False) as a, FakeChatServer(slow, record=False) as b:
            for attempt in range(3):
                s0, t_two = _run([a.url, b.url], images, qs, tmp_path / f"two{attempt}.jsonl", concurrency=12,
                                 timeout=1.0)
                s1, t_stop = _run([a.url, stopped, b.url], images, qs, tmp_path / f"stop{attempt}.jsonl",
                                  concurrency=12, timeout=1.0)
                assert s0.ok == s1.ok == len(qs) and s1.error == 0  # every attempt: no question fails
                pairs.append((t_stop, t_two))
                if t_stop <= 1.3 * t_two:
                    break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert min(st / t for st, t in pairs) <= 1.3, pairs


def _trickle_server() -> tuple[socket.socket, threading.Thread]:
    """Answers every request with headers and then one byte every 0.3 s, never finishing."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.recv(1 << 20)
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n")
                for _ in range(100):
                    conn.sendall(b" ")
                    time.sleep(0.3)
            except OSError:
                pass
            finally:
                conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return sock, t


def test_a_stalled_request_gives_its_slot_back(tmp_path, images):
    """With one slot, a request far slower than the usual reply (the stall timer: four times the
    moving average, at least 0.5 s) lets the others through instead of holding the slot: the
    requests after it reach the server while it is still being answered; every answer arrives
    once."""
    arrived: list[float] = []

    def handler(body):
        arrived.append(time.monotonic())  # the fourth request stalls (the average is known by then)
        return FakeReply("A", delay=3.0 if len(arrived) == 4 else 0.1)

    with FakeChatServer(handler) as server:
        s, _ = _run([server.url], images, _questions(13), tmp_path / "a.jsonl", concurrency=1, timeout=10.0)
    assert s.ok == 13 and server.count == 13 and s.retries == 0
    during = [t for t in arrived[4:] if t < arrived[3] + 3.0]
    assert len(during) >= 6, (len(during), [round(t - arrived[3], 2) for t in arrived[4:]])


def test_a_trickling_reply_is_cut_at_the_timeout(tmp_path, images):
    sock, _ = _trickle_server()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        s, dt = _run([url], images, _questions(1), tmp_path / "a.jsonl", concurrency=1, timeout=1.0,
                     max_retries=0)
    finally:
        sock.close()
    assert s.error == 1 and "within 1 s" in (s.first_error or "")
    assert dt < 2.5, dt  # the per-read timeout alone would wait 30 s (100 bytes, 0.3 s apart)


def test_all_servers_down_ends_at_once(tmp_path, images):
    dead = [f"http://127.0.0.1:{_free_port()}/v1", f"http://127.0.0.1:{_free_port()}/v1"]
    t0 = time.perf_counter()
    with pytest.raises(BackendUnavailable, match="no server answers"):
        _run(dead, images, _questions(50), tmp_path / "a.jsonl")
    assert time.perf_counter() - t0 < 5


# --------------------------------------------------------------------------- the CLI


def _cli_args(qpath, images, url, out, *extra):
    return ["mcq", "run", "--questions", str(qpath), "--images", str(images), "--model", MODEL,
            "--base-url", url, "--out", str(out), "--no-progress", "--json", *extra]


def test_cli_exit_codes_locks_and_limit(tmp_path, images, capsys):
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(6), header={"seed": 0})
    out = tmp_path / "ans.jsonl"
    state = {"down": True}
    with FakeChatServer(lambda b: FakeReply(status=503, text="overloaded") if state["down"] else "A") as server:
        with pytest.raises(SystemExit) as exc:
            main(_cli_args(qpath, images, server.url, out, "--max-retries", "0", "--limit", "4"))
        captured = capsys.readouterr()
        assert exc.value.code == 1
        err = captured.err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("error: 4 of 4 questions failed")
        assert "503" in err and "'q0'" in err
        summary = json.loads(captured.out)
        assert summary["error"] == 4 and summary["attempts"] == 4 and summary["servers"][0]["failures"] == 4
        state["down"] = False
        main(_cli_args(qpath, images, server.url, out))  # all six
        assert json.loads(capsys.readouterr().out)["ok"] == 6
        main(_cli_args(qpath, images, server.url, out, "--limit", "2"))
        assert json.loads(capsys.readouterr().out)["resumed"] == 2
        assert len(read_answers(out)) == 6  # the --limit run kept the answers beyond its limit
        with exclusive_lock(out, what="test"):  # another run holds the answers file
            with pytest.raises(SystemExit) as exc:
                main(_cli_args(qpath, images, server.url, out))
            err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and len(err.splitlines()) == 1 and f"pid {os.getpid()}" in err
        other = tmp_path / "other.jsonl"
        with exclusive_lock(str(out) + ".cache.sqlite", what="test"):  # and the cache
            with pytest.raises(SystemExit):
                main(_cli_args(qpath, images, server.url, other, "--cache", str(out) + ".cache.sqlite"))
            assert "response cache" in capsys.readouterr().err
        assert not other.exists()
        assert not Path(str(out) + ".lock").exists()


def test_second_run_on_the_same_out_stops_at_once(tmp_path, images):
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(30), header={"seed": 0})
    out = tmp_path / "ans.jsonl"
    with FakeChatServer(lambda b: FakeReply("A", delay=0.2)) as server:
        args = [sys.executable, "-m", "hoibench", *_cli_args(qpath, images, server.url, out, "--concurrency", "1")]
        first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while time.time() < deadline and not (out.exists() and out.read_text().count("\n") >= 2):
            time.sleep(0.02)
        second = subprocess.run(args, capture_output=True, text=True, timeout=60)
        first.kill()
        first.wait()
    assert second.returncode == 2
    assert len(second.stderr.strip().splitlines()) == 1 and "is using it" in second.stderr
    lines = out.read_text().splitlines()
    assert sum('"header"' in ln for ln in lines) == 1  # never two runs interleaved


def _score(qpath: Path, answers: Path, capsys) -> dict:
    main(["mcq", "score", "--questions", str(qpath), "--answers", str(answers), "--json", "-"])
    result = json.loads(capsys.readouterr().out)
    result.pop("answers_file")
    return result


def test_two_shards_merged_score_as_one_unsharded_run(tmp_path, images, capsys):
    qs = _questions(40, n_images=8)
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, qs, header={"seed": 0})
    parts = [shard_questions(qs, i, 2) for i in range(2)]
    assert sorted(q.id for p in parts for q in p) == sorted(q.id for q in qs) and all(parts)

    def handler(body):  # a model that answers some right, some wrong
        n = _qnum(body)
        return ["A", "B", "A,C", "D"][n % 4]

    with FakeChatServer(handler) as server:
        main(_cli_args(qpath, images, server.url, tmp_path / "full.jsonl"))
        capsys.readouterr()
        procs = [subprocess.Popen([sys.executable, "-m", "hoibench",
                                   *_cli_args(qpath, images, server.url, tmp_path / f"s{i}.jsonl",
                                              "--shard", f"{i}/2")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(2)]
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    main(["mcq", "merge", str(tmp_path / "s1.jsonl"), str(tmp_path / "s0.jsonl"), "--questions", str(qpath),
          "--out", str(tmp_path / "merged.jsonl"), "--json"])
    assert json.loads(capsys.readouterr().out)["answers"] == 40
    assert (tmp_path / "merged.jsonl").read_bytes() == (tmp_path / "full.jsonl").read_bytes()
    assert _score(qpath, tmp_path / "merged.jsonl", capsys) == _score(qpath, tmp_path / "full.jsonl", capsys)
    with pytest.raises(SystemExit):  # a shard twice, or a shard missing
        main(["mcq", "merge", str(tmp_path / "s0.jsonl"), str(tmp_path / "s0.jsonl"), "--out", str(tmp_path / "x.jsonl")])
    assert "given twice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["mcq", "merge", str(tmp_path / "s0.jsonl"), str(tmp_path / "full.jsonl"), "--out", str(tmp_path / "x.jsonl")])
    assert "is not a shard" in capsys.readouterr().err


@pytest.mark.slow
def test_sigkill_at_random_moments_then_rerun_is_byte_identical(tmp_path, images):
    qs = _questions(60, n_images=8)
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, qs, header={"seed": 0})

    def handler(body):
        return FakeReply(["A", "B,C", "nonsense", "D"][_qnum(body) % 4], delay=0.02)

    rng = random.Random(14)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = tmp_path / "killed.jsonl"
    with FakeChatServer(handler, record=False) as server:
        main(_cli_args(qpath, images, server.url, tmp_path / "clean.jsonl"))
        args = [sys.executable, "-m", "hoibench", *_cli_args(qpath, images, server.url, out, "--concurrency", "4")]
        kills = 0
        for _ in range(4):
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            before = out.read_text().count("\n") if out.exists() else 0
            deadline = time.time() + 30
            while time.time() < deadline and proc.poll() is None and \
                    (out.read_text().count("\n") if out.exists() else 0) <= before:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.3))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert kills >= 2
    assert out.read_bytes() == (tmp_path / "clean.jsonl").read_bytes()


# --------------------------------------------------------------------------- offline engines


class EngineDeadError(Exception):
    """Named like vLLM's (vllm.v1.engine.exceptions.EngineDeadError)."""


class DyingLLM:
    """A fake ``vllm.LLM`` whose engine dies after ``alive`` batches."""

    def __init__(self, alive: int) -> None:
        self.alive = alive
        self.calls = 0

    def chat(self, conversations, sampling_params, use_tqdm):
        self.calls += 1
        if self.calls > self.alive:
            raise EngineDeadError("EngineCore encountered an issue")
        return [type("Out", (), {"outputs": [type("O", (), {"text": "A"})()]})() for _ in conversations]


def test_vllm_engine_death_ends_the_run_with_one_line_and_keeps_the_answers(tmp_path, images):
    from hoibench.models._vllm import VLLMBackend

    backend = VLLMBackend(model="m", batch_size=2, llm=DyingLLM(alive=2), sampling_params=lambda **kw: kw)
    runner = MCQRunner(backend, images=images, model=MODEL, progress=False)
    with pytest.raises(BackendUnavailable, match=r"vLLM engine died.*run again to resume"):
        runner.run(_questions(9), tmp_path / "a.jsonl")
    kept = read_answers(tmp_path / "a.jsonl")
    assert len(kept) == 4 and {a.status for a in kept} == {"ok"}  # two batches of two
    again = MCQRunner(VLLMBackend(model="m", batch_size=2, llm=DyingLLM(alive=99), sampling_params=lambda **kw: kw),
                      images=images, model=MODEL, progress=False).run(_questions(9), tmp_path / "a.jsonl")
    assert again.resumed == 4 and again.ok == 9


def test_engine_kwargs_reach_the_offline_engine_and_its_cache_key(tmp_path, images, capsys, monkeypatch):
    from hoibench.models import _vllm

    seen = {}

    class FakeVLLM:
        @staticmethod
        def LLM(model, **kw):
            seen.update(kw)
            return DyingLLM(alive=99)

        @staticmethod
        def SamplingParams(**kw):
            return kw

    monkeypatch.setitem(sys.modules, "vllm", FakeVLLM)
    assert _vllm  # the module imports vllm lazily, from sys.modules
    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(2), header={"seed": 0})
    out = tmp_path / "a.jsonl"
    args = ["mcq", "run", "--questions", str(qpath), "--images", str(images), "--model", MODEL,
            "--backend", "vllm", "--out", str(out), "--no-progress", "--json",
            "--engine-kwargs", '{"tensor_parallel_size": 2, "max_model_len": 8192}']
    main(args)
    assert json.loads(capsys.readouterr().out)["ok"] == 2
    assert seen == {"tensor_parallel_size": 2, "max_model_len": 8192}
    header = read_answers(out).header
    assert header["backend"]["engine_kwargs"] == seen
    with pytest.raises(SystemExit):
        main([*args[:-1], "[2]"])
    assert "--engine-kwargs must be a JSON object" in capsys.readouterr().err


def test_worker_processes_prepare_the_same_bytes_as_threads(tmp_path, images, monkeypatch):
    from hoibench.models import ScriptedBackend
    from hoibench.runners.mcq import _run

    def sent(tag: str) -> list[str]:
        seen: list[str] = []
        backend = ScriptedBackend(lambda req: seen.append(req.messages[0].parts[0].content_hash()) or "A", model=MODEL)
        runner = MCQRunner(backend, images=images, model=MODEL, progress=False,  # Qwen2.5: resized
                           image_workers=tag)
        runner.run(_questions(8, n_images=8), tmp_path / f"{tag}.jsonl")
        assert runner._no_pool is (tag == "threads")  # processes did run (no fallback)
        return seen

    monkeypatch.setattr(_run, "_POOL_MIN_IMAGES", 10**9)
    threads = sent("threads")
    monkeypatch.setattr(_run, "_POOL_MIN_IMAGES", 0)
    processes = sent("processes")
    assert threads == processes and len(set(threads)) == 8
    assert (tmp_path / "threads.jsonl").read_bytes() == (tmp_path / "processes.jsonl").read_bytes()


@pytest.mark.parametrize("workers", ["threads", "processes"])
def test_cli_image_workers_send_the_same_images(tmp_path, images, capsys, workers):
    """`mcq run --image-workers` picks where resized images are prepared, never what is sent: the
    requests (image data URLs included) and the answers file equal the default run's."""
    from hoibench.runners.mcq import _run

    qpath = tmp_path / "q.jsonl"
    write_questions(qpath, _questions(8, n_images=8), header={"seed": 0})
    bodies = {}
    for tag in ("auto", workers):
        with FakeChatServer(lambda b: "A") as server:
            out = tmp_path / f"{tag}.jsonl"
            old = _run._POOL_MIN_IMAGES
            _run._POOL_MIN_IMAGES = 0  # 8 images are enough to start the worker processes
            try:
                main(_cli_args(qpath, images, server.url, out, "--image-workers", tag,
                               "--cache", str(tmp_path / f"{tag}.sqlite")))
            finally:
                _run._POOL_MIN_IMAGES = old
            assert json.loads(capsys.readouterr().out)["ok"] == 8
            bodies[tag] = sorted(json.dumps(b["messages"], sort_keys=True) for b in server.bodies)
    assert len(bodies[workers]) == 8 and bodies[workers] == bodies["auto"]
    assert (tmp_path / "auto.jsonl").read_bytes() == (tmp_path / f"{workers}.jsonl").read_bytes()
