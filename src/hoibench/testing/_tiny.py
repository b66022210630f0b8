"""A tiny randomly initialised SDXL pipeline built from configs (no download): the real
``StableDiffusionXLPipeline`` code path with toy sizes, for tests and dry runs on the CPU."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hoibench._exceptions import MissingExtraError

__all__ = ["save_tiny_clip", "save_tiny_detr", "save_tiny_owlv2", "tiny_sdxl_pipeline"]


def _byte_alphabet() -> list[str]:
    """The 256 printable characters byte-level BPE maps bytes to (as GPT-2 and CLIP do)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def _tiny_tokenizer(folder: Path) -> Any:
    from transformers import CLIPTokenizer

    # no special token at id 0: OWL models take a first token 0 for an empty (padding) query
    vocab = {"!": 0, "<|startoftext|>": 1, "<|endoftext|>": 2}
    for ch in _byte_alphabet():
        vocab.setdefault(ch, len(vocab))
        vocab.setdefault(ch + "</w>", len(vocab))
    (folder / "vocab.json").write_text(json.dumps(vocab), "utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", "utf-8")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=77)


def tiny_sdxl_pipeline(*, seed: int = 0) -> Any:
    """An SDXL pipeline (UNet, VAE, two CLIP text encoders, character-level tokenizers) with a
    few thousand random weights, seeded; it makes 64×64 noise images in well under a second."""
    try:
        import torch
        from diffusers import (
            AutoencoderKL,
            EulerDiscreteScheduler,
            StableDiffusionXLPipeline,
            UNet2DConditionModel,
        )
        from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection
    except ImportError as exc:
        raise MissingExtraError(exc.name or "diffusers", "augment", "the tiny SDXL pipeline") from None
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), attention_head_dim=(2, 4),
        use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=8,
        transformer_layers_per_block=(1, 1), projection_class_embeddings_input_dim=80,
        cross_attention_dim=64, norm_num_groups=8)
    vae = AutoencoderKL(
        block_out_channels=[16, 32], in_channels=3, out_channels=3,
        down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
        latent_channels=4, sample_size=32, norm_num_groups=8)
    text_cfg = CLIPTextConfig(bos_token_id=1, eos_token_id=2, pad_token_id=2, hidden_size=32,
                              intermediate_size=37, num_attention_heads=4, num_hidden_layers=2,
                              vocab_size=1000, hidden_act="gelu", projection_dim=32)
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                       timestep_spacing="trailing")
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = _tiny_tokenizer(Path(tmp))
    return StableDiffusionXLPipeline(
        vae=vae.eval(), text_encoder=CLIPTextModel(text_cfg).eval(),
        text_encoder_2=CLIPTextModelWithProjection(text_cfg).eval(), tokenizer=tokenizer,
        tokenizer_2=tokenizer, unet=unet.eval(), scheduler=scheduler)


def _two_towers() -> dict[str, dict[str, int]]:
    """The text and vision towers of the tiny OWLv2 and CLIP: 2 layers of width 32, 32×32 images
    (new dicts each call: a config may keep and change them)."""
    return {
        "text_config": {"vocab_size": 1000, "hidden_size": 32, "intermediate_size": 37,
                        "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 77,
                        "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2},
        "vision_config": {"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2,
                          "num_attention_heads": 4, "image_size": 32, "patch_size": 8},
    }


def save_tiny_owlv2(folder: str | Path, *, seed: int = 0) -> Path:
    """Write a tiny random OWLv2 checkpoint (model and processor) to ``folder``: the
    ``detector: {kind: owlv2, model: FOLDER}`` code path without a download. Returns ``folder``."""
    try:
        import torch
        from transformers import (
            Owlv2Config,
            Owlv2ForObjectDetection,
            Owlv2ImageProcessor,
            Owlv2Processor,
        )
    except ImportError as exc:
        raise MissingExtraError(exc.name or "transformers", "augment", "the tiny OWLv2") from None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    cfg = Owlv2Config(**_two_towers(), projection_dim=32)
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = _tiny_tokenizer(Path(tmp))
    processor = Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": 32, "width": 32}),
                               tokenizer=tokenizer)
    Owlv2ForObjectDetection(cfg).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def save_tiny_detr(folder: str | Path, *, seed: int = 0,
                   person_box: tuple[float, float, float, float] | None = None) -> Path:
    """Write a tiny random DETR (a 4-stage ResNet of 8 channels, not timm; no weights downloaded)
    and its image processor to ``folder``: the ``AutoModelForObjectDetection`` code path of
    ``hoibench detect people``. Classes: ``N/A``, ``person``, ``bicycle``.

    With ``person_box`` (relative cx, cy, w, h) the heads are set so that every query finds a
    person there with a score near 1, whatever the image: detections a test can predict.
    """
    try:
        import torch
        from transformers import (
            DetrConfig,
            DetrForObjectDetection,
            DetrImageProcessor,
            ResNetConfig,
        )
    except ImportError as exc:
        raise MissingExtraError(exc.name or "transformers", "transformers", "the tiny DETR") from None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    backbone = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 8, 8, 8],
                            depths=[1, 1, 1, 1], layer_type="basic", out_features=["stage4"])
    names = {0: "N/A", 1: "person", 2: "bicycle"}
    cfg = DetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                     d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                     decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16, num_queries=10,
                     id2label=names, label2id={v: k for k, v in names.items()})
    model = DetrForObjectDetection(cfg).eval()
    if person_box is not None:
        with torch.no_grad():
            cls = model.class_labels_classifier
            cls.weight.zero_()
            cls.bias.fill_(-10.0)
            cls.bias[1] = 10.0  # person; the last logit is "no object"
            last = model.bbox_predictor.layers[-1]
            last.weight.zero_()
            last.bias.copy_(torch.logit(torch.tensor(person_box, dtype=torch.float32)))
    model.save_pretrained(folder)
    DetrImageProcessor(size={"shortest_edge": 32, "longest_edge": 64}).save_pretrained(folder)
    return folder


def save_tiny_clip(folder: str | Path, *, seed: int = 0) -> Path:
    """Write a tiny random CLIP (two 2-layer towers of width 32, 32×32 images, projection 16) and
    its image processor to ``folder``: the :class:`hoibench.models.ClipEmbedder` code path without
    a download. Returns ``folder``."""
    try:
        import torch
        from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel
    except ImportError as exc:
        raise MissingExtraError(exc.name or "transformers", "transformers", "the tiny CLIP") from None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    cfg = CLIPConfig(**_two_towers(), projection_dim=16)
    CLIPModel(cfg).eval().save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder
