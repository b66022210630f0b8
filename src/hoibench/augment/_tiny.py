"""A tiny randomly initialised SDXL pipeline built from configs (no download): the real
``StableDiffusionXLPipeline`` code path with toy sizes, for tests and dry runs on the CPU."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hoibench._exceptions import MissingExtraError

__all__ = ["tiny_sdxl_pipeline"]


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

    vocab = {"<|startoftext|>": 0, "!": 1, "<|endoftext|>": 2}
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
    text_cfg = CLIPTextConfig(bos_token_id=0, eos_token_id=2, pad_token_id=1, hidden_size=32,
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
