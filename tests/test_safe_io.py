"""Safe writes and reads (issue 13, finding 3): a write follows a symlink, writes through a FIFO or
character device (or refuses with one line), names the user's path in its errors, and removes the
temporary files of killed writers; a FIFO, device or folder given as input is one error line,
not a hang; a folder is swapped in as a whole."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hoibench._exceptions import ConfigError, FormatError
from hoibench._io import (
    atomic_folder,
    atomic_write_bytes,
    check_folder,
    clean_leftovers,
    owned_folder,
    read_bytes,
    read_json,
    write_folder_provenance,
)


def _dead_pid() -> int:
    """The id of a process that has ended (its leftovers may be removed)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _char_device(path: Path, major: int, minor: int) -> Path:
    """A character device node in a test folder (root only; skipped where devices are off)."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        with open(path, "wb") as fh:
            fh.write(b"")
    except OSError as exc:
        pytest.skip(f"device nodes do not work here ({exc})")
    return path


def test_write_follows_a_symlink_and_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_bytes(b"old")
    os.symlink("real.json", tmp_path / "link.json")
    atomic_write_bytes(tmp_path / "link.json", b"new")
    assert os.path.islink(tmp_path / "link.json")
    assert (tmp_path / "real.json").read_bytes() == b"new"


def test_write_goes_through_a_character_device(tmp_path: Path) -> None:
    null = _char_device(tmp_path / "null", 1, 3)
    atomic_write_bytes(null, b"discarded")
    assert stat.S_ISCHR(os.stat(null).st_mode)  # still the device, not a regular file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temporary file left


def test_a_full_device_is_one_error_naming_it(tmp_path: Path) -> None:
    full = _char_device(tmp_path / "full", 1, 7)
    with pytest.raises(ConfigError, match=r"full: cannot write \(No space left on device\)") as exc:
        atomic_write_bytes(full, b"x" * 10000)
    assert ".tmp" not in str(exc.value) and stat.S_ISCHR(os.stat(full).st_mode)


def test_write_goes_through_a_fifo_with_a_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    for _ in range(200):  # the reader must have opened its end
        try:
            atomic_write_bytes(fifo, b"through the pipe")
            break
        except ConfigError:
            threading.Event().wait(0.01)
    reader.join(5)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_fifo_nobody_reads_is_refused_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="a FIFO with no reader"):
        atomic_write_bytes(fifo, b"x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_inputs_that_are_not_regular_files_are_one_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path = Path("/dev/zero")  # reading it would never end
    box: list[BaseException] = []

    def read() -> None:
        try:
            read_bytes(path)
        except BaseException as exc:
            box.append(exc)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(5)
    assert box, f"reading {path} hangs"
    assert isinstance(box[0], FormatError) and str(path) in str(box[0])


def test_cli_reading_a_fifo_exits_with_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "gt.json"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "hoibench", "data", "info", str(fifo)],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "FIFO" in proc.stderr


def test_leftover_temp_files_of_killed_writers_are_removed(tmp_path: Path) -> None:
    dead = _dead_pid()
    stale = tmp_path / f".out.json.{dead}.abc123.tmp"
    stale.write_bytes(b"half")
    stale_dir = tmp_path / f".out.json.{dead}.xyz.tmp"
    stale_dir.mkdir()
    live = tmp_path / f".out.json.{os.getpid()}.other.tmp"  # a writer still running: kept
    live.write_bytes(b"")
    atomic_write_bytes(tmp_path / "out.json", b"{}")
    assert not stale.exists() and not stale_dir.exists() and live.exists()
    assert clean_leftovers(tmp_path / "out.json") == []


def test_write_to_a_folder_or_socket_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        atomic_write_bytes(tmp_path, b"x")
    import socket

    sock_path = tmp_path / "s.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock_path))
    try:
        with pytest.raises(ConfigError, match="is a socket"):
            atomic_write_bytes(sock_path, b"x")
    finally:
        s.close()


def test_atomic_folder_swaps_a_whole_folder_and_refuses_foreign_ones(tmp_path: Path) -> None:
    target = tmp_path / "split"
    names = ["a.json", "b.json"]
    for content in (b"1", b"2"):
        with atomic_folder(target, owned=owned_folder(names)) as stage:
            for n in names:
                (stage / n).write_bytes(content)
            write_folder_provenance(stage, writer="test", parameters={"v": content.decode()}, inputs={})
    assert (target / "a.json").read_bytes() == b"2"
    assert read_json(target / "provenance.json")["parameters"] == {"v": "2"}
    assert [p.name for p in tmp_path.iterdir()] == ["split"]  # no staging folder left
    # a failure inside leaves the old folder as it was, and no staging folder
    with pytest.raises(RuntimeError), atomic_folder(target, owned=owned_folder(names)) as stage:
        (stage / "a.json").write_bytes(b"3")
        raise RuntimeError("boom")
    assert (target / "a.json").read_bytes() == b"2" and len(list(tmp_path.iterdir())) == 1
    # a folder with files hoibench did not write is not thrown away
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(ConfigError, match="did not write"), atomic_folder(mine, owned=owned_folder(names)):
        pass
    assert (mine / "thesis.tex").exists()


def test_check_folder_finds_a_folder_that_mixes_two_outputs(tmp_path: Path) -> None:
    with atomic_folder(tmp_path / "f") as stage:
        (stage / "a.json").write_bytes(b"1")
        write_folder_provenance(stage, writer="split sg", parameters={}, inputs={})
    assert check_folder(tmp_path / "f")["writer"] == "split sg"
    (tmp_path / "f" / "a.json").write_bytes(b"from another run")
    with pytest.raises(FormatError, match="mixes outputs"):
        check_folder(tmp_path / "f")


def test_output_through_an_open_descriptor_is_written_through() -> None:
    """``--json /dev/stdout`` (here ``/proc/self/fd/N`` of a pipe) writes into the open file; it
    does not try to put a temporary file beside it and rename it over the descriptor."""
    from hoibench._io import atomic_write_json

    r, w = os.pipe()
    try:
        atomic_write_json(f"/proc/self/fd/{w}", {"ok": 1})
        os.close(w)
        w = -1
        with os.fdopen(r, "rb") as fh:
            r = -1
            assert fh.read() == b'{"ok":1}'
    finally:
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)
