"""Runner overhead: questions per second of ``MCQRunner`` against an instant fake
OpenAI-compatible server, at concurrency 32.

    python perf/bench_runner.py [--questions 1000] [--images 50] [--concurrency 32]

Target (issue 7): at least 200 questions/s. The baseline, measured in the same run, is the
server's own request rate: a bare ``httpx`` client posting the very same request bodies at the same
concurrency, with nothing else to do (no prompts to render, no images to prepare, no cache, no
answers file). The ratio runner / baseline says how much of the server's capacity the runner uses.
The server runs in a separate process so that it does not share the runner's interpreter lock.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = """
import sys, time
from hoibench.testing import FakeChatServer
s = FakeChatServer(lambda body: "A,B", record=False).start()
print(s.port, flush=True)
sys.stdin.read()
"""


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


def make_inputs(root: Path, n_questions: int, n_images: int):
    from PIL import Image

    from hoibench.data import Choice, MCQuestion

    img_dir = root / "images"
    img_dir.mkdir()
    for k in range(n_images):
        Image.new("RGB", (640, 480), (k % 256, 120, 30)).save(img_dir / f"im{k}.jpg", quality=90)
    qs = [MCQuestion(id=f"q{i}", file_name=f"im{i % n_images}.jpg", setting=2,
                     choices=(Choice(f"hold a/an obj{i}"), Choice("ride a/an horse"),
                              Choice("feed a/an horse"), Choice("no_interaction with a/an horse")),
                     correct=frozenset({0}), person_box=(100.0, 50.0, 300.0, 400.0))
          for i in range(n_questions)]
    return img_dir, qs


def run_runner(url: str, img_dir: Path, qs, out: Path, concurrency: int, *, cache: Path) -> tuple[float, object]:
    from hoibench.models import CachedBackend, make_backend
    from hoibench.runners import MCQRunner

    backend = CachedBackend(make_backend("openai", model="Qwen/Qwen2.5-VL-7B-Instruct", base_urls=[url],
                                         concurrency=concurrency), cache)
    runner = MCQRunner(backend, images=img_dir, progress=False)
    t0 = time.perf_counter()
    summary = runner.run(qs, out)
    dt = time.perf_counter() - t0
    backend.cache.close()
    return dt, summary


def capture_bodies(img_dir: Path, qs) -> list[bytes]:
    """The exact JSON bodies the runner sends (prompt text and resized image included)."""
    import json

    from hoibench.models import ScriptedBackend
    from hoibench.models._openai import openai_messages
    from hoibench.runners import MCQRunner

    bodies: list[bytes] = []

    def reply(req):
        bodies.append(json.dumps({"model": "Qwen/Qwen2.5-VL-7B-Instruct", "max_tokens": 512,
                                  "temperature": 0.0, "top_p": 1.0, "seed": 0,
                                  "messages": openai_messages(req.messages)}).encode())
        return "A"

    with tempfile.TemporaryDirectory() as tmp:
        MCQRunner(ScriptedBackend(reply, model="Qwen/Qwen2.5-VL-7B-Instruct"), images=img_dir,
                  progress=False).run(qs, Path(tmp) / "a.jsonl")
    return bodies


def run_baseline(url: str, bodies: list[bytes], concurrency: int) -> float:
    import httpx

    async def main() -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:
            sem = asyncio.Semaphore(concurrency)

            async def one(body: bytes) -> None:
                async with sem:
                    r = await client.post(url + "/chat/completions", content=body,
                                          headers={"content-type": "application/json"})
                    r.json()

            await asyncio.gather(*(one(b) for b in bodies))

    t0 = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--images", type=int, default=50)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    proc, url = start_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            img_dir, qs = make_inputs(root, args.questions, args.images)
            bodies = capture_bodies(img_dir, qs)
            base, runs, resumes = [], [], []
            for r in range(args.repeats):
                base.append(run_baseline(url, bodies, args.concurrency))
                dt, summary = run_runner(url, img_dir, qs, root / f"a{r}.jsonl", args.concurrency,
                                         cache=root / f"c{r}.sqlite")
                assert summary.ok == len(qs) and summary.requests == len(qs), summary
                runs.append(dt)
                # a second run with another answers file: every response comes from the cache
                dt2, summary2 = run_runner(url, img_dir, qs, root / f"b{r}.jsonl", args.concurrency,
                                           cache=root / f"c{r}.sqlite")
                assert summary2.requests == 0 and summary2.cache_hits == len(qs), summary2
                resumes.append(dt2)
    finally:
        proc.stdin.close()
        proc.wait(10)
    n = args.questions
    b, rr, cc = min(base), min(runs), min(resumes)
    print(f"{n} questions, {args.images} images (640x480 → 644x476 PNG), concurrency {args.concurrency}, "
          f"best of {args.repeats}")
    print(f"  server's own rate (bare httpx, same bodies): {n / b:8.1f} requests/s  ({b:.2f} s)")
    print(f"  MCQRunner + cache + answers file          : {n / rr:8.1f} questions/s ({rr:.2f} s)  "
          f"ratio {b / rr:.2f} of the server's rate")
    print(f"  re-run answered from the cache            : {n / cc:8.1f} questions/s ({cc:.2f} s)")
    print(f"  target >= 200 questions/s: {'met' if n / rr >= 200 else 'NOT met'}")


if __name__ == "__main__":
    main()
