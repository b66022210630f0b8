"""Local generation with Hugging Face ``transformers`` (any image-text-to-text model whose
processor has a chat template, e.g. Qwen2-VL / Qwen2.5-VL / Qwen3-VL, LLaVA-OneVision)."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hoibench._exceptions import ConfigError, MissingExtraError
from hoibench.models._backend import ChatBackend, ChatRequest, ChatResponse, ImagePart, TextPart

__all__ = ["TransformersBackend"]


class TransformersBackend(ChatBackend):
    """``model.generate`` on batches of chat requests.

    Parameters
    ----------
    model:
        Hugging Face id or local path (loaded with ``AutoModelForImageTextToText`` and
        ``AutoProcessor``), or only a name when ``model_obj`` and ``processor`` are given.
    batch_size:
        Conversations per ``generate`` call (left padding).
    device, dtype, model_kwargs:
        Where and how to load the model (``dtype="auto"`` keeps the checkpoint's).
    processor_kwargs:
        Passed to ``AutoProcessor.from_pretrained``, e.g. Qwen2-VL's ``min_pixels`` and
        ``max_pixels`` so that the processor resizes images as the runner's box frame assumes;
        part of the cache key when given.
    """

    name = "transformers"

    def __init__(self, *, model: str, batch_size: int = 1, device: str | None = None,
                 dtype: str = "auto", model_kwargs: Mapping[str, Any] | None = None,
                 processor_kwargs: Mapping[str, Any] | None = None,
                 model_obj: Any = None, processor: Any = None) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1; got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self.device = device
        self.dtype = dtype
        self.model_kwargs = dict(model_kwargs or {})
        self.processor_kwargs = dict(processor_kwargs or {})
        self._model = model_obj
        self._processor = processor

    def fingerprint(self) -> dict[str, Any]:
        fp = {"backend": "transformers", "model": self.model, "dtype": self.dtype,
              "model_kwargs": self.model_kwargs}
        if self.processor_kwargs:  # absent when unset: earlier caches stay valid
            fp["processor_kwargs"] = self.processor_kwargs
        return fp

    def _load(self) -> tuple[Any, Any]:
        if self._model is None or self._processor is None:
            try:
                import torch  # noqa: F401
                from transformers import AutoModelForImageTextToText, AutoProcessor
            except ImportError as exc:
                raise MissingExtraError("transformers", "transformers", "the transformers backend") from exc
            self._processor = AutoProcessor.from_pretrained(self.model, **self.processor_kwargs)
            self._model = AutoModelForImageTextToText.from_pretrained(
                self.model, dtype=self.dtype, **self.model_kwargs)
            if self.device is not None:
                self._model = self._model.to(self.device)
            self._model.eval()
        tok = getattr(self._processor, "tokenizer", None)
        if tok is not None:
            tok.padding_side = "left"
        return self._model, self._processor

    @staticmethod
    def _conversation(req: ChatRequest) -> tuple[list[dict[str, Any]], list[Any]]:
        from PIL import Image

        conv: list[dict[str, Any]] = []
        images: list[Any] = []
        for m in req.messages:
            content: list[dict[str, Any]] = []
            for p in m.parts:
                if isinstance(p, TextPart):
                    content.append({"type": "text", "text": p.text})
                elif isinstance(p, ImagePart):
                    content.append({"type": "image"})
                    images.append(Image.open(io.BytesIO(p.read_bytes())).convert("RGB"))
            conv.append({"role": m.role, "content": content})
        return conv, images

    def generate(self, requests: Sequence[ChatRequest],
                 on_response: Callable[[int, ChatResponse], None] | None = None) -> list[ChatResponse]:
        import torch

        model, processor = self._load()
        out: list[ChatResponse] = []
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start:start + self.batch_size]
            convs, images = zip(*(self._conversation(r) for r in batch))
            texts = [processor.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                     for c in convs]
            flat = [im for ims in images for im in ims]
            inputs = processor(text=list(texts), images=flat or None, return_tensors="pt", padding=True)
            inputs = inputs.to(model.device)
            params = batch[0].params
            if any(r.params != params for r in batch):
                raise ConfigError("a transformers batch must share its generation parameters")
            kwargs: dict[str, Any] = {"max_new_tokens": params.max_tokens}
            if params.temperature > 0:
                kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p)
                if params.seed is not None:
                    torch.manual_seed(params.seed)
            else:
                kwargs.update(do_sample=False)
            with torch.no_grad():
                generated = model.generate(**inputs, **kwargs)
            new = generated[:, inputs["input_ids"].shape[1]:]
            decoded = processor.batch_decode(new, skip_special_tokens=True)
            for k, (req, text) in enumerate(zip(batch, decoded)):
                resp = ChatResponse(text.strip(), meta=dict(req.meta))
                out.append(resp)
                if on_response is not None:
                    on_response(start + k, resp)
        return out
