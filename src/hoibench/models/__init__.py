"""Chat models behind one interface: OpenAI-compatible HTTP servers (vLLM, SGLang, hosted APIs),
offline vLLM, local transformers, a scripted backend for tests, a persistent response cache, and
the text conventions of prompts and replies (:func:`format_box`, :func:`parse_yes_no`); and the
image models: an object detector (:class:`ObjectDetector`) and image embedders behind
:class:`ImageEmbedder` (CLIP, DreamSim).

One package that every caller of a VLM or LLM shares: the multiple-choice runner
(:mod:`hoibench.runners.mcq`), the augmentation pipeline's chat stages (:mod:`hoibench.augment`)
and the question builder's negative-filtering judges (:mod:`hoibench.benchmarks.mcq`).
"""

from hoibench.models._backend import (
    BackendStats,
    BackendUnavailable,
    ChatBackend,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ChatSession,
    GenerationParams,
    ImagePart,
    ScriptedBackend,
    ServerStats,
    TextPart,
)
from hoibench.models._cache import CachedBackend, ResponseCache, request_key
from hoibench.models._detector import ObjectDetections, ObjectDetector, clip_box
from hoibench.models._embedding import ClipEmbedder, DreamSimEmbedder, ImageEmbedder
from hoibench.models._registry import BACKENDS, make_backend
from hoibench.models._text import format_box, parse_yes_no

__all__ = [
    "BACKENDS",
    "BackendStats",
    "BackendUnavailable",
    "CachedBackend",
    "ChatBackend",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "ChatSession",
    "ClipEmbedder",
    "DreamSimEmbedder",
    "GenerationParams",
    "ImageEmbedder",
    "ImagePart",
    "ObjectDetections",
    "ObjectDetector",
    "ResponseCache",
    "ScriptedBackend",
    "ServerStats",
    "TextPart",
    "clip_box",
    "format_box",
    "make_backend",
    "parse_yes_no",
    "request_key",
]

#: lmms-eval's plugin hook: ``LMMS_EVAL_PLUGINS=hoibench`` imports ``hoibench.models`` and registers
#: the lmms-eval model classes listed here (none: hoibench adds tasks, ``hoibench.tasks``, not models)
AVAILABLE_MODELS: dict[str, str] = {}
