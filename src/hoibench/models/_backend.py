"""The one small interface between tasks and model backends (lm-evaluation-harness style):
requests of chat messages with images go in, texts come out. Backends never see dataset names.

Implementations (OpenAI-compatible HTTP, vLLM offline, transformers) live beside this module and
import their heavy libraries lazily. Tests use :class:`ScriptedBackend`.
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoibench._exceptions import HOIBenchError

__all__ = [
    "BackendStats",
    "BackendUnavailable",
    "ChatBackend",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "ChatSession",
    "GenerationParams",
    "ImagePart",
    "ScriptedBackend",
    "ServerStats",
    "TextPart",
]


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image to attach: a path, or encoded bytes (PNG/JPEG) when the runner resized it."""

    path: str | None = None
    data: bytes | None = field(default=None, repr=False)
    mime: str = "image/jpeg"
    #: sha256 of the bytes when the caller already knows it (saves re-hashing per request)
    digest: str | None = field(default=None, compare=False)
    #: ``data`` as base64 when the caller already encoded it (the runner's image workers do, so
    #: that the event loop's process does not)
    b64: str | None = field(default=None, compare=False, repr=False)

    def content_hash(self) -> str:
        """sha256 of the image bytes (the cache key uses content, not the path)."""
        if self.digest is not None:
            return self.digest
        return hashlib.sha256(self.read_bytes()).hexdigest()

    def read_bytes(self) -> bytes:
        """The encoded image: ``data`` when given, else the file's bytes."""
        return self.data if self.data is not None else Path(str(self.path)).read_bytes()


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    parts: tuple[TextPart | ImagePart, ...]

    @classmethod
    def user(cls, *parts: TextPart | ImagePart | str) -> ChatMessage:
        return cls("user", tuple(TextPart(p) if isinstance(p, str) else p for p in parts))

    @classmethod
    def assistant(cls, text: str) -> ChatMessage:
        return cls("assistant", (TextPart(text),))


@dataclass(frozen=True)
class GenerationParams:
    """Generation settings; part of the cache key. Defaults: greedy decoding."""

    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0

    def as_dict(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature,
                "top_p": self.top_p, "seed": self.seed}


@dataclass(frozen=True)
class ChatRequest:
    """One conversation to complete; ``meta`` travels with it but is not sent to the model."""

    messages: tuple[ChatMessage, ...]
    params: GenerationParams = GenerationParams()
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ChatResponse:
    """The text a backend returned, or the error that prevented it; ``retryable`` says whether
    asking again later may answer it (a timeout, a 5xx, a broken connection), ``False`` when the
    request itself is refused (a 4xx other than 408/409/429, a malformed reply)."""

    text: str | None
    error: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)
    retryable: bool = True

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


@dataclass(frozen=True)
class ServerStats:
    """One server's share of a run: ``attempts`` sent to it, ``failures`` among them (errors and
    timeouts), ``wait_seconds``, the time requests spent waiting on it (sum over attempts), and
    ``sends``, the requests written to its connections (an attempt re-sent once on a fresh
    connection after a kept-alive one closed unanswered counts twice; ``None`` when not counted)."""

    url: str
    attempts: int = 0
    failures: int = 0
    wait_seconds: float = 0.0
    sends: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"url": self.url, "attempts": self.attempts, "failures": self.failures,
                "wait_seconds": round(self.wait_seconds, 3), "sends": self.sends}


@dataclass(frozen=True)
class BackendStats:
    """What a backend has done since it was made: ``requests`` answered by the model or given up
    on (``None`` when the backend does not count them), ``attempts`` sent (retries included;
    ``None`` when not counted), ``sends`` (requests written to a connection, re-sends included;
    ``None`` when not counted), ``cache_hits`` (answers served without a request) and per-server
    counts."""

    requests: int | None = None
    cache_hits: int = 0
    attempts: int | None = None
    servers: tuple[ServerStats, ...] = ()
    sends: int | None = None


class BackendUnavailable(HOIBenchError):
    """No server can answer (all refused connections or timed out, none answered since): the run
    stops instead of retrying forever; answers already written are kept for a resume."""


class ChatSession(abc.ABC):
    """A backend opened for streaming inside one event loop: any number of :meth:`complete`
    calls in flight at once, each answered as soon as its server replies (no batch barrier).

    ``capacity`` is how many requests the session wants in flight (its concurrency)."""

    capacity: int = 1

    @abc.abstractmethod
    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One response (``error`` set after the session's own retries); raises
        :class:`BackendUnavailable` when no server can answer at all."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Release connections (the default holds none)."""


class ChatBackend(abc.ABC):
    """A model behind chat requests. Subclasses implement :meth:`generate` and :meth:`fingerprint`.

    ``generate`` returns one response per request, in order; failures of single requests come
    back as responses with ``error`` set (after the backend's own retries), never as exceptions.
    """

    name: str = "backend"

    @abc.abstractmethod
    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        """Complete every request; ``on_response(i, response)`` is called as each one arrives."""

    @abc.abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """What identifies this backend's outputs (model, backend, settings) for the cache key."""

    def stats(self) -> BackendStats:
        """Counts since the backend was made; a backend that does not count says ``requests=None``
        (callers then count what they sent themselves)."""
        return BackendStats()

    def session(self) -> ChatSession | None:
        """A streaming session for the running event loop, or ``None`` when the backend answers
        in batches only (offline engines): callers then use :meth:`generate`."""
        return None


class ScriptedBackend(ChatBackend):
    """A backend that answers from a function of the request: for tests and dry runs."""

    name = "scripted"

    def __init__(self, reply: Callable[[ChatRequest], str], *, model: str = "scripted") -> None:
        self.reply = reply
        self.model = model
        self.calls: list[ChatRequest] = []

    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        out = []
        for i, req in enumerate(requests):
            self.calls.append(req)
            try:
                resp = ChatResponse(self.reply(req))
            except Exception as exc:
                resp = ChatResponse(None, error=f"{type(exc).__name__}: {exc}")
            if on_response is not None:
                on_response(i, resp)
            out.append(resp)
        return out

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model}
