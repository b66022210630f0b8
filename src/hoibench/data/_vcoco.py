"""The V-COCO role-annotation model: the 26 actions, the 25 (action, role) classes, full role
ground truth and scored person detections, columnar as ``vsrl_eval.py`` builds them.

Shared by the V-COCO formats (:mod:`hoibench.formats.vcoco_predictions`,
:mod:`hoibench.formats.vcoco_ground_truth`), the bundled-data resolver (:mod:`hoibench.datasets`)
and role AP (:mod:`hoibench.evaluation`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoibench._exceptions import ValidationError
from hoibench.data._dataset import concat_ranges
from hoibench.vocab import vcoco_actions

__all__ = [
    "DETECTION_PROBLEMS",
    "EXCLUDED_FROM_24",
    "VCOCODetections",
    "VCOCOGroundTruth",
    "vcoco_action_names",
    "vcoco_role_action",
    "vcoco_role_classes",
    "vcoco_role_table",
    "vcoco_schema",
]


#: the (action, role) pair that the 24-pair average of the literature leaves out
EXCLUDED_FROM_24 = "point_instr"


# --------------------------------------------------------------------------- label space
@functools.cache
def vcoco_schema() -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:


    acts = vcoco_actions()
    return (tuple(a["action_name"] for a in acts), tuple(tuple(a["role_name"]) for a in acts))


def vcoco_action_names() -> tuple[str, ...]:
    """The 26 V-COCO actions in the order of ``vcoco_*.json`` (the agent-AP classes)."""
    return vcoco_schema()[0]


@functools.cache
def vcoco_role_table() -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    names, roles = vcoco_schema()
    out, action, slot = [], [], []
    for a, (name, rs) in enumerate(zip(names, roles)):
        for r, role in enumerate(rs[1:]):
            out.append(f"{name}_{role}")
            action.append(a)
            slot.append(r)
    return tuple(out), np.asarray(action, dtype=np.int64), np.asarray(slot, dtype=np.int64)


def vcoco_role_classes() -> tuple[str, ...]:
    """The 25 (action, role) classes of role AP, ``"<action>_<role>"`` (e.g. ``"eat_instr"``).

    Order: action order, then the action's role order (as ``vsrl_eval.py`` loops over them).
    """
    return vcoco_role_table()[0]


def vcoco_role_action() -> np.ndarray:
    return vcoco_role_table()[1]


# --------------------------------------------------------------------------- data
def _as_f32(x: Any, shape_tail: tuple[int, ...], what: str, *, by_column: bool = False) -> np.ndarray:
    """``x`` as float32 of shape ``(n, *shape_tail)``, C-contiguous; with ``by_column``, an array
    whose columns are each contiguous (a class-major stack) is also kept as it is."""
    a = np.asarray(x, dtype=np.float32)
    if a.ndim != 1 + len(shape_tail) or a.shape[1:] != shape_tail:
        raise ValidationError(f"{what} must have shape (n, {', '.join(map(str, shape_tail))}); got {a.shape}")
    if by_column and columns_contiguous(a):
        return a
    return np.ascontiguousarray(a)


def columns_contiguous(a: np.ndarray) -> bool:
    """Whether each column of the 2-D ``a`` is contiguous in memory (``a.T[k]`` is a plain slice)."""
    return a.ndim == 2 and a.strides[0] == a.itemsize


@dataclass(frozen=True, eq=False)
class VCOCOGroundTruth:
    """Full V-COCO role annotations, columnar (what ``vsrl_eval.py`` builds in ``_get_vcocodb``).

    Parameters
    ----------
    image_ids : (I,) int
        COCO image ids, in evaluation order (the reference uses ascending ids).
    person_offsets : (I + 1,) int
        CSR offsets: the people of image ``i`` are rows ``person_offsets[i]:person_offsets[i+1]``,
        in COCO annotation order (the order decides arg-max ties).
    person_boxes : (P, 4) float
        x1, y1, x2, y2 in the reference's inclusive-pixel convention (COCO ``x + w - 1``, clipped).
    person_actions : (P, 26) int
        1 = has the action, 0 = has not, -1 (whole row) = not annotated in V-COCO, ignored.
    role_boxes : (P, 25, 4) float
        box of each role object, NaN when the role is empty or the person lacks the action.
    complete : bool
        False when the source cannot express everything ``vsrl_eval.py`` sees (e.g. built from
        pair annotations only); results then differ from the official protocol.
    """

    image_ids: np.ndarray
    person_offsets: np.ndarray
    person_boxes: np.ndarray
    person_actions: np.ndarray
    role_boxes: np.ndarray
    file_names: tuple[str, ...] | None = None
    complete: bool = True
    source: str = ""

    def __post_init__(self) -> None:
        n_act, n_role = len(vcoco_action_names()), len(vcoco_role_classes())
        ids = np.asarray(self.image_ids, dtype=np.int64).reshape(-1)
        off = np.asarray(self.person_offsets, dtype=np.int64).reshape(-1)
        boxes = _as_f32(self.person_boxes, (4,), "person_boxes")
        acts = np.asarray(self.person_actions, dtype=np.int8)
        roles = _as_f32(self.role_boxes, (n_role, 4), "role_boxes")
        n = boxes.shape[0]
        if off.shape != (ids.size + 1,) or off[0] != 0 or off[-1] != n or np.any(np.diff(off) < 0):
            raise ValidationError("person_offsets must rise from 0 to the number of people, one per image + 1")
        if acts.shape != (n, n_act) or roles.shape[0] != n:
            raise ValidationError(f"person_actions must be ({n}, {n_act}) and role_boxes ({n}, {n_role}, 4); "
                                  f"got {acts.shape} and {roles.shape}")
        if np.unique(ids).size != ids.size:
            raise ValidationError("image_ids must be unique")
        if not np.all(np.isfinite(boxes)):
            raise ValidationError("person_boxes must be finite")
        if np.any((acts < -1) | (acts > 1)):
            raise ValidationError("person_actions must hold -1, 0 or 1")
        ignored = acts[:, 0] == -1
        if np.any((acts == -1).any(axis=1) != ignored) or np.any(acts[ignored] != -1):
            raise ValidationError("an ignored person must have -1 for every action and no other person any -1")
        if self.file_names is not None and len(self.file_names) != ids.size:
            raise ValidationError("file_names must have one name per image")
        for name, value in (("image_ids", ids), ("person_offsets", off), ("person_boxes", boxes),
                            ("person_actions", acts), ("role_boxes", roles)):
            object.__setattr__(self, name, value)

    @property
    def n_images(self) -> int:
        return int(self.image_ids.size)

    @property
    def n_persons(self) -> int:
        return int(self.person_boxes.shape[0])

    @property
    def ignored(self) -> np.ndarray:
        """(P,) bool: people outside V-COCO, whose detections are dropped."""
        return self.person_actions[:, 0] == -1

    def n_positives(self) -> np.ndarray:
        """(26,) people with each action (the positives of agent AP and of its role classes)."""
        return (self.person_actions == 1).sum(axis=0).astype(np.int64)

    def image_index(self, image_ids: Iterable[int] | np.ndarray) -> np.ndarray:
        """Row of each image id, -1 where the id is not in this ground truth."""
        ids = np.asarray(image_ids, dtype=np.int64).reshape(-1)
        order = np.argsort(self.image_ids, kind="stable")
        sorted_ids = self.image_ids[order]
        pos = np.clip(np.searchsorted(sorted_ids, ids), 0, max(sorted_ids.size - 1, 0))
        hit = sorted_ids.size > 0
        found = (sorted_ids[pos] == ids) if hit else np.zeros(ids.size, dtype=bool)
        return np.where(found, order[pos] if hit else -1, -1).astype(np.int64)

    def select(self, image_ids: Iterable[int] | np.ndarray) -> VCOCOGroundTruth:
        """The ground truth of some images, in the order given (unknown ids are an error)."""
        rows = self.image_index(image_ids)
        if np.any(rows < 0):
            bad = np.asarray(image_ids, dtype=np.int64).reshape(-1)[rows < 0][0]
            raise ValidationError(f"image id {int(bad)} is not in the ground truth")
        counts = np.diff(self.person_offsets)[rows]
        off = np.concatenate([[0], np.cumsum(counts)])
        take = concat_ranges(self.person_offsets[rows], counts)
        names = None if self.file_names is None else tuple(self.file_names[i] for i in rows.tolist())
        return VCOCOGroundTruth(
            image_ids=self.image_ids[rows], person_offsets=off, person_boxes=self.person_boxes[take],
            person_actions=self.person_actions[take], role_boxes=self.role_boxes[take],
            file_names=names, complete=self.complete, source=self.source)

    def summary(self) -> dict[str, Any]:
        return {"images": self.n_images, "persons": self.n_persons, "ignored_persons": int(self.ignored.sum()),
                "positives": dict(zip(vcoco_action_names(), self.n_positives().tolist())),
                "complete": self.complete, "source": self.source}


@dataclass(frozen=True, eq=False)
class VCOCODetections:
    """Scored person detections in the layout of ``vsrl_eval.py`` (one row per detected person).

    Parameters
    ----------
    image_ids : (D,) int
        COCO image id of each detection.
    person_boxes : (D, 4) float
        agent box x1, y1, x2, y2, compared with the +1 pixel rule as the reference does.
    agent_scores : (D, 26) float
        score of each action for this person; NaN = not predicted (the detection does not
        take part in that class).
    role_boxes : (D, 25, 4) float
        predicted role object box per role class; all zeros or all NaN = "no role object".
    role_scores : (D, 25) float
        score of each role class (usually agent score x object score); NaN = not predicted.

    Notes
    -----
    Arrays are float32 and C-contiguous, except that the two score arrays may be stored column
    by column (each class's scores contiguous, as the typed reader stacks them for the metric).
    """

    image_ids: np.ndarray
    person_boxes: np.ndarray
    agent_scores: np.ndarray
    role_boxes: np.ndarray
    role_scores: np.ndarray

    def __post_init__(self) -> None:
        n_act, n_role = len(vcoco_action_names()), len(vcoco_role_classes())
        ids = np.asarray(self.image_ids, dtype=np.int64).reshape(-1)
        boxes = _as_f32(self.person_boxes, (4,), "person_boxes")
        agent = _as_f32(self.agent_scores, (n_act,), "agent_scores", by_column=True)
        rbox = _as_f32(self.role_boxes, (n_role, 4), "role_boxes")
        rsc = _as_f32(self.role_scores, (n_role,), "role_scores", by_column=True)
        n = ids.size
        if not (boxes.shape[0] == agent.shape[0] == rbox.shape[0] == rsc.shape[0] == n):
            raise ValidationError("image_ids, person_boxes, agent_scores, role_boxes and role_scores differ in length")
        for name, value in (("image_ids", ids), ("person_boxes", boxes), ("agent_scores", agent),
                            ("role_boxes", rbox), ("role_scores", rsc)):
            object.__setattr__(self, name, value)

    def __len__(self) -> int:
        return int(self.image_ids.size)

    @classmethod
    def empty(cls) -> VCOCODetections:
        n_act, n_role = len(vcoco_action_names()), len(vcoco_role_classes())
        return cls(np.zeros(0, np.int64), np.zeros((0, 4)), np.zeros((0, n_act)),
                   np.zeros((0, n_role, 4)), np.zeros((0, n_role)))

    def subset(self, rows: np.ndarray) -> VCOCODetections:
        return VCOCODetections(self.image_ids[rows], self.person_boxes[rows], self.agent_scores[rows],
                               self.role_boxes[rows], self.role_scores[rows])

    @classmethod
    def concat(cls, parts: Sequence[VCOCODetections]) -> VCOCODetections:
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                     ("image_ids", "person_boxes", "agent_scores", "role_boxes", "role_scores")))

    def problems(self) -> np.ndarray:
        """(D,) int: 0 = fine, else the first problem code of each row (see :data:`DETECTION_PROBLEMS`)."""
        code = np.zeros(len(self), dtype=np.int64)
        if self._all_fine():
            return code

        def mark(mask: np.ndarray, c: int) -> None:
            code[(code == 0) & mask] = c

        b = self.person_boxes
        mark(~np.isfinite(b).all(axis=1), 1)
        mark((b[:, 2] < b[:, 0]) | (b[:, 3] < b[:, 1]), 2)
        mark(np.isinf(self.agent_scores).any(axis=1) | np.isinf(self.role_scores).any(axis=1), 3)
        rb = self.role_boxes
        nan = np.isnan(rb)
        mark((nan.any(axis=2) & ~nan.all(axis=2)).any(axis=1) | np.isinf(rb).any(axis=(1, 2)), 4)
        mark(((rb[..., 2] < rb[..., 0]) | (rb[..., 3] < rb[..., 1])).any(axis=1), 5)
        return code

    def _all_fine(self) -> bool:
        """Whether no row has a problem, from whole-array reductions (the common case, ~5x faster
        than finding each row's first problem), 16,384 rows at a time: the temporaries stay small
        and are reused instead of faulting in (494,600 rows: 0.14 -> 0.10 s, repeated calls)."""
        step = 16_384
        return all(self._rows_fine(i, i + step) for i in range(0, len(self), step))

    def _rows_fine(self, lo: int, hi: int) -> bool:
        b, rb = self.person_boxes[lo:hi], self.role_boxes[lo:hi]
        with np.errstate(invalid="ignore"):
            if not np.isfinite(b).all() or (b[:, 2] < b[:, 0]).any() or (b[:, 3] < b[:, 1]).any():
                return False
            if (np.isinf(self.agent_scores[lo:hi]).any() or np.isinf(self.role_scores[lo:hi]).any()
                    or np.isinf(rb).any()):
                return False
            # a role box is all NaN or has none: its 4 NaN flags (bytes) read as one uint32
            flags = np.isnan(rb).view(np.uint32)
            if not ((flags == 0) | (flags == 0x01010101)).all():
                return False
            return not ((rb[..., 2] < rb[..., 0]).any() or (rb[..., 3] < rb[..., 1]).any())

    def check(self) -> None:
        """Raise :class:`ValidationError` naming the first bad detection."""
        code = self.problems()
        bad = np.flatnonzero(code)
        if bad.size:
            i = int(bad[0])
            raise ValidationError(f"detection {i} (image {int(self.image_ids[i])}): "
                                  f"{DETECTION_PROBLEMS[int(code[i])]} ({bad.size} bad detections in all)")


#: problem codes of :meth:`VCOCODetections.problems`
DETECTION_PROBLEMS = {
    1: "person_box is not finite",
    2: "person_box is inverted (x2 < x1 or y2 < y1)",
    3: "a score is infinite",
    4: "a role box is partly NaN or infinite",
    5: "a role box is inverted (x2 < x1 or y2 < y1)",
}


# --------------------------------------------------------------------------- kernels
