"""Systems under test: VLM backends behind one chat interface, prompts, answer parsing, box
conventions, a persistent response cache, HOI-detector adapters and built-in baselines."""

from hoibench.runners._backend import (
    ChatBackend,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    GenerationParams,
    ImagePart,
    ScriptedBackend,
    TextPart,
)

__all__ = [
    "ChatBackend",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "GenerationParams",
    "ImagePart",
    "ScriptedBackend",
    "TextPart",
]
