"""Systems under test: VLM backends behind one chat interface, prompts, answer parsing, box
conventions, a persistent response cache, HOI-detector adapters and built-in baselines."""

from hoibench.runners._analysis import (
    HeadToTailRecall,
    Misattribution,
    head_to_tail_recall,
    misattribution_share,
)
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
from hoibench.runners._boxes import (
    BOX_CONVENTIONS,
    ModelFrame,
    box_iou,
    format_box,
    model_frame,
    resolve_box_convention,
    smart_resize,
)
from hoibench.runners._cache import CachedBackend, ResponseCache, request_key
from hoibench.runners._detections import load_detections, match_person
from hoibench.runners._mcq_run import MCQRunner, RunSummary
from hoibench.runners._parsing import (
    DetectionParse,
    LetterParse,
    parse_detection,
    parse_image_size,
    parse_letters,
)
from hoibench.runners._prompts import (
    ANSWER_FORMATS,
    PromptTemplate,
    RenderedQuestion,
    load_template,
    render_question,
)
from hoibench.runners._registry import BACKENDS, make_backend
from hoibench.runners.baselines import (
    ObjectPriorDetector,
    PriorAnswerer,
    RandomAnswerer,
    verb_object_counts,
)

__all__ = [
    "ANSWER_FORMATS",
    "BACKENDS",
    "BOX_CONVENTIONS",
    "CachedBackend",
    "ChatBackend",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "DetectionParse",
    "GenerationParams",
    "HeadToTailRecall",
    "ImagePart",
    "LetterParse",
    "MCQRunner",
    "Misattribution",
    "ModelFrame",
    "ObjectPriorDetector",
    "PriorAnswerer",
    "PromptTemplate",
    "RandomAnswerer",
    "RenderedQuestion",
    "ResponseCache",
    "RunSummary",
    "ScriptedBackend",
    "TextPart",
    "box_iou",
    "format_box",
    "head_to_tail_recall",
    "load_detections",
    "load_template",
    "make_backend",
    "match_person",
    "misattribution_share",
    "model_frame",
    "parse_detection",
    "parse_image_size",
    "parse_letters",
    "render_question",
    "request_key",
    "resolve_box_convention",
    "smart_resize",
    "verb_object_counts",
]
