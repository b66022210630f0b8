"""The one registry of chat backends: alias → lazy ``"module:attr"`` (no heavy import until used)."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench.models._backend import ChatBackend

__all__ = ["BACKENDS", "make_backend"]

BACKENDS: dict[str, str] = {
    "openai": "hoibench.models._openai:OpenAIBackend",
    "vllm": "hoibench.models._vllm:VLLMBackend",
    "transformers": "hoibench.models._transformers:TransformersBackend",
}


def make_backend(name: str, **kwargs: Any) -> ChatBackend:
    """Build the backend registered as ``name`` with keyword-only ``kwargs``."""
    target = BACKENDS.get(name)
    if target is None:
        near = difflib.get_close_matches(name, list(BACKENDS), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise ConfigError(f"backend must be one of {sorted(BACKENDS)}; got {name!r}{hint}")
    module, attr = target.split(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, ChatBackend)):  # pragma: no cover - registry bug
        raise TypeError(f"{target} is not a ChatBackend")
    return cls(**kwargs)
