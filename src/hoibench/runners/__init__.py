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
from hoibench.runners.baselines import (
    ObjectPriorDetector,
    PriorAnswerer,
    RandomAnswerer,
    verb_object_counts,
)

__all__ = [
    "ChatBackend",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "GenerationParams",
    "ImagePart",
    "ObjectPriorDetector",
    "PriorAnswerer",
    "RandomAnswerer",
    "ScriptedBackend",
    "TextPart",
    "verb_object_counts",
]
