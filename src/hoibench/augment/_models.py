"""The two model stages that are not chat models: the text-to-image generator and the
open-vocabulary detector. Each is a small interface with a real implementation (diffusers,
transformers; imported lazily, ``hoibench[augment]``) and a cheap one for tests and dry runs.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hoibench._exceptions import ConfigError, MissingExtraError
from hoibench.augment._config import DetectorConfig, GeneratorConfig
from hoibench.models import clip_box

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "Detection",
    "Detector",
    "DiffusersGenerator",
    "FakeDetector",
    "ImageGenerator",
    "TransformersDetector",
    "WatermarkFilter",
    "build_detector",
    "build_generator",
]

logger = logging.getLogger(__name__)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingExtraError("torch", "augment", "image generation and detection") from None
    return torch


def _device(name: str) -> str:
    if name != "auto":
        return name
    torch = _torch()
    return "cuda" if torch.cuda.is_available() else "cpu"


# ------------------------------------------------------------------------------------ generation
class ImageGenerator(abc.ABC):
    """Text → image; the same prompt and seed give the same image."""

    @abc.abstractmethod
    def generate(self, prompt: str, *, seed: int) -> Image.Image:
        """One RGB image for ``prompt``, seeded."""

    @abc.abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """Model and settings (recorded in the manifest)."""


class DiffusersGenerator(ImageGenerator):
    """A ``diffusers`` text-to-image pipeline; noise comes from a CPU generator seeded per image,
    so an image does not depend on the device, the shard or the images generated before it.

    ``threads``: torch's CPU threads while generating (``None``: torch's setting). The tiny model
    runs on one: its layers are too small to split, and two threads on busy cores made an image
    12 times slower (2.6 s against 0.21 s, 64×64, 2 steps, on a loaded 2-core machine)."""

    def __init__(self, pipeline: Any, *, steps: int, guidance_scale: float, width: int, height: int,
                 description: dict[str, Any] | None = None, threads: int | None = None) -> None:
        self.pipeline = pipeline
        self.threads = threads
        self.steps = steps
        self.guidance_scale = guidance_scale
        self.width = width
        self.height = height
        self.description = description or {"pipeline": type(pipeline).__name__}
        if hasattr(pipeline, "set_progress_bar_config"):
            pipeline.set_progress_bar_config(disable=True)

    def generate(self, prompt: str, *, seed: int) -> Image.Image:
        torch = _torch()
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads or before)
        try:
            out = self.pipeline(prompt, num_inference_steps=self.steps, guidance_scale=self.guidance_scale,
                                width=self.width, height=self.height, generator=gen)
        finally:
            torch.set_num_threads(before)
        return out.images[0].convert("RGB")

    def fingerprint(self) -> dict[str, Any]:
        import diffusers

        return {**self.description, "steps": self.steps, "guidance_scale": self.guidance_scale,
                "width": self.width, "height": self.height, "diffusers": diffusers.__version__}

    @classmethod
    def sdxl_lightning(cls, cfg: GeneratorConfig) -> DiffusersGenerator:
        """SDXL-Lightning (Lin et al. 2024) as its model card runs it: the SDXL base pipeline with
        the distilled ``N``-step UNet, Euler with trailing timesteps, no classifier-free guidance."""
        torch = _torch()
        try:
            from diffusers import (
                EulerDiscreteScheduler,
                StableDiffusionXLPipeline,
                UNet2DConditionModel,
            )
            from huggingface_hub import hf_hub_download
            from safetensors.torch import load_file
        except ImportError as exc:
            raise MissingExtraError(exc.name or "diffusers", "augment", "SDXL-Lightning") from None
        device = _device(cfg.device)
        dtype = getattr(torch, cfg.dtype)
        ckpt = f"sdxl_lightning_{cfg.lightning_steps}step_unet.safetensors"
        unet = UNet2DConditionModel.from_config(
            UNet2DConditionModel.load_config(cfg.model, subfolder="unet")).to(device, dtype)
        unet.load_state_dict(load_file(hf_hub_download(cfg.lightning_repo, ckpt), device=device))
        pipe = StableDiffusionXLPipeline.from_pretrained(cfg.model, unet=unet, torch_dtype=dtype,
                                                         variant="fp16" if cfg.dtype == "float16" else None)
        pipe.scheduler = EulerDiscreteScheduler.from_config(pipe.scheduler.config,
                                                            timestep_spacing="trailing")
        pipe.to(device)
        return cls(pipe, steps=cfg.steps, guidance_scale=cfg.guidance_scale, width=cfg.width,
                   height=cfg.height, description={"model": cfg.model, "unet": f"{cfg.lightning_repo}/{ckpt}"})

    @classmethod
    def from_pretrained(cls, cfg: GeneratorConfig) -> DiffusersGenerator:
        """Any ``diffusers`` text-to-image pipeline by id or path."""
        torch = _torch()
        try:
            from diffusers import AutoPipelineForText2Image
        except ImportError:
            raise MissingExtraError("diffusers", "augment", "image generation") from None
        pipe = AutoPipelineForText2Image.from_pretrained(cfg.model, torch_dtype=getattr(torch, cfg.dtype))
        pipe.to(_device(cfg.device))
        return cls(pipe, steps=cfg.steps, guidance_scale=cfg.guidance_scale, width=cfg.width,
                   height=cfg.height, description={"model": cfg.model})


def build_generator(cfg: GeneratorConfig) -> ImageGenerator:
    """The generator a config names."""
    if cfg.kind == "sdxl_lightning":
        return DiffusersGenerator.sdxl_lightning(cfg)
    if cfg.kind == "diffusers":
        return DiffusersGenerator.from_pretrained(cfg)
    from hoibench.testing import tiny_sdxl_pipeline  # test helpers load only for the tiny kind

    return DiffusersGenerator(tiny_sdxl_pipeline(seed=0), steps=cfg.steps,
                              guidance_scale=cfg.guidance_scale, width=cfg.width, height=cfg.height,
                              description={"model": "tiny-random-sdxl"}, threads=1)


# ------------------------------------------------------------------------------------- detection
@dataclass(frozen=True)
class Detection:
    """One detected box: 0-based pixel xyxy, the index of the text query it answers, its score."""

    box: tuple[float, float, float, float]
    query: int
    score: float


class Detector(abc.ABC):
    """Image + text queries ("person", "horse") → boxes of those categories."""

    @abc.abstractmethod
    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        """Detections of every query, best first within each query."""

    @abc.abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """Model and thresholds (recorded in the manifest)."""


class TransformersDetector(Detector):
    """Grounding DINO or OWLv2 through ``transformers``' zero-shot object detection models.

    Grounding DINO reads one text of ``.``-terminated phrases and returns the phrase of each box;
    OWLv2 reads a list of queries and returns their indices. Both end as query indices here.
    """

    def __init__(self, model: Any, processor: Any, *, cfg: DetectorConfig, device: str = "cpu") -> None:
        if cfg.kind not in ("grounding_dino", "owlv2"):
            raise ConfigError(f"detector kind must be 'grounding_dino' or 'owlv2'; got {cfg.kind!r}")
        self.model = model
        self.processor = processor
        self.cfg = cfg
        self.device = device

    @classmethod
    def from_config(cls, cfg: DetectorConfig) -> TransformersDetector:
        """Load the checkpoint ``cfg.model`` (hub id or local folder) onto ``cfg.device``."""
        try:
            from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
        except ImportError:
            raise MissingExtraError("transformers", "augment", "open-vocabulary detection") from None
        device = _device(cfg.device)
        model = AutoModelForZeroShotObjectDetection.from_pretrained(cfg.model).to(device).eval()
        return cls(model, AutoProcessor.from_pretrained(cfg.model), cfg=cfg, device=device)

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        torch = _torch()
        size = torch.tensor([[image.height, image.width]])
        if self.cfg.kind == "grounding_dino":
            text = " ".join(f"{q.lower()}." for q in queries)
            inputs = self.processor(images=image, text=text, return_tensors="pt").to(self.device)
            with torch.no_grad():
                outputs = self.model(**inputs)
            res = self.processor.post_process_grounded_object_detection(
                outputs, inputs.input_ids, threshold=self.cfg.box_threshold,
                text_threshold=self.cfg.text_threshold, target_sizes=size)[0]
            labels = res.get("text_labels", res.get("labels"))
            index = [_match_query(str(lab), queries) for lab in labels]
        else:
            inputs = self.processor(images=image, text=[list(queries)], return_tensors="pt").to(self.device)
            with torch.no_grad():
                outputs = self.model(**inputs)
            # OWLv2 pads images to a square at the bottom/right: boxes are relative to that square
            side = max(image.height, image.width)
            res = self.processor.image_processor.post_process_object_detection(
                outputs=outputs, threshold=self.cfg.box_threshold, target_sizes=torch.tensor([[side, side]]))[0]
            index = [int(i) for i in res["labels"].tolist()]
        boxes = res["boxes"].cpu().tolist()
        scores = res["scores"].cpu().tolist()
        dets = [Detection(clip_box(b, image.width, image.height), q, float(s))
                for b, q, s in zip(boxes, index, scores, strict=True) if q >= 0]
        return limit_detections(dets, self.cfg.max_per_label)

    def fingerprint(self) -> dict[str, Any]:
        import transformers

        return {"model": self.cfg.model, "kind": self.cfg.kind, "box_threshold": self.cfg.box_threshold,
                "text_threshold": self.cfg.text_threshold, "transformers": transformers.__version__}


def _match_query(label: str, queries: Sequence[str]) -> int:
    """Grounding DINO labels are the phrase(s) a box matched; map back to a query index."""
    label = " ".join(label.lower().split())
    for i, q in enumerate(queries):
        if label == q.lower():
            return i
    for i, q in enumerate(queries):
        if q.lower() in label or label in q.lower():
            return i
    return -1


def limit_detections(dets: Sequence[Detection], max_per_label: int) -> list[Detection]:
    """Keep the ``max_per_label`` best boxes of each query (bounds the pairs asked about)."""
    out: list[Detection] = []
    for q in sorted({d.query for d in dets}):
        mine = sorted((d for d in dets if d.query == q), key=lambda d: (-d.score, d.box))
        out.extend(mine[:max_per_label])
    return out


#: words that make a query a watermark query for :class:`FakeDetector`
_MARK_WORDS = ("watermark", "logo", "text")


class FakeDetector(Detector):
    """Fixed boxes: one person on the left half and one box per other query on the right half
    (a query equal to ``person`` gets a second person). For tests and dry runs of the plumbing.

    Watermark queries (naming ``watermark``, ``logo`` or ``text``) are answered from the image:
    a box in the bottom-right 16×16 corner when that corner is pure white, else nothing."""

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        w, h = image.width, image.height
        if queries and all(any(m in q.lower() for m in _MARK_WORDS) for q in queries):
            corner = image.convert("RGB").crop((max(w - 16, 0), max(h - 16, 0), w, h))
            white = all(lo == 255 for lo, _ in corner.getextrema())
            return [Detection((float(max(w - 16, 0)), float(max(h - 16, 0)), float(w), float(h)), 0, 0.95)] \
                if white else []
        dets = [Detection((0.0, 0.0, w / 2, float(h)), 0, 0.9)]
        for i, _ in enumerate(queries):
            if i == 0:
                continue
            dets.append(Detection((w / 2, h / 4, float(w), float(h)), i, 0.8))
        if len(queries) == 1:
            dets.append(Detection((w / 2, 0.0, float(w), float(h)), 0, 0.8))
        return dets

    def fingerprint(self) -> dict[str, Any]:
        return {"model": "fake-detector"}


@dataclass(frozen=True)
class WatermarkFilter:
    """Supp. F's watermark removal behind the detector interface: the open-vocabulary detector is
    asked for ``queries`` ("watermark", "text logo"); a box scoring ``threshold`` or more marks
    the image as watermarked."""

    detector: Detector
    queries: tuple[str, ...] = ("watermark", "text logo")
    threshold: float = 0.3

    def check(self, image: Image.Image) -> tuple[bool, list[Detection]]:
        """Whether ``image`` carries a watermark, and the boxes found (best first)."""
        found = sorted(self.detector.detect(image, list(self.queries)), key=lambda d: -d.score)
        return any(d.score >= self.threshold for d in found), found

    def fingerprint(self) -> dict[str, Any]:
        return {"detector": self.detector.fingerprint(), "queries": list(self.queries),
                "threshold": self.threshold}


def build_detector(cfg: DetectorConfig) -> Detector:
    """The detector a config names."""
    if cfg.kind == "fake":
        return FakeDetector()
    return TransformersDetector.from_config(cfg)
