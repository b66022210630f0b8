"""Test helpers that users of hoibench need too, public so that nothing ships as a private
module only tests know about:

- :class:`FakeChatServer` — an OpenAI-compatible chat server on 127.0.0.1 with scripted replies,
  for testing a runner, a judge cascade or a pipeline without a GPU or a network;
- :func:`tiny_sdxl_pipeline`, :func:`save_tiny_owlv2`, :func:`save_tiny_detr`,
  :func:`save_tiny_clip` — randomly initialised tiny diffusers, OWLv2, DETR and CLIP models
  built from configs (no weights downloaded;
  needs the ``augment`` or ``transformers`` extra);
- :func:`noisy_predictions` — seeded noisy HOI detections made from ground truth, a stand-in
  for a detector in a dry run of the evaluator (no model, no weights);
- ``python -m hoibench.testing.fake_server`` — :class:`FakeChatServer` as a command: an
  OpenAI-compatible server that answers ``hoibench mcq run`` from the questions' ground truth or
  at random (:class:`QuestionAnswerer`);
- :func:`hico_average_precision_loop` — a plain per-class loop of the HICO-DET protocols, the
  oracle the vectorised evaluator is checked against.
"""

from hoibench.testing._answerer import QuestionAnswerer
from hoibench.testing._fake_server import FakeChatServer, FakeReply, request_image, request_text
from hoibench.testing._hico_loop import hico_average_precision_loop
from hoibench.testing._noisy import noisy_predictions
from hoibench.testing._tiny import (
    save_tiny_clip,
    save_tiny_detr,
    save_tiny_owlv2,
    tiny_sdxl_pipeline,
)

__all__ = [
    "FakeChatServer",
    "FakeReply",
    "QuestionAnswerer",
    "hico_average_precision_loop",
    "noisy_predictions",
    "request_image",
    "request_text",
    "save_tiny_clip",
    "save_tiny_detr",
    "save_tiny_owlv2",
    "tiny_sdxl_pipeline",
]
