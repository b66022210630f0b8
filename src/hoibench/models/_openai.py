"""Any OpenAI-compatible chat server (``vllm serve``, SGLang, hosted APIs) through the ``openai``
client: bounded concurrency, retries with exponential backoff on 429/5xx/timeouts/connection
errors, and several base URLs used round-robin (one server per GPU or node scales a run out).
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from hoibench._exceptions import ConfigError, MissingExtraError
from hoibench.models._backend import (
    ChatBackend,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ImagePart,
    TextPart,
)

__all__ = ["OpenAIBackend", "openai_messages"]


def _image_url(part: ImagePart, memo: dict[int, str]) -> str:
    key = id(part)
    url = memo.get(key)
    if url is None:
        url = f"data:{part.mime};base64,{base64.b64encode(part.read_bytes()).decode('ascii')}"
        memo[key] = url
    return url


def openai_messages(messages: Sequence[ChatMessage], memo: dict[int, str] | None = None
                    ) -> list[dict[str, Any]]:
    """Chat messages in the OpenAI format; images as base64 data URLs (image first, as sent)."""
    memo = {} if memo is None else memo
    out = []
    for m in messages:
        content: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, TextPart):
                content.append({"type": "text", "text": p.text})
            else:
                content.append({"type": "image_url", "image_url": {"url": _image_url(p, memo)}})
        out.append({"role": m.role, "content": content})
    return out


def _reply_text(content: bytes) -> str:
    """The assistant text of a chat-completion response body ("" when the server sent none)."""
    data = orjson.loads(content)
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices:
        raise ValueError(f"no choices in the response: {content[:200]!r}")
    return choices[0].get("message", {}).get("content") or ""


class OpenAIBackend(ChatBackend):
    """Chat completions from one or more OpenAI-compatible servers.

    Parameters
    ----------
    model:
        Model name as the server knows it.
    base_urls:
        One or more ``http://host:port/v1`` URLs; requests (and their retries) go round-robin.
    concurrency:
        Requests in flight at once, over all servers.
    max_retries, backoff, max_backoff:
        Retries of a failed request (429, 5xx, timeout, connection error) with exponential
        backoff ``backoff * 2**attempt`` (jittered, capped at ``max_backoff`` seconds).
    timeout:
        Seconds before a request counts as hung (then it is retried).
    api_key:
        Defaults to ``$OPENAI_API_KEY``, else ``"EMPTY"`` (what local vLLM/SGLang servers accept).
    extra_body:
        Extra JSON fields sent with every request (server-specific sampling options); part of the
        cache key.
    """

    name = "openai"
    connections_per_pool = 8

    def __init__(self, *, model: str, base_urls: Sequence[str] = ("http://127.0.0.1:8000/v1",),
                 concurrency: int = 16, max_retries: int = 5, backoff: float = 1.0,
                 max_backoff: float = 60.0, timeout: float = 600.0, api_key: str | None = None,
                 extra_body: Mapping[str, Any] | None = None) -> None:
        if not base_urls:
            raise ConfigError("base_urls must name at least one server")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1; got {concurrency}")
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0; got {max_retries}")
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0; got {timeout}")
        self.model = model
        self.base_urls = tuple(u.rstrip("/") for u in base_urls)
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.timeout = timeout
        self.api_key = api_key
        self.extra_body = dict(extra_body or {})
        self.attempts = 0  # requests sent, retries included

    def fingerprint(self) -> dict[str, Any]:
        # base URLs are left out on purpose: scaling out must not invalidate the cache
        return {"backend": "openai", "model": self.model, "extra_body": self.extra_body}

    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._generate(requests, on_response))
        # called from inside an event loop (a notebook): run ours in a thread
        box: list[Any] = []
        thread = threading.Thread(target=lambda: box.append(asyncio.run(self._generate(requests, on_response))))
        thread.start()
        thread.join()
        return box[0]

    async def _generate(self, requests: Sequence[ChatRequest],
                        on_response: Callable[[int, ChatResponse], None] | None) -> list[ChatResponse]:
        try:
            import httpx
            import openai
        except ImportError as exc:
            raise MissingExtraError("openai", "openai", "the OpenAI-compatible backend") from exc
        key = self.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        # httpx's pool scans all its connections on every request; several small pools (one per
        # CONNECTIONS_PER_POOL requests in flight) keep that cheap at high concurrency
        n_pools = max(1, -(-self.concurrency // self.connections_per_pool))
        per_pool = -(-self.concurrency // n_pools)
        limits = httpx.Limits(max_connections=per_pool, max_keepalive_connections=per_pool)
        # interleaved by server, so that consecutive attempts (a retry) go to different servers
        clients = [openai.AsyncOpenAI(base_url=u, api_key=key, max_retries=0, timeout=self.timeout,
                                      http_client=httpx.AsyncClient(limits=limits, timeout=self.timeout))
                   for _ in range(n_pools) for u in self.base_urls]
        retryable = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                     openai.APIConnectionError, openai.ConflictError)
        sem = asyncio.Semaphore(self.concurrency)
        memo: dict[int, str] = {}
        rng = random.Random()
        counter = [0]
        out: list[ChatResponse | None] = [None] * len(requests)

        async def one(i: int, req: ChatRequest) -> None:
            params = req.params
            payload = {"model": self.model, "messages": openai_messages(req.messages, memo),
                       "max_tokens": params.max_tokens, "temperature": params.temperature,
                       "top_p": params.top_p, **({"seed": params.seed} if params.seed is not None else {}),
                       **self.extra_body}
            last = ""
            async with sem:
                for attempt in range(self.max_retries + 1):
                    client = clients[counter[0] % len(clients)]
                    counter[0] += 1
                    self.attempts += 1
                    try:
                        # the client's low-level post: its auth, base URL, timeouts and typed
                        # errors, without re-validating our already well-formed body per request
                        raw = await client.post("/chat/completions", body=payload,
                                                cast_to=httpx.Response)
                        text = _reply_text(raw.content)
                        result = ChatResponse(text, meta={**req.meta, "attempts": attempt + 1})
                        break
                    except retryable as exc:
                        last = f"{type(exc).__name__}: {exc}"
                        if attempt == self.max_retries:
                            result = ChatResponse(None, error=f"gave up after {attempt + 1} attempts; "
                                                  f"last: {last}", meta=dict(req.meta))
                            break
                        delay = min(self.max_backoff, self.backoff * 2 ** attempt)
                        await asyncio.sleep(delay * (0.5 + rng.random() / 2))
                    except (openai.APIError, ValueError) as exc:  # 4xx or a malformed body: no retry
                        result = ChatResponse(None, error=f"{type(exc).__name__}: {exc}", meta=dict(req.meta))
                        break
            out[i] = result
            if on_response is not None:
                on_response(i, result)

        try:
            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        finally:
            for c in clients:
                await c.close()
        return [r if r is not None else ChatResponse(None, error="no response") for r in out]
