"""Negative filtering with VLM judges (``001_*.txt`` sec. 2.2, "Negative Choice Construction").

The paper asks GPT-4.1 which candidate negatives are consistent with the image and keeps the
inconsistent ones; Qwen2.5-VL-32B then refines the pool, and the negatives *it* rejects are
cross-checked by GPT-4o, which can keep them. :class:`NegativeFilter` is that cascade over any
:class:`~hoibench.models.ChatBackend` objects (the VLM runner's backends, or a
``ScriptedBackend`` in tests): ``first`` decides, ``refine`` may reject, ``cross_check`` may keep
what ``refine`` rejected.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError
from hoibench._io import ImageFolder
from hoibench.data import HOIDataset
from hoibench.models import (
    ChatBackend,
    ChatMessage,
    ChatRequest,
    GenerationParams,
    ImagePart,
    parse_yes_no,
)

__all__ = ["DEFAULT_JUDGE_PROMPT", "NegativeFilter"]

DEFAULT_JUDGE_PROMPT = (
    "Look at the image{target}. Could the following describe an interaction that is actually "
    "happening in it: \"{choice}\"? Answer with one word: yes or no."
)


@dataclass
class NegativeFilter:
    """Keep only negatives the judges find inconsistent with the image.

    Parameters
    ----------
    first:
        Judge asked about every candidate; a candidate it calls plausible ("yes") is dropped.
    refine:
        Optional second judge over what ``first`` kept.
    cross_check:
        Optional third judge over what ``refine`` dropped; it keeps those it calls implausible.
    image_root:
        Folder of the images. Each file name must stay inside it
        (:class:`hoibench._io.ImageFolder`): :meth:`check` refuses a dataset naming one that
        leaves it, and :meth:`keep` checks every name before its first request.
    follow_symlinks:
        Follow symlinks under ``image_root`` that lead out of it (a link farm on purpose).
    prompt:
        Template with ``{choice}`` and ``{target}`` (the person box sentence, or empty).

    An unparseable or failed reply counts as "plausible" (the negative is dropped): a doubtful
    negative costs one choice, a false negative costs a wrong score.
    """

    first: ChatBackend
    refine: ChatBackend | None = None
    cross_check: ChatBackend | None = None
    image_root: str | os.PathLike[str] = "."
    follow_symlinks: bool = False
    prompt: str = DEFAULT_JUDGE_PROMPT
    params: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=8))
    stats: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.cross_check is not None and self.refine is None:
            raise ConfigError("cross_check needs refine: it re-judges what refine rejected")
        if "{choice}" not in self.prompt:
            raise ConfigError("the judge prompt must contain {choice}")
        self._images = ImageFolder(Path(self.image_root), follow_symlinks=self.follow_symlinks)

    def check(self, dataset: HOIDataset) -> None:
        """Refuse a dataset that names an image outside ``image_root`` (one line naming the
        annotation file, the image's record and its name), before any work or request."""
        file = dataset.name or None
        for i, name in enumerate(dataset.file_names):
            self._images.path(name, file=file, record=i)

    def describe(self) -> dict[str, Any]:
        """What goes into the benchmark header's metadata."""
        return {
            "first": self.first.fingerprint(),
            "refine": None if self.refine is None else self.refine.fingerprint(),
            "cross_check": None if self.cross_check is None else self.cross_check.fingerprint(),
            "prompt": self.prompt,
            "params": self.params.as_dict(),
        }

    def _requests(self, items: Sequence[tuple[str, str, tuple[float, ...] | None]]) -> list[ChatRequest]:
        paths = self._paths(items)
        out = []
        for file_name, text, box in items:
            target = "" if box is None else f" and the person in the box {[round(v, 1) for v in box]}"
            msg = ChatMessage.user(ImagePart(path=str(paths[file_name])),
                                   self.prompt.format(choice=text, target=target))
            out.append(ChatRequest((msg,), self.params, {"file_name": file_name, "choice": text}))
        return out

    def _paths(self, items: Sequence[tuple[str, str, tuple[float, ...] | None]]) -> dict[str, Path]:
        """Every item's image checked (a :class:`FormatError` for the first bad name)."""
        paths: dict[str, Path] = {}
        for file_name, _, _ in items:
            if file_name not in paths:
                paths[file_name] = self._images.path(file_name)
        return paths

    def _plausible(self, judge: ChatBackend, items: Sequence[tuple[str, str, tuple[float, ...] | None]],
                   stage: str) -> list[bool]:
        if not items:
            return []
        responses = judge.generate(self._requests(items))
        out = []
        for r in responses:
            verdict = parse_yes_no(r.text if r.ok else None)
            if verdict is None:
                self.stats[f"{stage}_unparsed"] = self.stats.get(f"{stage}_unparsed", 0) + 1
            out.append(verdict is not False)
        self.stats[f"{stage}_asked"] = self.stats.get(f"{stage}_asked", 0) + len(items)
        self.stats[f"{stage}_plausible"] = self.stats.get(f"{stage}_plausible", 0) + sum(out)
        return out

    def keep(self, items: Sequence[tuple[str, str, tuple[float, ...] | None]]) -> list[bool]:
        """For each ``(file name, choice text, person box or None)``: keep it as a negative?

        Every image name is checked before the first request (the later stages ask about a
        subset of these items)."""
        self._paths(items)
        keep = [not p for p in self._plausible(self.first, items, "first")]
        if self.refine is None:
            return keep
        idx = [i for i, k in enumerate(keep) if k]
        refined = self._plausible(self.refine, [items[i] for i in idx], "refine")
        rejected = [i for i, plausible in zip(idx, refined, strict=True) if plausible]
        for i in rejected:
            keep[i] = False
        if self.cross_check is not None:
            again = self._plausible(self.cross_check, [items[i] for i in rejected], "cross_check")
            for i, plausible in zip(rejected, again, strict=True):
                keep[i] = not plausible
        return keep
