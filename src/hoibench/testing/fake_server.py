"""``python -m hoibench.testing.fake_server``: an OpenAI-compatible chat server on 127.0.0.1 that
answers ``hoibench mcq run`` without a model, a GPU or weights (a dry run of the runner, the
scorer and the report).

    python -m hoibench.testing.fake_server --port 8000 --questions q.jsonl --images images/

prints its URL and the ``hoibench mcq run`` command that points at it, answers until Ctrl-C or
SIGTERM, then prints one line saying what it answered how. ``--mode truth`` (the default with
``--questions``) answers every question correctly, ``random`` picks a random non-empty subset of
the shown choices (the same for the same prompt), ``first`` always answers ``A``;
:class:`~hoibench.testing.QuestionAnswerer` says how a prompt is mapped to its question.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from hoibench._exceptions import HOIBenchError
from hoibench.formats import read_questions
from hoibench.testing._answerer import ANSWER_MODES, QuestionAnswerer
from hoibench.testing._fake_server import FakeChatServer

__all__ = ["main"]

PROG = "python -m hoibench.testing.fake_server"


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit status 2 (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8000,
                   help="port on 127.0.0.1 (default 8000; 0: any free port, printed)")
    p.add_argument("--questions", metavar="FILE",
                   help="the question file the runner reads (needed by --mode truth)")
    p.add_argument("--images", metavar="DIR",
                   help="the runner's --images: lets the server recognise an image by its bytes "
                        "(setting 3 in truth mode; questions that show the same choices)")
    p.add_argument("--mode", choices=ANSWER_MODES,
                   help="truth: the correct choices; random: a random non-empty subset; first: always A "
                        "(default: truth with --questions, else random)")
    p.add_argument("--seed", type=int, default=0,
                   help="the runner's --seed (choice order) and the random mode's seed (default 0)")
    p.add_argument("--latency", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long before each reply (default 0)")
    p.add_argument("--model", default="fake-model",
                   help="the model name in the printed command (default fake-model: the runner's "
                        "'original' box convention, images sent unchanged)")
    return p


def run_command(url: str, model: str, questions: str | None, images: str | None) -> str:
    """The ``hoibench mcq run`` command that points at the server."""
    return " ".join(["hoibench", "mcq", "run", "--questions", shlex.quote(questions or "QUESTIONS.jsonl"),
                     "--images", shlex.quote(images or "IMAGES/"), "--model", shlex.quote(model),
                     "--base-url", url, "--out", "answers.jsonl"])


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        return _fail(f"--port must be 0-65535; got {args.port}")
    if not args.latency >= 0:
        return _fail(f"--latency must be >= 0 seconds; got {args.latency}")
    mode = args.mode or ("truth" if args.questions else "random")
    try:
        questions = list(read_questions(args.questions)) if args.questions else []
        answerer = QuestionAnswerer(mode, questions=questions, images=args.images, seed=args.seed,
                                    latency=args.latency, on_problem=_warn)
    except (HOIBenchError, ValueError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    server = FakeChatServer(answerer, port=args.port, record=False, model=args.model)
    try:
        server.start()
    except OSError as exc:
        return _fail(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    what = (f"{len(questions)} questions of {args.questions}" if questions else "no question file")
    if args.images:
        what += f"; {answerer.images_known} images recognised by content in {args.images}"
        if answerer.missing_images:
            what += f" ({answerer.missing_images} not found there)"
    print(f"fake OpenAI-compatible server at {server.url} (model {args.model}, mode {mode}; {what})", flush=True)
    print("point the runner at it:", flush=True)
    print("  " + run_command(server.url, args.model, args.questions, args.images), flush=True)
    print("stop it with Ctrl-C", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    print(f"stopped; {answerer.summary()}", flush=True)
    return 0


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
