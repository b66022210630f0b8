"""hoibench.analysis (see docs/ARCHITECTURE.md)."""

# B-RIGHT re-evaluation analyses (class-AP spread, ranking shifts, TP->FP sensitivity)
from hoibench.analysis._bootstrap import (
    BootstrapResult,
    bootstrap_ci,
    bootstrap_weights,
    check_random_state,
)
from hoibench.analysis._class_ap import (
    ClassAPSpread,
    class_ap_boxplot_figure,
    class_ap_spread,
    class_ap_spread_table,
    class_ap_values,
    variance_reduction,
)
from hoibench.analysis._distribution import (
    SceneComposition,
    distinct_boxes,
    head_tail_ratio,
    kl_divergence,
    scene_composition,
)
from hoibench.analysis._ranking import (
    RankShift,
    RankStability,
    competition_ranks,
    kendall_tau,
    rank_stability,
    ranking_shift,
    ranking_shift_figure,
    ranking_shift_markdown,
    ranking_shift_table,
)
from hoibench.analysis._sensitivity import (
    SensitivityResult,
    TPFPSensitivity,
    flip_top_true_positive,
    ideal_sensitivity,
    sensitivity_figure,
    sensitivity_from_matches,
    sensitivity_table,
    tp_fp_sensitivity,
)

__all__ = [
    "BootstrapResult",
    "ClassAPSpread",
    "RankShift",
    "RankStability",
    "SceneComposition",
    "SensitivityResult",
    "TPFPSensitivity",
    "bootstrap_ci",
    "bootstrap_weights",
    "check_random_state",
    "class_ap_boxplot_figure",
    "class_ap_spread",
    "class_ap_spread_table",
    "class_ap_values",
    "competition_ranks",
    "distinct_boxes",
    "flip_top_true_positive",
    "head_tail_ratio",
    "ideal_sensitivity",
    "kendall_tau",
    "kl_divergence",
    "rank_stability",
    "ranking_shift",
    "ranking_shift_figure",
    "ranking_shift_markdown",
    "ranking_shift_table",
    "scene_composition",
    "sensitivity_figure",
    "sensitivity_from_matches",
    "sensitivity_table",
    "tp_fp_sensitivity",
    "variance_reduction",
]
