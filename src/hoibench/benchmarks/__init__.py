"""hoibench.benchmarks (see docs/ARCHITECTURE.md)."""

from hoibench.benchmarks.balanced import (
    BalancedSet,
    BalancedSplit,
    ClassDeficit,
    build_balanced_split,
    hico_det_selection_counts,
    write_balanced_split,
)

__all__ = [
    "BalancedSet",
    "BalancedSplit",
    "ClassDeficit",
    "build_balanced_split",
    "hico_det_selection_counts",
    "write_balanced_split",
]
