"""The core data model shared by every hoibench package (no file formats here).

See :mod:`hoibench.data._dataset` for the box convention (0-based pixel xyxy).
"""

from hoibench.data._builder import DatasetBuilder
from hoibench.data._dataset import HOIDataset, HOIImage
from hoibench.data._validate import Problem, validate_dataset

__all__ = ["DatasetBuilder", "HOIDataset", "HOIImage", "Problem", "validate_dataset"]
