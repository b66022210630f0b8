"""Bundled datasets by name, and the resolvers for arguments that name data: "a dataset name or a
file", the class subsets of a ``--classes`` value, and V-COCO role ground truth.

Names: ``hico-det`` (train + test), ``hico-det:train``, ``hico-det:test``, ``v-coco``
(trainval + test), ``v-coco:trainval``, ``v-coco:test``. Anything else is read as a file with
:func:`hoibench.formats.read_dataset`.
"""

from hoibench.datasets._bundled import (
    BUNDLED,
    bundled_path,
    ground_truth_id,
    is_dataset_name,
    list_datasets,
    load_dataset,
    parse_dataset_name,
    resolve_dataset,
)
from hoibench.datasets._class_subsets import (
    hico_class_subsets,
    is_zero_shot_setting,
    zero_shot_classes,
)
from hoibench.datasets._vcoco import resolve_vcoco_ground_truth

__all__ = [
    "BUNDLED",
    "bundled_path",
    "ground_truth_id",
    "hico_class_subsets",
    "is_dataset_name",
    "is_zero_shot_setting",
    "list_datasets",
    "load_dataset",
    "parse_dataset_name",
    "resolve_dataset",
    "resolve_vcoco_ground_truth",
    "zero_shot_classes",
]
