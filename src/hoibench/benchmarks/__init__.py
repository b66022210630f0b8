"""hoibench.benchmarks (see docs/ARCHITECTURE.md)."""

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
    unseen_combinations,
    unseen_hoi_classes,
    verify_split,
)

__all__ = [
    "PRESETS",
    "AuditReport",
    "BalancedSet",
    "BalancedSplit",
    "ClassDeficit",
    "SGPreset",
    "SGSplit",
    "audit_split",
    "build_balanced_split",
    "build_preset",
    "build_sg_split",
    "compare_splits",
    "hico_det_selection_counts",
    "select_test_combinations",
    "sg_combinations",
    "unseen_combinations",
    "unseen_hoi_classes",
    "verify_split",
    "write_balanced_split",
]
