"""Analyses of results and benchmarks: class-AP spread, ranking shifts, TP->FP sensitivity
(B-RIGHT), bootstrap model comparison, and the multiple-choice error analyses.

Numbers only: their tables and figures are in :mod:`hoibench.reports`.
"""

from hoibench.analysis._class_ap import (
    ClassAPSpread,
    class_ap_spread,
    class_ap_spreads,
    class_ap_values,
    variance_reduction,
)
from hoibench.analysis._map_bootstrap import (
    MapBootstrapResult,
    ModelComparison,
    WeightedHICOMap,
    compare_hico_models,
    hico_map_bootstrap,
)
from hoibench.analysis._mcq_errors import (
    HeadToTailBin,
    HeadToTailRecall,
    Misattribution,
    head_to_tail_recall,
    misattribution_share,
    train_class_counts,
)
from hoibench.analysis._ranking import (
    RankShift,
    RankStability,
    competition_ranks,
    kendall_tau,
    rank_stability,
    ranking_shift,
)
from hoibench.analysis._sensitivity import (
    SensitivityResult,
    TPFPSensitivity,
    flip_top_true_positive,
    ideal_sensitivity,
    sensitivity_from_matches,
    tp_fp_sensitivity,
)

__all__ = [
    "ClassAPSpread",
    "HeadToTailBin",
    "HeadToTailRecall",
    "MapBootstrapResult",
    "Misattribution",
    "ModelComparison",
    "RankShift",
    "RankStability",
    "SensitivityResult",
    "TPFPSensitivity",
    "WeightedHICOMap",
    "class_ap_spread",
    "class_ap_spreads",
    "class_ap_values",
    "compare_hico_models",
    "competition_ranks",
    "flip_top_true_positive",
    "head_to_tail_recall",
    "hico_map_bootstrap",
    "ideal_sensitivity",
    "kendall_tau",
    "misattribution_share",
    "rank_stability",
    "ranking_shift",
    "sensitivity_from_matches",
    "tp_fp_sensitivity",
    "train_class_counts",
    "variance_reduction",
]
