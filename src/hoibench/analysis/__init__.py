"""hoibench.analysis (see docs/ARCHITECTURE.md)."""

# B-RIGHT re-evaluation analyses (class-AP spread, ranking shifts, TP->FP sensitivity)
from hoibench.analysis._class_ap import (
    ClassAPSpread,
    class_ap_boxplot_figure,
    class_ap_spread,
    class_ap_spread_table,
    class_ap_values,
    variance_reduction,
)
from hoibench.analysis._ranking import (
    RankShift,
    RankStability,
    competition_ranks,
    kendall_tau,
    rank_stability,
    ranking_shift,
    ranking_shift_markdown,
    ranking_shift_table,
)
from hoibench.analysis._sensitivity import (
    SensitivityResult,
    TPFPSensitivity,
    flip_top_true_positive,
    ideal_sensitivity,
    sensitivity_figure,
    sensitivity_table,
    tp_fp_sensitivity,
)

__all__ = [
    "ClassAPSpread",
    "RankShift",
    "RankStability",
    "SensitivityResult",
    "TPFPSensitivity",
    "class_ap_boxplot_figure",
    "class_ap_spread",
    "class_ap_spread_table",
    "class_ap_values",
    "competition_ranks",
    "flip_top_true_positive",
    "ideal_sensitivity",
    "kendall_tau",
    "rank_stability",
    "ranking_shift",
    "ranking_shift_markdown",
    "ranking_shift_table",
    "sensitivity_figure",
    "sensitivity_table",
    "tp_fp_sensitivity",
    "variance_reduction",
]
