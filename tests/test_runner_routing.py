"""Image-affinity routing against three fake servers on 127.0.0.1: every request with the same
image reaches the same server (across the K orders of ``--permutations``), the images spread over
the servers, and when a server dies only its own images move, each to one other server, and no
question fails."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PIL import Image

from hoibench.cli import main
from hoibench.data import Choice, MCQuestion
from hoibench.models import make_backend
from hoibench.runners import MCQRunner
from hoibench.testing import FakeChatServer, request_image

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
N_IMAGES = 24


@pytest.fixture
def images(tmp_path: Path) -> Path:
    d = tmp_path / "images"
    d.mkdir()
    for k in range(N_IMAGES):
        Image.new("RGB", (32, 24), (10 * k, 90, 200)).save(d / f"im{k}.jpg", quality=95)
    return d


def _questions() -> list[MCQuestion]:
    return [MCQuestion(id=f"q{i}", file_name=f"im{i % N_IMAGES}.jpg", setting=1,
                       choices=(Choice("hold a/an cup"), Choice("drink with a/an cup"), Choice("wash a/an cup")),
                       correct=frozenset({0})) for i in range(3 * N_IMAGES)]


def _where(servers: list[FakeChatServer], start: list[int]) -> dict[str, set[int]]:
    """image sha256 -> the servers that answered a request with it (since ``start``)."""
    seen: dict[str, set[int]] = {}
    for k, s in enumerate(servers):
        for body in s.bodies[start[k]:]:
            seen.setdefault(hashlib.sha256(request_image(body)).hexdigest(), set()).add(k)  # type: ignore[arg-type]
    return seen


def _run(urls: list[str], images: Path, out: Path, *, routing: str = "image-affinity", permutation: int = 0):
    backend = make_backend("openai", model=MODEL, base_urls=urls, concurrency=8, backoff=0.05,
                           max_backoff=1.0, timeout=10.0, routing=routing)
    return MCQRunner(backend, images=images, model=MODEL, box_convention="original", progress=False,
                     permutation=permutation).run(_questions(), out)


def test_same_image_same_server_across_orders_and_failover_moves_only_the_dead_servers_images(tmp_path, images):
    servers = [FakeChatServer().start() for _ in range(3)]
    urls = [s.url for s in servers]
    try:
        home: dict[str, int] = {}
        for k in (0, 1):  # two choice orders (--permutations 2): the same server per image
            start = [len(s.bodies) for s in servers]
            summary = _run(urls, images, tmp_path / f"p{k}.jsonl", permutation=k)
            assert summary.ok == 3 * N_IMAGES
            where = _where(servers, start)
            assert len(where) == N_IMAGES and all(len(v) == 1 for v in where.values())
            now = {digest: next(iter(v)) for digest, v in where.items()}
            assert not home or now == home
            home = now
        assert len(set(home.values())) == 3  # spread over every server

        servers.pop(1).stop()  # server 1 dies: its images move, each to one other server; no question fails
        start = [len(s.bodies) for s in servers]
        summary = _run(urls, images, tmp_path / "dead.jsonl")  # the same three URLs
        assert summary.ok == 3 * N_IMAGES and summary.error == 0
        where = {d: {(0, 2)[k] for k in v} for d, v in _where(servers, start).items()}  # old indices
        assert all(len(v) == 1 for v in where.values()) and len(where) == N_IMAGES
        for digest, k in home.items():
            if k != 1:
                assert where[digest] == {k}  # the healthy servers keep their images
            else:
                assert where[digest] <= {0, 2}
        assert {s["url"]: s["failures"] for s in summary.servers}[urls[1]] > 0
    finally:
        for s in servers:
            s.stop()


def test_least_outstanding_stays_the_default_and_bad_routing_is_one_line(tmp_path, images, capsys):
    servers = [FakeChatServer().start() for _ in range(2)]
    try:
        summary = _run([s.url for s in servers], images, tmp_path / "a.jsonl", routing="least-outstanding")
        assert summary.ok == 3 * N_IMAGES and all(s.count > 0 for s in servers)
    finally:
        for s in servers:
            s.stop()
    with pytest.raises(ValueError, match="routing must be one of"):
        make_backend("openai", model=MODEL, routing="random")
    with pytest.raises(SystemExit) as exc:
        main(["mcq", "run", "--questions", str(tmp_path / "a.jsonl"), "--images", str(images), "--model", MODEL,
              "--out", str(tmp_path / "b.jsonl"), "--routing", "random"])
    assert exc.value.code == 2 and "Invalid value for '--routing'" in capsys.readouterr().err


# --------------------------------------------------------------------------- offline vLLM streams


class StreamLLM:
    """A fake ``vllm.LLM``: detection prompts get the target person's box, questions "A"; each
    call records its prompts' stages and how many answers the file already holds."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.calls: list[tuple[list[str], int]] = []

    def chat(self, conversations, sampling_params, use_tqdm):
        texts = [conv[0]["content"][1]["text"] for conv in conversations]
        written = max(0, len(self.out.read_text().splitlines()) - 1) if self.out.exists() else 0
        self.calls.append((["detection" if "every single person" in t else "question" for t in texts], written))
        return [type("Out", (), {"outputs": [type("O", (), {
            "text": '{"boxes": [[2, 2, 20, 20]]}' if "every single person" in t else "A"})()]})() for t in texts]


def test_offline_vllm_streams_batches_without_a_chunk_barrier(tmp_path, images):
    from hoibench.models._vllm import VLLMBackend

    out = tmp_path / "a.jsonl"
    llm = StreamLLM(out)
    qs = [MCQuestion(id=f"q{i}", file_name=f"im{i}.jpg", setting=3, correct=frozenset({0}),
                     choices=(Choice("hold a/an cup"), Choice("wash a/an cup")), person_box=(2.0, 2.0, 20.0, 20.0))
          for i in range(N_IMAGES)]
    backend = VLLMBackend(model="m", batch_size=4, llm=llm, sampling_params=lambda **kw: kw, linger=0.2)
    summary = MCQRunner(backend, images=images, model=MODEL, box_convention="original", progress=False,
                        chunk_size=256).run(qs, out)
    assert summary.ok == N_IMAGES
    stages = [s for call, _ in llm.calls for s in call]
    assert stages.count("detection") == stages.count("question") == N_IMAGES
    assert all(len(call) <= 4 for call, _ in llm.calls)
    # no barrier: questions are asked while later images still wait for their detection (a chunk
    # of 256 would send all 24 detections first)
    assert stages.index("question") < len(stages) - 1 - stages[::-1].index("detection")
    # answers reach the file batch by batch, not at the end of a chunk
    asked = 0
    for call, written in llm.calls:
        assert written == asked
        asked += call.count("question")
