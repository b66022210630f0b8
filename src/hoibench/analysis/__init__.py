"""Analyses of results and benchmarks: class-AP spread, ranking shifts, TP->FP sensitivity
(B-RIGHT), bootstrap model comparison, the multiple-choice error analyses, and the numbers of the
papers' remaining figures and tables (scene types, SG Tables 3/4, B-RIGHT Figures 2/S2/S3/S6 and
Tables S2/S3, the multiple-choice Figure 1b).

Numbers only: their tables and figures are in :mod:`hoibench.reports`.
"""

from hoibench.analysis._bright_figures import (
    AugmentationCounts,
    ClassSplitCounts,
    augmentation_counts,
    class_split_counts,
    imbalance,
)
from hoibench.analysis._bright_supplement import (
    EmbeddingMap,
    PromptAblation,
    RunImage,
    augment_run_images,
    embedding_tsne,
    folder_images,
    prompt_ablation,
    run_prompt_kind,
    sample_paths,
)
from hoibench.analysis._class_ap import (
    ClassAPSpread,
    class_ap_spread,
    class_ap_spreads,
    class_ap_values,
    variance_reduction,
)
from hoibench.analysis._failures import (
    FAILURE_CATEGORIES,
    DetectionVerdict,
    classify_detections,
    failure_counts,
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
from hoibench.analysis._mcq_paper import MCQvsMap, mcq_setting, mcq_vs_map, question_class_counts
from hoibench.analysis._ranking import (
    RankShift,
    RankStability,
    competition_ranks,
    kendall_tau,
    rank_stability,
    ranking_shift,
)
from hoibench.analysis._scenes import (
    SCENE_BINS,
    SceneBreakdown,
    SceneType,
    mcq_scene_breakdown,
    question_scene_types,
)
from hoibench.analysis._sensitivity import (
    SensitivityResult,
    TPFPSensitivity,
    flip_top_true_positive,
    ideal_sensitivity,
    sensitivity_from_matches,
    tp_fp_sensitivity,
)
from hoibench.analysis._sg_tables import SGSplitTable, parse_sg_benchmark, sg_split_tables

__all__ = [
    "FAILURE_CATEGORIES",
    "SCENE_BINS",
    "AugmentationCounts",
    "ClassAPSpread",
    "ClassSplitCounts",
    "DetectionVerdict",
    "EmbeddingMap",
    "HeadToTailBin",
    "HeadToTailRecall",
    "MCQvsMap",
    "MapBootstrapResult",
    "Misattribution",
    "ModelComparison",
    "PromptAblation",
    "RankShift",
    "RankStability",
    "RunImage",
    "SGSplitTable",
    "SceneBreakdown",
    "SceneType",
    "SensitivityResult",
    "TPFPSensitivity",
    "WeightedHICOMap",
    "augment_run_images",
    "augmentation_counts",
    "class_ap_spread",
    "class_ap_spreads",
    "class_ap_values",
    "class_split_counts",
    "classify_detections",
    "compare_hico_models",
    "competition_ranks",
    "embedding_tsne",
    "failure_counts",
    "flip_top_true_positive",
    "folder_images",
    "head_to_tail_recall",
    "hico_map_bootstrap",
    "ideal_sensitivity",
    "imbalance",
    "kendall_tau",
    "mcq_scene_breakdown",
    "mcq_setting",
    "mcq_vs_map",
    "misattribution_share",
    "parse_sg_benchmark",
    "prompt_ablation",
    "question_class_counts",
    "question_scene_types",
    "rank_stability",
    "ranking_shift",
    "run_prompt_kind",
    "sample_paths",
    "sensitivity_from_matches",
    "sg_split_tables",
    "tp_fp_sensitivity",
    "train_class_counts",
    "variance_reduction",
]
