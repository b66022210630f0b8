"""Test helpers that users of hoibench need too, public so that nothing ships as a private
module only tests know about:

- :class:`FakeChatServer` — an OpenAI-compatible chat server on 127.0.0.1 with scripted replies,
  for testing a runner, a judge cascade or a pipeline without a GPU or a network;
- :func:`tiny_sdxl_pipeline`, :func:`save_tiny_owlv2`, :func:`save_tiny_detr` — randomly
  initialised tiny diffusers, OWLv2 and DETR models built from configs (no weights downloaded;
  needs the ``augment`` or ``transformers`` extra);
- :func:`hico_average_precision_loop` — a plain per-class loop of the HICO-DET protocols, the
  oracle the vectorised evaluator is checked against.
"""

from hoibench.testing._fake_server import FakeChatServer, FakeReply, request_image, request_text
from hoibench.testing._hico_loop import hico_average_precision_loop
from hoibench.testing._tiny import save_tiny_detr, save_tiny_owlv2, tiny_sdxl_pipeline

__all__ = [
    "FakeChatServer",
    "FakeReply",
    "hico_average_precision_loop",
    "request_image",
    "request_text",
    "save_tiny_detr",
    "save_tiny_owlv2",
    "tiny_sdxl_pipeline",
]
