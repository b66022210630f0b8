"""Negative filtering with VLM judges (``001_*.txt`` sec. 2.2, "Negative Choice Construction").

The paper asks GPT-4.1 which candidate negatives are consistent with the image and keeps the
inconsistent ones; Qwen2.5-VL-32B then refines the pool, and the negatives *it* rejects are
cross-checked by GPT-4o, which can keep them. :class:`NegativeFilter` is that cascade over any
:class:`~hoibench.models.ChatBackend` objects (the VLM runner's backends, or a
``ScriptedBackend`` in tests): ``first`` decides, ``refine`` may reject, ``cross_check`` may keep
what ``refine`` rejected.

The question put to every judge is a versioned template (:func:`load_judge_template`; the
packaged ``prompts/judge.yaml`` or a user's YAML file), recorded by name, version and text in the
question file's header, like the VLM runner's prompt templates.
"""

from __future__ import annotations

import os
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import ImageFolder, parse_yaml_mapping
from hoibench.data import HOIDataset
from hoibench.models import (
    ChatBackend,
    ChatMessage,
    ChatRequest,
    GenerationParams,
    ImagePart,
    parse_yes_no,
)

__all__ = ["JudgeTemplate", "NegativeFilter", "load_judge_template"]


@dataclass(frozen=True)
class JudgeTemplate:
    """The judges' question: ``prompt`` with ``{choice}`` and ``{target}``; ``target`` (with
    ``{box}``) fills ``{target}`` when the question is about one person, else it is empty."""

    name: str
    version: str
    prompt: str
    target: str = " and the person in the box {box}"
    source: str = ""

    def render(self, choice: str, box: Sequence[float] | None) -> str:
        """The text sent with the image for one candidate negative."""
        target = "" if box is None else self.target.format(box=[round(float(v), 1) for v in box])
        return self.prompt.format(choice=choice, target=target)

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "prompt": self.prompt, "target": self.target}


def load_judge_template(name_or_path: str | os.PathLike[str] = "judge") -> JudgeTemplate:
    """The packaged template by name (``judge``) or a YAML file with ``name``, ``version``,
    ``prompt`` (``{choice}``, optional ``{target}``) and optionally ``target`` (``{box}``)."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        text, where = path.read_text(encoding="utf-8"), str(path)
    else:
        res = resources.files("hoibench.benchmarks.mcq") / "prompts" / f"{name_or_path}.yaml"
        if not res.is_file():
            raise ConfigError(f"judge template {str(name_or_path)!r} is neither a YAML file nor the "
                              "packaged template 'judge'")
        text, where = res.read_text(encoding="utf-8"), f"prompts/{name_or_path}.yaml"
    raw = parse_yaml_mapping(text, where=where, what="a judge template")
    allowed = {"name", "version", "prompt", "target", "source"}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise FormatError(f"unknown keys {unknown}; allowed: {sorted(allowed)}", file=where)
    for key in ("name", "version", "prompt"):
        if not isinstance(raw.get(key), (str, int, float)) or str(raw.get(key)) == "":
            raise FormatError("missing or empty", file=where, field=key)
    for key, need, may in (("prompt", "choice", {"choice", "target"}), ("target", "box", {"box"})):
        if key not in raw:
            continue
        try:
            used = {f for _, f, _, _ in string.Formatter().parse(str(raw[key])) if f is not None}
        except ValueError as exc:
            raise FormatError(f"malformed placeholder ({exc})", file=where, field=key) from None
        if need not in used:
            raise FormatError(f"must contain the {{{need}}} placeholder", file=where, field=key)
        if used - may:
            raise FormatError(f"unknown placeholder {{{sorted(used - may)[0]}}}; allowed: "
                              f"{', '.join(sorted(may))}", file=where, field=key)
    return JudgeTemplate(**{k: str(v) for k, v in raw.items()})


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
    template:
        The question (:class:`JudgeTemplate`; default: the packaged ``judge`` template).

    An unparseable or failed reply counts as "plausible" (the negative is dropped): a doubtful
    negative costs one choice, a false negative costs a wrong score.
    """

    first: ChatBackend
    refine: ChatBackend | None = None
    cross_check: ChatBackend | None = None
    image_root: str | os.PathLike[str] = "."
    follow_symlinks: bool = False
    template: JudgeTemplate = field(default_factory=load_judge_template)
    params: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=8))
    stats: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.cross_check is not None and self.refine is None:
            raise ConfigError("cross_check needs refine: it re-judges what refine rejected")
        if "{choice}" not in self.template.prompt:
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
            "template": self.template.describe(),
            "params": self.params.as_dict(),
        }

    def _requests(self, items: Sequence[tuple[str, str, tuple[float, ...] | None]]) -> list[ChatRequest]:
        paths = self._paths(items)
        out = []
        for file_name, text, box in items:
            msg = ChatMessage.user(ImagePart(path=str(paths[file_name])), self.template.render(text, box))
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
