"""Annotation formats at the edge of hoibench: readers, writers and format detection.

Coordinate conventions are converted here and nowhere else (see :mod:`hoibench.data`).
"""

from hoibench.formats._boxes import (
    BoxConventionGroup,
    BoxConventions,
    box_convention_groups,
    box_conventions,
    file_prefix,
    shift_image_boxes,
)
from hoibench.formats._registry import (
    FORMATS,
    AnnotationFormat,
    detect_format,
    read_dataset,
    read_dataset_and_format,
    write_dataset,
)
from hoibench.formats.class_lists import (
    BALANCED_CLASSES_FILE,
    balanced_zero_shot_dir,
    read_balanced_zero_shot,
    read_class_list,
)
from hoibench.formats.crosshoi import read_crosshoi
from hoibench.formats.hake import read_hake
from hoibench.formats.hico_mat import read_hico_mat
from hoibench.formats.hicodet import read_hicodet, write_hicodet
from hoibench.formats.image_labels import read_image_labels
from hoibench.formats.ppdm import read_ppdm, write_ppdm
from hoibench.formats.predictions import (
    PREDICTION_FORMATS,
    LoadedPredictions,
    detect_prediction_format,
    load_predictions,
    predictions_from_qpic,
    read_predictions,
    write_matlab_detections,
    write_predictions,
)
from hoibench.formats.questions import (
    AnswerSet,
    AnswerWriter,
    QuestionSet,
    read_answers,
    read_questions,
    write_answers,
    write_questions,
)
from hoibench.formats.sg_split import (
    COMBINATIONS_FILE,
    combinations_record,
    recorded_box_conventions,
    unseen_combinations,
    unseen_hoi_classes,
)
from hoibench.formats.vcoco import read_vcoco
from hoibench.formats.vcoco_ground_truth import (
    read_vcoco_ground_truth,
    vcoco_ground_truth_from_dataset,
    vcoco_ground_truth_from_official,
    write_vcoco_ground_truth,
)
from hoibench.formats.vcoco_predictions import (
    VCOCODetectionsFile,
    read_vcoco_detections,
    write_vcoco_detections,
    write_vsrl_detections,
)

__all__ = [
    "BALANCED_CLASSES_FILE",
    "COMBINATIONS_FILE",
    "FORMATS",
    "PREDICTION_FORMATS",
    "AnnotationFormat",
    "AnswerSet",
    "AnswerWriter",
    "BoxConventionGroup",
    "BoxConventions",
    "LoadedPredictions",
    "QuestionSet",
    "VCOCODetectionsFile",
    "balanced_zero_shot_dir",
    "box_convention_groups",
    "box_conventions",
    "combinations_record",
    "detect_format",
    "detect_prediction_format",
    "file_prefix",
    "load_predictions",
    "predictions_from_qpic",
    "read_answers",
    "read_balanced_zero_shot",
    "read_class_list",
    "read_crosshoi",
    "read_dataset",
    "read_dataset_and_format",
    "read_hake",
    "read_hico_mat",
    "read_hicodet",
    "read_image_labels",
    "read_ppdm",
    "read_predictions",
    "read_questions",
    "read_vcoco",
    "read_vcoco_detections",
    "read_vcoco_ground_truth",
    "recorded_box_conventions",
    "shift_image_boxes",
    "unseen_combinations",
    "unseen_hoi_classes",
    "vcoco_ground_truth_from_dataset",
    "vcoco_ground_truth_from_official",
    "write_answers",
    "write_dataset",
    "write_hicodet",
    "write_matlab_detections",
    "write_ppdm",
    "write_predictions",
    "write_questions",
    "write_vcoco_detections",
    "write_vcoco_ground_truth",
    "write_vsrl_detections",
]
