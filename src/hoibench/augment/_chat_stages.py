"""The VLM and LLM stages (describe, verify, paraphrase, pseudo-label) on top of the runner's
:class:`~hoibench.models.ChatBackend`, so the same OpenAI-compatible servers (vLLM, SGLang) and the
same response cache serve them. Requests of one image go to the backend as one batch."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoibench._exceptions import HOIBenchError
from hoibench.augment._prompts import PromptSet, box_text
from hoibench.models import (
    ChatBackend,
    ChatMessage,
    ChatRequest,
    GenerationParams,
    ImagePart,
    TextPart,
    parse_yes_no,
)

__all__ = ["ChatStages", "StageError", "derive_seed"]

Box = tuple[float, float, float, float] | list[float]


class StageError(HOIBenchError, RuntimeError):
    """A model stage failed after its backend's own retries; the run stops and resumes later."""


def derive_seed(*keys: object) -> int:
    """A 31-bit seed from any keys (run seed, class, attempt, stage): independent of order of work,
    shard and process."""
    digest = hashlib.sha256(":".join(str(k) for k in keys).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _mime(path: str | Path) -> str:
    return "image/png" if str(path).lower().endswith(".png") else "image/jpeg"


@dataclass(frozen=True)
class PairVerdict:
    """The verification of one human-object pair: region description and the LLM's answer."""

    description: str
    answer: str
    yes: bool | None


class ChatStages:
    """The text stages of the pipeline.

    Parameters
    ----------
    describe_vlm:
        Whole-image VLM that turns a retrieved real image into a generation prompt.
    region_vlm:
        Region VLM (Ferret in the paper) that describes a person-object pair and answers the
        pseudo-labelling yes/no questions.
    llm:
        Text LLM that verifies the descriptions and paraphrases rejected prompts.
    params:
        Generation settings per role (``"describe_vlm"``, ``"region_vlm"``, ``"llm"``); the
        seed of each request is derived from ``seed`` and the request's place in the run.
    """

    def __init__(self, *, describe_vlm: ChatBackend, region_vlm: ChatBackend, llm: ChatBackend,
                 prompts: PromptSet, seed: int = 0, box_format: str = "pixel",
                 params: dict[str, GenerationParams] | None = None) -> None:
        self.describe_vlm = describe_vlm
        self.region_vlm = region_vlm
        self.llm = llm
        self.prompts = prompts
        self.seed = seed
        self.box_format = box_format
        self.params = params or {}

    def fingerprint(self) -> dict[str, Any]:
        return {"describe_vlm": self.describe_vlm.fingerprint(),
                "region_vlm": self.region_vlm.fingerprint(), "llm": self.llm.fingerprint()}

    # -------------------------------------------------------------------------------- helpers
    def _params(self, role: str, *keys: object) -> GenerationParams:
        base = self.params.get(role, GenerationParams())
        return GenerationParams(max_tokens=base.max_tokens, temperature=base.temperature,
                                top_p=base.top_p, seed=derive_seed(self.seed, role, *keys))

    @staticmethod
    def _ask(backend: ChatBackend, requests: Sequence[ChatRequest], stage: str) -> list[str]:
        if not requests:
            return []
        responses = backend.generate(list(requests))
        texts = []
        for i, resp in enumerate(responses):
            if not resp.ok:
                raise StageError(f"{stage}: request {i} failed: {resp.error}")
            texts.append(" ".join(str(resp.text).split()))
        return texts

    def _region_requests(self, prompt: str, stage: str, image: str | Path, width: int, height: int,
                         candidates: Sequence[tuple[Box, Box, str]], *, obj: str,
                         key: Sequence[object]) -> list[ChatRequest]:
        """One region-VLM request per (person box, object box, verb) on ``image``, prompt ``prompt``
        with both boxes filled in; the seed of request ``i`` comes from ``(stage, *key, i)``."""
        part = ImagePart(path=str(image), mime=_mime(image))
        reqs = []
        for i, (hbox, obox, verb) in enumerate(candidates):
            text = self.prompts.fill(prompt, verb=verb, obj=obj,
                                     subject_box=box_text(hbox, width=width, height=height,
                                                          box_format=self.box_format),
                                     object_box=box_text(obox, width=width, height=height,
                                                         box_format=self.box_format))
            reqs.append(ChatRequest((ChatMessage.user(part, TextPart(text)),),
                                    params=self._params("region_vlm", stage, *key, i)))
        return reqs

    # --------------------------------------------------------------------------------- stages
    def basic_prompt(self, verb: str, obj: str) -> str:
        """The paper's plain prompt ("a photo of a person {verb}-ing a/an {object}")."""
        return self.prompts.fill("basic", verb=verb, obj=obj)

    def describe(self, reference: str | Path, *, verb: str, obj: str, key: Sequence[object]) -> str:
        """Retrieval-augmented prompt: the VLM completes the template for the reference image.

        An answer that does not start with the template's fixed words is appended to the basic
        prompt, so the generation prompt always names the person, the verb and the object.
        """
        text = self.prompts.fill("describe", verb=verb, obj=obj)
        req = ChatRequest((ChatMessage.user(ImagePart(path=str(reference), mime=_mime(reference)),
                                            TextPart(text)),),
                          params=self._params("describe_vlm", *key))
        answer = self._ask(self.describe_vlm, [req], "describe")[0].strip().strip("\"'")
        basic = self.basic_prompt(verb, obj)
        if answer.lower().startswith(basic.lower()):
            return answer
        return f"{basic}, {answer}" if answer else basic

    def verify(self, image: str | Path, *, width: int, height: int, pairs: Sequence[tuple[Box, Box]],
               verb: str, obj: str, key: Sequence[object]) -> list[PairVerdict]:
        """Region description of each (person, object) pair, then the LLM's yes/no on the HOI."""
        reqs = self._region_requests("region_describe", "describe", image, width, height,
                                     [(h, o, verb) for h, o in pairs], obj=obj, key=key)
        descriptions = self._ask(self.region_vlm, reqs, "verify (region description)")
        questions = [ChatRequest((ChatMessage.user(TextPart(self.prompts.fill(
            "verify", verb=verb, obj=obj, description=d))),),
            params=self._params("llm", "verify", *key, i)) for i, d in enumerate(descriptions)]
        answers = self._ask(self.llm, questions, "verify (LLM)")
        return [PairVerdict(d, a, parse_yes_no(a)) for d, a in zip(descriptions, answers, strict=True)]

    def paraphrase(self, prompt: str, *, verb: str, obj: str, key: Sequence[object]) -> str:
        """A reworded prompt for the next attempt (an empty answer keeps the old prompt)."""
        req = ChatRequest((ChatMessage.user(TextPart(self.prompts.fill(
            "paraphrase", verb=verb, obj=obj, prompt=prompt))),),
            params=self._params("llm", "paraphrase", *key))
        answer = self._ask(self.llm, [req], "paraphrase")[0].strip().strip("\"'")
        return answer or prompt

    def pseudo_label(self, image: str | Path, *, width: int, height: int,
                     candidates: Sequence[tuple[Box, Box, str]], obj: str,
                     key: Sequence[object]) -> list[tuple[str, bool | None]]:
        """Region-VLM yes/no for each (person box, object box, verb) candidate."""
        reqs = self._region_requests("pseudo_label", "label", image, width, height, candidates,
                                     obj=obj, key=key)
        answers = self._ask(self.region_vlm, reqs, "pseudo-label")
        return [(a, parse_yes_no(a)) for a in answers]
