"""vLLM offline inference (``LLM.chat``) over batches of chat requests.

vLLM is imported only when the engine is first needed; tests inject a fake ``llm`` object and a
``sampling_params`` factory instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hoibench._exceptions import ConfigError, MissingExtraError
from hoibench.models._backend import (
    BackendUnavailable,
    ChatBackend,
    ChatRequest,
    ChatResponse,
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
        Requests per ``LLM.chat`` call; responses are reported after each batch.
    engine_kwargs:
        Passed to ``vllm.LLM`` (``tensor_parallel_size``, ``max_model_len``,
        ``limit_mm_per_prompt``, ...); part of the cache key.
    llm, sampling_params:
        An existing engine and a ``SamplingParams``-like factory (mainly for tests).
    """

    name = "vllm"

    def __init__(self, *, model: str, batch_size: int = 64, engine_kwargs: Mapping[str, Any] | None = None,
                 llm: Any = None, sampling_params: Callable[..., Any] | None = None) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1; got {batch_size}")
        self.model = model
        self.batch_size = batch_size
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

    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        llm = self._engine()
        out: list[ChatResponse] = []
        memo: dict[int, str] = {}
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start:start + self.batch_size]
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
            memo.clear()
            for k, (req, (text, error)) in enumerate(zip(batch, texts)):
                resp = ChatResponse(text, error=error, meta=dict(req.meta))
                out.append(resp)
                if on_response is not None:
                    on_response(start + k, resp)
        return out
