"""Per-family box conventions: how a VLM sees an image, and how boxes must be written so that the
image sent and the boxes in the prompt agree (``001_*.txt`` appendix D.1).

Every convention is a pure function of the original image size (and, for InternVL, of the size the
model says it perceives) returning a :class:`ModelFrame`. The frame says which size the image is
sent at (resized once, by us, so the server does not resize again) and maps boxes between original
pixels and the model's coordinates.

Conventions
-----------
``qwen2.5``
    Qwen2-VL / Qwen2.5-VL: the image is resized by ``smart_resize`` (factor 28) and boxes are absolute
    pixels of the resized image (what the paper and the released code do for Qwen2 and Qwen2.5).
``qwen3``
    Qwen3-VL: image resized with factor 32; boxes relative on a 0–1000 grid.
``internvl``
    InternVL2.5/3 as in the paper: the model is first asked for its perceived image size, and boxes
    are rescaled into that frame (the image is sent unchanged).
``relative-1000``
    The 0–1000 relative convention (InternVL's documented grounding format); image unchanged.
``original``
    LLaVA-OneVision and hosted APIs: original pixels, image unchanged.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hoibench._exceptions import ConfigError, ValidationError
from hoibench.models import format_box

__all__ = [
    "BOX_CONVENTIONS",
    "ModelFrame",
    "model_frame",
    "resolve_box_convention",
    "smart_resize",
]

Box = tuple[float, float, float, float]

BOX_CONVENTIONS = ("qwen2.5", "qwen3", "internvl", "relative-1000", "original")

#: defaults of the Qwen2/2.5/3-VL model configs (qwen-vl-utils 0.0.14)
QWEN_MIN_PIXELS = 3136
QWEN_MAX_PIXELS = 12_845_056
QWEN_MAX_RATIO = 200


def smart_resize(height: int, width: int, *, factor: int = 28, min_pixels: int = QWEN_MIN_PIXELS,
                 max_pixels: int = QWEN_MAX_PIXELS) -> tuple[int, int]:
    """Qwen-VL's image resizing rule: ``(height, width)`` rounded to multiples of ``factor`` with
    the area kept inside ``[min_pixels, max_pixels]`` (aspect ratio kept as far as possible).

    Examples
    --------
    >>> smart_resize(480, 640)
    (476, 644)
    >>> smart_resize(427, 640, factor=32)
    (416, 640)
    """
    if height <= 0 or width <= 0:
        raise ValidationError(f"image size must be positive; got {height}x{width}")
    if max(height, width) / min(height, width) > QWEN_MAX_RATIO:
        raise ValidationError(f"absolute aspect ratio must be at most {QWEN_MAX_RATIO}; got "
                              f"{max(height, width) / min(height, width):.1f} for {height}x{width}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


_F32X4 = struct.Struct("=4f")  # four float32 values: rounding a Python float to float32
_F32X2 = struct.Struct("=2f")


@dataclass(frozen=True)
class ModelFrame:
    """How one model sees one image.

    ``sent_width/sent_height`` is the size of the image we send (equal to the original when
    ``resized`` is false); boxes in the prompt are ``original * (coord / original)`` per axis.
    ``relative`` frames (0–1000) are written as integers, pixel frames with two decimals.
    """

    convention: str
    width: int
    height: int
    sent_width: int
    sent_height: int
    coord_width: float
    coord_height: float
    relative: bool = False

    @property
    def resized(self) -> bool:
        return (self.sent_width, self.sent_height) != (self.width, self.height)

    @property
    def scale(self) -> tuple[float, float]:
        return self.coord_width / self.width, self.coord_height / self.height

    def to_model(self, box: Sequence[float]) -> Box:
        """Original-pixel box → the model's coordinates.

        Computed in float32 like the released code (``torch.tensor(box) * scale``), so the printed
        two-decimal boxes match it digit for digit. Without numpy (a question's cost on the
        runner's event loop): a product of two float32 values is exact in a Python float (24 +
        24 bits of mantissa), so rounding it once to float32 gives float32 multiplication's
        result bit for bit (tested against numpy).
        """
        sx, sy = self.scale
        try:
            x1, y1, x2, y2 = _F32X4.unpack(_F32X4.pack(*box))
            fx, fy = _F32X2.unpack(_F32X2.pack(sx, sy))
            return _F32X4.unpack(_F32X4.pack(x1 * fx, y1 * fy, x2 * fx, y2 * fy))  # type: ignore[return-value]
        except OverflowError:  # beyond float32's range: numpy's inf
            with np.errstate(over="ignore"):
                arr = np.asarray(box, dtype=np.float32) * np.asarray([sx, sy, sx, sy], dtype=np.float32)
            return tuple(float(v) for v in arr)  # type: ignore[return-value]

    def from_model(self, box: Sequence[float]) -> Box:
        """The model's coordinates → original pixels (float64)."""
        sx, sy = self.scale
        x1, y1, x2, y2 = (float(v) for v in box)
        return (x1 / sx, y1 / sy, x2 / sx, y2 / sy)

    def format(self, model_box: Sequence[float]) -> str:
        """A model-frame box as prompt text as the released code prints it: two decimals
        (``[310.0, 19.0, 362.0, 123.0]``), relative 0–1000 boxes as integers."""
        return format_box(model_box, decimals=0 if self.relative else 2)


def resolve_box_convention(convention: str, model: str) -> str:
    """``auto`` → the convention of the model's family, guessed from its name; others checked.

    Unknown families fall back to ``original`` (LLaVA-OneVision's convention, also right for hosted
    APIs that see the image as sent).
    """
    if convention != "auto":
        if convention not in BOX_CONVENTIONS:
            raise ConfigError(f"box convention must be one of {['auto', *BOX_CONVENTIONS]}; "
                              f"got {convention!r}")
        return convention
    name = model.lower().replace("_", "").replace("-", "")
    if "qwen3" in name and "vl" in name:
        return "qwen3"
    if "qwen2" in name and "vl" in name:
        return "qwen2.5"
    if "internvl" in name:
        return "internvl"
    return "original"


def model_frame(convention: str, width: int, height: int, *,
                perceived: tuple[float, float] | None = None,
                min_pixels: int = QWEN_MIN_PIXELS, max_pixels: int = QWEN_MAX_PIXELS) -> ModelFrame:
    """The frame of ``convention`` for an image of ``width x height`` original pixels.

    ``perceived`` is the ``(width, height)`` an InternVL model reported (``internvl`` only).
    """
    if width <= 0 or height <= 0:
        raise ValidationError(f"image size must be positive; got {width}x{height}")
    if convention in ("qwen2.5", "qwen3"):
        factor = 28 if convention == "qwen2.5" else 32
        h, w = smart_resize(height, width, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)
        if convention == "qwen2.5":
            return ModelFrame(convention, width, height, w, h, float(w), float(h))
        return ModelFrame(convention, width, height, w, h, 1000.0, 1000.0, relative=True)
    if convention == "internvl":
        if perceived is None:
            raise ValidationError("the internvl convention needs the perceived image size")
        pw, ph = float(perceived[0]), float(perceived[1])
        if not (pw > 0 and ph > 0 and math.isfinite(pw) and math.isfinite(ph)):
            raise ValidationError(f"perceived image size must be positive; got {perceived!r}")
        return ModelFrame(convention, width, height, width, height, pw, ph)
    if convention == "relative-1000":
        return ModelFrame(convention, width, height, width, height, 1000.0, 1000.0, relative=True)
    if convention == "original":
        return ModelFrame(convention, width, height, width, height, float(width), float(height))
    raise ConfigError(f"box convention must be one of {list(BOX_CONVENTIONS)}; got {convention!r}")
