"""hoibench.benchmarks: the builders of the SG splits (:mod:`.sg`), the B-RIGHT balanced splits
(:mod:`.balanced`), the zero-shot splits (:mod:`.zeroshot`) and the multiple-choice benchmark
(:mod:`.mcq`), all of one shape
(:class:`BenchmarkBuild`; see docs/ARCHITECTURE.md)."""

from hoibench.benchmarks._build import BenchmarkBuild
from hoibench.benchmarks._distribution import (
    SceneComposition,
    distinct_boxes,
    head_tail_ratio,
    image_people,
    kl_divergence,
    people_share_hoi,
    scene_composition,
)
from hoibench.benchmarks._published import (
    PUBLISHED_BENCHMARKS,
    PUBLISHED_METRICS,
    PublishedRow,
    load_published_results,
    published_results,
)
from hoibench.benchmarks.balanced import (
    BalancedSet,
    BalancedSplit,
    ClassDeficit,
    build_balanced_split,
    hico_det_selection_counts,
    write_balanced_split,
)
from hoibench.benchmarks.sg import (
    PRESETS,
    AuditReport,
    SGPreset,
    SGSplit,
    audit_split,
    build_preset,
    build_sg_split,
    compare_splits,
    select_test_combinations,
    sg_combinations,
    verify_split,
)
from hoibench.benchmarks.zeroshot import ZeroShotSplit, build_zero_shot_split

__all__ = [
    "PRESETS",
    "PUBLISHED_BENCHMARKS",
    "PUBLISHED_METRICS",
    "AuditReport",
    "BalancedSet",
    "BalancedSplit",
    "BenchmarkBuild",
    "ClassDeficit",
    "PublishedRow",
    "SGPreset",
    "SGSplit",
    "SceneComposition",
    "ZeroShotSplit",
    "audit_split",
    "build_balanced_split",
    "build_preset",
    "build_sg_split",
    "build_zero_shot_split",
    "compare_splits",
    "distinct_boxes",
    "head_tail_ratio",
    "hico_det_selection_counts",
    "image_people",
    "kl_divergence",
    "load_published_results",
    "people_share_hoi",
    "published_results",
    "scene_composition",
    "select_test_combinations",
    "sg_combinations",
    "verify_split",
    "write_balanced_split",
]
