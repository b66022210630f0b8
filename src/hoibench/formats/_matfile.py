"""Vectorised MAT-file (level 5) I/O of one 2-D cell array of ``k x m`` numeric matrices.

ho-rcnn's ``all_boxes`` holds 600 x 9,658 cells; ``scipy.io`` builds and parses one Python
object per cell, which takes minutes to write and tens of seconds to read. Here the cells are
written as one numpy buffer, an empty cell as a zero-length matrix element (8 bytes, not a
56-byte header of an empty matrix: most cells are empty), and read by locating every cell element
at once and checking that they chain (each ends where the next begins), so a header-like byte
pattern inside the data cannot be mistaken for a cell. Both empty-cell forms are read (scipy,
and so UPT's ``--cache``, writes the 0 x 0 header). Files this reader does not handle (big-endian, other classes,
MATLAB's integer-packed doubles, ...) make it return ``None``; the caller then uses scipy.

Layout (MATLAB's "MAT-File Format" document): a 128-byte header; elements ``[type, nbytes]``
padded to 8 bytes; ``miCOMPRESSED`` (15) wraps a zlib stream of one element; a matrix
(``miMATRIX``, 14) holds array flags, dimensions, name, then (cell class) one matrix element per
cell in column-major order, or (numeric class) the real part.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from hoibench._io import atomic_write_bytes, read_buffer

__all__ = ["Cells", "read_cells", "write_cells"]

MI_INT8, MI_INT32, MI_UINT32, MI_SINGLE, MI_DOUBLE, MI_MATRIX, MI_COMPRESSED = 1, 5, 6, 7, 9, 14, 15
MX_CELL, MX_DOUBLE, MX_SINGLE = 1, 6, 7
_HEADER_WORDS = 14  # tag, flags (4 words), dims (4), empty name (2), real-part tag (2)


class Cells(NamedTuple):
    """A cell array as flat rows: ``rows[i]`` lies in cell ``cell[i]`` (column-major index)."""

    shape: tuple[int, int]
    cell: np.ndarray
    rows: np.ndarray


def _header(text: str) -> bytes:
    head = text.encode("ascii")[:116].ljust(116, b" ")
    return head + b"\0" * 8 + np.array([0x0100], "<u2").tobytes() + b"IM"


def _name_element(name: str) -> bytes:
    raw = name.encode("ascii")
    return np.array([MI_INT8, len(raw)], "<u4").tobytes() + raw.ljust(-(-len(raw) // 8) * 8, b"\0")


def write_cells(path: str | os.PathLike[str], name: str, shape: tuple[int, int], cell: np.ndarray,
                rows: np.ndarray, *, compress: bool = True) -> None:
    """Write a ``shape`` cell array of double matrices; rows must be sorted by ``cell``.

    An empty cell is a zero-length matrix element (8 bytes instead of 56): Octave's MAT-5 reader
    (``ls-mat5.cc``, ``element_length == 0``) and scipy read it as ``[]``. ho-rcnn's 600 x 9,658
    cells are mostly empty, so this makes the data to compress several times smaller.
    """
    n_cells = shape[0] * shape[1]
    rows = np.ascontiguousarray(rows, dtype="<f8")
    m = rows.shape[1]
    k = np.bincount(cell, minlength=n_cells).astype(np.int64)
    full = k > 0
    size = np.where(full, 4 * _HEADER_WORDS + 8 * m * k, 8)  # bytes per cell element, tag included
    start = np.r_[0, np.cumsum(size)[:-1]]
    buf = np.zeros(int(size.sum()), dtype=np.uint8)
    words = buf.view("<u4")
    w0 = start // 4
    words[w0] = MI_MATRIX  # an empty cell keeps nbytes 0
    w0, kf = w0[full], k[full]
    for j, value in enumerate((MI_MATRIX, None, MI_UINT32, 8, MX_DOUBLE, 0, MI_INT32, 8, None, m,
                               MI_INT8, 0, MI_DOUBLE, None)):
        if value is not None:
            words[w0 + j] = value
    words[w0 + 1] = 4 * _HEADER_WORDS + 8 * m * kf - 8
    words[w0 + 8] = kf
    words[w0 + 13] = 8 * m * kf
    if len(rows):
        # detection i is row j of its cell: element (j, q) at data start + (q * k + j) doubles
        first = np.r_[0, np.cumsum(k)][cell]
        j_in = np.arange(len(rows)) - first
        base = (start[cell] + 4 * _HEADER_WORDS) // 8 + j_in
        dest = base[:, None] + np.arange(m)[None, :] * k[cell][:, None]
        buf.view("<f8")[dest.ravel()] = rows.ravel()
    name_el = _name_element(name)
    body = (np.array([MI_UINT32, 8, MX_CELL, 0, MI_INT32, 8, shape[0], shape[1]], "<u4").tobytes() + name_el)
    head = np.array([MI_MATRIX, len(body) + len(buf)], "<u4").tobytes() + body
    if compress:
        z = zlib.compressobj(1)
        data = z.compress(head) + z.compress(buf) + z.flush()
        element = np.array([MI_COMPRESSED, len(data)], "<u4").tobytes() + data  # no padding after compressed data
    else:
        element = head + buf.tobytes()
    atomic_write_bytes(Path(path), _header("MATLAB 5.0 MAT-file, written by hoibench") + element)


def _variables(raw: Any) -> dict[str, memoryview] | None:
    """Top-level matrix elements by name (decompressed), or None for a file not handled."""
    if len(raw) < 128 or raw[126:128] != b"IM":
        return None
    out: dict[str, bytes] = {}
    pos = 128
    while pos + 8 <= len(raw):
        kind, nbytes = np.frombuffer(raw, "<u4", 2, pos)
        data = memoryview(raw)[pos + 8: pos + 8 + int(nbytes)]  # a view: the cells are ~100 MB
        pos += 8 + int(nbytes) + (-int(nbytes) % 8 if kind != MI_COMPRESSED else 0)
        if kind == MI_COMPRESSED:
            try:
                data = zlib.decompress(data)
            except zlib.error:
                return None
            kind, nbytes = np.frombuffer(data, "<u4", 2, 0)
            data = memoryview(data)[8: 8 + int(nbytes)]
        if kind != MI_MATRIX or len(data) < 40:
            continue
        w = np.frombuffer(data, "<u4", 10, 0)
        if w[4] != MI_INT32 or w[5] != 8:
            continue
        ntag = int(w[8])
        name = data[36: 36 + (ntag >> 16)] if ntag >> 16 else data[40: 40 + int(w[9])]
        out[bytes(name).decode("ascii", "replace")] = data
    return out


def read_cells(path: str | os.PathLike[str], name: str) -> Cells | None:
    """The cell array ``name`` of ``path`` as flat double rows, or None (file not handled here)."""
    variables = _variables(read_buffer(path))  # large files mapped, not copied (a fault per page)
    if variables is None or name not in variables:
        return None
    data = variables[name]
    w = np.frombuffer(data, "<u4", 10, 0)
    if (int(w[2]) & 0xFF) != MX_CELL:
        return None
    shape = (int(w[6]), int(w[7]))
    ntag = int(w[8])
    first = 40 if ntag >> 16 else 40 + int(w[9]) + (-int(w[9]) % 8)
    n_cells = shape[0] * shape[1]
    body = np.frombuffer(data, np.uint8, len(data) - first, first)
    if len(body) % 8:
        return None
    words = body.view("<u4")
    if n_cells == 0:
        return Cells(shape, np.zeros(0, np.int64), np.zeros((0, 0)))
    # every matrix element: a zero-length one (an empty cell) or a full header
    cand = 2 * np.flatnonzero(words[0::2] == MI_MATRIX)
    cand = cand[cand + 2 <= len(words)]
    nb = words[cand + 1].astype(np.int64)
    zero = nb == 0
    at = cand[~zero]
    at = at[at + _HEADER_WORDS <= len(words)]
    ok = ((words[at + 2] == MI_UINT32) & (words[at + 3] == 8) & (words[at + 6] == MI_INT32)
          & (words[at + 7] == 8) & (words[at + 10] == MI_INT8) & (words[at + 11] == 0))
    keep = zero.copy()
    keep[np.searchsorted(cand, at[ok])] = True
    cand, nb, zero = cand[keep], nb[keep], zero[keep]
    if len(cand) != n_cells or cand[0] != 0:
        return None
    ends = cand + 2 + nb // 4
    if not (np.array_equal(ends[:-1], cand[1:]) and ends[-1] == len(words)):
        return None
    full = np.flatnonzero(~zero)
    at = cand[full]

    def field(j: int, empty: int) -> np.ndarray:  # a header word of every cell; ``empty`` for an empty one
        out = np.full(len(cand), empty, dtype=np.int64)
        out[full] = words[at + j]
        return out

    flags = field(4, MX_DOUBLE)
    cls = flags & 0xFF
    k, m, dtype, nbytes = field(8, 0), field(9, 0), field(12, MI_DOUBLE), field(13, 0)
    nonempty = k * m > 0
    if not (np.isin(cls, (MX_DOUBLE, MX_SINGLE)).all() and (flags & 0xFF00 == 0).all()):
        return None
    width = np.where(dtype == MI_DOUBLE, 8, np.where(dtype == MI_SINGLE, 4, 0))
    if (width[nonempty] == 0).any() or (nbytes != width * k * m).any():
        return None
    if not nonempty.any():
        return Cells(shape, np.zeros(0, np.int64), np.zeros((0, 0)))
    mm = np.unique(m[nonempty])
    if len(mm) != 1 or len(np.unique(dtype[nonempty])) != 1:
        return None
    m0 = int(mm[0])
    ids = np.flatnonzero(nonempty)
    kk = k[ids]
    cell = np.repeat(ids, kk)
    j_in = np.arange(int(kk.sum())) - np.repeat(np.r_[0, np.cumsum(kk)[:-1]], kk)
    w_size = int(width[ids[0]])
    view = body.view("<f8" if w_size == 8 else "<f4")
    base = ((cand[ids] + _HEADER_WORDS) * 4 // w_size)
    src = np.repeat(base, kk)[:, None] + j_in[:, None] + np.arange(m0)[None, :] * np.repeat(kk, kk)[:, None]
    return Cells(shape, cell.astype(np.int64), view[src].astype(np.float64))
