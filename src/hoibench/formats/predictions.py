"""HOI detection (prediction) files: reading with format detection, writing, MATLAB export.

Formats
-------
``hoibench``
    Our own documented JSON (see ``docs/formats.md``)::

        {"format": "hoibench-predictions", "version": 1, "label_space": "hico-det",
         "images": [{"file_name": "HICO_test2015_00000001.jpg",
                     "boxes_h": [[x1, y1, x2, y2], ...], "boxes_o": [[...], ...],
                     "objects": [int, ...], "verbs": [int, ...], "scores": [float, ...]}]}

    Boxes are 0-based pixel xyxy (hoibench's convention); ``objects``/``verbs`` index the label
    space. ``hois`` may replace ``objects`` + ``verbs`` (HICO-DET's 600 classes).
``generic``
    ``{"images": [{"file_name", "boxes_h", "boxes_o", "object", "verb", "hoi", "scores"}]}``
    in the hicodet toolkit's frame (HICO-DET's original 1-based pixel boxes, shifted by -1 on
    reading like ``instances_*.json``) with the toolkit's 0-based object/verb/HOI ids. ``hoi``
    alone, or ``object`` + ``verb``, is enough; when all three are given they must agree.
``qpic``
    QPIC/CDN post-processed outputs saved as JSON: a list with one object per image,
    ``{"file_name", "boxes" (subjects then objects, 0-based), "labels" (COCO-80 indices),
    "verb_scores" (pairs x 117), "sub_ids", "obj_ids"}``. Every (pair, verb) becomes a detection
    with the verb's score; like QPIC's evaluator the reader drops (verb, object) combinations
    that are no HOI class and keeps the ``max_per_image`` best (default 100, stable order).
``cdn``
    CDN's ``results.json``: ``json.dumps(str({'preds': [...], 'gts': [...]}))``, read with the
    literal parser of :mod:`hoibench.formats._literal` (nothing is executed); ``hoi_prediction``
    ``category_id`` is the verb id. See
    :func:`~hoibench.formats._repr_results.repr_results_columns` for the frame.
``gen-vlkt``
    GEN-VLKT's and HOICLIP's ``results.json`` (``datasets/hico_eval_triplet.py``): the same
    layout, ``category_id`` is the HOI class id (0..599); told apart from ``cdn`` by content, on
    evidence (:mod:`hoibench.formats._repr_results`): a guess is made only when one reading clearly fits better,
    and says so in :attr:`LoadedPredictions.detection`; otherwise the file is refused.
``ho-rcnn``
    ho-rcnn's MATLAB evaluation input, a folder of ``detections_01.mat`` .. ``detections_80.mat``
    (what UPT's and PViC's ``--cache`` write) or one ``all_boxes`` ``.mat``; 0-based pixel
    indices, read unchanged; columns are the ground truth's images. See
    :mod:`hoibench.formats.matlab_detections`.

Reading has two tiers. The C scanner (:mod:`hoibench.formats._scan`, where it is built) reads
the text once into one column per field (QPIC verb scores reduced per image as they are read,
CDN/GEN-VLKT reprs read in place); whatever it does not prove, and every file without it
(``HOIBENCH_NO_NATIVE=1``), goes to the careful reader, the reference: the whole file parsed,
each record checked against the same schema (``_COLUMNAR_ROOT``, ``_QPIC_ROOT``,
``REPR_ROOT``, through :func:`~hoibench.formats._scan.conform`) and every problem named by file,
record and field. Both give identical arrays. The format's own rules (ids that must agree, the
generic frame's shift, QPIC's top-k, CDN vs GEN-VLKT evidence) are applied once, after either
tier. A large file is memory-mapped (:func:`~hoibench._io.read_buffer`), not copied; times are
in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import mmap
import os
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import (
    atomic_write_json,
    check_json_start,
    read_buffer,
    read_json,
    refuses_deep_nesting,
)
from hoibench._io import (
    parse_json as _parse_json,  # tests replace it: did the C scanner read the file?
)
from hoibench.data import HOIDataset, HOIPredictions
from hoibench.formats import _scan as _S
from hoibench.formats._common import (
    FLOAT_INTS,
    Columns,
    objects_of_coco80,
    only_numbers,
    short_repr,
)
from hoibench.formats._frame import box_frame_hint
from hoibench.formats._repr_results import (
    REPR_RESULTS,
    ReprImages,
    repr_images_native,
    repr_results_columns,
)
from hoibench.formats.matlab_detections import (
    is_matlab_detections,
    read_matlab_detections,
    write_matlab_detections,
)
from hoibench.vocab import LabelSpace, get_label_space, hico_det

__all__ = [
    "PREDICTION_FORMATS",
    "LoadedPredictions",
    "detect_prediction_format",
    "load_predictions",
    "predictions_from_qpic",
    "read_predictions",
    "write_matlab_detections",
    "write_predictions",
]

PREDICTION_FORMATS: dict[str, str] = {
    "hoibench": "hoibench's documented prediction JSON (0-based boxes)",
    "generic": "{'images': [{file_name, boxes_h, boxes_o, object, verb, hoi, scores}]} "
               "(hicodet toolkit frame and ids)",
    "qpic": "QPIC/CDN post-processed outputs as JSON (boxes, labels, verb_scores, sub_ids, obj_ids)",
    "cdn": "CDN's results.json: json.dumps(str({'preds', 'gts'})), hoi_prediction category_id = verb id",
    "gen-vlkt": "GEN-VLKT/HOICLIP results.json: CDN's layout with category_id = HOI class id",
    "ho-rcnn": "ho-rcnn's MATLAB input: a detections_XX.mat folder (UPT/PViC --cache) or one all_boxes .mat",
}
HOIBENCH_TAG = "hoibench-predictions"
#: the ``version`` values of the hoibench format this reader knows
HOIBENCH_VERSIONS = (1,)


@dataclass
class LoadedPredictions:
    """Predictions read from a file, with what ``lenient`` reading dropped (reason -> count)."""

    predictions: HOIPredictions
    format: str
    dropped: Counter[str] = field(default_factory=Counter)
    #: one-line notes for the user (e.g. embedded ground truth that differs from the one named)
    warnings: list[str] = field(default_factory=list)
    #: how a format told apart from a look-alike by content was chosen, with the evidence
    #: (``read as cdn: of 9,700 scored triplets, ...``); ``None`` when given or plain from the layout
    detection: str | None = None

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())


def _sniff(data: Any) -> str | None:
    if isinstance(data, dict):
        if data.get("format") == HOIBENCH_TAG:
            return "hoibench"
        images = data.get("images")
        if isinstance(images, list) and (not images or (isinstance(images[0], dict)
                                                        and "boxes_h" in images[0])):
            return "generic"
    if isinstance(data, list) and data and isinstance(data[0], dict) and (
            "verb_scores" in data[0] or "hoi_scores" in data[0]):
        return "qpic"
    if isinstance(data, str) and data.lstrip().startswith("{'preds'"):
        return _REPR
    return None


_REPR = "python-repr results.json"  # which of REPR_RESULTS is decided from the content
_UNKNOWN = ("unknown prediction format (expected hoibench, generic, qpic JSON, a CDN/GEN-VLKT/HOICLIP "
            "results.json or a ho-rcnn detections_XX.mat folder; see docs/evaluation.md)")


def detect_prediction_format(path: str | os.PathLike[str]) -> str:
    """Name of the prediction format of ``path`` (see :data:`PREDICTION_FORMATS`)."""
    if is_matlab_detections(path):
        return "ho-rcnn"
    name = _sniff(read_json(path))
    if name is None:
        raise FormatError(_UNKNOWN, file=path)
    if name == _REPR:
        return load_predictions(path).format
    return name


def read_predictions(path: str | os.PathLike[str], *, format: str | None = None,
                     vocab: LabelSpace | None = None, lenient: bool = False,
                     max_per_image: int | None = 100) -> HOIPredictions:
    """Read a prediction file into :class:`~hoibench.data.HOIPredictions`.

    Parameters
    ----------
    format:
        One of :data:`PREDICTION_FORMATS`; detected from the content when omitted.
    vocab:
        Label space (default: the file's ``label_space``, else HICO-DET).
    lenient:
        Drop malformed detections (NaN or inverted boxes, unknown classes, missing scores)
        instead of raising; :func:`load_predictions` also returns what was dropped.
    max_per_image:
        ``qpic`` format only: keep this many (pair, verb) triplets per image (QPIC: 100).
    """
    return load_predictions(path, format=format, vocab=vocab, lenient=lenient,
                            max_per_image=max_per_image).predictions


@refuses_deep_nesting
def load_predictions(path: str | os.PathLike[str], *, format: str | None = None,
                     vocab: LabelSpace | None = None, lenient: bool = False,
                     max_per_image: int | None = 100,
                     ground_truth: HOIDataset | None = None, box_shift: float = 0.0) -> LoadedPredictions:
    """Like :func:`read_predictions`, also reporting the format, dropped detections and warnings.

    ``ground_truth``: the ground truth the predictions will be scored against; files that embed
    their own (CDN's ``results.json``) get a warning in :attr:`LoadedPredictions.warnings` when
    the two differ. The embedded one is never used. ho-rcnn ``.mat`` files (a folder of
    ``detections_XX.mat`` or one ``all_boxes`` file) name no images and need it. With it, a
    warning also says when the boxes fit it clearly better one pixel off (see
    :mod:`hoibench.formats._frame`). ``box_shift``: pixels added to every box after the reader's
    own conversion (for a file written in another frame than its format's documented one).
    """
    loaded = _load(Path(path), format, vocab, lenient, max_per_image, ground_truth)
    if box_shift:
        p = loaded.predictions
        loaded.predictions = HOIPredictions.from_arrays(p.vocab, p.file_names, np.diff(p.offsets),
                                                        p.boxes_h + box_shift, p.boxes_o + box_shift,
                                                        p.objects, p.verbs, p.scores, name=p.name)
    if ground_truth is not None and ground_truth.vocab.name == loaded.predictions.vocab.name:
        hint = box_frame_hint(loaded.predictions, ground_truth)
        if hint is not None:
            total = box_shift + hint.shift
            loaded.warnings.append(
                f"{Path(path).name}: the boxes fit the ground truth better shifted by {hint.shift:+g} pixel "
                f"(mean best IoU of {hint.n_boxes:,} top boxes {hint.mean_iou:.3f} -> "
                f"{hint.mean_iou_shifted:.3f}): the file may be in another frame than the {loaded.format} "
                f"reader assumes; --box-shift {total:g} sets it (docs/evaluation.md, 'Box frames')")
    return loaded


def _load(p: Path, format: str | None, vocab: LabelSpace | None, lenient: bool, max_per_image: int | None,
          ground_truth: HOIDataset | None) -> LoadedPredictions:
    if format is not None and format not in PREDICTION_FORMATS:
        raise ConfigError(f"prediction format must be one of {sorted(PREDICTION_FORMATS)}; got {format!r}")
    if format == "ho-rcnn" or (format is None and is_matlab_detections(p)):
        return _load_matlab(p, vocab, ground_truth, lenient)
    if p.is_dir():
        raise FormatError("is a directory without detections_01.mat .. detections_80.mat (ho-rcnn layout)", file=p)
    raw = read_buffer(check_json_start(p))  # a large file is mapped: parsed and scanned, never copied by us
    first = bytes(raw[:64]).lstrip()[:1]
    if format in (None, *REPR_RESULTS) and first == b'"':  # a JSON string: a results.json?
        images = repr_images_native(raw, p)
        if images is not None:
            return _load_repr(None, p, vocab, format, ground_truth, lenient, images)
    if format in (None, "hoibench", "generic") and first == b"{":
        fast = _decode_native(raw)
        if fast is not None and format in (None, fast[0]):
            name, label_space, cols = fast
            return _assemble(cols, _vocab_of(label_space, vocab, p), p, name, lenient)
    if format in (None, "qpic") and first == b"[":
        qpic_vocab = vocab or hico_det()
        cols = _qpic_native(raw, qpic_vocab, max_per_image)
        if cols is not None:
            return _assemble(cols, qpic_vocab, p, "qpic", lenient)
    # the careful reader, the reference: the whole file parsed into Python objects, every field checked
    data = _parse_json(bytes(raw), p)
    del raw
    name = _sniff(data) if format is None else format
    if name == _REPR or name in REPR_RESULTS:
        return _load_repr(data, p, vocab, None if name == _REPR else name, ground_truth, lenient)
    if name not in PREDICTION_FORMATS:
        raise FormatError(_UNKNOWN, file=p)
    if name == "qpic":
        vocab = vocab or hico_det()
        cols = _qpic_columns(data, p, vocab, max_per_image)
    else:
        if not isinstance(data, dict) or not isinstance(data.get("images"), list):
            raise FormatError("expected an object with an 'images' list", file=p)
        declared = data.get("label_space") if name == "hoibench" else None
        if name == "hoibench" and data.get("version") not in (None, *HOIBENCH_VERSIONS):
            raise FormatError(f"version {data['version']!r} is not one this hoibench reads "
                              f"({', '.join(map(str, HOIBENCH_VERSIONS))}); a newer hoibench wrote it?",
                              file=p, field="version")
        vocab = _vocab_of(declared, vocab, p)
        cols = _columns(data["images"], p, name)
    return _assemble(cols, vocab, p, name, lenient)


def _load_repr(text: Any, path: Path, vocab: LabelSpace | None, fmt: str | None, ground_truth: HOIDataset | None,
               lenient: bool, images: ReprImages | None = None) -> LoadedPredictions:
    """A CDN/GEN-VLKT ``results.json`` (``images``: as the C scanner read it, else ``text`` is read
    carefully), with the warnings and the line saying how its format was detected."""
    vocab = vocab or hico_det()
    cols, name, warnings, detection = repr_results_columns(text, path, vocab, fmt, ground_truth, images)
    loaded = _assemble(cols, vocab, path, name, lenient)
    loaded.warnings += warnings
    loaded.detection = detection
    return loaded


def _load_matlab(path: Path, vocab: LabelSpace | None, ground_truth: HOIDataset | None,
                 lenient: bool) -> LoadedPredictions:
    if ground_truth is None:
        raise ConfigError(f"{path}: ho-rcnn .mat detections name no images; pass the ground truth "
                          "(its images, in order, are the columns)")
    if vocab is not None and vocab.name != ground_truth.vocab.name:
        raise ConfigError(f"ho-rcnn .mat detections are read in the ground truth's label space "
                          f"{ground_truth.vocab.name!r}, not {vocab.name!r}")
    m = read_matlab_detections(path, ground_truth)
    cols = Columns(list(ground_truth.file_names), m.counts, m.boxes_h, m.boxes_o, None, None, m.hois, m.scores)
    return _assemble(cols, ground_truth.vocab, path, "ho-rcnn", lenient)


def _vocab_of(declared: Any, vocab: LabelSpace | None, path: Path) -> LabelSpace:
    """The label space to read with: the caller's, which must agree with the file's own
    ``label_space`` (ids of one label space read in another would be silently wrong classes)."""
    if declared is not None and not isinstance(declared, str):
        raise FormatError(f"expected a label space name, got {declared!r}", file=path, field="label_space")
    if vocab is None:
        return get_label_space(declared or "hico-det")
    if declared is not None and declared != vocab.name:
        raise FormatError(f"the detections are in the {declared!r} label space, the ground truth in "
                          f"{vocab.name!r}", file=path, field="label_space")
    return vocab


# ----------------------------------------------------------------------------- the C scanner
# One pass from the text into columns (hoibench.formats._scan); each function gives what the
# careful reader would, or None for anything it does not prove (the careful reader then decides).

_COLUMNAR_ROOT = _S.field("", _S.OBJECT, _S.field("format", _S.STR), _S.field("version", _S.NUM),
                          _S.field("label_space", _S.STR),
                          _S.field("images", _S.RECORDS, _S.field("file_name", _S.STR),
                                   _S.field("boxes_h", _S.ROWS), _S.field("boxes_o", _S.ROWS),
                                   _S.field("scores", _S.NUMS),
                                   *(_S.field(k, _S.NUMS) for k in ("objects", "verbs", "hois", "object", "verb", "hoi"))))


def _decode_native(raw: bytes | mmap.mmap) -> tuple[str, str | None, Columns] | None:
    """The columns :func:`_columns` reads from a hoibench/generic file, by the C scanner; ``None``
    for anything it does not prove. Returns (format, declared label space, columns)."""
    c = _S.scan_document(raw, _COLUMNAR_ROOT, records="images", split=_S.halfway(raw))
    if c is None:
        return None
    fmt = c["format"].strings(raw) if c["format"].occ[0] else [None]
    label_space = c["label_space"].strings(raw) if c["label_space"].occ[0] else [None]
    if fmt is None or label_space is None:
        return None
    name = "hoibench" if fmt[0] == HOIBENCH_TAG else "generic"
    version = c["version"].values[0] if c["version"].occ[0] else None
    if name == "hoibench" and version is not None and version not in HOIBENCH_VERSIONS:
        return None  # the careful reader names the unknown version
    per = slice(1, None)  # slot i + 1: image i
    names = c["images.file_name"].strings(raw)
    if names is None or (c["images.file_name"].occ[per] != 1).any():
        return None
    n = c["images.scores"].items[per]
    if (c["images.scores"].occ[per] != 1).any():
        return None
    for key in ("boxes_h", "boxes_o"):
        col = c[f"images.{key}"]
        if (col.occ[per] != 1).any() or (col.items[per] != n).any() or not col.rows_of(4):
            return None
    k_obj, k_verb, k_hoi, _ = _KEYS[name]
    ids: dict[str, np.ndarray | None] = {}
    for key in (k_obj, k_verb, k_hoi):
        col = c[f"images.{key}"]
        occ = col.occ[per]
        if not occ.any():
            ids[key] = None
            continue
        if not occ.all() or (col.items[per] != n).any():
            return None  # given for some images only, or not one per score: the careful reader names it
        ids[key] = col.integers()
        if ids[key] is None:
            return None
    if ids[k_hoi] is None and (ids[k_obj] is None or ids[k_verb] is None):
        return None
    boxes = [c[f"images.{key}"].values.reshape(-1, 4) for key in ("boxes_h", "boxes_o")]
    return name, (label_space[0] if name == "hoibench" else None), Columns(
        names, n.copy(), *boxes, ids[k_obj], ids[k_verb], ids[k_hoi], c["images.scores"].values)


_QPIC_ROOT = _S.field("", _S.RECORDS, _S.field("file_name", _S.STR), _S.field("labels", _S.NUMS),
                      _S.field("boxes", _S.ROWS), _S.field("verb_scores", _S.ROWS),
                      _S.field("sub_ids", _S.NUMS), _S.field("obj_ids", _S.NUMS),
                      _S.field("hoi_scores", _S.ROWS))


def _qpic_native(raw: bytes | mmap.mmap, vocab: LabelSpace, max_per_image: int | None) -> Columns | None:
    """:func:`_qpic_columns` of a ``PostProcessHOI`` file by the C scanner, each image's verb
    scores reduced to its top ``max_per_image`` valid cells as soon as it is read; ``None`` for
    anything else (triplet outputs included)."""
    if not _S.AVAILABLE:
        return None
    probe = _S.scan(raw, 0, _QPIC_ROOT, limit=1)  # a triplet file is not scanned whole for nothing
    if probe is None or probe.n_slots < 2 or probe["verb_scores"].occ[1] != 1:
        return None
    valid, inv80 = _valid_cells(vocab), objects_of_coco80(vocab)
    rows = np.where(inv80 < 0, vocab.n_objects, inv80)  # the last row of valid: a label outside the space
    got = _S.scan(raw, 0, _QPIC_ROOT, select=_S.Select("verb_scores", "obj_ids", "labels", "boxes", rows, valid,
                                                        max_per_image), split=_S.halfway(raw))
    if got is None or got.selection is None or not _S.only_space_after(raw, got.stop):
        return None
    c = got.columns
    per = slice(1, None)
    names = c["file_name"].strings(raw)
    if names is None or c["hoi_scores"].occ.any() or any(
            (c[k].occ[per] != 1).any() for k in ("file_name", "labels", "boxes", "verb_scores", "sub_ids", "obj_ids")):
        return None
    vs, boxes, sub_col, obj_col, label_col = (c[k] for k in ("verb_scores", "boxes", "sub_ids", "obj_ids", "labels"))
    if not vs.rows_of(vocab.n_verbs) or not boxes.rows_of(4):
        return None
    labels, sub, obj = label_col.integers(), sub_col.integers(), obj_col.integers()
    if labels is None or sub is None or obj is None:
        return None
    has = vs.nums[per] > 0  # images with detections: their other arrays must fit (the rest are not read)
    if ((sub_col.items[per] != vs.items[per]) & has).any():
        return None
    in_image = sub_col.owners()
    bad_sub = ((sub < 0) | (sub >= boxes.items[per][in_image])) & has[in_image]
    if bad_sub.any() or (((labels < 0) | (labels >= 80)) & has[label_col.owners()]).any():
        return None  # the careful reader names the box index or the label
    cells, scores, kept = got.selection
    img = np.repeat(np.arange(len(names)), kept)
    pair, verb = np.divmod(cells, vocab.n_verbs)
    obj_box = obj[obj_col.starts()[img] + pair]
    b = boxes.values.reshape(-1, 4)
    box_start = boxes.starts()[img]
    return Columns(names, kept.copy(), b[box_start + sub[sub_col.starts()[img] + pair]], b[box_start + obj_box],
                    inv80[labels[label_col.starts()[img] + obj_box]], verb, None, scores)


# ----------------------------------------------------------------------------- columnar reading
_KEYS = {  # format -> (objects key, verbs key, hois key, box shift)
    "hoibench": ("objects", "verbs", "hois", 0.0),
    "generic": ("object", "verb", "hoi", -1.0),
}


def _columns(images: list[Any], path: Path, name: str) -> Columns:
    k_obj, k_verb, k_hoi, _ = _KEYS[name]
    names: list[str] = []
    counts = np.zeros(len(images), dtype=np.int64)
    present = {k: True for k in (k_obj, k_verb, k_hoi)}
    first_lacking: dict[str, int] = {}
    image = _S.fields_of(_COLUMNAR_ROOT, "images")
    ignore = tuple(k for *ids, _shift in _KEYS.values() for k in ids if k not in (k_obj, k_verb, k_hoi))
    for i, im in enumerate(images):
        _S.conform(im, image, file=path, record=i, required=("file_name", "boxes_h", "boxes_o", "scores"),
                   ignore=ignore)
        names.append(im["file_name"])
        n = counts[i] = len(im["scores"])
        for key in ("boxes_h", "boxes_o"):
            if len(im[key]) != n:
                raise FormatError(f"expected a list of {n} boxes (one per score), got {len(im[key])} entries",
                                  file=path, record=i, field=key)
        for key in (k_obj, k_verb, k_hoi):
            v = im.get(key)
            if v is None:
                if present[key]:
                    first_lacking.setdefault(key, i)
                present[key] = False
            elif len(v) != n:
                raise FormatError(f"expected a list of {n} ids (one per score)", file=path, record=i, field=key)
    for key, i in first_lacking.items():  # given for some images only: it would be ignored for all
        if any(isinstance(im, dict) and im.get(key) is not None for im in images):
            raise FormatError(f"missing while other images give '{key}' (give it for every image or "
                              "for none)", file=path, record=i, field=key)
    if not (present[k_hoi] or (present[k_obj] and present[k_verb])):
        raise FormatError(f"every image needs '{k_hoi}' or both '{k_obj}' and '{k_verb}'", file=path)
    flat = chain.from_iterable
    total = int(counts.sum())

    def ids(key: str) -> np.ndarray | None:
        if not present[key]:
            return None
        return _numbers(flat(im[key] for im in images), total, np.int64, path, counts, key)

    boxes = {}
    for key in ("boxes_h", "boxes_o"):
        rows = list(flat(im[key] for im in images))
        if any(not isinstance(r, list) or len(r) != 4 for r in rows):
            k = next(j for j, r in enumerate(rows) if not isinstance(r, list) or len(r) != 4)
            i, j = _locate(counts, k)
            raise FormatError(f"expected a box of 4 numbers, got {rows[k]!r}", file=path,
                              record=i, field=f"{key}[{j}]")
        boxes[key] = _numbers(flat(rows), 4 * total, np.float64, path, np.repeat(counts, 1) * 4, key).reshape(-1, 4)
    return Columns(names, counts, boxes["boxes_h"], boxes["boxes_o"], ids(k_obj), ids(k_verb),
                    ids(k_hoi), _numbers(flat(im["scores"] for im in images), total, np.float64,
                                         path, counts, "scores"))


def _numbers(values: Any, n: int, dtype: type, path: Path, counts: np.ndarray, key: str) -> np.ndarray:
    """One numpy conversion of a flat iterable; a bad value is reported by image and position."""
    vals = list(values)
    try:  # numbers only: numpy would also read "0.5" and True as numbers
        arr = np.array(vals, dtype=np.float64) if set(map(type, vals)) <= {int, float} else None
    except (TypeError, ValueError, OverflowError):
        arr = None
    if arr is None or arr.shape != (n,):
        k = next((j for j, v in enumerate(vals) if isinstance(v, bool) or not isinstance(v, (int, float))
                  or (isinstance(v, int) and not -FLOAT_INTS < v < FLOAT_INTS)), 0)
        i, j = _locate(counts, k)
        raise FormatError(f"expected a number, got {short_repr(vals[k])}" if vals else "expected numbers",
                          file=path, record=i, field=f"{key}[{j}]")
    if dtype is np.int64:  # range-checked before the conversion (2**70 is no id, not garbage)
        bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (np.abs(arr) >= 2.0**62)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            i, j = _locate(counts, k)
            raise FormatError(f"expected an integer id (below 2**62), got {vals[k]!r}", file=path, record=i,
                              field=f"{key}[{j}]")
        return arr.astype(np.int64)
    return arr


def _locate(counts: np.ndarray, k: int) -> tuple[int, int]:
    """(image record, position in the image) of flat detection ``k``."""
    ends = np.cumsum(counts)
    i = int(np.searchsorted(ends, k, side="right"))
    start = int(ends[i - 1]) if i else 0
    return i, k - start


_ID_LIMIT = 2**62  # ids at or beyond it are refused, named by record and field


def _array(value: Any, dtype: type) -> np.ndarray:
    """A numpy copy of a list, array or (CPU or GPU) torch tensor of numbers (integers for
    ``np.int64``, below 2**62); strings and booleans are refused, not converted."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, list) and not only_numbers(value):
        raise TypeError("expected numbers, got a string, boolean or null")
    arr = np.asarray(value)
    if arr.size and arr.dtype.kind not in ("iu" if dtype is np.int64 else "iuf"):
        raise TypeError(f"expected {'integers' if dtype is np.int64 else 'numbers'}, got {arr.dtype} values")
    if dtype is np.int64 and arr.size and (arr.max() >= _ID_LIMIT or arr.min() <= -_ID_LIMIT):
        raise ValueError(f"an integer beyond 2**62: {arr.max() if arr.max() >= _ID_LIMIT else arr.min()}")
    return arr.astype(dtype)


def _valid_cells(vocab: LabelSpace) -> np.ndarray:
    """Which (object, verb) cells are HOI classes, one row per object and a last, empty row for a
    label outside the space (index -1)."""
    valid = np.zeros((vocab.n_objects + 1, vocab.n_verbs), dtype=bool)
    valid[vocab.hoi_verb_object[:, 1], vocab.hoi_verb_object[:, 0]] = True
    return valid


def _qpic_columns(data: Any, path: Path | str, vocab: LabelSpace, max_per_image: int | None,
                  file_names: list[str] | None = None) -> Columns:
    """Columns of post-processor outputs, one dict per image: QPIC's/CDN's ``PostProcessHOI``
    (``labels``, ``boxes``, ``verb_scores``, ``sub_ids``, ``obj_ids``) or GEN-VLKT's/HOICLIP's
    ``PostProcessHOITriplet`` (``hoi_scores``, ``obj_scores`` instead of ``verb_scores``).
    File names come from ``file_names`` or each dict's ``file_name``."""
    if not isinstance(data, (list, tuple)):
        raise FormatError("expected a list of per-image outputs", file=path)
    if file_names is not None and len(file_names) != len(data):
        raise ConfigError(f"{len(data)} outputs but {len(file_names)} file names")
    inv80 = objects_of_coco80(vocab)
    parts: list[tuple[np.ndarray, ...]] = []
    names: list[str] = []
    counts = np.zeros(len(data), dtype=np.int64)
    for i, im in enumerate(data):
        if not isinstance(im, dict):
            raise FormatError("expected an object", file=path, record=i)
        fn = im.get("file_name") if file_names is None else file_names[i]
        if not isinstance(fn, str):
            raise FormatError("missing (QPIC outputs must be saved with the image file name)",
                              file=path, record=i, field="file_name")
        names.append(fn)
        if file_names is None:  # parsed from a file: its fields of the kinds the scanner reads
            _S.conform(im, _QPIC_ROOT, file=path, record=i)
        part = _qpic_image(im, path, i, vocab, inv80, max_per_image)
        if part is not None:
            parts.append(part)
            counts[i] = len(part[4])
    empty = (np.zeros((0, 4)), np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    cat = [np.concatenate([p[k] for p in parts]) if parts else empty[k] for k in range(5)]
    return Columns(names, counts, cat[0], cat[1], cat[2], cat[3], None, cat[4])


def _qpic_image(im: dict[str, Any], path: Path | str, i: int, vocab: LabelSpace, inv80: np.ndarray,
                max_per_image: int | None) -> tuple[np.ndarray, ...] | None:
    """(boxes_h, boxes_o, objects, verbs, scores) of one image's post-processor output."""
    triplet = "verb_scores" not in im and "hoi_scores" in im
    key, width = ("hoi_scores", vocab.n_hois) if triplet else ("verb_scores", vocab.n_verbs)
    try:
        boxes = _array(im["boxes"], np.float64).reshape(-1, 4)
        labels = _array(im["labels"], np.int64).reshape(-1) if not triplet else None
        vs = _array(im[key], np.float64)
        obj_scores = _array(im["obj_scores"], np.float64) if triplet else None
        sub = _array(im["sub_ids"], np.int64).reshape(-1)
        obj = _array(im["obj_ids"], np.int64).reshape(-1)
    except KeyError as exc:
        raise FormatError("missing", file=path, record=i, field=str(exc.args[0])) from None
    except (TypeError, ValueError) as exc:
        raise FormatError(f"malformed arrays ({exc})", file=path, record=i) from None
    if vs.size == 0:
        return None
    shape_error = FormatError(f"{key} must be (pairs, {width}) with one sub_id and obj_id per pair",
                              file=path, record=i, field=key)
    if len(sub) == 0 or vs.size % len(sub):
        raise shape_error
    vs = vs.reshape(len(sub), -1)
    if len(obj) != len(sub) or vs.shape[1] != width:
        raise shape_error
    if sub.size and (max(sub.max(), obj.max()) >= len(boxes) or min(sub.min(), obj.min()) < 0):
        raise FormatError("box index outside boxes", file=path, record=i, field="sub_ids")
    n_pairs = len(sub)
    pair = np.repeat(np.arange(n_pairs), width)
    if triplet:
        assert obj_scores is not None
        if obj_scores.ndim != 2 or len(obj_scores) != n_pairs or obj_scores.shape[1] < 80:
            raise FormatError("obj_scores must be (pairs, 80 or 81)", file=path, record=i, field="obj_scores")
        # GEN-VLKT / HOICLIP hico_eval_triplet: hoi score + obj score ** 2 of the class's object;
        # the top max_hois scores, each then located with np.where(scores == s)[0][0] (a tied
        # score yields its first triplet again)
        hoi_obj = vocab.coco80[vocab.hoi_verb_object[:, 1]]
        scores = (vs + (obj_scores * obj_scores)[:, hoi_obj]).ravel()
        hois = np.tile(np.arange(width), n_pairs)
        order = np.argsort(-scores, kind="stable")
        if max_per_image is not None:
            order = order[:max_per_image]
        uniq, first = np.unique(scores, return_index=True)
        order = first[np.searchsorted(uniq, scores[order])]
        verbs, objects = vocab.hoi_verb_object[hois[order], 0], vocab.hoi_verb_object[hois[order], 1]
    else:
        assert labels is not None
        if len(labels) != len(boxes):
            raise FormatError(f"expected one label per box ({len(boxes)}), got {len(labels)}", file=path,
                              record=i, field="labels")
        if labels.size and (labels.min() < 0 or labels.max() >= 80):
            raise FormatError("label outside COCO-80 indices 0..79", file=path, record=i, field="labels")
        verbs_all = np.tile(np.arange(width), n_pairs)
        objects_all = inv80[labels[obj[pair]]]
        scores = vs.ravel()
        # QPIC: scores of invalid (verb, object) combinations are zeroed, then the stable
        # sort by score keeps the best max_hois; we drop them instead of zeroing
        order = np.flatnonzero(vocab.hoi_index(verbs_all, objects_all) >= 0)
        order = order[np.argsort(-scores[order], kind="stable")]
        if max_per_image is not None:
            order = order[:max_per_image]
        verbs, objects = verbs_all[order], objects_all[order]
    pr = pair[order]
    return boxes[sub[pr]], boxes[obj[pr]], objects, verbs, scores[order]


def predictions_from_qpic(outputs: list[dict[str, Any]], file_names: list[str], *,
                          vocab: LabelSpace | None = None, max_per_image: int | None = 100,
                          name: str = "") -> HOIPredictions:
    """Predictions from post-processor outputs in memory, for evaluation during training.

    ``outputs``: per image, QPIC's/CDN's ``PostProcessHOI`` dict (``labels``, ``boxes``,
    ``verb_scores``, ``sub_ids``, ``obj_ids``) or GEN-VLKT's/HOICLIP's ``PostProcessHOITriplet``
    dict (``hoi_scores`` and ``obj_scores`` instead of ``verb_scores``), as tensors (any device)
    or arrays; ``file_names`` names their images. Boxes are the post-processor's pixels, taken
    as hoibench's 0-based frame like the ``qpic`` file reader; each image keeps the evaluator's
    ``max_per_image`` best triplets (QPIC/CDN: invalid verb-object pairs dropped first; GEN-VLKT:
    scores ``hoi + obj ** 2``, ties resolved like its ``np.where`` lookup).
    """
    vocab = vocab or hico_det()
    cols = _qpic_columns(list(outputs), "<outputs>", vocab, max_per_image, list(file_names))
    return _assemble(cols, vocab, Path(name or "<outputs>"), "qpic", False).predictions


def _assemble(c: Columns, vocab: LabelSpace, path: Path, fmt: str, lenient: bool) -> LoadedPredictions:
    """The predictions of either tier's columns, after the rules every format shares: the generic
    frame's shift, ids and boxes checked (each problem named, or dropped when ``lenient``)."""
    if fmt in _KEYS:  # (adding 0.0 too: a box's -0.0 reads as 0.0 in both columnar formats)
        for b in (c.boxes_h, c.boxes_o):
            b += _KEYS[fmt][3]  # in place: both tiers' columns belong to this reader alone
    n = len(c.scores)
    objects, verbs = c.objects, c.verbs
    problems: list[tuple[np.ndarray, str, str]] = []  # (bad mask, field, reason)
    if c.hois is not None and (objects is None or verbs is None):
        bad_hoi = (c.hois < 0) | (c.hois >= vocab.n_hois)
        problems.append((bad_hoi, "hoi", f"HOI class outside 0..{vocab.n_hois - 1}"))
        vo = vocab.hoi_verb_object[np.where(bad_hoi, 0, c.hois)] if vocab.n_hois else np.zeros((n, 2), np.int64)
        objects, verbs = vo[:, 1].copy(), vo[:, 0].copy()
    elif c.hois is not None and objects is not None and verbs is not None:
        ok = (objects >= 0) & (objects < vocab.n_objects) & (verbs >= 0) & (verbs < vocab.n_verbs)
        expect = np.full(n, -1, dtype=np.int64)
        expect[ok] = vocab.hoi_index(verbs[ok], objects[ok])
        problems.append((ok & (expect != c.hois), "hoi",
                         "disagrees with the given object and verb (-1 where they form no class)"))
    assert objects is not None and verbs is not None
    problems.append(((objects < 0) | (objects >= vocab.n_objects), "object",
                     f"object id outside 0..{vocab.n_objects - 1}"))
    problems.append(((verbs < 0) | (verbs >= vocab.n_verbs), "verb",
                     f"verb id outside 0..{vocab.n_verbs - 1}"))
    for key, b in (("boxes_h", c.boxes_h), ("boxes_o", c.boxes_o)):
        finite = np.isfinite(b).all(axis=1)
        problems.append((~finite, key, "non-finite box coordinate"))
        problems.append((finite & ((b[:, 2] < b[:, 0]) | (b[:, 3] < b[:, 1])), key,
                         "inverted box (x2 < x1 or y2 < y1)"))
    problems.append((~np.isfinite(c.scores), "scores", "score is not a finite number"))
    dup = [f for f, k in Counter(c.file_names).items() if k > 1]
    if dup:
        raise FormatError(f"image {dup[0]!r} appears in more than one record", file=path,
                          record=c.file_names.index(dup[0]), field="file_name")
    keep = np.ones(n, dtype=bool)
    dropped: Counter[str] = Counter()
    for mask, key, reason in problems:
        mask = mask & keep
        if not mask.any():
            continue
        if not lenient:
            k = int(np.flatnonzero(mask)[0])
            i, j = _locate(c.counts, k)
            raise FormatError(f"{reason} (use --lenient to drop such detections)", file=path,
                              record=i, field=f"{key}[{j}]")
        dropped[reason] += int(mask.sum())
        keep &= ~mask
    if keep.all():
        counts, sel = c.counts, slice(None)
    else:
        image = np.repeat(np.arange(len(c.file_names)), c.counts)
        counts, sel = np.bincount(image[keep], minlength=len(c.file_names)), keep
    preds = HOIPredictions.from_arrays(vocab, c.file_names, counts, c.boxes_h[sel], c.boxes_o[sel],
                                       objects[sel], verbs[sel], c.scores[sel], name=str(path), copy=False)
    return LoadedPredictions(preds, fmt, dropped)


# ----------------------------------------------------------------------------- writing
def _to_images(preds: HOIPredictions, fmt: str) -> list[dict[str, Any]]:
    k_obj, k_verb, k_hoi, shift = _KEYS[fmt]
    out = []
    hois = preds.hois
    for i, fn in enumerate(preds.file_names):
        s = preds.image_slice(i)
        rec: dict[str, Any] = {"file_name": fn, "boxes_h": preds.boxes_h[s] - shift,
                               "boxes_o": preds.boxes_o[s] - shift, k_obj: preds.objects[s],
                               k_verb: preds.verbs[s]}
        if fmt == "generic" and preds.vocab.n_hois:
            rec[k_hoi] = hois[s]
        rec["scores"] = preds.scores[s]
        out.append(rec)
    return out


def write_predictions(preds: HOIPredictions, path: str | os.PathLike[str], *,
                      format: str = "hoibench") -> None:
    """Write ``preds`` as ``hoibench`` (default) or ``generic`` prediction JSON (atomic)."""
    if format not in _KEYS:
        raise ConfigError(f"writable prediction formats are {sorted(_KEYS)}; got {format!r}")
    images = _to_images(preds, format)
    obj: dict[str, Any] = ({"format": HOIBENCH_TAG, "version": 1, "label_space": preds.vocab.name,
                            "images": images} if format == "hoibench" else {"images": images})
    atomic_write_json(path, obj)
