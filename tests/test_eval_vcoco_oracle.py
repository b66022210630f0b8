"""V-COCO role AP against an independent, deliberately plain oracle on synthetic data.

``make_synthetic`` writes what ``vsrl_eval.py`` reads: a COCO instances dict, the 26 V-COCO action
records and person detections, with the cases the reference treats specially (people outside
V-COCO, actions without role objects, invalid and out-of-image COCO boxes, duplicate and
background detections, NaN scores, zero/NaN role boxes). ``oracle_vcoco`` is a second, loop-based
implementation of the protocol written from its description (module docstring of
``hoibench.evaluation._vcoco``), sharing no code with the evaluator. Both must agree exactly.

The same generator drives the side-by-side run against the real ``vsrl_eval.py`` (see
docs/protocols.md), which is not part of the test suite.
"""

from __future__ import annotations

import numpy as np
import pytest

from hoibench.data import VCOCODetections, vcoco_action_names, vcoco_role_classes
from hoibench.evaluation import vcoco_role_ap
from hoibench.evaluation._vcoco import _first_hits
from hoibench.formats import vcoco_ground_truth_from_official
from hoibench.vocab import vcoco_actions

ACTIONS = vcoco_actions()
N_ACT = len(ACTIONS)
ROLE_CLASSES = [(a, r) for a, act in enumerate(ACTIONS) for r in range(len(act["role_name"]) - 1)]


# --------------------------------------------------------------------------- synthetic data
def _jitter(rng: np.random.Generator, box: np.ndarray, scale: float) -> np.ndarray:
    w, h = box[2] - box[0], box[3] - box[1]
    out = box + rng.normal(0, scale, 4) * np.array([w, h, w, h])
    out[2] = max(out[2], out[0] + 1)
    out[3] = max(out[3], out[1] + 1)
    return np.round(out, 2)


def make_synthetic(seed: int, n_images: int = 40) -> tuple[dict, list[dict], VCOCODetections]:
    rng = np.random.default_rng(seed)
    W, H = 640, 480
    images, anns, cats = [], [], [{"id": 1, "name": "person"}, {"id": 2, "name": "bicycle"},
                                  {"id": 3, "name": "car"}, {"id": 4, "name": "cup"}]
    vc_person: list[tuple[int, int]] = []  # (image id, ann id) of V-COCO people
    valid_of: dict[int, list[tuple[int, np.ndarray]]] = {}
    next_id = 1
    for i in range(n_images):
        img_id = 1000 + 7 * i
        images.append({"id": img_id, "width": W, "height": H, "file_name": f"COCO_val2014_{img_id:012d}.jpg"})
        valid_of[img_id] = []
        n_people = int(rng.integers(1, 5))
        n_obj = int(rng.integers(0, 5))
        for k in range(n_people + n_obj):
            x, y = rng.uniform(-20, W - 60), rng.uniform(-20, H - 60)
            w, h = rng.uniform(20, 260), rng.uniform(20, 260)  # may leave the image: clipped
            bbox = [round(float(x), 2), round(float(y), 2), round(float(w), 2), round(float(h), 2)]
            ann = {"id": next_id, "image_id": img_id, "category_id": 1 if k < n_people else int(rng.integers(2, 5)),
                   "bbox": bbox, "area": float(w * h), "iscrowd": 0}
            kind = rng.random()
            if kind < 0.04:
                ann["area"] = 0.0  # invalid: dropped by the reference
            elif kind < 0.07:
                ann["ignore"] = 1
            anns.append(ann)
            if ann["area"] > 0 and not ann.get("ignore"):
                x1, y1 = max(0.0, bbox[0]), max(0.0, bbox[1])
                x2 = min(W - 1.0, bbox[0] + max(0.0, bbox[2] - 1))
                y2 = min(H - 1.0, bbox[1] + max(0.0, bbox[3] - 1))
                if x2 > x1 and y2 > y1:
                    valid_of[img_id].append((next_id, np.array([x1, y1, x2, y2])))
                    if k < n_people and (rng.random() < 0.8 or not any(p[0] == img_id for p in vc_person)):
                        vc_person.append((img_id, next_id))
            next_id += 1
    # every image needs one V-COCO person (vsrl_eval asserts it): add one where missing
    have = {p[0] for p in vc_person}
    for im in images:
        if im["id"] not in have:
            bbox = [100.0, 100.0, 120.0, 200.0]
            anns.append({"id": next_id, "image_id": im["id"], "category_id": 1, "bbox": bbox,
                         "area": 24000.0, "iscrowd": 0})
            valid_of[im["id"]].append((next_id, np.array([100.0, 100.0, 219.0, 299.0])))
            vc_person.append((im["id"], next_id))
            next_id += 1
    vc_person.sort()
    vcoco = []
    truth: dict[tuple[int, int], list[int]] = {}  # (ann, action) -> role object ids
    for a, act in enumerate(ACTIONS):
        n_roles = len(act["role_name"])
        labels, roles = [], [[] for _ in range(n_roles)]
        for img_id, ann_id in vc_person:
            lab = int(rng.random() < 0.3)
            labels.append(lab)
            roles[0].append(ann_id)
            objs = [o for o, _ in valid_of[img_id] if o != ann_id]
            chosen = []
            for r in range(1, n_roles):
                obj = int(rng.choice(objs)) if (lab and objs and rng.random() < 0.7) else 0
                roles[r].append(obj)
                chosen.append(obj)
            if lab:
                truth[(ann_id, a)] = chosen
        vcoco.append({"action_name": act["action_name"], "role_name": list(act["role_name"]),
                      "include": act["include"], "image_id": [p[0] for p in vc_person],
                      "ann_id": [p[1] for p in vc_person], "label": labels,
                      "role_object_id": [x for r in roles for x in r]})
    coco = {"images": images, "annotations": anns, "categories": cats}

    # detections
    rows = []
    box_of = {o: b for v in valid_of.values() for o, b in v}
    for im in images:
        img_id = im["id"]
        people = [(o, b) for o, b in valid_of[img_id]
                  if any(a["id"] == o and a["category_id"] == 1 for a in anns)]
        targets: list[tuple[int | None, np.ndarray]] = []
        for o, b in people:
            for _ in range(int(rng.integers(0, 3))):
                targets.append((o, _jitter(rng, b, rng.choice([0.02, 0.08, 0.2]))))
            if rng.random() < 0.15 and targets:
                targets.append(targets[-1])  # exact duplicate box
        for _ in range(int(rng.integers(0, 3))):  # background
            x, y = rng.uniform(0, W - 50), rng.uniform(0, H - 50)
            targets.append((None, np.round(np.array([x, y, x + rng.uniform(10, 200), y + rng.uniform(10, 200)]), 2)))
        for o, pbox in targets:
            acts = [a for a in range(N_ACT) if o is not None and (o, a) in truth]
            agent = rng.random(N_ACT) * 0.8
            agent[acts] += 0.4  # informative scores: a spread of APs
            agent[rng.random(N_ACT) < 0.05] = np.nan
            rbox = np.zeros((len(ROLE_CLASSES), 4))
            rsc = rng.random(len(ROLE_CLASSES)) * 0.8
            rsc[[c for c, (a, _r) in enumerate(ROLE_CLASSES) if a in acts]] += 0.4
            rsc[rng.random(len(ROLE_CLASSES)) < 0.05] = np.nan
            for c, (a, r) in enumerate(ROLE_CLASSES):
                objs = truth.get((o, a)) if o is not None else None
                u = rng.random()
                if objs is not None and objs[r] != 0 and u < 0.6:
                    rbox[c] = _jitter(rng, box_of[objs[r]], rng.choice([0.02, 0.1, 0.25]))
                elif u < 0.75:
                    rbox[c] = 0.0
                elif u < 0.85:
                    rbox[c] = np.nan
                else:
                    others = [b for _, b in valid_of[img_id]]
                    rbox[c] = others[int(rng.integers(len(others)))]
            rows.append((img_id, pbox, agent, rbox, rsc))
    n = len(rows)
    # distinct float32 scores per class (ties are ranked differently by each implementation)
    agent = np.stack([r[2] for r in rows])
    rsc = np.stack([r[4] for r in rows])
    for mat in (agent, rsc):
        for c in range(mat.shape[1]):
            ok = ~np.isnan(mat[:, c])
            ranks = np.argsort(np.argsort(mat[ok, c], kind="stable"), kind="stable")
            mat[ok, c] = (ranks + 1) / (n + 1)
    det = VCOCODetections(np.array([r[0] for r in rows]), np.stack([r[1] for r in rows]), agent,
                          np.stack([r[3] for r in rows]), rsc)
    return coco, vcoco, det


# --------------------------------------------------------------------------- the oracle
def _iou32(a: np.ndarray, b: np.ndarray) -> np.float32:
    """IoU of two boxes, +1 pixel rule, float32 steps (the protocol's definition)."""
    a, b = a.astype(np.float32), b.astype(np.float32)
    one = np.float32(1)
    iw = max(min(a[2], b[2]) - max(a[0], b[0]) + one, np.float32(0))
    ih = max(min(a[3], b[3]) - max(a[1], b[1]) + one, np.float32(0))
    inter = iw * ih
    union = (b[2] - b[0] + one) * (b[3] - b[1] + one) + (a[2] - a[0] + one) * (a[3] - a[1] + one) - inter
    return inter / union


def _ap(tp_in_rank_order: list[bool], npos: int) -> float:
    tp = np.cumsum(np.array(tp_in_rank_order, dtype=np.float32), dtype=np.float32)
    fp = np.cumsum(1 - np.array(tp_in_rank_order, dtype=np.float32), dtype=np.float32)
    rec = tp / np.float32(npos)
    prec = np.float64(1) * tp / np.maximum(np.float64(1) * (tp + fp), 2.0**-52)  # float64 precision
    # area under the non-increasing envelope, summed over the recall steps
    r = [0.0, *rec.astype(np.float64).tolist(), 1.0]
    p = [0.0, *prec.astype(np.float64).tolist(), 0.0]
    for k in range(len(p) - 2, -1, -1):
        p[k] = max(p[k], p[k + 1])
    steps = np.array([(r[k + 1] - r[k]) * p[k + 1] for k in range(len(r) - 1) if r[k + 1] != r[k]])
    return float(np.float32(np.sum(steps)))


def oracle_vcoco(coco: dict, vcoco: list[dict], det: VCOCODetections) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    img_size = {im["id"]: (im["width"], im["height"]) for im in coco["images"]}
    people: dict[int, list[dict]] = {}
    boxes: dict[int, np.ndarray] = {}
    for ann in coco["annotations"]:
        if ann.get("ignore") == 1:
            continue
        W, H = img_size[ann["image_id"]]
        x, y, w, h = ann["bbox"]
        x2, y2 = x + max(0.0, w - 1), y + max(0.0, h - 1)
        x1, x2 = (min(W - 1.0, max(0.0, v)) for v in (x, x2))
        y1, y2 = (min(H - 1.0, max(0.0, v)) for v in (y, y2))
        if not (ann["area"] > 0 and x2 > x1 and y2 > y1):
            continue
        boxes[ann["id"]] = np.array([x1, y1, x2, y2], dtype=np.float32)
        if ann["category_id"] == 1:
            people.setdefault(ann["image_id"], []).append({"id": ann["id"], "actions": None})
    in_vcoco = set(vcoco[0]["ann_id"])
    for plist in people.values():
        for p in plist:
            if p["id"] in in_vcoco:
                p["actions"] = {}
    for a, rec in enumerate(vcoco):
        n = len(rec["ann_id"])
        for k in range(n):
            if rec["label"][k] == 1:
                objs = [rec["role_object_id"][r * n + k] for r in range(1, len(rec["role_name"]))]
                for plist in people.values():
                    for p in plist:
                        if p["id"] == rec["ann_id"][k]:
                            p["actions"][a] = objs
    npos = np.zeros(N_ACT, dtype=int)
    for plist in people.values():
        for p in plist:
            for a in (p["actions"] or {}):
                npos[a] += 1
    image_order = sorted(img_size)
    dets_of_image: dict[int, list[int]] = {}
    for d, img in enumerate(det.image_ids.tolist()):
        dets_of_image.setdefault(img, []).append(d)

    def run(score_of, judge) -> float:
        entries = []  # (score, image position, detection, tp)
        for pos, img in enumerate(image_order):
            plist = people.get(img, [])
            rows = [d for d in dets_of_image.get(img, []) if not np.isnan(score_of(d))]
            rows.sort(key=lambda d: (-np.float32(score_of(d)), d))
            covered = set()
            for d in rows:
                best, best_ov = None, -1.0
                for j, p in enumerate(plist):
                    ov = _iou32(boxes[p["id"]], det.person_boxes[d])
                    if ov > best_ov:
                        best, best_ov = j, ov
                if best is not None and plist[best]["actions"] is None:
                    continue  # person outside V-COCO: dropped
                hit = best is not None and best_ov >= 0.5 and judge(d, plist[best])
                tp = hit and best not in covered
                if tp:
                    covered.add(best)
                entries.append((-np.float32(score_of(d)), pos, d, tp))
        entries.sort(key=lambda e: e[:3])
        return [e[3] for e in entries]

    agent_ap = np.full(N_ACT, np.nan)
    for a in range(N_ACT):
        if npos[a]:
            agent_ap[a] = _ap(run(lambda d, a=a: det.agent_scores[d, a],
                                  lambda d, p, a=a: a in p["actions"]), npos[a])
    role_ap = {}
    for s in (1, 2):
        out = np.full(len(ROLE_CLASSES), np.nan)
        for c, (a, r) in enumerate(ROLE_CLASSES):

            def judge(d: int, p: dict, a: int = a, r: int = r, c: int = c, s: int = s) -> bool:
                if a not in p["actions"]:
                    return False
                obj = p["actions"][a][r]
                pred = det.role_boxes[d, c]
                if obj == 0:
                    no_box = bool(np.all(pred == 0) or np.all(np.isnan(pred)))
                    return no_box if s == 1 else True
                return bool(_iou32(boxes[obj], pred) >= 0.5)

            if npos[a]:
                out[c] = _ap(run(lambda d, c=c: det.role_scores[d, c], judge), npos[a])
        role_ap[s] = out
    return agent_ap, role_ap


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_oracle_on_synthetic_data(seed: int) -> None:
    coco, vcoco, det = make_synthetic(seed, n_images=25)
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    res = vcoco_role_ap(det, gt)
    agent, role = oracle_vcoco(coco, vcoco, det)
    assert res.action_names == vcoco_action_names() and res.role_class_names == vcoco_role_classes()
    np.testing.assert_array_equal(res.agent_ap, agent)
    np.testing.assert_array_equal(res.role_ap[1], role[1])
    np.testing.assert_array_equal(res.role_ap[2], role[2])
    # the data exercise the special cases: ignored people, empty roles, scenario 1 != 2
    assert gt.ignored.any()
    assert np.isnan(gt.role_boxes[gt.person_actions[:, 0] == 1, 0]).any()
    assert not np.array_equal(res.role_ap[1], res.role_ap[2])
    assert 0.05 < res.agent_map < 0.95


@pytest.mark.parametrize("seed", [3, 4])
def test_matches_oracle_with_every_class_scored_on_every_detection(seed: int, monkeypatch) -> None:
    """The dense case (no NaN score, no detection on an ignored person): each class takes every
    detection, which the metric reads as views of the score columns instead of gathered copies;
    same APs as the oracle, and the views are really taken."""
    import hoibench.evaluation._vcoco as mod

    coco, vcoco, det = make_synthetic(seed, n_images=25)
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    person, _ = mod._match_persons(gt, gt.image_index(det.image_ids), det.person_boxes)
    det = det.subset(np.flatnonzero((person < 0) | ~gt.ignored[np.maximum(person, 0)]))  # none on ignored people
    n = len(det)
    scores = []
    for mat in (det.agent_scores, det.role_scores):  # every score distinct within its class
        mat = np.where(np.isnan(mat), -1.0, mat)
        scores.append(np.stack([(np.argsort(np.argsort(col, kind="stable"), kind="stable") + 1) / (n + 1)
                                for col in mat.T], axis=1))
    det = VCOCODetections(det.image_ids, det.person_boxes, scores[0], det.role_boxes, scores[1])
    assert gt.ignored.any() and not np.isnan(det.agent_scores).any() and not np.isnan(det.role_scores).any()
    taken = []
    monkeypatch.setattr(mod, "_first_hits", lambda hit, group, score: taken.append(score.base is not None)
                        or _first_hits(hit, group, score))
    res = vcoco_role_ap(det, gt)
    agent, role = oracle_vcoco(coco, vcoco, det)
    np.testing.assert_array_equal(res.agent_ap, agent)
    np.testing.assert_array_equal(res.role_ap[1], role[1])
    np.testing.assert_array_equal(res.role_ap[2], role[2])
    assert taken and all(taken)  # every class's scores were a view of the column


def test_batched_updates_equal_one_call() -> None:
    from hoibench.evaluation import VCOCORoleAP

    coco, vcoco, det = make_synthetic(5, n_images=30)
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    whole = vcoco_role_ap(det, gt)
    metric = VCOCORoleAP()
    for part in np.array_split(gt.image_ids, 4):
        metric.update(det.subset(np.flatnonzero(np.isin(det.image_ids, part))), gt.select(part))
    split = metric.compute()
    np.testing.assert_array_equal(split.agent_ap, whole.agent_ap)
    for s in (1, 2):
        np.testing.assert_array_equal(split.role_ap[s], whole.role_ap[s])


def test_matches_oracle_on_real_vcoco_test_boxes() -> None:
    """Real people, role objects and labels (the first 120 images with people of the bundled test set,
    a quarter of the other people taken out of V-COCO), noisy detections; evaluator and oracle must agree."""
    from hoibench.datasets import resolve_vcoco_ground_truth

    real = resolve_vcoco_ground_truth("v-coco:test")
    real = real.select(real.image_ids[np.diff(real.person_offsets) > 0][:120])
    rng = np.random.default_rng(7)
    images, anns, vcoco_people = [], [], []
    next_id = 1
    role_ann: dict[tuple[int, int], int] = {}
    for i in range(real.n_images):
        img_id = int(real.image_ids[i])
        lo, hi = int(real.person_offsets[i]), int(real.person_offsets[i + 1])
        boxes = [real.person_boxes[lo:hi], real.role_boxes[lo:hi].reshape(-1, 4)]
        extent = np.nanmax(np.concatenate(boxes), initial=10.0)
        images.append({"id": img_id, "width": int(extent) + 2, "height": int(extent) + 2})

        def add(box: np.ndarray, cat: int, img_id: int = img_id) -> int:
            nonlocal next_id
            x1, y1, x2, y2 = (float(v) for v in box)
            anns.append({"id": next_id, "image_id": img_id, "category_id": cat,
                         "bbox": [x1, y1, x2 - x1 + 1, y2 - y1 + 1], "area": (x2 - x1 + 1) * (y2 - y1 + 1)})
            next_id += 1
            return next_id - 1

        for p in range(lo, hi):
            ann = add(real.person_boxes[p], 1)
            if rng.random() > 0.25 or p == lo:
                vcoco_people.append((img_id, ann, p))
            for c in range(len(ROLE_CLASSES)):
                if not np.isnan(real.role_boxes[p, c, 0]):
                    role_ann[(p, c)] = add(real.role_boxes[p, c], 2)
    vcoco = []
    for a, act in enumerate(ACTIONS):
        roles = [[ann for _, ann, _ in vcoco_people]]
        for r in range(1, len(act["role_name"])):
            c = ROLE_CLASSES.index((a, r - 1))
            roles.append([role_ann.get((p, c), 0) for _, _, p in vcoco_people])
        vcoco.append({"action_name": act["action_name"], "role_name": list(act["role_name"]),
                      "image_id": [im for im, _, _ in vcoco_people], "ann_id": roles[0],
                      "label": [int(real.person_actions[p, a] == 1) for _, _, p in vcoco_people],
                      "role_object_id": [x for r in roles for x in r]})
    coco = {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "person"},
                                                                  {"id": 2, "name": "thing"}]}
    gt = vcoco_ground_truth_from_official(vcoco, coco)
    assert gt.ignored.sum() >= 5 and gt.n_images == 120

    # detections: 0-3 jittered copies of each person, background boxes, informative scores
    pick = np.repeat(np.arange(gt.n_persons), rng.integers(0, 4, gt.n_persons))
    n = pick.size
    wh = gt.person_boxes[pick, 2:] - gt.person_boxes[pick, :2] + 1
    boxes = gt.person_boxes[pick] + rng.normal(0, 0.12, (n, 4)) * np.hstack([wh, wh])
    boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
    image = np.repeat(gt.image_ids, np.diff(gt.person_offsets))[pick]
    has = gt.person_actions[pick] == 1
    agent = rng.random(has.shape) * 0.8 + 0.4 * has
    role_action = np.array([a for a, _ in ROLE_CLASSES])
    rsc = rng.random((n, len(ROLE_CLASSES))) * 0.8 + 0.4 * has[:, role_action]
    rbox = np.nan_to_num(gt.role_boxes[pick].astype(np.float64), nan=0.0)
    rwh = rbox[..., 2:] - rbox[..., :2] + 1
    rbox += rng.normal(0, 0.1, rbox.shape) * np.concatenate([rwh, rwh], axis=-1)
    rbox[..., 2:] = np.maximum(rbox[..., 2:], rbox[..., :2])
    for mat in (agent, rsc):  # distinct float32 scores per class, order kept
        for c in range(mat.shape[1]):
            mat[:, c] = (np.argsort(np.argsort(mat[:, c], kind="stable"), kind="stable") + 1) / (n + 1)
    det = VCOCODetections(image, boxes, agent, rbox, rsc)
    res = vcoco_role_ap(det, gt)
    agent_ap, role_ap = oracle_vcoco(coco, vcoco, det)
    np.testing.assert_array_equal(res.agent_ap, agent_ap)
    for s in (1, 2):
        np.testing.assert_array_equal(res.role_ap[s], role_ap[s])
    assert 0.2 < res.agent_map < 0.95 and 0.1 < res.role_map(1) < 0.95
