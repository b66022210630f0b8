"""HICO-DET mAP as a ``torchmetrics.Metric``, for evaluation inside a training loop.

``update(outputs, targets)`` takes what QPIC's, CDN's, GEN-VLKT's or HOICLIP's post-processor
returns for a batch (see :func:`hoibench.formats.predictions_from_qpic`) and the batch's targets
(dicts with ``filename``/``file_name``, as their HICO-DET test sets give, or the file names).
The detections are kept as tensor states reduced by concatenation, so under
DistributedDataParallel ``compute()`` sees every process's detections (torchmetrics gathers
them) and returns :func:`hoibench.evaluation.hico_mean_ap` on them: the same numbers as one
process, whatever the sharding. Images repeated by a padding ``DistributedSampler`` count once.

Requires the ``torchmetrics`` extra (``pip install hoibench[torchmetrics]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from hoibench._exceptions import ConfigError, FormatError
from hoibench.data import HOIDataset, HOIPredictions
from hoibench.evaluation import HICOMapResult, HICOProtocol, hico_mean_ap
from hoibench.formats import predictions_from_qpic

__all__ = ["HICOMeanAveragePrecision"]

_STATES = ("image", "count", "boxes_h", "boxes_o", "objects", "verbs", "scores")


class HICOMeanAveragePrecision(Metric):
    """HICO-DET mAP of post-processor outputs against ``ground_truth``.

    Parameters
    ----------
    ground_truth:
        The test set (e.g. ``hoibench.datasets.load_dataset("hico-det:test")``); images are
        matched by file name.
    protocol, known_object, image_labels, class_subsets, classes:
        As :func:`hoibench.evaluation.hico_mean_ap` (default ``"qpic"``, what these repos report).
    max_per_image:
        Triplets kept per image before scoring (their evaluators: 100).

    Notes
    -----
    ``compute()`` returns ``{"map", "map_rare", "map_non_rare", "per_class_ap"}`` as float64
    tensors (fractions; NaN per-class AP for classes without ground truth) and keeps the full
    :class:`~hoibench.evaluation.HICOMapResult` in :attr:`result`.
    """

    full_state_update = False
    higher_is_better = True
    is_differentiable = False

    def __init__(self, ground_truth: HOIDataset, *, protocol: str | HICOProtocol = "qpic",
                 known_object: bool = False, image_labels: Mapping[str, Iterable[int]] | None = None,
                 class_subsets: Mapping[str, Sequence[int] | np.ndarray] | None = None,
                 classes: Sequence[int] | np.ndarray | None = None, max_per_image: int | None = 100,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ground_truth = ground_truth
        self.protocol = HICOProtocol.preset(protocol)
        self.known_object = known_object
        self.image_labels = image_labels
        self.class_subsets = class_subsets
        self.classes = classes
        self.max_per_image = max_per_image
        self.result: HICOMapResult | None = None
        self._row = {f: k for k, f in enumerate(ground_truth.file_names)}
        for name in _STATES:
            self.add_state(name, default=[], dist_reduce_fx="cat")

    def update(self, outputs: Sequence[Mapping[str, Any]], targets: Sequence[Any]) -> None:
        """Add one batch: post-processor ``outputs`` and their ``targets`` (one per image)."""
        names = [_file_name(t, k) for k, t in enumerate(targets)]
        if len(names) != len(outputs):
            raise ConfigError(f"{len(outputs)} outputs but {len(names)} targets")
        rows = [self._row.get(n, -1) for n in names]
        if -1 in rows:
            raise FormatError(f"image {names[rows.index(-1)]!r} is not in the ground truth",
                              record=rows.index(-1), field="filename")
        p = predictions_from_qpic([dict(o) for o in outputs], names, vocab=self.ground_truth.vocab,
                                  max_per_image=self.max_per_image)
        values = (np.asarray(rows), np.diff(p.offsets), p.boxes_h, p.boxes_o, p.objects, p.verbs, p.scores)
        for name, value in zip(_STATES, values):
            getattr(self, name).append(torch.from_numpy(np.array(value)).to(self.device))  # a writable copy

    def compute(self) -> dict[str, torch.Tensor]:
        """mAP over everything updated (on every process, after torchmetrics' gather)."""
        image, count, bh, bo, obj, verb, score = (
            dim_zero_cat(getattr(self, n)).cpu().numpy() if len(getattr(self, n)) else None for n in _STATES)
        gt = self.ground_truth
        if image is None:
            image = count = np.zeros(0, np.int64)
            bh = bo = np.zeros((0, 4))
            obj = verb = np.zeros(0, np.int64)
            score = np.zeros(0)
        bh, bo = bh.reshape(-1, 4), bo.reshape(-1, 4)
        start = np.r_[0, np.cumsum(count)[:-1]]
        _, first = np.unique(image, return_index=True)  # an image repeated by a padding sampler: once
        keep = first[np.argsort(image[first], kind="stable")]  # in the ground truth's order
        sel = np.concatenate([np.arange(start[k], start[k] + count[k]) for k in keep]) if len(keep) else \
            np.zeros(0, np.int64)
        preds = HOIPredictions.from_arrays(gt.vocab, [gt.file_names[int(image[k])] for k in keep], count[keep],
                                           bh[sel], bo[sel], obj[sel], verb[sel], score[sel],
                                           name="torchmetrics")
        self.result = res = hico_mean_ap(preds, gt, protocol=self.protocol, known_object=self.known_object,
                                         image_labels=self.image_labels, class_subsets=self.class_subsets,
                                         classes=self.classes)
        f64 = torch.float64
        return {"map": torch.tensor(res.full, dtype=f64), "map_rare": torch.tensor(res.rare, dtype=f64),
                "map_non_rare": torch.tensor(res.non_rare, dtype=f64),
                "per_class_ap": torch.as_tensor(np.asarray(res.per_class_ap, dtype=np.float64))}


def _file_name(target: Any, k: int) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, Mapping):
        for key in ("filename", "file_name"):
            if isinstance(target.get(key), str):
                return target[key]
    raise FormatError("expected a file name or a dict with 'filename' (QPIC's HICO-DET test targets)",
                      record=k, field="filename")
