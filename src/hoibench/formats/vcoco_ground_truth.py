"""V-COCO role ground truth, every person of every image, as ``vsrl_eval.py`` builds it from COCO
and ``vcoco_*.json``: read by :func:`read_vcoco_ground_truth`, written by
:func:`write_vcoco_ground_truth`::

    {"kind": "vcoco_ground_truth",
     "box_convention": "inclusive",          # x2 = x1 + w - 1 (vsrl_eval); or "exclusive": x2 = x1 + w
     "images": [{"image_id": 165, "file_name": "COCO_val2014_000000000165.jpg",
                 "persons": [{"box": [x1, y1, x2, y2], "ignore": true},        # not in V-COCO
                             {"box": [...], "actions": {"stand": {},         # action, no role
                                                        "hold": {"obj": [x1, y1, x2, y2]},
                                                        "eat": {"obj": null, "instr": [...]}}}]}]}

An action a person is not listed with is a negative; a role given as ``null`` or left out is an
empty role (scenario 1/2). People are kept in the order given (the reference matches a detection to
the *first* best person). Sources: :func:`vcoco_ground_truth_from_official` (the official
``vcoco_test.json`` + COCO instances, exactly ``_get_vcocodb``) and
:func:`vcoco_ground_truth_from_dataset` (the pair annotations of ``load_dataset("v-coco:test")``:
incomplete, see ``docs/evaluation.md``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hoibench._exceptions import FormatError, ValidationError
from hoibench._io import atomic_write_json, read_json, refuses_deep_nesting
from hoibench.data import HOIDataset, VCOCOGroundTruth
from hoibench.data._vcoco import (
    vcoco_action_names,
    vcoco_role_classes,
    vcoco_role_table,
    vcoco_schema,
)
from hoibench.formats.vcoco_predictions import _image_id, _vec

__all__ = [
    "read_vcoco_ground_truth",
    "vcoco_ground_truth_from_dataset",
    "vcoco_ground_truth_from_official",
    "write_vcoco_ground_truth",
]


def _inclusive(boxes: np.ndarray) -> np.ndarray:
    """Exclusive (x2 = x1 + w) → the reference's inclusive boxes: x2 = x1 + max(0, w - 1)."""
    b = np.array(boxes, dtype=np.float64, copy=True)
    w = np.maximum(0.0, (b[..., 2] - b[..., 0]) - 1.0)
    h = np.maximum(0.0, (b[..., 3] - b[..., 1]) - 1.0)
    b[..., 2] = b[..., 0] + w
    b[..., 3] = b[..., 1] + h
    return b


class _GTBuilder:
    """Collects people image by image and assembles a :class:`VCOCOGroundTruth`."""

    def __init__(self) -> None:
        self.n_act, self.n_role = len(vcoco_action_names()), len(vcoco_role_classes())
        self.ids: list[int] = []
        self.names: list[str] = []
        self.counts: list[int] = []
        self.boxes: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.roles: list[np.ndarray] = []

    def add_image(self, image_id: int, file_name: str, boxes: np.ndarray, actions: np.ndarray,
                  roles: np.ndarray) -> None:
        self.ids.append(image_id)
        self.names.append(file_name)
        self.counts.append(len(boxes))
        self.boxes.append(np.asarray(boxes, dtype=np.float64).reshape(-1, 4))
        self.actions.append(np.asarray(actions, dtype=np.int8).reshape(-1, self.n_act))
        self.roles.append(np.asarray(roles, dtype=np.float64).reshape(-1, self.n_role, 4))

    def build(self, *, complete: bool, source: str) -> VCOCOGroundTruth:
        def cat(xs: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
            return np.concatenate(xs) if xs else np.zeros(shape)

        return VCOCOGroundTruth(
            image_ids=np.asarray(self.ids, dtype=np.int64),
            person_offsets=np.concatenate([[0], np.cumsum(self.counts, dtype=np.int64)]),
            person_boxes=cat(self.boxes, (0, 4)), person_actions=cat(self.actions, (0, self.n_act)),
            role_boxes=cat(self.roles, (0, self.n_role, 4)), file_names=tuple(self.names),
            complete=complete, source=source)


@refuses_deep_nesting
def read_vcoco_ground_truth(path: str | os.PathLike[str], *, data: Any = None) -> VCOCOGroundTruth:
    """Read the hoibench ground-truth layout (see the module docstring)."""
    if data is None:
        data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise FormatError("not a V-COCO ground-truth file (needs 'images')", file=path)
    conv = data.get("box_convention", "inclusive")
    if conv not in ("inclusive", "exclusive"):
        raise FormatError(f"must be 'inclusive' or 'exclusive', got {conv!r}", file=path, field="box_convention")
    names, roles = vcoco_schema()
    act_index = {a: i for i, a in enumerate(names)}
    role_index = {c: i for i, c in enumerate(vcoco_role_classes())}
    b = _GTBuilder()
    for k, img in enumerate(data["images"]):
        if not isinstance(img, dict):
            raise FormatError("expected an object", file=path, record=k)
        image_id = _image_id(img, path, k)
        persons = img.get("persons")
        if not isinstance(persons, list):
            raise FormatError("missing or not a list", file=path, record=k, field="persons")
        n = len(persons)
        boxes = np.zeros((n, 4))
        acts = np.zeros((n, b.n_act), dtype=np.int8)
        rbox = np.full((n, b.n_role, 4), np.nan)
        for p, person in enumerate(persons):
            where = f"persons[{p}]"
            if not isinstance(person, dict):
                raise FormatError("expected an object", file=path, record=k, field=where)
            boxes[p] = _gt_box(person.get("box"), path, k, f"{where}.box")
            if person.get("ignore", False):
                if person.get("actions"):
                    raise FormatError("an ignored person cannot have actions", file=path, record=k, field=where)
                acts[p] = -1
                continue
            actions = person.get("actions", {})
            if not isinstance(actions, dict):
                raise FormatError("expected an object {action: {role: box}}", file=path, record=k,
                                  field=f"{where}.actions")
            for action, rdict in actions.items():
                if action not in act_index:
                    raise FormatError(f"unknown action {action!r}; known: {', '.join(names)}", file=path,
                                      record=k, field=f"{where}.actions")
                a = act_index[action]
                acts[p, a] = 1
                if rdict is None:
                    continue
                if not isinstance(rdict, dict):
                    raise FormatError("expected an object {role: box or null}", file=path, record=k,
                                      field=f"{where}.actions.{action}")
                for role, box in rdict.items():
                    key = f"{action}_{role}"
                    if key not in role_index:
                        raise FormatError(f"action {action!r} has no role {role!r} (roles: "
                                          f"{', '.join(roles[a][1:]) or 'none'})", file=path, record=k,
                                          field=f"{where}.actions.{action}")
                    if box is not None:
                        rbox[p, role_index[key]] = _gt_box(box, path, k, f"{where}.actions.{action}.{role}")
        if conv == "exclusive":
            boxes = _inclusive(boxes)
            rbox = _inclusive(rbox)
        name = img.get("file_name", "")
        b.add_image(image_id, name if isinstance(name, str) else "", boxes, acts, rbox)
    try:
        return b.build(complete=bool(data.get("complete", True)), source=str(path))
    except ValidationError as exc:  # e.g. duplicate image ids
        raise FormatError(str(exc), file=path) from None


def _gt_box(value: Any, path: object, record: int, key: str) -> np.ndarray:
    v = _vec(value, 4, path, record, key)
    if not np.all(np.isfinite(v)) or v[2] < v[0] or v[3] < v[1]:
        raise FormatError(f"expected a finite box with x1 <= x2 and y1 <= y2, got {value!r}",
                          file=path, record=record, field=key)
    return v


def write_vcoco_ground_truth(gt: VCOCOGroundTruth, path: str | os.PathLike[str]) -> None:
    """Write the hoibench ground-truth layout (inclusive boxes, as evaluated)."""
    names, roles = vcoco_schema()
    role_names = vcoco_role_classes()
    _, role_action, role_slot = vcoco_role_table()
    images = []
    for i in range(gt.n_images):
        lo, hi = int(gt.person_offsets[i]), int(gt.person_offsets[i + 1])
        persons = []
        for p in range(lo, hi):
            entry: dict[str, Any] = {"box": gt.person_boxes[p].astype(np.float64).tolist()}
            if gt.person_actions[p, 0] == -1:
                entry["ignore"] = True
            else:
                acts: dict[str, dict[str, Any]] = {}
                for a in np.flatnonzero(gt.person_actions[p] == 1):
                    acts[names[a]] = {}
                for c in range(len(role_names)):
                    a, role = int(role_action[c]), roles[int(role_action[c])][int(role_slot[c]) + 1]
                    if names[a] in acts:
                        box = gt.role_boxes[p, c]
                        acts[names[a]][role] = None if np.isnan(box).all() else box.astype(np.float64).tolist()
                entry["actions"] = acts
            persons.append(entry)
        name = gt.file_names[i] if gt.file_names is not None else ""
        images.append({"image_id": int(gt.image_ids[i]), "file_name": name, "persons": persons})
    atomic_write_json(path, {"kind": "vcoco_ground_truth", "box_convention": "inclusive",
                             "complete": gt.complete, "images": images})


def vcoco_ground_truth_from_official(vcoco_json: str | os.PathLike[str] | list[dict[str, Any]],
                                     coco_instances: str | os.PathLike[str] | dict[str, Any],
                                     *, image_ids: Any = None) -> VCOCOGroundTruth:
    """Build the full ground truth as ``vsrl_eval.VCOCOeval._get_vcocodb`` does.

    ``vcoco_json`` is the official ``vcoco_{test,...}.json`` (26 action records); ``coco_instances``
    the COCO ``instances_*.json`` holding those images (``instances_val2014.json`` for the test
    split). ``image_ids`` (default: the V-COCO images, ascending, as in ``vcoco_test.ids``).
    Per image: every COCO annotation without ``ignore`` becomes ``[x, y, x + max(0, w - 1),
    y + max(0, h - 1)]`` clipped to the image, kept when its area > 0 and it is wider and taller
    than a point; the people (category ``person``) in COCO order are the ground truth, those not in
    V-COCO ignored.
    """
    vpath = "<vcoco json>" if isinstance(vcoco_json, list) else str(vcoco_json)
    cpath = "<coco instances>" if isinstance(coco_instances, dict) else str(coco_instances)
    vdata = vcoco_json if isinstance(vcoco_json, list) else read_json(vcoco_json)
    cdata = coco_instances if isinstance(coco_instances, dict) else read_json(coco_instances)
    names, roles = vcoco_schema()
    if not isinstance(vdata, list) or [r.get("action_name") for r in vdata if isinstance(r, dict)] != list(names):
        raise FormatError(f"expected the 26 V-COCO action records in the order {', '.join(names)}", file=vpath)
    role_index = {c: i for i, c in enumerate(vcoco_role_classes())}
    # person (ann id) → action → role object ann ids (0 = none)
    labelled: dict[int, dict[int, list[int]]] = {}
    in_vcoco: set[int] = set()
    for a, rec in enumerate(vdata):
        if list(rec.get("role_name", [])) != list(roles[a]):
            raise FormatError(f"role_name must be {list(roles[a])}", file=vpath, record=a, field="role_name")
        ann = np.asarray(rec["ann_id"], dtype=np.int64).reshape(-1)
        lab = np.asarray(rec["label"], dtype=np.int64).reshape(-1)
        rid = np.asarray(rec["role_object_id"], dtype=np.int64).reshape(len(roles[a]), -1).T
        if a == 0:
            in_vcoco = set(ann.tolist())
        if lab.size != ann.size or rid.shape[0] != ann.size:
            raise FormatError("ann_id, label and role_object_id differ in length", file=vpath, record=a)
        for k in np.flatnonzero(lab == 1):
            acts = labelled.setdefault(int(ann[k]), {})
            if a in acts:
                raise FormatError(f"person {int(ann[k])} is labelled twice", file=vpath, record=a, field="label")
            acts[a] = rid[k, 1:].tolist()
    if image_ids is None:
        ids = np.unique(np.asarray(vdata[0]["image_id"], dtype=np.int64))
    else:
        ids = np.asarray(image_ids, dtype=np.int64).reshape(-1)
    cats = {c["name"]: c["id"] for c in cdata.get("categories", [])}
    if "person" not in cats:
        raise FormatError("no 'person' category", file=cpath, field="categories")
    person_cat = cats["person"]
    imgs = {int(im["id"]): im for im in cdata["images"]}
    anns_of: dict[int, list[dict[str, Any]]] = {}
    for ann in cdata["annotations"]:
        anns_of.setdefault(int(ann["image_id"]), []).append(ann)
    b = _GTBuilder()
    for image_id in ids.tolist():
        if image_id not in imgs:
            raise FormatError(f"image {image_id} is not in the COCO file", file=cpath, field="images")
        im = imgs[image_id]
        width, height = float(im["width"]), float(im["height"])
        valid: dict[int, tuple[np.ndarray, bool]] = {}
        order: list[int] = []
        for ann in anns_of.get(image_id, []):
            if ann.get("ignore", 0) == 1:
                continue
            x1, y1, w, h = (float(v) for v in ann["bbox"])
            x2 = x1 + max(0.0, w - 1.0)
            y2 = y1 + max(0.0, h - 1.0)
            x1, x2 = (min(width - 1.0, max(0.0, v)) for v in (x1, x2))
            y1, y2 = (min(height - 1.0, max(0.0, v)) for v in (y1, y2))
            if ann["area"] > 0 and x2 > x1 and y2 > y1:
                valid[int(ann["id"])] = (np.array([x1, y1, x2, y2]), ann["category_id"] == person_cat)
                order.append(int(ann["id"]))
        people = [i for i in order if valid[i][1]]
        n = len(people)
        boxes = np.array([valid[i][0] for i in people]).reshape(n, 4)
        acts = np.zeros((n, b.n_act), dtype=np.int8)
        rbox = np.full((n, b.n_role, 4), np.nan)
        for p, ann_id in enumerate(people):
            if ann_id not in in_vcoco:
                acts[p] = -1
                continue
            for a, objs in labelled.get(ann_id, {}).items():
                acts[p, a] = 1
                for r, obj in enumerate(objs):
                    if obj == 0:
                        continue
                    if obj not in valid:
                        raise FormatError(f"role object {obj} of person {ann_id} ({names[a]}) is not a valid "
                                          f"COCO annotation of image {image_id}", file=vpath, record=a,
                                          field="role_object_id")
                    rbox[p, role_index[f"{names[a]}_{roles[a][r + 1]}"]] = valid[obj][0]
        b.add_image(image_id, str(im.get("file_name", "")), boxes, acts, rbox)
    return b.build(complete=True, source=f"{vpath} + {cpath}")


def vcoco_ground_truth_from_dataset(ds: HOIDataset) -> VCOCOGroundTruth:
    """Role ground truth from V-COCO *pair* annotations (e.g. ``load_dataset("v-coco:test")``).

    Incomplete (``complete=False``): pairs cannot say which people are outside V-COCO (none is
    ignored), list no person whose only actions have no role object (agent-only actions such as
    ``stand``, or an action whose role object is absent), and boxes are converted from
    ``x2 = x1 + w`` to the reference's ``x1 + w - 1`` without clipping (image sizes unknown).
    People are the distinct subject boxes of each image, in order of first appearance.
    """
    if ds.vocab.name != "v-coco":
        raise FormatError(f"expected a V-COCO dataset, got label space {ds.vocab.name!r}", file=ds.name)
    names, _ = vcoco_schema()
    role_index = {c: i for i, c in enumerate(vcoco_role_classes())}
    verb_action = []
    verb_role = []
    for v in ds.vocab.verbs:
        if v in names:
            verb_action.append(names.index(v))
            verb_role.append(-1)
        else:
            action = v.rsplit("_", 1)[0]
            verb_action.append(names.index(action))
            verb_role.append(role_index[v])
    verb_action_a, verb_role_a = np.asarray(verb_action, dtype=np.int64), np.asarray(verb_role, dtype=np.int64)
    n_act, n_role = len(names), len(role_index)
    image = np.repeat(np.arange(ds.n_images), np.diff(ds.pair_offsets))
    # a person per distinct (image, subject box), numbered in order of first appearance
    sub = ds.boxes[ds.pair_subject] + 0.0  # -0.0 and 0.0 are the same box
    _, first, inverse = np.unique(np.column_stack([image, sub]), axis=0, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")
    person_of = np.empty_like(by_first)
    person_of[by_first] = np.arange(by_first.size)
    person = person_of[inverse.reshape(-1)]
    first = first[by_first]
    n = first.size
    acts = np.zeros((n, n_act), dtype=np.int8)
    acts[person, verb_action_a[ds.pair_verb]] = 1
    rbox = np.full((n, n_role, 4), np.nan)
    role = verb_role_a[ds.pair_verb]
    has = np.flatnonzero((role >= 0) & (ds.pair_object >= 0))
    _, once = np.unique(person[has] * n_role + role[has], return_index=True)  # the first pair per role
    k = has[once]
    rbox[person[k], role[k]] = ds.boxes[ds.pair_object[k]]
    counts = np.bincount(image[first], minlength=ds.n_images)
    return VCOCOGroundTruth(
        image_ids=np.asarray(ds.image_ids, dtype=np.int64), person_offsets=np.r_[0, np.cumsum(counts)],
        person_boxes=_inclusive(ds.boxes[ds.pair_subject[first]].reshape(n, 4)), person_actions=acts,
        role_boxes=_inclusive(rbox), file_names=tuple(ds.file_names), complete=False, source=ds.name)


