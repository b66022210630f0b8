"""The core data model shared by every hoibench package (no file formats here).

See :mod:`hoibench.data._dataset` for the box convention (0-based pixel xyxy).
"""

from hoibench.data._builder import DatasetBuilder
from hoibench.data._choices import (
    REFERENCE_CLASS_TABLES,
    ChoiceParser,
    choice_text,
    parse_choice_text,
    reference_class_key,
    reference_class_keys,
    shown_choice_text,
)
from hoibench.data._dataset import HOIDataset, HOIImage
from hoibench.data._predictions import HOIPredictions
from hoibench.data._questions import Choice, MCAnswer, MCQuestion, choice_order
from hoibench.data._validate import Problem, validate_dataset
from hoibench.data._vcoco import (
    VCOCODetections,
    VCOCOGroundTruth,
    vcoco_action_names,
    vcoco_role_classes,
)

__all__ = [
    "REFERENCE_CLASS_TABLES",
    "Choice",
    "ChoiceParser",
    "DatasetBuilder",
    "HOIDataset",
    "HOIImage",
    "HOIPredictions",
    "MCAnswer",
    "MCQuestion",
    "Problem",
    "VCOCODetections",
    "VCOCOGroundTruth",
    "choice_order",
    "choice_text",
    "parse_choice_text",
    "reference_class_key",
    "reference_class_keys",
    "shown_choice_text",
    "validate_dataset",
    "vcoco_action_names",
    "vcoco_role_classes",
]
