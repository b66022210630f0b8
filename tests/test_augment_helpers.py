"""Shared pieces of the augmentation tests: a small real-looking dataset with image files,
scripted VLM/LLM answers that depend on the image and attempt, and a cheap generator."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from hoibench.augment import AugmentConfig, AugmentPipeline, FakeDetector, ImageGenerator
from hoibench.data import HOIDataset, HOIImage
from hoibench.models import ChatRequest, ImagePart, ScriptedBackend, TextPart
from hoibench.vocab import hico_det

VOCAB = hico_det()
RIDE_HORSE = int(VOCAB.hoi_index(VOCAB.verb_index("ride"), VOCAB.object_index("horse")))
HOLD_CUP = int(VOCAB.hoi_index(VOCAB.verb_index("hold"), VOCAB.object_index("cup")))
EAT_APPLE = int(VOCAB.hoi_index(VOCAB.verb_index("eat"), VOCAB.object_index("apple")))


def real_dataset(images_dir: Path, counts: dict[int, int]) -> HOIDataset:
    """``counts[hoi]`` images with one person, one object and one pair each, image files written."""
    images_dir.mkdir(parents=True, exist_ok=True)
    imgs = []
    k = 0
    for hoi, n in counts.items():
        v, o = (int(x) for x in VOCAB.hoi_verb_object[hoi])
        for _ in range(n):
            name = f"real_{k:04d}.png"
            Image.new("RGB", (40, 30), (k % 255, 10, 20)).save(images_dir / name)
            imgs.append(HOIImage.from_lists(name, [[1, 1, 20, 29], [18, 5, 39, 25]], [VOCAB.person, o],
                                            [[0, 1, v]], width=40, height=30))
            k += 1
    return HOIDataset.from_images(VOCAB, imgs, name="real")


class SolidGenerator(ImageGenerator):
    """A colour that is a function of prompt and seed: cheap, deterministic, records its calls."""

    def __init__(self, *, fail_after: int | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fail_after = fail_after

    def generate(self, prompt: str, *, seed: int) -> Image.Image:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise Interrupted("simulated crash")
        self.calls.append((prompt, seed))
        rng = np.random.default_rng([seed, len(prompt)])
        return Image.fromarray(rng.integers(0, 255, (32, 48, 3), dtype=np.uint8))

    def fingerprint(self) -> dict[str, Any]:
        return {"model": "solid"}


class Interrupted(Exception):
    """Stands for a killed process in resume tests."""


class CountingGenerator(ImageGenerator):
    """Wrap a generator; count calls and stop after ``fail_after`` of them."""

    def __init__(self, inner: ImageGenerator, *, fail_after: int | None = None) -> None:
        self.inner = inner
        self.calls: list[tuple[str, int]] = []
        self.fail_after = fail_after

    def generate(self, prompt: str, *, seed: int) -> Image.Image:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise Interrupted("simulated crash")
        self.calls.append((prompt, seed))
        return self.inner.generate(prompt, seed=seed)

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()


def _text(req: ChatRequest) -> str:
    return " ".join(p.text for m in req.messages for p in m.parts if isinstance(p, TextPart))


def _image(req: ChatRequest) -> str:
    return next(Path(str(p.path)).name for m in req.messages for p in m.parts if isinstance(p, ImagePart))


_ATTEMPT = re.compile(r"aug_h(\d+)_a(\d+)\.png")


class Script:
    """Scripted VLM/LLM answers.

    * describe: completes the template mentioning the reference file;
    * region description: names the image it looked at;
    * LLM verification: "No" for the (hoi, attempt) pairs in ``reject`` (and for every attempt of
      the classes in ``reject_class``), else "Yes";
    * paraphrase: the old prompt plus " (reworded)";
    * pseudo-label: "Yes" for the verbs in ``yes_verbs`` (gerunds), "No" otherwise.
    """

    def __init__(self, *, reject: set[tuple[int, int]] = frozenset(), reject_class: set[int] = frozenset(),
                 yes_verbs: tuple[str, ...] = ("riding", "holding", "eating")) -> None:
        self.reject = set(reject)
        self.reject_class = set(reject_class)
        self.yes_verbs = yes_verbs

    def describe(self, req: ChatRequest) -> str:
        m = re.search(r"A photo of a person [^\n]*?, \{description\}", _text(req))
        head = m.group(0).replace(", {description}", "") if m else "A photo"
        return f"{head}, in a sunny field like {_image(req)}"

    def region(self, req: ChatRequest) -> str:
        text = _text(req)
        if text.startswith("Is the person"):
            return "Yes." if any(f" {v} " in text for v in self.yes_verbs) else "No."
        return f"region description of {_image(req)}"

    def llm(self, req: ChatRequest) -> str:
        text = _text(req)
        if text.startswith("Paraphrase"):
            return text.split("Prompt: ", 1)[1] + " (reworded)"
        m = _ATTEMPT.search(text)
        if m is None:
            return "Yes"
        key = (int(m.group(1)), int(m.group(2)))
        return "No, the person is not." if key in self.reject or key[0] in self.reject_class else "Yes"

    def backends(self) -> dict[str, ScriptedBackend]:
        return {"describe_vlm": ScriptedBackend(self.describe, model="describe"),
                "region_vlm": ScriptedBackend(self.region, model="region"),
                "llm": ScriptedBackend(self.llm, model="llm")}


def pipeline(generator: ImageGenerator | None, script: Script, config: AugmentConfig | None = None,
             **backend_overrides: Any) -> AugmentPipeline:
    backends = {**script.backends(), **backend_overrides}
    return AugmentPipeline.with_stages(generator=generator, detector=FakeDetector(), config=config,
                                       **backends)
