"""ho-rcnn's MATLAB evaluation input: ``all_boxes`` cell arrays of HICO-DET detections.

Two layouts hold the same cells (one per HOI class and test image, each a ``k x 9`` matrix of
``[h_x1 h_y1 h_x2 h_y2 o_x1 o_y1 o_x2 o_y2 score]`` rows):

folder (format ``ho-rcnn``)
    ``detections_01.mat`` ... ``detections_80.mat``, one per object in HICO-DET's object order,
    ``all_boxes`` being ``n_hois_of_object x n_images`` with the object's HOI classes in
    ascending order. ho-rcnn's ``eval_run.m`` reads this, and UPT's and PViC's ``--cache``
    (``utils.py``, ``cache_hico``) writes it, with ``(0, 0)`` cells where nothing was detected.
single file
    One ``all_boxes`` of ``600 x n_images`` (what ``hoibench eval hico --matlab-out X.mat``
    writes).

Box frame: 0-based pixel indices, ``x2``/``y2`` inclusive; ``eval_one.m`` adds 1 to compare
with ``anno_bbox.mat``'s 1-based boxes. UPT/PViC reach it from their continuous 0-based boxes
with ``boxes[:, 2:] -= 1``. This is hoibench's own frame (``anno_bbox.mat`` minus 1), so boxes
are read and written unchanged. The files name no images: columns are the ground truth's
images in its order (the hicodet toolkit's ``instances_test2015.json`` order, 9,658 images),
so reading needs the ground truth.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import check_input_file, ensure_dir, read_mat
from hoibench.data import HOIDataset, HOIPredictions
from hoibench.formats._matfile import Cells, read_cells, write_cells
from hoibench.vocab import LabelSpace

__all__ = ["MatlabDetections", "is_matlab_detections", "read_matlab_detections", "write_matlab_detections"]

N_OBJECT_FILES = 80


def _object_file(folder: Path, obj: int) -> Path:
    return folder / f"detections_{obj + 1:02d}.mat"


def is_matlab_detections(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a ``detections_XX.mat`` folder or a ``.mat`` file (MAT magic)."""
    p = Path(path)
    if p.is_dir():
        return _object_file(p, 0).exists()
    check_input_file(p)  # a FIFO or device: one line, never a read that hangs
    try:
        with open(p, "rb") as fh:
            head = fh.read(128)
    except OSError:
        return False
    return head.startswith(b"MATLAB 5.0 MAT-file")


def _classes_of_objects(vocab: LabelSpace) -> list[np.ndarray]:
    """HOI classes of each object, ascending (the hicodet toolkit's ``object_to_interaction``)."""
    obj = vocab.hoi_verb_object[:, 1]
    return [np.flatnonzero(obj == o) for o in range(vocab.n_objects)]


class MatlabDetections:
    """Flat columns of an ``all_boxes`` layout: per image counts, boxes, HOI ids, scores."""

    def __init__(self, counts: np.ndarray, boxes_h: np.ndarray, boxes_o: np.ndarray,
                 hois: np.ndarray, scores: np.ndarray) -> None:
        self.counts, self.boxes_h, self.boxes_o, self.hois, self.scores = counts, boxes_h, boxes_o, hois, scores


def _all_boxes(path: Path, n_rows: int, n_images: int, *, what: str) -> Cells:
    """``all_boxes`` of ``path`` as flat rows (vectorised reader, else scipy), shape checked."""
    got = read_cells(path, "all_boxes") if path.exists() else None
    if got is None:
        got = _scipy_cells(path)
    if got.shape != (n_rows, n_images):
        raise FormatError(f"{got.shape[0]} x {got.shape[1]} cells, expected {n_rows} x {n_images} "
                          f"({what} x the ground truth's images, in its order)", file=path, field="all_boxes")
    if len(got.rows) and got.rows.shape[1] != 9:
        r, j = int(got.cell[0] % n_rows), int(got.cell[0] // n_rows)
        raise FormatError(f"expected k x 9 matrices [boxes_h boxes_o score], got {got.rows.shape[1]} columns",
                          file=path, record=j, field=f"all_boxes{{{r + 1},{j + 1}}}")
    return got


def _scipy_cells(path: Path) -> Cells:
    mat = read_mat(path, variable_names=["all_boxes"])
    cells = mat.get("all_boxes")
    if cells is None:
        raise FormatError("no variable 'all_boxes'", file=path)
    if cells.dtype != object or cells.ndim != 2:
        raise FormatError(f"'all_boxes' must be a cell array, got {cells.dtype} {cells.shape}", file=path,
                          field="all_boxes")
    flat = cells.ravel(order="F")  # column-major cell index, as in the file
    parts, ids = [], []
    for k, c in enumerate(flat):
        if c.size == 0:
            continue
        if c.ndim != 2 or c.shape[1] != 9 or not np.issubdtype(c.dtype, np.number):
            r, j = k % cells.shape[0], k // cells.shape[0]
            raise FormatError(f"expected a k x 9 numeric matrix [boxes_h boxes_o score], got {c.dtype} "
                              f"{c.shape}", file=path, record=j, field=f"all_boxes{{{r + 1},{j + 1}}}")
        parts.append(c.astype(np.float64))
        ids.append(np.full(len(c), k, np.int64))
    if not parts:
        return Cells(cells.shape, np.zeros(0, np.int64), np.zeros((0, 9)))
    return Cells(cells.shape, np.concatenate(ids), np.concatenate(parts))


def read_matlab_detections(path: str | os.PathLike[str], ground_truth: HOIDataset) -> MatlabDetections:
    """Read a ``detections_XX.mat`` folder or a single ``all_boxes`` file against ``ground_truth``.

    Every cell must be empty or ``k x 9``; a bad one is an error naming file, class and image.
    """
    p = Path(path)
    vocab = ground_truth.vocab
    if vocab.n_hois == 0:
        raise ConfigError("ho-rcnn detection files need HOI classes (HICO-DET ground truth)")
    n = ground_truth.n_images
    if p.is_dir():
        blocks = []
        for o, classes in enumerate(_classes_of_objects(vocab)):
            f = _object_file(p, o)
            if not f.exists():
                raise FormatError(f"missing {f.name} (a ho-rcnn folder has one file per object, 01..80)", file=p)
            blocks.append((f, classes, _all_boxes(f, len(classes), n,
                                                  what=f"the HOI classes of {vocab.objects[o]!r}")))
    else:
        blocks = [(p, np.arange(vocab.n_hois), _all_boxes(p, vocab.n_hois, n, what="HOI classes"))]
    rows_all, hoi_all, img_all = [], [], []
    for _f, classes, got in blocks:
        rows_all.append(got.rows.reshape(-1, 9))
        hoi_all.append(classes[got.cell % len(classes)])
        img_all.append(got.cell // len(classes))
    rows = np.concatenate(rows_all).reshape(-1, 9)
    hois = np.concatenate(hoi_all).astype(np.int64)
    image = np.concatenate(img_all).astype(np.int64)
    order = np.argsort(image, kind="stable")  # per image; within it by file, class, then row
    rows, hois = rows[order], hois[order]
    counts = np.bincount(image, minlength=n).astype(np.int64)
    return MatlabDetections(counts, rows[:, 0:4], rows[:, 4:8], hois, rows[:, 8].copy())


def write_matlab_detections(preds: HOIPredictions, gt: HOIDataset, path: str | os.PathLike[str]) -> None:
    """Write ho-rcnn's evaluation input: a ``detections_XX.mat`` folder, or one ``all_boxes``
    file of ``600 x n_images`` cells when ``path`` ends in ``.mat``.

    Boxes as hoibench holds them (0-based pixel indices; ``eval_one.m`` adds 1), images in the
    order of ``gt`` (which must be the official test list for the MATLAB script to accept it).
    :func:`read_matlab_detections` reads both back unchanged. The files are not compressed
    (MAT-5 as ``scipy.io.savemat`` writes by default, and UPT's ``--cache``): zlib would triple
    the time of writing them for a third of the size.
    """
    vocab = preds.vocab
    if vocab.n_hois == 0:
        raise ConfigError("the MATLAB evaluation input needs HOI classes (HICO-DET)")
    gt_index = {f: k for k, f in enumerate(gt.file_names)}
    cols = np.array([gt_index.get(fn, -1) for fn in preds.file_names], dtype=np.int64)
    if (cols < 0).any():
        i = int(np.flatnonzero(cols < 0)[0])
        raise FormatError(f"image {preds.file_names[i]!r} is not in the ground truth", record=i, field="file_name")
    hois = preds.hois
    image = cols[preds.image_index]
    keep = np.flatnonzero(hois >= 0)
    rows = np.concatenate([preds.boxes_h, preds.boxes_o, preds.scores[:, None]], axis=1)
    p = Path(path)
    if p.suffix.lower() == ".mat":
        _write_block(p, keep, hois, image, rows, np.arange(vocab.n_hois), gt.n_images)
        return
    ensure_dir(p)
    obj = vocab.hoi_verb_object[hois[keep], 1]
    by_object = keep[np.argsort(obj, kind="stable")]  # detection order kept within an object
    cuts = np.searchsorted(np.sort(obj), np.arange(vocab.n_objects + 1))
    for o, classes in enumerate(_classes_of_objects(vocab)):
        _write_block(_object_file(p, o), by_object[cuts[o]:cuts[o + 1]], hois, image, rows, classes, gt.n_images)


def _write_block(path: Path, sel: np.ndarray, hois: np.ndarray, image: np.ndarray, rows: np.ndarray,
                 classes: np.ndarray, n_images: int) -> None:
    """One ``all_boxes`` of ``len(classes) x n_images`` holding detections ``sel``."""
    row_of = np.full(int(classes.max()) + 1, -1, np.int64)
    row_of[classes] = np.arange(len(classes))
    cell = row_of[hois[sel]] + len(classes) * image[sel]  # column-major cell index
    order = np.argsort(cell, kind="stable")
    write_cells(path, "all_boxes", (len(classes), n_images), cell[order], rows[sel[order]], compress=False)
