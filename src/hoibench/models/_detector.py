"""Closed-vocabulary object detectors through ``transformers``' ``AutoModelForObjectDetection``
(DETR as the multiple-choice paper's setting 3 uses it, Deformable/Conditional DETR, RT-DETR,
YOLOS, ...): batches of images in, scored boxes with class names out.

The chat models' sibling for the one non-chat model a runner needs (the person detector of
setting 3); ``torch`` and ``transformers`` are imported only when a detector is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hoibench._exceptions import ConfigError, MissingExtraError

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["ObjectDetections", "ObjectDetector", "clip_box"]


@dataclass(frozen=True)
class ObjectDetections:
    """The detections of one image: 0-based pixel xyxy boxes (clipped to the image), scores and
    class names, best score first."""

    boxes: tuple[tuple[float, float, float, float], ...]
    scores: tuple[float, ...]
    labels: tuple[str, ...]

    def only(self, labels: Sequence[str]) -> ObjectDetections:
        """The detections whose class is one of ``labels``."""
        keep = [i for i, lab in enumerate(self.labels) if lab in labels]
        return ObjectDetections(tuple(self.boxes[i] for i in keep), tuple(self.scores[i] for i in keep),
                                tuple(self.labels[i] for i in keep))


class ObjectDetector:
    """A ``transformers`` object detector and its image processor.

    ``detect`` runs one forward pass per call on a padded batch and keeps boxes scoring at least
    ``threshold`` (the processor's ``post_process_object_detection``), in original pixels.
    """

    def __init__(self, model: Any, processor: Any, *, name: str, threshold: float = 0.5,
                 device: str = "cpu") -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"detector threshold must be in [0, 1]; got {threshold!r}")
        self.model = model
        self.processor = processor
        self.name = name
        self.threshold = threshold
        self.device = device
        self.id2label: dict[int, str] = {int(k): str(v) for k, v in model.config.id2label.items()}

    @classmethod
    def from_pretrained(cls, name: str, *, threshold: float = 0.5, device: str = "auto",
                        progress: bool = True) -> ObjectDetector:
        """Load a checkpoint by hub id or local folder (``facebook/detr-resnet-50``);
        ``progress=False`` silences transformers' weight-loading bar."""
        try:
            import torch
            from transformers import AutoImageProcessor, AutoModelForObjectDetection
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise MissingExtraError(exc.name or "transformers", "transformers", "object detection") from None
        if not progress:
            hf_logging.disable_progress_bar()
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        model = AutoModelForObjectDetection.from_pretrained(name).to(device).eval()
        return cls(model, AutoImageProcessor.from_pretrained(name), name=name, threshold=threshold,
                   device=device)

    @property
    def label_names(self) -> list[str]:
        """The class names the model can output."""
        return [self.id2label[k] for k in sorted(self.id2label)]

    def detect(self, images: Sequence[Image.Image]) -> list[ObjectDetections]:
        """Detections of each image, in order (one forward pass)."""
        if not images:
            return []
        import torch

        rgb = [im.convert("RGB") for im in images]
        inputs = self.processor(images=rgb, return_tensors="pt").to(self.device)
        with torch.no_grad():
            outputs = self.model(**inputs)
        sizes = torch.tensor([[im.height, im.width] for im in rgb], device=self.device)
        results = self.processor.post_process_object_detection(outputs, threshold=self.threshold,
                                                               target_sizes=sizes)
        out = []
        for im, res in zip(rgb, results, strict=True):
            scores = res["scores"].float().cpu().tolist()
            boxes = res["boxes"].float().cpu().tolist()
            labels = res["labels"].cpu().tolist()
            order = sorted(range(len(scores)), key=lambda i: -scores[i])
            out.append(ObjectDetections(
                tuple(clip_box(boxes[i], im.width, im.height) for i in order),
                tuple(round(float(scores[i]), 6) for i in order),
                tuple(self.id2label.get(int(labels[i]), str(labels[i])) for i in order)))
        return out

    def fingerprint(self) -> dict[str, Any]:
        """What identifies this detector's outputs (recorded in the detections header)."""
        import transformers

        return {"model": self.name, "architecture": type(self.model).__name__,
                "threshold": self.threshold, "transformers": transformers.__version__}


def clip_box(box: Sequence[float], width: int, height: int) -> tuple[float, float, float, float]:
    """A detector's xyxy box clipped to the image and rounded to 0.01 pixel (post-processing
    can leave boxes a little outside the image)."""
    x1, y1, x2, y2 = (float(v) for v in box)
    w, h = float(width), float(height)
    return (round(min(max(x1, 0.0), w), 2), round(min(max(y1, 0.0), h), 2),
            round(min(max(x2, 0.0), w), 2), round(min(max(y2, 0.0), h), 2))
