"""Small file helpers shared by every package: fast JSON, atomic writes, compressed files, and
:class:`ImageFolder`, the one resolver of an image named by a data file under a folder the user
gave.

Only ``formats/``, ``benchmarks/`` writers, runners and the CLI do I/O; evaluation never does.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import IO, Any

import orjson

try:  # POSIX; elsewhere exclusive_lock does not lock
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from hoibench._exceptions import ConfigError, FormatError, MissingExtraError

__all__ = [
    "ImageFolder",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_csv",
    "atomic_write_json",
    "csv_text",
    "dumps_json",
    "ensure_dir",
    "exclusive_lock",
    "read_bytes",
    "read_json",
    "read_mat",
]

PathLike = str | os.PathLike[str]


def read_bytes(path: PathLike) -> bytes:
    """Read a file, transparently gunzipping ``*.gz``; a missing file is a :class:`FormatError`."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise FormatError("no such file", file=p) from None
    except IsADirectoryError:
        raise FormatError("is a directory, expected a file", file=p) from None
    except PermissionError:
        raise FormatError("permission denied", file=p) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise FormatError(f"corrupt gzip data ({exc})", file=p) from None
    return data


def read_json(path: PathLike) -> Any:
    """Parse a JSON file with orjson (about 5x faster than :mod:`json` on annotation files)."""
    data = read_bytes(path)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # orjson rejects NaN/Infinity literals that Python's json writes; accept them.
        try:
            return json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise FormatError(f"not valid JSON ({exc})", file=path) from None


def read_mat(path: PathLike, **loadmat_kwargs: Any) -> dict[str, Any]:
    """Load a MATLAB ``.mat`` file with :func:`scipy.io.loadmat`; a missing, unreadable or
    corrupt file is a :class:`FormatError` naming it (scipy raises several unrelated types)."""
    p = Path(path)
    if p.is_dir():
        raise FormatError("is a directory, expected a file", file=p)
    if not p.exists():
        raise FormatError("no such file", file=p)
    try:
        from scipy.io import loadmat
    except ImportError as exc:  # pragma: no cover - scipy is a core dependency
        raise MissingExtraError("scipy", "test", "reading .mat files") from exc
    try:
        return loadmat(os.fspath(p), **loadmat_kwargs)
    except PermissionError:
        raise FormatError("permission denied", file=p) from None
    except Exception as exc:  # scipy raises ValueError, TypeError, MatReadError, ... on junk
        raise FormatError(f"not a MATLAB file ({exc})", file=p) from None


def _default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def dumps_json(obj: Any, *, indent: bool = False, sort_keys: bool = False) -> bytes:
    """Serialise to JSON bytes (numpy scalars and arrays allowed), byte-stable for equal input."""
    option = orjson.OPT_SERIALIZE_NUMPY
    if indent:
        option |= orjson.OPT_INDENT_2
    if sort_keys:
        option |= orjson.OPT_SORT_KEYS
    return orjson.dumps(obj, default=_default, option=option)


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` and rename it over ``path`` only on success.

    A crash or exception leaves the previous file untouched; readers never see a half-written file.
    ``*.gz`` paths are gzip-compressed (with mtime 0, so outputs stay byte-identical).
    """
    target = Path(path)
    fd, tmp = _temp_beside(target)
    try:
        with os.fdopen(fd, "wb") as raw:
            sink: IO[bytes] = raw
            gz = None
            if target.suffix == ".gz":
                gz = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="")
                sink = gz
            if "b" in mode:
                yield sink
            else:
                text = io.TextIOWrapper(sink, encoding="utf-8", newline="\n")
                yield text
                text.flush()
                text.detach()
            if gz is not None:
                gz.close()
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def ensure_dir(folder: PathLike, *, for_path: PathLike | None = None) -> Path:
    """Create ``folder`` (and its parents) for output; a folder that cannot be created is a
    :class:`ConfigError` naming ``for_path`` (default: the folder), not an ``OSError`` about
    some parent."""
    folder = Path(folder)
    what = Path(for_path) if for_path is not None else folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), folder)
        raise ConfigError(f"{what}: cannot write, {blocker} is a file, not a folder") from None
    except PermissionError:
        raise ConfigError(f"{what}: cannot write there (permission denied)") from None
    return folder


def _temp_beside(target: Path) -> tuple[int, str]:
    """Create the output folder and a temporary file in it (see :func:`ensure_dir`)."""
    if target.is_dir():
        raise ConfigError(f"{target}: is a directory; give a file path to write")
    ensure_dir(target.parent, for_path=target)
    try:
        return tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except PermissionError:
        raise ConfigError(f"{target}: cannot write there (permission denied)") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_write(path, "wb") as fh:
        fh.write(data)


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A CSV table as text: ``\\n`` line ends, ``None`` as an empty cell."""
    import csv

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])
    return buf.getvalue()


def atomic_write_csv(path: PathLike, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Write a CSV table atomically (see :func:`csv_text`)."""
    atomic_write_bytes(path, csv_text(header, rows).encode())


def atomic_write_json(path: PathLike, obj: Any, *, indent: bool = False) -> None:
    """Write ``obj`` as JSON to ``path`` atomically."""
    atomic_write_bytes(path, dumps_json(obj, indent=indent))


# ------------------------------------------------------------------------- images named by data
#: ``C:``, ``C:\\x``, ``C:/x``: a Windows drive, absolute or drive-relative
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class ImageFolder:
    r"""A folder the user gave, and the only way to turn an image name read from a data file
    (question file, annotation file) into a path that hoibench opens, uploads or sends.

    Question and annotation files come from other people, so a name is accepted only when it stays
    inside the folder:

    * refused always: an empty name, a NUL byte, an absolute name (``/x``, ``\x``), a Windows
      drive or UNC name (``C:\x``, ``C:x``, ``\\server\share``, ``//server/share``), and ``..``
      segments that climb above the folder. ``..`` is resolved on the name's text before any file
      is looked at, with ``\`` read both as a separator (Windows) and as a character (POSIX), so
      a name cannot climb out on either; ``sub/../x.jpg`` is the folder's ``x.jpg``, whatever
      ``sub`` links to.
    * ``follow_symlinks=False`` (default): the file's real path (every symlink resolved) must lie
      inside the folder's real path, so a link inside the folder cannot lead out of it (links
      that stay inside are fine). The folder itself may be a link: the user named it.
    * ``follow_symlinks=True``, for folders that are link farms on purpose (dataset mounts, a
      ``train2015/`` linked in from elsewhere): every symlink at or below the folder is followed
      wherever it leads; the rules on the name's text above still hold.

    The check is on the name and on the files as they are when it runs; it is no defence against
    someone who changes the folder while hoibench reads it.
    """

    root: Path
    follow_symlinks: bool = False
    #: the folder's real path (symlinks resolved): what answers headers record
    resolved: Path = dataclass_field(init=False, repr=False, compare=False)
    #: real paths of the sub-folders seen so far (names of one folder share one realpath call)
    _real_dirs: dict[str, str] = dataclass_field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        object.__setattr__(self, "resolved", Path(os.path.realpath(self.root)))
        object.__setattr__(self, "_real_dirs", {})

    def relative(self, name: object, *, file: object = None, record: object = None,
                 field: str | None = "file_name") -> str:
        """``name`` as a normalised relative POSIX name inside the folder (``..`` resolved on the
        text), or a :class:`FormatError` naming ``file``, ``record``, ``field`` and the image."""
        def bad(problem: str) -> FormatError:
            return FormatError(f"{name!r} {problem}", file=file, record=record, field=field)

        if not isinstance(name, str):
            raise FormatError(f"expected an image name (a string), got {type(name).__name__}",
                              file=file, record=record, field=field)
        if not name:
            raise bad("is empty, not an image name")
        if "\x00" in name:
            raise bad("contains a NUL byte")
        if name.startswith(("\\\\", "//")):
            raise bad("is a UNC network path; image names must be relative to the images folder")
        if _DRIVE.match(name):
            raise bad("is a Windows drive path; image names must be relative to the images folder")
        if name.startswith(("/", "\\")):
            raise bad("is an absolute path; image names must be relative to the images folder")
        # ``..`` on the text, for either reading of a backslash: a separator (Windows) or a
        # character of a name (POSIX, where the path is built from the ``/`` reading)
        kept = _normalise(name.split("/"))
        if kept is None or ("\\" in name and _normalise(re.split(r"[\\/]", name)) is None):
            raise bad(f"climbs out of the images folder {self.resolved} with '..'")
        if not kept:
            raise bad("names the images folder itself, not an image in it")
        return "/".join(kept)

    def path(self, name: object, *, file: object = None, record: object = None,
             field: str | None = "file_name") -> Path:
        """The path to open for ``name`` (see the class docstring for what is refused)."""
        rel = self.relative(name, file=file, record=record, field=field)
        target = os.path.join(self.resolved, *rel.split("/"))
        if not self.follow_symlinks:
            real = self._real_path(target)
            top = str(self.resolved)
            if not (real.startswith(top.rstrip(os.sep) + os.sep) or real == top):
                raise FormatError(f"{name!r} leads out of the images folder {self.resolved} "
                                  f"through a symlink (to {real!r}); follow_symlinks "
                                  "(--follow-symlinks) allows links that leave it",
                                  file=file, record=record, field=field)
        return Path(target)

    def _real_path(self, target: str) -> str:
        """``os.path.realpath(target)``, with the real path of its folder cached (names of one
        folder then cost one ``lstat`` each instead of one per path component)."""
        folder, base = os.path.split(target)
        real = self._real_dirs.get(folder)
        if real is None:
            real = self._real_dirs[folder] = os.path.realpath(folder)
        if os.path.islink(target):
            return os.path.realpath(target)
        return os.path.join(real, base)

    def describe(self) -> dict[str, Any]:
        """What an output's header records: the folder's real path (not its contents) and the
        symlink rule."""
        return {"images": str(self.resolved), "follow_symlinks": self.follow_symlinks}


def _normalise(parts: Iterable[str]) -> list[str] | None:
    """Path segments with ``.``, empty and ``..`` segments resolved; None when a ``..`` would
    leave the top."""
    kept: list[str] = []
    for part in parts:
        if part == "..":
            if not kept:
                return None
            kept.pop()
        elif part not in ("", "."):
            kept.append(part)
    return kept


@contextlib.contextmanager
def exclusive_lock(target: PathLike, *, what: str) -> Iterator[Path]:
    """Hold ``TARGET.lock`` (an ``flock`` on a file beside the target) for the ``with`` block, so
    that two processes never write ``target`` at once; a second one stops at once with one line
    naming the holder's pid. The lock file is removed on release (a stale file left by a killed
    process holds no lock and is reused)."""
    lock = Path(str(target) + ".lock")
    if fcntl is None:  # pragma: no cover - Windows
        yield lock
        return
    ensure_dir(lock.parent, for_path=target)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise ConfigError(f"{target}: another {what} is using it (pid {holder}, lock file {lock}); "
                              "wait for it to finish or choose another path") from None
        try:  # the holder before us may have removed the file we opened: lock the new one
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield lock
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)
