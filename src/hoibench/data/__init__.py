"""The core data model shared by every hoibench package (no file formats here).

See :mod:`hoibench.data._dataset` for the box convention (0-based pixel xyxy).
"""

from hoibench.data._builder import DatasetBuilder
from hoibench.data._dataset import HOIDataset, HOIImage
from hoibench.data._predictions import HOIPredictions
from hoibench.data._questions import Choice, MCAnswer, MCQuestion, choice_order
from hoibench.data._validate import Problem, validate_dataset

__all__ = [
    "Choice",
    "DatasetBuilder",
    "HOIDataset",
    "HOIImage",
    "HOIPredictions",
    "MCAnswer",
    "MCQuestion",
    "Problem",
    "choice_order",
    "validate_dataset",
]
