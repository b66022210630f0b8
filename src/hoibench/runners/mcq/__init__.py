"""The multiple-choice HOI task for VLMs (paper ``001``): settings 1-3, prompt templates as
versioned data, answer parsing, per-family box conventions, the setting-3 person matching, and
:class:`MCQRunner`, the task on the resumable loop (:func:`hoibench.runners.run_resumable`), which
asks a :class:`~hoibench.models.ChatBackend` every question and writes a resumable answers file."""

from hoibench.runners.mcq._boxes import (
    BOX_CONVENTIONS,
    QWEN_MAX_PIXELS,
    QWEN_MIN_PIXELS,
    ModelFrame,
    model_frame,
    resolve_box_convention,
    smart_resize,
)
from hoibench.runners.mcq._detections import load_detections, match_person
from hoibench.runners.mcq._frames import PNG_ENCODER, FrameStore, encode_png, frame_png
from hoibench.runners.mcq._parsing import (
    DetectionParse,
    LetterParse,
    parse_detection,
    parse_image_size,
    parse_letters,
)
from hoibench.runners.mcq._prepared import (
    SINGLE_TURN_CONVENTIONS,
    PreparedQuestion,
    answer_from_reply,
    check_single_turn,
    prepare_question,
)
from hoibench.runners.mcq._prompts import (
    ANSWER_FORMATS,
    PromptTemplate,
    RenderedQuestion,
    load_template,
    render_question,
)
from hoibench.runners.mcq._run import FrameCache, MCQRunner, RunSummary
from hoibench.runners.mcq._scope import AnswerScope, answer_scope, scope_label, select_questions
from hoibench.runners.mcq._shard import merge_answers, parse_shard, shard_questions

__all__ = [
    "ANSWER_FORMATS",
    "BOX_CONVENTIONS",
    "PNG_ENCODER",
    "QWEN_MAX_PIXELS",
    "QWEN_MIN_PIXELS",
    "SINGLE_TURN_CONVENTIONS",
    "AnswerScope",
    "DetectionParse",
    "FrameCache",
    "FrameStore",
    "LetterParse",
    "MCQRunner",
    "ModelFrame",
    "PreparedQuestion",
    "PromptTemplate",
    "RenderedQuestion",
    "RunSummary",
    "answer_from_reply",
    "answer_scope",
    "check_single_turn",
    "encode_png",
    "frame_png",
    "load_detections",
    "load_template",
    "match_person",
    "merge_answers",
    "model_frame",
    "parse_detection",
    "parse_image_size",
    "parse_letters",
    "parse_shard",
    "prepare_question",
    "render_question",
    "resolve_box_convention",
    "scope_label",
    "select_questions",
    "shard_questions",
    "smart_resize",
]
