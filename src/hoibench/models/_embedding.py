"""Image embedding models behind one interface (:class:`ImageEmbedder`): CLIP's image tower through
``transformers`` and DreamSim (Fu et al. 2023) through its official package. B-RIGHT's Figure S3
compares real and generated images in these two spaces; anything with ``name`` and
``embed(images)`` can stand in for either.

torch, transformers and dreamsim are imported inside the implementations, so importing
:mod:`hoibench.models` stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from PIL import Image

from hoibench._exceptions import ConfigError, MissingExtraError

__all__ = ["ClipEmbedder", "DreamSimEmbedder", "ImageEmbedder"]


@runtime_checkable
class ImageEmbedder(Protocol):
    """Maps images to one vector each: ``embed`` returns a float32 array of shape (n, dim)."""

    name: str

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray: ...


def _torch_device(device: str) -> str:
    import torch

    return ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device


class ClipEmbedder:
    """CLIP image features (``CLIPModel.get_image_features``, the projected embedding), from a
    hub id or a local folder holding the model and its image processor."""

    def __init__(self, model: Any, processor: Any, *, name: str, device: str = "cpu") -> None:
        self.model = model
        self.processor = processor
        self.name = name
        self.device = device

    @classmethod
    def from_pretrained(cls, name: str, *, device: str = "auto") -> ClipEmbedder:
        try:
            from transformers import AutoImageProcessor, CLIPModel
        except ImportError as exc:
            raise MissingExtraError(exc.name or "transformers", "transformers", "CLIP embeddings") from None
        dev = _torch_device(device)
        try:
            model = CLIPModel.from_pretrained(name).to(dev).eval()
            processor = AutoImageProcessor.from_pretrained(name)
        except (OSError, ValueError) as exc:  # no such folder or hub id, offline, not a CLIP checkpoint
            raise ConfigError(f"CLIP model {name!r}: cannot load it: {exc}") from None
        return cls(model, processor, name=name, device=dev)

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        import torch

        if not images:
            return np.zeros((0, int(self.model.config.projection_dim)), np.float32)
        inputs = self.processor(images=[im.convert("RGB") for im in images], return_tensors="pt")
        with torch.no_grad():
            feats = self.model.get_image_features(pixel_values=inputs["pixel_values"].to(self.device))
        if not isinstance(feats, torch.Tensor):  # some transformers versions return an output object
            feats = feats.pooler_output
        return feats.float().cpu().numpy().astype(np.float32)


class DreamSimEmbedder:
    """DreamSim's embedding (``model.embed``; the default ``ensemble`` concatenates fine-tuned DINO
    ViT-B/16, CLIP ViT-B/16 and OpenCLIP ViT-B/32 features) through the ``dreamsim`` package.

    ``cache_dir`` is the folder of DreamSim's weights: the package downloads them there on first
    use when they are missing. The package needs torchvision, timm, open-clip-torch and peft
    (``pip install 'hoibench[dreamsim]'``)."""

    def __init__(self, model: Any, preprocess: Any, *, name: str, device: str = "cpu") -> None:
        self.model = model
        self.preprocess = preprocess
        self.name = name
        self.device = device

    @classmethod
    def from_pretrained(cls, cache_dir: str = "./models", *, dreamsim_type: str = "ensemble",
                        device: str = "auto") -> DreamSimEmbedder:
        try:
            import dreamsim as _dreamsim_pkg
        except ImportError as exc:
            raise MissingExtraError(exc.name or "dreamsim", "dreamsim", "DreamSim embeddings") from None
        dev = _torch_device(device)
        try:
            model, preprocess = _dreamsim_pkg.dreamsim(pretrained=True, device=dev, cache_dir=str(cache_dir),
                                                       dreamsim_type=dreamsim_type)
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"DreamSim ({dreamsim_type}) from {cache_dir}: {exc}") from None
        return cls(model, preprocess, name=f"dreamsim-{dreamsim_type}", device=dev)

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        import torch

        if not images:
            return np.zeros((0, 0), np.float32)
        batch = torch.cat([self.preprocess(im.convert("RGB")) for im in images]).to(self.device)
        with torch.no_grad():
            feats = self.model.embed(batch)
        return feats.reshape(len(images), -1).float().cpu().numpy().astype(np.float32)
