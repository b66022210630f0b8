"""vLLM offline inference (``LLM.chat``) over batches of chat requests.

Runs stream (:meth:`VLLMBackend.session`): requests join a queue as the pipeline issues them and
one engine thread takes whatever is queued (up to ``batch_size``, waiting at most ``linger``
seconds for a batch to fill) into the next ``LLM.chat`` call, so the engine never waits for a
whole chunk, each response reaches the answers file when its batch ends, and a setting-3
question is asked in the batch after its detection. ``EngineDeadError`` (the engine process
died) ends the run with one line; the answers already written stay for a resume.

vLLM is imported only when the engine is first needed; tests inject a fake ``llm`` object and a
``sampling_params`` factory instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hoibench._exceptions import ConfigError, MissingExtraError
from hoibench.models._backend import (
    BackendUnavailable,
    ChatBackend,
    ChatRequest,
    ChatResponse,
    ChatSession,
    GenerationParams,
)
from hoibench.models._openai import openai_messages

__all__ = ["VLLMBackend"]


def _engine_dead(exc: BaseException) -> bool:
    """vLLM's ``EngineDeadError`` (its engine process died: every later call fails too), known by
    name so that vLLM need not be imported to recognise it."""
    return any(type(e).__name__ == "EngineDeadError" for e in (exc, exc.__cause__, exc.__context__) if e)


class VLLMBackend(ChatBackend):
    """Chat completions from a local ``vllm.LLM``.

    Parameters
    ----------
    model:
        Hugging Face id or local path.
    batch_size:
        Requests per ``LLM.chat`` call at most; responses are reported after each batch.
    linger:
        Seconds a streaming run waits for a batch to fill before it sends what is queued.
    engine_kwargs:
        Passed to ``vllm.LLM`` (``tensor_parallel_size``, ``max_model_len``,
        ``limit_mm_per_prompt``, ...); part of the cache key.
    llm, sampling_params:
        An existing engine and a ``SamplingParams``-like factory (mainly for tests).
    """

    name = "vllm"

    def __init__(self, *, model: str, batch_size: int = 64, engine_kwargs: Mapping[str, Any] | None = None,
                 llm: Any = None, sampling_params: Callable[..., Any] | None = None, linger: float = 0.05) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1; got {batch_size}")
        if linger < 0:
            raise ConfigError(f"linger must be >= 0; got {linger}")
        self.model = model
        self.batch_size = batch_size
        self.linger = linger
        self.engine_kwargs = dict(engine_kwargs or {})
        self._llm = llm
        self._sampling_params = sampling_params

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "vllm", "model": self.model, "engine_kwargs": self.engine_kwargs}

    def _engine(self) -> Any:
        if self._llm is None:
            try:
                import vllm
            except ImportError as exc:
                raise MissingExtraError("vllm", "vllm", "the offline vLLM backend") from exc
            self._llm = vllm.LLM(model=self.model, **self.engine_kwargs)
        return self._llm

    def _sampling(self, params: GenerationParams) -> Any:
        factory = self._sampling_params
        if factory is None:
            try:
                from vllm import SamplingParams
            except ImportError as exc:
                raise MissingExtraError("vllm", "vllm", "the offline vLLM backend") from exc
            factory = SamplingParams
        return factory(max_tokens=params.max_tokens, temperature=params.temperature,
                       top_p=params.top_p, seed=params.seed)

    def _chat(self, llm: Any, conversations: list[Any], sampling: list[Any]) -> list[Any]:
        try:
            return list(llm.chat(conversations, sampling_params=sampling, use_tqdm=False))
        except Exception as exc:
            if _engine_dead(exc):  # one line, and the answers already written stay for a resume
                raise BackendUnavailable(f"the vLLM engine died ({type(exc).__name__}: {exc}); the answers "
                                         "written so far are kept, run again to resume") from None
            raise

    def session(self) -> _VLLMSession:
        # the engine is made here, in the caller's thread (vLLM installs signal handlers), not in
        # the engine thread that later runs its batches
        return _VLLMSession(self, self._engine())

    def _answer(self, llm: Any, batch: Sequence[ChatRequest]) -> list[ChatResponse]:
        """One ``LLM.chat`` call for ``batch``; a failing request is isolated (one at a time)."""
        memo: dict[int, str] = {}
        conversations = [openai_messages(r.messages, memo) for r in batch]
        sampling = [self._sampling(r.params) for r in batch]
        try:
            results = self._chat(llm, conversations, sampling)
            texts: list[tuple[str | None, str | None]] = [(r.outputs[0].text, None) for r in results]
        except (ValueError, RuntimeError) as exc:
            if len(batch) == 1:
                texts = [(None, f"{type(exc).__name__}: {exc}")]
            else:  # isolate the request that failed: one at a time
                texts = []
                for conv, sp in zip(conversations, sampling):
                    try:
                        res = self._chat(llm, [conv], [sp])
                        texts.append((res[0].outputs[0].text, None))
                    except (ValueError, RuntimeError) as one:
                        texts.append((None, f"{type(one).__name__}: {one}"))
        return [ChatResponse(text, error=error, meta=dict(req.meta)) for req, (text, error) in zip(batch, texts)]

    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        llm = self._engine()
        out: list[ChatResponse] = []
        for start in range(0, len(requests), self.batch_size):
            for k, resp in enumerate(self._answer(llm, requests[start:start + self.batch_size])):
                out.append(resp)
                if on_response is not None:
                    on_response(start + k, resp)
        return out


class _VLLMSession(ChatSession):
    """The engine behind a queue: :meth:`complete` enqueues, one engine thread runs batches of
    what is queued (module docstring); after the engine died every call raises that error."""

    def __init__(self, backend: VLLMBackend, llm: Any) -> None:
        self.b = backend
        self.llm = llm
        self.capacity = 2 * backend.batch_size  # the next batch queues while one runs
        self._queue: list[tuple[ChatRequest, asyncio.Future[ChatResponse]]] = []
        self._wake: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self._dead: BaseException | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm-engine")

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self._dead is not None:
            raise self._dead
        loop = asyncio.get_running_loop()
        if self._wake is None:
            self._wake = asyncio.Event()
        fut: asyncio.Future[ChatResponse] = loop.create_future()
        self._queue.append((request, fut))
        self._wake.set()
        if self._worker is None:
            self._worker = asyncio.ensure_future(self._run())
        return await fut

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        size = self.b.batch_size
        assert self._wake is not None
        while True:
            if not self._queue:
                await self._wake.wait()
                self._wake.clear()
                continue
            # a moment for the batch to fill (requests that the last responses lead to included)
            deadline = loop.time() + self.b.linger
            while len(self._queue) < size and loop.time() < deadline:
                await asyncio.sleep(min(0.002, self.b.linger))
            batch, self._queue = self._queue[:size], self._queue[size:]
            try:
                responses = await loop.run_in_executor(self._thread, self.b._answer, self.llm,
                                                       [r for r, _ in batch])
            except BaseException as exc:  # the engine died: this batch and all queued fail with it
                self._dead = exc
                for _, fut in batch + self._queue:
                    if not fut.done():
                        fut.set_exception(exc)
                self._queue = []
                return
            for (_, fut), resp in zip(batch, responses):
                if not fut.done():
                    fut.set_result(resp)
            await asyncio.sleep(0)  # the answers reach the file before the next batch starts

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        self._thread.shutdown(wait=True)
