"""V-COCO role ground truth from whatever names it: a bundled dataset (``v-coco:test``), a
hoibench ground-truth file, or a V-COCO pair-annotation file."""

from __future__ import annotations

import os
from typing import Any

from hoibench._exceptions import FormatError
from hoibench._io import read_json
from hoibench.data import VCOCOGroundTruth
from hoibench.datasets._bundled import is_dataset_name, load_dataset, resolve_dataset
from hoibench.formats import read_dataset, read_vcoco_ground_truth, vcoco_ground_truth_from_dataset

__all__ = ["resolve_vcoco_ground_truth"]


def resolve_vcoco_ground_truth(spec: str | os.PathLike[str]) -> VCOCOGroundTruth:
    """Ground truth from a bundled dataset name (``v-coco:test``), a hoibench ground-truth file, or
    any V-COCO pair-annotation file (the last two kinds are incomplete, see
    :func:`vcoco_ground_truth_from_dataset`)."""

    if is_dataset_name(spec):
        return vcoco_ground_truth_from_dataset(load_dataset(str(spec)))
    if not os.path.exists(spec):
        resolve_dataset(spec)  # the one error for a missing file or a misspelt dataset name
    data = read_json(spec)
    if isinstance(data, dict) and (data.get("kind") == "vcoco_ground_truth" or _has_persons(data)):
        return read_vcoco_ground_truth(spec, data=data)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "role_object_id" in data[0]:
        raise FormatError("this is an official vcoco_*.json: it has no boxes; give the COCO instances "
                          "file too (--coco-instances / vcoco_ground_truth_from_official)", file=spec)
    return vcoco_ground_truth_from_dataset(read_dataset(spec))


def _has_persons(data: dict[str, Any]) -> bool:
    images = data.get("images")
    return isinstance(images, list) and bool(images) and isinstance(images[0], dict) and "persons" in images[0]
