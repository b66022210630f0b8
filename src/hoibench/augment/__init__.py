"""The B-RIGHT generate-and-filter pipeline (paper ``002``, sections 4.2-4.3): fill the deficits of
a balanced split with generated (or crawled) images, verified by VLM/LLM stages and
pseudo-labelled. Heavy models load lazily (``pip install 'hoibench[augment]'``).

See ``docs/augment.md``.
"""

from hoibench.augment._chat_stages import ChatStages, PairVerdict, StageError, derive_seed
from hoibench.augment._config import (
    AugmentConfig,
    ChatStageConfig,
    DetectorConfig,
    GeneratorConfig,
    WatermarkConfig,
    load_config,
)
from hoibench.augment._manifest import Manifest, manifest_image_name, read_manifests
from hoibench.augment._models import (
    Detection,
    Detector,
    DiffusersGenerator,
    FakeDetector,
    ImageGenerator,
    TransformersDetector,
    WatermarkFilter,
    build_detector,
    build_generator,
)
from hoibench.augment._pipeline import (
    AugmentPipeline,
    AugmentResult,
    augment_deficits,
    check_reference_images,
    collect_augmented,
    filter_images,
    write_augmented,
)
from hoibench.augment._prompts import PromptSet, verb_gerund
from hoibench.augment._review import (
    ReviewCard,
    ReviewServer,
    read_decisions,
    review_cards,
    write_decisions,
    write_review_page,
)
from hoibench.augment._shard import parse_shard, run_sharded, shard_targets
from hoibench.augment._targets import TargetClass, read_deficits

__all__ = [
    "AugmentConfig",
    "AugmentPipeline",
    "AugmentResult",
    "ChatStageConfig",
    "ChatStages",
    "Detection",
    "Detector",
    "DetectorConfig",
    "DiffusersGenerator",
    "FakeDetector",
    "GeneratorConfig",
    "ImageGenerator",
    "Manifest",
    "PairVerdict",
    "PromptSet",
    "ReviewCard",
    "ReviewServer",
    "StageError",
    "TargetClass",
    "TransformersDetector",
    "WatermarkConfig",
    "WatermarkFilter",
    "augment_deficits",
    "build_detector",
    "build_generator",
    "check_reference_images",
    "collect_augmented",
    "derive_seed",
    "filter_images",
    "load_config",
    "manifest_image_name",
    "parse_shard",
    "read_decisions",
    "read_deficits",
    "read_manifests",
    "review_cards",
    "run_sharded",
    "shard_targets",
    "verb_gerund",
    "write_augmented",
    "write_decisions",
    "write_review_page",
]

for _name in __all__:  # public names report the package, not the private module
    globals()[_name].__module__ = __name__
del _name
