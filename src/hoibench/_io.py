"""Small file helpers shared by every package: fast JSON, atomic writes, compressed files, and
:class:`ImageFolder`, the one resolver of an image named by a data file under a folder the user
gave.

Only ``formats/``, ``benchmarks/`` writers, runners and the CLI do I/O; evaluation never does.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import gzip
import io
import json
import mmap
import os
import re
import shutil
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

import orjson

try:  # SIMD base64 (the standard library's encoder was the largest cost of sending a stored frame)
    from pybase64 import b64encode_as_string as _b64_text
except ImportError:  # pragma: no cover - a platform without a pybase64 wheel: the standard library
    _b64_text = None

try:  # POSIX; elsewhere exclusive_lock does not lock
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from hoibench._exceptions import ConfigError, FormatError, MissingExtraError
from hoibench._version import __version__

__all__ = [
    "ImageFolder",
    "UnreadableFileError",
    "atomic_folder",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_csv",
    "atomic_write_json",
    "base64_text",
    "check_folder",
    "check_input_file",
    "check_json_start",
    "clean_leftovers",
    "csv_text",
    "dumps_json",
    "ensure_dir",
    "exclusive_lock",
    "file_id",
    "file_sha256",
    "owned_folder",
    "parse_json",
    "read_bytes",
    "read_folder_provenance",
    "read_json",
    "read_mat",
    "refuses_deep_nesting",
    "slug",
    "write_folder_provenance",
]

PathLike = str | os.PathLike[str]
_P = ParamSpec("_P")
_R = TypeVar("_R")


class UnreadableFileError(FormatError):
    """A file that cannot be read at all (missing, not a regular file, no permission, corrupt
    compression, not JSON / MATLAB), as opposed to one whose content has a problem."""


def _not_a_file(mode: int) -> str | None:
    """What a path of ``mode`` is when it is not a regular file (None when it is one)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"  # pragma: no cover - no other kinds on POSIX


def _unreadable(exc: OSError, path: Path) -> UnreadableFileError:
    """The one line for an OS error met while reading ``path`` (never the traceback)."""
    if isinstance(exc, FileNotFoundError):
        return UnreadableFileError("no such file", file=path)
    if isinstance(exc, IsADirectoryError):
        return UnreadableFileError("is a directory, expected a file", file=path)
    if isinstance(exc, PermissionError):
        return UnreadableFileError("permission denied", file=path)
    return UnreadableFileError(f"cannot read ({exc.strerror or exc})", file=path)


def iter_jsonl(path: PathLike, *, torn: Callable[[Sequence[bytes], int], bool]) -> Iterator[tuple[int, Any]]:
    """``(index, value)`` of every non-blank line of a JSON-lines file (``index`` 0-based). A line
    that is no JSON is skipped when ``torn(lines, index)`` says a kill cut it short (the writer's
    own rule), else it is a :class:`FormatError` naming the file and the line."""
    p = Path(path)
    lines = read_bytes(p).split(b"\n")
    for n, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            if torn(lines, n):
                continue
            raise FormatError("not a JSON record", file=p, record=n + 1) from None
        yield n, value


def parse_yaml_mapping(text: str, *, where: str, what: str) -> dict[str, Any]:
    """``text`` parsed as a YAML mapping; else one line naming ``where`` (``what``: "a template")."""
    import yaml

    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FormatError(f"not valid YAML ({' '.join(str(exc).split())})", file=where) from None
    if not isinstance(raw, dict):
        raise FormatError(f"{what} must be a mapping", file=where)
    return raw


def check_input_file(path: PathLike) -> Path:
    """``path`` when it names a regular file (symlinks followed); else a :class:`FormatError`
    naming it. A FIFO or device would make every reader hang or read forever, a folder fails
    with an error about something else."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except OSError as exc:
        raise _unreadable(exc, p) from None
    kind = _not_a_file(mode)
    if kind is not None:
        raise UnreadableFileError(f"is {kind}, expected a regular file", file=p)
    return p


def read_bytes(path: PathLike) -> bytes:
    """Read a regular file (see :func:`check_input_file`), transparently gunzipping ``*.gz``;
    a missing or unreadable file is a :class:`FormatError`."""
    p = check_input_file(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise _unreadable(exc, p) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise UnreadableFileError(f"corrupt gzip data ({exc})", file=p) from None
    return data


#: files at least this large are memory-mapped by :func:`read_buffer`
_MAP_AT = 16 << 20


def read_buffer(path: PathLike) -> bytes | mmap.mmap:
    """The file's bytes for a reader that only scans them: a large plain file is memory-mapped
    read-only (the kernel maps its page cache: no private copy, whose fresh pages cost a fault
    each, ~0.3 s per 300 MB on a virtual machine); a small or gzipped one is :func:`read_bytes`.
    The map supports slicing and the buffer protocol (``bytes(...)`` of it is a copy)."""
    p = check_input_file(path)
    try:
        if p.stat().st_size < _MAP_AT:
            return read_bytes(p)
        with open(p, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except ValueError:  # emptied since the stat: nothing to map
        pass
    except OSError as exc:
        raise _unreadable(exc, p) from None
    return read_bytes(p)


def file_sha256(path: PathLike) -> str:
    """The SHA-256 of a file's bytes as stored (what provenance records of an input)."""
    import hashlib

    h = hashlib.sha256()
    with open(check_input_file(path), "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_id(path: PathLike) -> str:
    """``name:sha256:<16 hex>``: how a run's header names an input file, so that a later command
    can tell whether it was given the same file (the name may change, the content may not)."""
    return f"{Path(path).name}:sha256:{file_sha256(path)[:16]}"


#: the characters a JSON value can begin with (``N``/``I``: the NaN/Infinity Python's json writes)
JSON_START = frozenset('{["-0123456789tfnNI')
_JSON_SPACE = " \t\r\n"


def _first_char(fh: IO[bytes]) -> tuple[str, int] | None:
    """The first character after JSON whitespace and its offset (in characters), decoded as
    :func:`json.loads` decodes bytes (UTF-8, -16 or -32, told by the BOM or the NUL pattern);
    None for an empty or all-whitespace file. Reads only as far as that character."""
    block = fh.read(1 << 12)
    if not block:
        return None
    decoder = codecs.getincrementaldecoder(json.detect_encoding(block))(errors="replace")
    offset = 0
    while block:
        text = decoder.decode(block)
        rest = text.lstrip(_JSON_SPACE)
        if rest:
            return rest[0], offset + len(text) - len(rest)
        offset += len(text)
        block = fh.read(1 << 16)
    return None


def check_json_start(path: PathLike, *, also: bytes = b"", what: str = "valid JSON") -> Path:
    """``path`` (see :func:`check_input_file`) when its first bytes can begin a JSON document,
    looked at through gzip for a ``*.gz``; else one line naming the file. ``also``: other first
    bytes allowed (a pickle's ``\\x80``; ``#`` for a text file that may begin with a comment).
    A gigabyte of NUL bytes or of some binary format is refused from its first bytes, not after
    every reader has read and parsed the whole of it. An empty file passes (the reader says what
    it lacks)."""
    p = check_input_file(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head[:1] and head[:1] in also:
                return p
            if head == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=fh) as gz:
                    found = _first_char(gz)  # type: ignore[arg-type]
            else:
                found = _first_char(fh)
    except (OSError, EOFError, zlib.error):  # unreadable or corrupt: the full read says so
        return p
    if found is not None and found[0] not in JSON_START and found[0] not in also.decode("latin-1"):
        char, offset = found
        raise UnreadableFileError(f"not {what}: character {offset} is {char!r}, which no JSON value "
                                  "begins with", file=p)
    return p


def read_json(path: PathLike) -> Any:
    """Parse a JSON file with orjson (about 5x faster than :mod:`json` on annotation files); a
    file that cannot be JSON is refused from its first bytes (:func:`check_json_start`)."""
    return parse_json(read_bytes(check_json_start(path)), path)


#: what :func:`parse_json` says of a document nested deeper than its parser allows (orjson: 1,024
#: levels; Python's json recurses and stops near 1,000): no format hoibench reads
#: nests more than a few levels, so such a file is refused, never an internal RecursionError
TOO_DEEP = "nested too deeply (about 1,000 levels of arrays and objects or more)"


def refuses_deep_nesting(reader: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate a reader whose first argument is the path: a value nested deeply enough (up to
    the parser's 1,024 levels) that Python's own recursion fails on it, in a ``repr`` for an error
    message or a walk over it, is one line naming the file, as in :func:`parse_json`, never an
    internal ``RecursionError``. The readers themselves do not recurse, so only such data gets here."""
    @functools.wraps(reader)
    def read(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return reader(*args, **kwargs)
        except RecursionError:
            raise UnreadableFileError(TOO_DEEP, file=args[0] if args else kwargs.get("path")) from None

    return read


def parse_json(data: bytes, path: PathLike, *, record: int | None = None) -> Any:
    """:func:`read_json` of bytes already read from ``path`` (named in the error, with
    ``record`` for one line of a JSON-lines file)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth" in exc.msg or "recursion" in exc.msg:  # orjson's limit, and json's would be lower
            raise UnreadableFileError(f"{TOO_DEEP} at line {exc.lineno} column {exc.colno}", file=path,
                                      record=record) from None
        # orjson rejects NaN/Infinity literals that Python's json writes; accept them.
        try:
            return json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise UnreadableFileError(f"not valid JSON ({exc})", file=path, record=record) from None
        except RecursionError:
            raise UnreadableFileError(TOO_DEEP, file=path, record=record) from None


def read_mat(path: PathLike, **loadmat_kwargs: Any) -> dict[str, Any]:
    """Load a MATLAB ``.mat`` file with :func:`scipy.io.loadmat`; a missing, unreadable or
    corrupt file is a :class:`FormatError` naming it (scipy raises several unrelated types)."""
    p = check_input_file(path)
    try:
        from scipy.io import loadmat
    except ImportError as exc:  # pragma: no cover - scipy is a core dependency
        raise MissingExtraError("scipy", "test", "reading .mat files") from exc
    try:
        return loadmat(os.fspath(p), **loadmat_kwargs)
    except PermissionError:
        raise UnreadableFileError("permission denied", file=p) from None
    except Exception as exc:  # scipy raises ValueError, TypeError, MatReadError, ... on junk
        raise UnreadableFileError(f"not a MATLAB file ({exc})", file=p) from None


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


def base64_text(data: bytes) -> str:
    """``data`` as standard base64 text (an image in a request body). pybase64's encoder where it
    is installed (a dependency; the same text as :func:`base64.b64encode`, ~3x faster on a 700 KB
    frame, the fresh string's page faults included), the standard library's otherwise."""
    if _b64_text is not None:
        return _b64_text(data)
    import base64

    return base64.b64encode(data).decode("ascii")


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` and rename it over ``path`` only on success.

    A crash or exception leaves the previous file untouched; readers never see a half-written file.
    ``*.gz`` paths are gzip-compressed (with mtime 0, so outputs stay byte-identical).

    A symlink is followed (its target is replaced, the link stays). A path that is a FIFO or a
    character device (``/dev/stdout``, ``/dev/null``, a pipe) is written through, not replaced; a
    directory, block device or socket is refused with a :class:`ConfigError`. Temporary files that
    a killed run left beside ``path`` (``.NAME.PID.*.tmp`` of a process that is gone) are removed.
    """
    target = _write_target(Path(path))
    if target is None:  # a FIFO or character device: no temporary file, no rename
        with _write_through(Path(path), mode) as fh:
            yield fh
        return
    fd, tmp = _temp_beside(target)
    try:
        with _os_errors(target), os.fdopen(fd, "wb") as raw:
            with _encoded(raw, target, mode) as sink:
                yield sink
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        with _os_errors(target):
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _encoded(raw: IO[bytes], target: Path, mode: str) -> Iterator[IO[Any]]:
    """``raw`` wrapped for ``mode`` (text or bytes), gzip-compressed for ``*.gz`` targets."""
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


@contextlib.contextmanager
def _os_errors(target: Path) -> Iterator[None]:
    """An :class:`OSError` while writing ``target`` as one :class:`ConfigError` naming it (never
    the temporary file)."""
    try:
        yield
    except OSError as exc:
        raise ConfigError(f"{target}: cannot write ({exc.strerror or exc})") from None


def _write_target(path: Path) -> Path | None:
    """The regular file to replace for ``path``: ``path`` itself, the file a symlink leads to
    (followed, so the link survives), or None for a FIFO/character device written through."""
    if os.path.abspath(path).startswith(("/dev/", "/proc/")):
        return None  # /dev/stdout, /dev/fd/N, /proc/self/fd/N: the open file behind it, as it is
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = os.stat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a new file (a parent that is a file: later)
        return real
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode):
        return real
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{path}: is a directory; give a file path to write")
    raise ConfigError(f"{path}: is {_not_a_file(mode)}; give a regular file path to write")


@contextlib.contextmanager
def _write_through(path: Path, mode: str) -> Iterator[IO[Any]]:
    """Write into a FIFO or character device as it is; a FIFO nobody reads is refused at once
    (opening it would block forever)."""
    try:  # O_APPEND: a /dev/stdout that is a file (``> out``) keeps what was written before
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_APPEND)
    except OSError as exc:
        why = "a FIFO with no reader" if exc.errno == 6 else (exc.strerror or str(exc))  # ENXIO
        raise ConfigError(f"{path}: cannot write ({why})") from None
    os.set_blocking(fd, True)
    with _os_errors(path), os.fdopen(fd, "wb") as raw:
        with _encoded(raw, path, mode) as sink:
            yield sink
        raw.flush()


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
    """Create the output folder and a temporary file in it (see :func:`ensure_dir`), after
    removing the temporary files of killed writers of ``target``."""
    if target.is_dir():
        raise ConfigError(f"{target}: is a directory; give a file path to write")
    ensure_dir(target.parent, for_path=target)
    clean_leftovers(target)
    try:
        return tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent)
    except PermissionError:
        raise ConfigError(f"{target}: cannot write there (permission denied)") from None
    except OSError as exc:
        raise ConfigError(f"{target}: cannot write there ({exc.strerror or exc})") from None


def _temp_prefix(target: Path) -> str:
    """``.NAME.PID.``: a temporary name that says whose it is, so a later run can tell the
    leftovers of a killed process from the files of one still writing."""
    return f".{target.name}.{os.getpid()}."


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


#: folders already cleaned by this process (a folder is scanned once, not once per file written)
_CLEANED: set[str] = set()
_LEFTOVER = re.compile(r"^\..+\.(\d+)\.[^/]*\.tmp$")


def clean_leftovers(target: PathLike) -> list[Path]:
    """Remove the temporary files and staging folders (``.NAME.PID.*.tmp``) that writers which
    no longer run left beside ``target`` (the first time this process writes into that folder);
    returns what was removed."""
    folder = os.path.abspath(Path(target).parent)
    removed: list[Path] = []
    if folder in _CLEANED:
        return removed
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    _CLEANED.add(folder)
    for entry in entries:
        m = _LEFTOVER.match(entry.name)
        if m is None or _pid_alive(int(m.group(1))):
            continue
        path = Path(entry.path)
        with contextlib.suppress(FileNotFoundError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


@contextlib.contextmanager
def atomic_folder(target: PathLike, *, owned: Callable[[Path], bool] | None = None,
                  staging: PathLike | None = None) -> Iterator[Path]:
    """Build a folder beside ``target`` and swap it in as a whole on success.

    Yields the staging folder to write into. On success the old ``target`` (if any) is replaced
    in one step (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames, between which
    ``target`` is briefly absent), so a reader or a kill sees either the old complete folder or
    the new one, never a mix. On an exception the staging folder is removed (unless ``staging``
    was given: a resumable caller keeps its partial work there) and ``target`` is untouched.

    An existing ``target`` is replaced only when ``owned(target)`` says hoibench wrote it (or it
    is empty): a folder with other files is refused with a :class:`ConfigError` instead of
    being thrown away.
    """
    target = Path(os.path.realpath(target)) if Path(target).is_symlink() else Path(target)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target}: is a file, not a folder")
    ensure_dir(target.parent, for_path=target)
    clean_leftovers(target)
    if target.is_dir() and any(target.iterdir()) and not (owned is not None and owned(target)):
        raise ConfigError(f"{target}: the folder holds files hoibench did not write; give a new or "
                          "empty folder (it would be replaced as a whole)")
    if staging is None:
        try:
            work = Path(tempfile.mkdtemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent))
        except OSError as exc:
            raise ConfigError(f"{target}: cannot write there ({exc.strerror or exc})") from None
    else:
        work = ensure_dir(staging, for_path=target)
    try:
        yield work
        os.chmod(work, 0o777 & ~_umask())
        _swap_in(work, target)
    except BaseException:
        if staging is None:
            shutil.rmtree(work, ignore_errors=True)
        raise


def _swap_in(work: Path, target: Path) -> None:
    """Put the folder ``work`` at ``target``, the old ``target`` going away."""
    if not target.exists():
        os.rename(work, target)
        return
    if _exchange(work, target):
        shutil.rmtree(work, ignore_errors=True)  # now the old folder
        return
    old = Path(tempfile.mkdtemp(prefix=_temp_prefix(target), suffix=".tmp", dir=target.parent))
    os.rename(target, old / "old")
    os.rename(work, target)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with Linux ``renameat2(RENAME_EXCHANGE)``; False where the
    system cannot."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


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


# ------------------------------------------------------------------------- folder provenance
#: the file a folder writer puts last into the folder it builds: what made it, and each file's hash
PROVENANCE_FILE = "provenance.json"


def write_folder_provenance(folder: PathLike, *, writer: str, parameters: dict[str, Any],
                            inputs: dict[str, Any]) -> Path:
    """Record in ``folder/provenance.json`` the writer, its ``parameters``, the content hashes of
    its ``inputs`` and the SHA-256 of every file already in the folder (write it last)."""
    root = Path(folder)
    files = {p.relative_to(root).as_posix(): file_sha256(p)
             for p in sorted(root.rglob("*")) if p.is_file() and p.name != PROVENANCE_FILE}
    path = root / PROVENANCE_FILE
    atomic_write_json(path, {"kind": "hoibench_folder", "writer": writer, "hoibench": __version__,
                             "parameters": parameters, "inputs": inputs, "files": files}, indent=True)
    return path


def read_folder_provenance(folder: PathLike) -> dict[str, Any] | None:
    """The provenance record of a folder hoibench built (None when it has none)."""
    path = Path(folder) / PROVENANCE_FILE
    if not path.is_file():
        return None
    rec = read_json(path)
    return rec if isinstance(rec, dict) and rec.get("kind") == "hoibench_folder" else None


def check_folder(folder: PathLike) -> dict[str, Any] | None:
    """Verify a folder against its provenance record: every file it lists is there with the
    recorded hash (a folder mixing two runs is a :class:`FormatError` naming the first file that
    differs). Folders without a record (written by hand or by old versions) pass; returns the
    record."""
    rec = read_folder_provenance(folder)
    if rec is None:
        return None
    root = Path(folder)
    for name, digest in dict(rec.get("files") or {}).items():
        p = root / name
        if not p.is_file():
            raise FormatError(f"is missing from the folder {root} (listed in its {PROVENANCE_FILE})", file=p)
        if file_sha256(p) != digest:
            raise FormatError(f"differs from what {rec.get('writer')} wrote into {root} (its hash is "
                              f"not the one in {PROVENANCE_FILE}): the folder mixes outputs", file=p)
    return rec


def owned_folder(names: Iterable[str]) -> Callable[[Path], bool]:
    """The ``owned`` test of :func:`atomic_folder` for a writer of the files ``names``: a folder
    with a provenance record, or holding only (some of) those files (a folder from an older
    hoibench), may be replaced."""
    known = {*names, PROVENANCE_FILE}

    def owned(folder: Path) -> bool:
        if read_folder_provenance(folder) is not None:
            return True
        return all(p.name in known for p in folder.iterdir())

    return owned


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
        return Path(self.file(name, file=file, record=record, field=field))

    def file(self, name: object, *, file: object = None, record: object = None,
             field: str | None = "file_name") -> str:
        """:meth:`path` as text (no ``Path`` object: a runner checks thousands of names before
        its first request)."""
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
        return target

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

    @staticmethod
    def missing(paths: Iterable[str]) -> list[str]:
        """The ``paths`` (from :meth:`file`) that are no regular file (a link counts as its
        target), in order. A folder holding many of them is listed once instead of a ``stat``
        per path; the answer is of the moment of the call."""
        paths = list(paths)
        by_folder: dict[str, list[str]] = {}
        for p in paths:
            by_folder.setdefault(os.path.dirname(p), []).append(p)
        missing: set[str] = set()
        for folder, inside in by_folder.items():
            listed = _regular_files(folder) if len(inside) >= _LIST_FOLDER_AT else None
            # a stat where the folder is not listed, or its listing lacks the name (a
            # case-insensitive or normalising file system may still find it)
            missing.update(p for p in inside if (listed is None or p not in listed) and not os.path.isfile(p))
        return [p for p in paths if p in missing]

    def describe(self) -> dict[str, Any]:
        """What an output's header records: the folder's real path (not its contents) and the
        symlink rule."""
        return {"images": str(self.resolved), "follow_symlinks": self.follow_symlinks}


#: names in one folder from which :meth:`ImageFolder.missing` lists it instead of a stat each
_LIST_FOLDER_AT = 64


def _regular_files(folder: str) -> set[str] | None:
    """The paths of the regular files in ``folder`` (links followed), from one listing; ``None``
    when it cannot be listed (not a folder, gone, unreadable)."""
    found: set[str] = set()
    try:
        with os.scandir(folder) as it:
            for entry in it:
                with contextlib.suppress(OSError):
                    if entry.is_file():  # d_type; a stat for links only
                        found.add(entry.path)
    except OSError:
        return None
    return found


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


def slug(text: str, *, keep: str = "", default: str = "x") -> str:
    """``text`` as a file or anchor name: lower case, every run of characters other than ASCII
    letters, digits and ``keep`` one ``-``; ``default`` when nothing is left. One rule for every
    name hoibench derives from a user's string (figures, tables, result folders)."""
    out = re.sub(f"[^a-z0-9{re.escape(keep)}]+", "-", text.lower()).strip("-")
    return out or default
