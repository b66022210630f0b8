"""The one configuration file of the augmentation pipeline: YAML → frozen dataclasses.

Unknown keys are errors (a misspelt key never silently falls back to a default), and every field
has one meaning. ``max_attempts`` may change between runs of one output folder (raise it to give
unfilled classes more tries); every other field is part of the run's fingerprint.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

from hoibench._exceptions import ConfigError
from hoibench.augment._prompts import BOX_FORMATS

__all__ = [
    "AugmentConfig",
    "ChatStageConfig",
    "DetectorConfig",
    "GeneratorConfig",
    "WatermarkConfig",
    "load_config",
    "packaged_configs",
]


@dataclass(frozen=True)
class ChatStageConfig:
    """A VLM or LLM role served through the runner's backends (:func:`hoibench.models.make_backend`).

    ``kind``: a registered backend (``"openai"`` for any OpenAI-compatible server: vLLM, SGLang,
    hosted APIs; ``"vllm"``; ``"transformers"``) or ``"constant"`` (answers ``reply`` to every
    request: dry runs of the plumbing). ``options``: the backend's keyword arguments (e.g.
    ``base_urls``, ``concurrency`` for ``openai``). ``cache``: SQLite response cache file
    (relative paths are inside the output folder; ``null``: no cache).
    """

    kind: str = "openai"
    model: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    temperature: float = 0.0
    max_tokens: int = 256
    cache: str | None = "chat_cache.sqlite"
    reply: str = "Yes"


#: the image size of each generator kind when the config gives none
GENERATOR_SIZES = {"sdxl_lightning": 1024, "diffusers": 1024, "tiny": 64}


@dataclass(frozen=True)
class GeneratorConfig:
    """Text-to-image model. ``kind``: ``"sdxl_lightning"`` (the paper's model: SDXL base with the
    SDXL-Lightning UNet, trailing Euler, no guidance), ``"diffusers"`` (any pipeline id) or
    ``"tiny"`` (a randomly initialised tiny SDXL built from configs; tests and dry runs).

    ``width``/``height`` left out (``None``) take the kind's size: 1024 for the real models, 64
    for ``tiny`` (its cost grows with the square of the size: 1024×1024 runs for minutes per
    image on a CPU, so a large tiny image must be asked for)."""

    kind: str = "sdxl_lightning"
    model: str = "stabilityai/stable-diffusion-xl-base-1.0"
    lightning_repo: str = "ByteDance/SDXL-Lightning"
    lightning_steps: int = 4
    steps: int = 4
    guidance_scale: float = 0.0
    width: int | None = None
    height: int | None = None
    device: str = "auto"
    dtype: str = "float16"

    def __post_init__(self) -> None:
        size = GENERATOR_SIZES.get(self.kind, 1024)
        for name in ("width", "height"):  # frozen: the kind's size is filled in once, here
            if getattr(self, name) is None:
                object.__setattr__(self, name, size)


@dataclass(frozen=True)
class DetectorConfig:
    """Open-vocabulary detector. ``kind``: ``"grounding_dino"`` (the paper's detector) or
    ``"owlv2"`` through ``transformers``, or ``"fake"`` (fixed person/object boxes; dry runs)."""

    kind: str = "grounding_dino"
    model: str = "IDEA-Research/grounding-dino-base"
    box_threshold: float = 0.35
    text_threshold: float = 0.25
    max_per_label: int = 5
    device: str = "auto"


@dataclass(frozen=True)
class WatermarkConfig:
    """Watermark removal before verification (``002`` supp. F: crawled images with watermarks are
    removed), as one more query of an open-vocabulary detector. An image is rejected when any
    ``queries`` box scores at least ``threshold``. ``detector``: a detector of its own (null: the
    pipeline's ``detector``). Off by default; the paper applies it to crawled images."""

    enabled: bool = False
    queries: tuple[str, ...] = ("watermark", "text logo")
    threshold: float = 0.3
    detector: DetectorConfig | None = None


@dataclass(frozen=True)
class AugmentConfig:
    """Everything a run depends on besides its inputs.

    ``max_attempts``: generated images per class at most (kept or not).
    ``pseudo_label_verbs``: ``"object"`` asks every verb that forms an HOI class with the object
    (HICO-DET's candidates for the pair; ``no_interaction`` only for a no-interaction target),
    ``"target"`` asks only the target verb.
    ``box_format``: how boxes appear in region prompts (``"pixel"`` or ``"relative1000"``).
    ``prompts``: optional text files replacing packaged prompts, by name.
    """

    seed: int = 0
    max_attempts: int = 10
    pseudo_label_verbs: str = "object"
    box_format: str = "pixel"
    generator: GeneratorConfig = GeneratorConfig()
    detector: DetectorConfig = DetectorConfig()
    watermark: WatermarkConfig = WatermarkConfig()
    describe_vlm: ChatStageConfig = ChatStageConfig()
    region_vlm: ChatStageConfig = ChatStageConfig()
    llm: ChatStageConfig = ChatStageConfig()
    prompts: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _choice("pseudo_label_verbs", self.pseudo_label_verbs, ("object", "target"))
        _choice("box_format", self.box_format, BOX_FORMATS)
        _choice("generator.kind", self.generator.kind, ("sdxl_lightning", "diffusers", "tiny"))
        _choice("detector.kind", self.detector.kind, ("grounding_dino", "owlv2", "fake"))
        for role in ("describe_vlm", "region_vlm", "llm"):
            _choice(f"{role}.kind", getattr(self, role).kind, ("openai", "vllm", "transformers", "constant"))
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be >= 1; got {self.max_attempts}")
        if self.detector.max_per_label < 1:
            raise ConfigError(f"detector.max_per_label must be >= 1; got {self.detector.max_per_label}")
        wm = self.watermark
        if not 0.0 <= wm.threshold <= 1.0:
            raise ConfigError(f"watermark.threshold must be in [0, 1]; got {wm.threshold!r}")
        if wm.enabled and (not wm.queries or not all(q.strip() for q in wm.queries)):
            raise ConfigError("watermark.queries must be a non-empty list of texts")
        if wm.detector is not None:
            _choice("watermark.detector.kind", wm.detector.kind, ("grounding_dino", "owlv2", "fake"))

    def replace(self, **changes: Any) -> AugmentConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (tuples as lists), as ``run.json`` stores and compares them."""
        return _plain(dataclasses.asdict(self))

    def fingerprint(self) -> dict[str, Any]:
        """The settings outputs depend on (``max_attempts`` only bounds how far a run goes)."""
        d = self.to_dict()
        d.pop("max_attempts")
        return d


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {set(allowed)}; got {value!r}")


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping; got {type(data).__name__}")
    hints = get_type_hints(cls, globalns=globals())  # __module__ is re-pointed to the package
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"{where + '.' if where else ''}{key}: unknown key; "
                          f"expected one of {sorted(names)}")
    kwargs = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else key
        kwargs[key] = _convert(hints[key], value, path)
    return cls(**kwargs)


def _convert(tp: Any, value: Any, path: str) -> Any:
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is dict:
        value_type = args[1] if len(args) == 2 else Any
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and (value_type is Any or isinstance(v, value_type))
                for k, v in value.items()):
            raise ConfigError(f"{path}: expected a mapping of names to "
                              f"{'values' if value_type is Any else value_type.__name__ + 's'}")
        return dict(value)
    if origin is tuple:  # tuple[str, ...] from a YAML list
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: expected a list of texts; got {value!r}")
        return tuple(value)
    if args and type(None) in args:  # Optional[X]
        if value is None:
            return None
        tp = next(a for a in args if a is not type(None))
        if dataclasses.is_dataclass(tp):
            return _build(tp, value, path)
    ok = {bool: lambda v: isinstance(v, bool),
          int: lambda v: isinstance(v, int) and not isinstance(v, bool),
          float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          str: lambda v: isinstance(v, str)}[tp](value)
    if not ok:
        raise ConfigError(f"{path}: expected {tp.__name__}; got {value!r}")
    return float(value) if tp is float else value


def packaged_configs() -> list[str]:
    """The names of the configs shipped in the package (``augment/configs/NAME.yaml``)."""
    folder = resources.files("hoibench.augment").joinpath("configs")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _config_file(path: str | os.PathLike[str]) -> Path:
    """``path`` when it is a file; else the packaged config of that name (``dry-run``)."""
    if Path(path).is_file() or os.sep in str(path) or "/" in str(path) or Path(path).suffix:
        return Path(path)
    res = resources.files("hoibench.augment").joinpath("configs", f"{path}.yaml")
    if not res.is_file():
        raise ConfigError(f"{path}: neither a config file nor one of the packaged configs "
                          f"{packaged_configs()}")
    return Path(str(res))


def load_config(path: str | os.PathLike[str] | None = None, **overrides: Any) -> AugmentConfig:
    """Read a YAML config (``None``: all defaults; a bare name such as ``"dry-run"`` that is no
    file: the packaged config of that name) and apply keyword overrides of top-level keys."""
    data: dict[str, Any] = {}
    if path is not None:
        import yaml

        path = _config_file(path)
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config ({exc.strerror})") from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
        if loaded is not None:
            if not isinstance(loaded, dict):
                raise ConfigError(f"{path}: expected a mapping at the top level")
            data = loaded
        base = Path(path).resolve().parent
        # prompt files are relative to the config file
        if isinstance(data.get("prompts"), dict):
            data = {**data, "prompts": {k: str(base / v) if isinstance(v, str) else v
                                        for k, v in data["prompts"].items()}}
    data = {**data, **{k: v for k, v in overrides.items() if v is not None}}
    try:
        return _build(AugmentConfig, data, "")
    except ConfigError as exc:
        if path is not None:
            raise ConfigError(f"{path}: {exc}") from None
        raise
