"""CDN's and GEN-VLKT's/HOICLIP's ``results.json`` (``json.dumps(str({'preds': [...], 'gts': [...]}))``):
the C scanner reading the Python repr in place, the careful reader through the literal parser
(nothing is executed), and the evidence that tells the two formats apart."""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from hoibench._exceptions import FormatError
from hoibench.data import HOIDataset
from hoibench.formats import _evidence as _ev
from hoibench.formats import _scan as _S
from hoibench.formats._common import (
    FLOAT_INTS,
    Columns,
    objects_of_coco80,
    only_numbers,
    short_repr,
)
from hoibench.formats._literal import parse_numpy_repr
from hoibench.vocab import LabelSpace

#: formats whose file is ``json.dumps(str({'preds': ..., 'gts': ...}))`` -> what ``category_id`` is
REPR_RESULTS = {"cdn": "verb", "gen-vlkt": "hoi"}


REPR_ROOT = _S.field("", _S.RECORDS, _S.field("filename", _S.STR),
                      _S.field("predictions", _S.RECORDS, _S.field("bbox", _S.NUMS), _S.field("category_id", _S.NUM),
                               strict=True),
                      _S.field("hoi_prediction", _S.RECORDS, *(_S.field(k, _S.NUM) for k in (
                          "subject_id", "object_id", "category_id", "score")), strict=True),
                      strict=True)
_GTS_ROOT = _S.field("", _S.RECORDS, _S.field("filename", _S.STR))


def repr_images_native(raw: bytes | mmap.mmap, path: Path) -> ReprImages | None:
    """:func:`repr_images_careful` by the C scanner reading the Python repr in place: the same
    images, or ``None``."""
    if not _S.AVAILABLE:
        return None
    head = b"{'preds': "
    at, end = raw.find(head, 0, 64), raw.rfind(b"}", max(0, len(raw) - 64))
    if at < 0 or end < 0 or raw[:at].strip() != b'"' or raw[end + 1:].strip() != b'"':
        return None
    got = _S.scan(raw, at + len(head), REPR_ROOT, literal=True, split=_S.halfway(raw, at + len(head)))
    if got is None:
        return None
    gts_names, gts = None, None
    tail = bytes(raw[got.stop:got.stop + 16])
    gts_head = b", 'gts': "
    if tail.startswith(gts_head):
        gts = _S.scan(raw, got.stop + len(gts_head), _GTS_ROOT, literal=True)
        if gts is None or bytes(raw[gts.stop:end + 1]).strip(b" ") != b"}":
            return None  # the careful reader reads (or names) the embedded ground truth
        gts_names = gts["filename"].strings(raw)
        if gts_names is None or (gts["filename"].occ[1:] != 1).any():
            return None
    elif bytes(raw[got.stop:end + 1]).strip(b" ") != b"}":
        return None
    c = got.columns
    per = slice(1, None)
    names = c["filename"].strings(raw)
    if names is None or any((c[k].occ[per] != 1).any() for k in ("filename", "predictions", "hoi_prediction")):
        return None
    nb, nh = c["predictions"].items[per], c["hoi_prediction"].items[per]
    bbox, label = c["predictions.bbox"], c["predictions.category_id"]
    if (bbox.occ[per] != nb).any() or (bbox.nums[per] != 4 * nb).any() or (bbox.values.size and bbox.width != (4, 4)):
        return None
    labeled_img = label.occ[per] == nb
    if ((label.occ[per] != 0) & ~labeled_img).any():
        return None  # some boxes of an image labelled, some not
    with_boxes = nb > 0
    if labeled_img[with_boxes].any() and not labeled_img[with_boxes].all():
        return None  # some images' boxes labelled, some not: the careful reader decides
    hoi = {k: c[f"hoi_prediction.{k}"] for k in ("subject_id", "object_id", "category_id", "score")}
    if any((col.occ[per] != nh).any() for col in hoi.values()):
        return None
    sub, obj, cat = (hoi[k].integers() for k in ("subject_id", "object_id", "category_id"))
    labels = label.integers() if label.values.size else np.zeros(0, np.int64)
    if sub is None or obj is None or cat is None or labels is None:
        return None
    is_labeled = bool(labeled_img[with_boxes].all()) and bool(with_boxes.any())
    if not is_labeled:
        labels = np.full(int(nb.sum()), -1, np.int64)
    flat = _ReprFlat(names, nb.copy(), nh.copy(), bbox.values.reshape(-1, 4), labels, with_boxes & is_labeled,
                     sub, obj, cat, hoi["score"].values)
    # float32 values unless a wrapper names float64 (np.float64(x), dtype=float64), in the
    # predictions or the embedded ground truth, where the careful reader looks for the word
    return flat, gts_names, not (got.float64 or (gts is not None and gts.float64))


def repr_results_columns(text: Any, path: Path, vocab: LabelSpace, fmt: str | None,
                          ground_truth: HOIDataset | None,
                          images: ReprImages | None = None) -> tuple[Columns, str, list[str], str | None]:
    """Columns of a ``json.dumps(str({'preds': [...], 'gts': [...]}))`` results file.

    ``preds`` holds per image ``{'filename', 'predictions': [{'bbox', 'category_id'}],
    'hoi_prediction': [{'subject_id', 'object_id', 'category_id', 'score'}]}``; boxes are the
    post-processor's continuous xyxy pixels, read as hoibench's 0-based frame without a shift
    (as the ``qpic`` reader). The file is already cut to the evaluator's top 100 per image.
    Their heads compute in float32: boxes and scores are rounded to float32 (recovering exactly
    the values the model produced from their shortest repr) unless the text mentions float64.
    ``images``: what :func:`repr_images_native` read, else ``text`` is read carefully. Also
    returns the format read (``fmt``, else decided by :func:`_repr_format`), warnings, and the
    line saying how the format was detected (``None`` when ``fmt`` was given).
    """
    flat, gts_names, f32 = images if images is not None else repr_images_careful(text, path)
    n_images = len(flat.names)
    img_of_hoi = np.repeat(np.arange(n_images), flat.n_hois)
    img_of_box = np.repeat(np.arange(n_images), flat.n_boxes)
    # the first image with a box index outside its own boxes or a label outside COCO-80 (in this
    # order within an image), as a loop over the images would meet them
    n_own = flat.n_boxes[img_of_hoi]
    bad_ids = (np.minimum(flat.sub, flat.obj) < 0) | (np.maximum(flat.sub, flat.obj) >= n_own)
    bad_label = flat.labeled[img_of_box] & ((flat.labels < 0) | (flat.labels >= 80))
    first_id = int(img_of_hoi[bad_ids][0]) if bad_ids.any() else n_images
    first_label = int(img_of_box[bad_label][0]) if bad_label.any() else n_images
    if first_id < n_images and first_id <= first_label:
        raise FormatError("box index outside 'predictions'", file=path, record=first_id,
                          field="hoi_prediction.subject_id")
    if first_label < n_images:
        raise FormatError("label outside COCO-80 indices 0..79", file=path, record=first_label,
                          field="predictions.category_id")
    box_start = np.concatenate([[0], np.cumsum(flat.n_boxes)[:-1]]).astype(np.int64)
    gsub, gobj = flat.sub + box_start[img_of_hoi], flat.obj + box_start[img_of_hoi]
    inv80 = objects_of_coco80(vocab)
    name, detection, warnings = _repr_format(flat, vocab, inv80, gobj, path, fmt)
    boxes, scores, cat = flat.boxes, flat.scores, flat.cat
    if f32:  # beyond float32 a value is inf, as np.float32(x) makes it (named below as not finite)
        with np.errstate(over="ignore"):
            boxes, scores = boxes.astype(np.float32).astype(np.float64), scores.astype(np.float32).astype(np.float64)
    n_ids = vocab.n_verbs if REPR_RESULTS[name] == "verb" else vocab.n_hois
    bad = (cat < 0) | (cat >= n_ids)
    first_cat = int(img_of_hoi[bad][0]) if bad.any() else n_images
    unlabeled = (~flat.labeled) & (flat.n_boxes > 0) if REPR_RESULTS[name] == "verb" else np.zeros(0, bool)
    first_unlabeled = int(np.flatnonzero(unlabeled)[0]) if unlabeled.any() else n_images
    if first_cat < n_images and first_cat <= first_unlabeled:
        j = int(np.flatnonzero(bad[img_of_hoi == first_cat])[0])
        raise FormatError(f"{REPR_RESULTS[name]} id outside 0..{n_ids - 1}", file=path, record=first_cat,
                          field=f"hoi_prediction[{j}].category_id")
    if first_unlabeled < n_images:
        raise FormatError("missing (CDN's boxes carry their COCO-80 label)", file=path,
                          record=first_unlabeled, field="predictions[0].category_id")
    if REPR_RESULTS[name] == "hoi":  # the HOI class names the object; the box label is not used
        verbs, objects = vocab.hoi_verb_object[cat, 0], vocab.hoi_verb_object[cat, 1]
        keep = np.ones(len(cat), dtype=bool)
    else:
        # CDN zeroes the scores of (verb, object) pairs that are no HOI class; QPIC's
        # evaluator then skips them (their triplet has no ground truth): dropped here
        verbs, objects = cat, inv80[flat.labels[gobj]]
        keep = vocab.hoi_index(verbs, objects) >= 0
    counts = np.bincount(img_of_hoi[keep], minlength=n_images).astype(np.int64)
    if ground_truth is not None and gts_names is not None:
        embedded = set(gts_names)
        given = set(ground_truth.file_names)
        if embedded != given:
            warnings.append(f"{path.name}: its embedded ground truth ({len(embedded):,} images) differs from "
                            f"the one given ({len(given):,} images, {len(embedded & given):,} in common); "
                            "scoring against the one given")
    return (Columns(flat.names, counts, boxes[gsub[keep]].reshape(-1, 4), boxes[gobj[keep]].reshape(-1, 4),
                     np.asarray(objects[keep], dtype=np.int64), np.asarray(verbs[keep], dtype=np.int64),
                     None, scores[keep].astype(np.float64)), name, warnings, detection)


class _ReprFlat(NamedTuple):
    """The ``preds`` of a results file as columns: every image's boxes one after another, and
    its HOI records likewise, box indices local to their image (as in the file)."""

    names: list[str]
    n_boxes: np.ndarray  # per image
    n_hois: np.ndarray  # per image
    boxes: np.ndarray  # (boxes, 4) float64
    labels: np.ndarray  # (boxes,) COCO-80 labels; -1 for the boxes of an image without labels
    labeled: np.ndarray  # per image: its boxes carry labels (CDN's do, GEN-VLKT's do not)
    sub: np.ndarray
    obj: np.ndarray
    cat: np.ndarray
    scores: np.ndarray


def _flatten(names: list[str], per_image: list[tuple[Any, ...]]) -> _ReprFlat:
    """Per-image (boxes, labels or None, subject ids, object ids, category ids, scores) as columns."""
    boxes, labels, sub, obj, cat, scores = zip(*per_image) if per_image else ((),) * 6

    def join(parts: Any, dtype: type, empty: tuple[int, ...] = (0,)) -> np.ndarray:
        return np.concatenate([np.asarray(x, dtype) for x in parts]) if parts else np.zeros(empty, dtype)

    return _ReprFlat(names, np.array([len(b) for b in boxes], np.int64), np.array([len(s) for s in sub], np.int64),
                     join([np.asarray(b, np.float64).reshape(-1, 4) for b in boxes], np.float64, (0, 4)),
                     join([np.full(len(b), -1) if la is None else la for b, la in zip(boxes, labels)], np.int64),
                     np.array([la is not None for la in labels], dtype=bool), join(sub, np.int64), join(obj, np.int64),
                     join(cat, np.int64), join(scores, np.float64))


#: (the images as columns, the embedded ground truth's file names or None, whether values are float32)
ReprImages = tuple[_ReprFlat, "list[Any] | None", bool]


def repr_images_careful(text: Any, path: Path) -> ReprImages:
    """The images of a results file through :func:`parse_numpy_repr`, each problem named."""
    if not isinstance(text, str):
        raise FormatError("expected a JSON string holding str({'preds': [...], 'gts': [...]})", file=path)
    data = parse_numpy_repr(text, path)
    if not isinstance(data, dict) or not isinstance(data.get("preds"), list):
        raise FormatError("expected {'preds': [...], 'gts': [...]}", file=path, field="preds")
    names: list[str] = []
    per_image = []
    for i, im in enumerate(data["preds"]):
        _S.conform(im, REPR_ROOT, file=path, record=i, required=("filename", "predictions", "hoi_prediction"))
        names.append(im["filename"])
        boxes_l, hois_l = im["predictions"], im["hoi_prediction"]
        boxes = _take(boxes_l, "bbox", np.float64, path, i, "predictions")
        if boxes.size != 4 * len(boxes_l) or (boxes.size and boxes.shape != (len(boxes_l), 4)):
            # (checked before the reshape, which would fail on a lone box of 3 numbers)
            raise FormatError("expected boxes of 4 numbers", file=path, record=i, field="predictions.bbox")
        boxes = boxes.reshape(-1, 4)
        # GEN-VLKT / HOICLIP write boxes without labels ({'bbox': list(bbox)}): the HOI id names the object
        labeled = any(isinstance(b, dict) and "category_id" in b for b in boxes_l)
        labels = _take(boxes_l, "category_id", np.int64, path, i, "predictions") if labeled else None
        sub, obj, cat = (_take(hois_l, k, np.int64, path, i, "hoi_prediction")
                         for k in ("subject_id", "object_id", "category_id"))
        scores = _take(hois_l, "score", np.float64, path, i, "hoi_prediction")
        per_image.append((boxes, labels, sub, obj, cat, scores))
    gts = data.get("gts")
    return _flatten(names, per_image), _gts_names(gts), "float64" not in text


def _gts_names(gts: Any) -> list[Any] | None:
    """The file names of an embedded ``gts`` list (only used to warn when it differs)."""
    return [g.get("filename") for g in gts if isinstance(g, dict)] if isinstance(gts, list) else None


class _ReprEvidence(NamedTuple):
    """What :func:`_repr_readings` found."""

    settled: str | None  # the format the structure alone settles
    why: str  # ... and why
    verb: _ev.Reading | None  # the cdn reading (None: impossible, or nothing to weigh)
    hoi: _ev.Reading | None  # the gen-vlkt reading (None: the boxes carry no labels to check)
    records: str  # what the shares are of ("9,700 scored triplets")
    hint: str  # what else the numbers suggest (box labels in another index space)


def _repr_readings(flat: _ReprFlat, vocab: LabelSpace, inv80: np.ndarray, gobj: np.ndarray) -> _ReprEvidence:
    """The evidence for reading ``category_id`` as a verb (``cdn``) or an HOI class (``gen-vlkt``).

    Settled by structure:
    boxes without labels (CDN's always carry one) or ids beyond the verbs are GEN-VLKT's; a file
    without triplets reads the same either way. Otherwise, over the triplets with a positive score
    (all of them when none has one): the share whose (verb, object box label) is an HOI class
    (CDN zeroes the others' scores) and the share whose HOI class names the object box's label.
    ``inv80``: :func:`objects_of_coco80`; ``gobj``: each triplet's object box among all boxes."""
    cat = flat.cat
    pos = flat.scores > 0
    sel = pos if pos.any() else np.ones(len(cat), dtype=bool)
    records = f"{int(sel.sum()):,} {'scored triplets' if pos.any() else 'triplets'}"
    if ((~flat.labeled) & (flat.n_boxes > 0)).any():
        return _ReprEvidence("gen-vlkt", "its boxes carry no category_id (CDN's always do)", None, None, records, "")
    if not len(cat):
        return _ReprEvidence("cdn", "it holds no triplets (either reading gives none)", None, None, records, "")
    labels = flat.labels[gobj[sel]]
    c = cat[sel]
    objects = inv80[labels]
    in_hois = (c >= 0) & (c < vocab.n_hois)
    hoi_fit = float(np.mean(in_hois & (vocab.hoi_verb_object[np.where(in_hois, c, 0), 1] == objects)))
    hoi = _ev.Reading("gen-vlkt", hoi_fit, "have an HOI class naming the object box's label")
    if cat.max() >= vocab.n_verbs or cat.min() < 0:
        return _ReprEvidence("gen-vlkt", f"its category_id values leave the verbs' 0..{vocab.n_verbs - 1}", None, hoi,
                             records, "")

    def verb_fit(obj: np.ndarray) -> float:
        return float(np.mean(vocab.hoi_index(c, obj) >= 0))
    verb = _ev.Reading("cdn", verb_fit(objects), "form HOI classes as (verb, object box label)")
    hint = ""
    others = {f"{vocab.name} object indices": np.where(labels < vocab.n_objects, labels, -1),
              "COCO-91 ids": vocab.object_from_coco91(labels)}
    for what, obj in others.items():
        fit = verb_fit(obj)
        if fit >= _ev.FIT and fit - max(verb.fit or 0.0, hoi_fit) >= _ev.MARGIN:
            hint = (f" (with the box labels taken as {what} instead of COCO-80 indices, as CDN writes them, "
                    f"{_ev.pct(fit)} would form HOI classes: relabel the boxes)")
            break
    return _ReprEvidence(None, "", verb, hoi, records, hint)


def _repr_format(flat: _ReprFlat, vocab: LabelSpace, inv80: np.ndarray, gobj: np.ndarray, path: Path,
                 fmt: str | None) -> tuple[str, str | None, list[str]]:
    """The format to read a results file as, the line saying how it was detected (``None`` when
    ``fmt`` was given) and warnings: ``fmt`` when given (with a warning when the file fits it
    poorly), else what the structure settles, else :func:`~hoibench.formats._evidence.choose`
    on the evidence of :func:`_repr_readings`."""
    settled, why, verb, hoi, records, hint = _repr_readings(flat, vocab, inv80, gobj)
    if fmt is not None:
        forced = verb if fmt == "cdn" else hoi
        warning = None if forced is None else _ev.poor_fit(forced, records=records, path=path, hint=hint)
        return fmt, None, [] if warning is None else [warning]
    if settled is not None:
        shown = "" if hoi is None or settled != "gen-vlkt" else f"; of {records}, {_ev.pct(hoi.fit or 0.0)} {hoi.evidence}"
        return settled, f"read as {settled}: {why}{shown}; --format overrides", []
    assert verb is not None and hoi is not None
    name, line = _ev.choose(verb, hoi, records=records, path=path, option="--format", hint=hint)
    return name, line, []


def _take(items: list[Any], key: str, dtype: type, path: Path, record: int, where: str) -> np.ndarray:
    """``items[*][key]`` as one array; a missing or malformed value is named by record and field.
    Only numbers are read (strings and booleans are refused, not converted), ids only as integers
    within 64 bits (``2.0`` too, as the C scanner reads it), other numbers only within float64."""
    def ok(v: Any) -> bool:
        if dtype is np.int64:
            return (type(v) is int or (type(v) is float and v.is_integer())) and -(2**63) <= v < 2**63
        return (type(v) is float or (type(v) is int and -FLOAT_INTS < v < FLOAT_INTS)
                or (key == "bbox" and type(v) is list and only_numbers(v)))

    values = [it.get(key) if isinstance(it, dict) else None for it in items]
    if all(map(ok, values)):
        try:
            return np.asarray(values, dtype=dtype)
        except ValueError:  # boxes of different lengths
            raise FormatError(f"malformed '{key}' values", file=path, record=record, field=where) from None
    j, v = next((j, v) for j, v in enumerate(values) if not ok(v))
    whole = type(v) is int or (type(v) is float and v.is_integer())  # an id out of range, not a fraction
    what = "numbers" if key == "bbox" else "an integer within 64 bits" if dtype is np.int64 and whole else "a number"
    raise FormatError("missing" if v is None else f"expected {what}, got {short_repr(v)}",
                      file=path, record=record, field=f"{where}[{j}].{key}")
