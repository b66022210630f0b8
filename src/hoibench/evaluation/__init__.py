"""hoibench.evaluation (see docs/ARCHITECTURE.md): HICO-DET mAP, V-COCO role AP and the
multiple-choice metrics, on one :class:`Metric` base (``update(preds, target)``, ``compute``,
``reset``; each class has its snake_case functional twin), with the box-overlap and AP primitives
they share (each reference's exact flavour). Every score is a fraction; each result type reads and
writes its JSON object (``to_json`` / ``from_json``, files through :mod:`hoibench.results`)."""

from hoibench.evaluation._ap import (
    RECALL_THRESHOLDS,
    all_point_ap,
    precision_recall,
    recall_thresholds,
    voc11_ap,
    weighted_voc11_ap,
)
from hoibench.evaluation._bootstrap import (
    CI_METHODS,
    MAP_CI_METHOD,
    MCQ_CI_METHOD,
    BootstrapResult,
    bootstrap_ci,
    bootstrap_interval,
    bootstrap_weights,
    interval_excludes_estimate,
)
from hoibench.evaluation._class_recall import ClassRecall, mcq_class_recall
from hoibench.evaluation._fields import SCHEMA_VERSION
from hoibench.evaluation._hico_map import (
    HICO_PROTOCOLS,
    MAP_METRICS,
    HICOMapCI,
    HICOMapResult,
    HICOMatches,
    HICOMeanAP,
    HICOProtocol,
    hico_mean_ap,
    match_hico_detections,
)
from hoibench.evaluation._iou import IOU_CONVENTIONS, box_iou, pair_iou, paired_box_iou
from hoibench.evaluation._mcq_metrics import (
    MCQ_BOOTSTRAP_UNITS,
    MCQ_METRIC_NAMES,
    MCQ_PROTOCOLS,
    MCQComparison,
    MCQMetrics,
    MCQResult,
    all_orders_exact_match,
    mcq_compare,
    mcq_metrics,
    mcq_scores,
    position_sensitivity,
)
from hoibench.evaluation._metric import Metric
from hoibench.evaluation._vcoco import VCOCOResult, VCOCORoleAP, vcoco_role_ap

__all__ = [
    "CI_METHODS",
    "HICO_PROTOCOLS",
    "IOU_CONVENTIONS",
    "MAP_CI_METHOD",
    "MAP_METRICS",
    "MCQ_BOOTSTRAP_UNITS",
    "MCQ_CI_METHOD",
    "MCQ_METRIC_NAMES",
    "MCQ_PROTOCOLS",
    "RECALL_THRESHOLDS",
    "SCHEMA_VERSION",
    "BootstrapResult",
    "ClassRecall",
    "HICOMapCI",
    "HICOMapResult",
    "HICOMatches",
    "HICOMeanAP",
    "HICOProtocol",
    "MCQComparison",
    "MCQMetrics",
    "MCQResult",
    "Metric",
    "VCOCOResult",
    "VCOCORoleAP",
    "all_orders_exact_match",
    "all_point_ap",
    "bootstrap_ci",
    "bootstrap_interval",
    "bootstrap_weights",
    "box_iou",
    "hico_mean_ap",
    "interval_excludes_estimate",
    "match_hico_detections",
    "mcq_class_recall",
    "mcq_compare",
    "mcq_metrics",
    "mcq_scores",
    "pair_iou",
    "paired_box_iou",
    "position_sensitivity",
    "precision_recall",
    "recall_thresholds",
    "vcoco_role_ap",
    "voc11_ap",
    "weighted_voc11_ap",
]
