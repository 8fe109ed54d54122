"""Regular files only: no symlink below a root, no FIFO or device, bounded reads, 0700/0600."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog.errors import Refused, UnsafeFile
from eventlog.regular_files import MIB, open_dir_under, open_under, read_fd, read_regular_file

WRITE = os.O_WRONLY | os.O_APPEND | os.O_CREAT


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common umask: without care, files come out 0644 and directories 0755."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _read(root: Path, path: Path, limit: int = MIB) -> bytes | None:
    fd = open_under(root, path, os.O_RDONLY)
    if fd is None:
        return None
    try:
        return read_fd(fd, limit, path, "a test file")
    finally:
        os.close(fd)


def test_an_unsafe_file_is_a_refusal() -> None:
    assert issubclass(UnsafeFile, Refused)


def test_a_regular_file_below_the_root_is_read_and_a_missing_one_is_none(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.txt").write_bytes(b"hello\n")

    assert b"hello\n" == _read(tmp_path, tmp_path / "a" / "b" / "f.txt")
    assert None is _read(tmp_path, tmp_path / "a" / "b" / "nope.txt")
    assert None is _read(tmp_path, tmp_path / "a" / "missing" / "nope.txt")


def test_a_symlinked_file_is_refused_even_when_it_leads_to_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_bytes(b"secret")
    (tmp_path / "link.txt").symlink_to(target)

    with pytest.raises(UnsafeFile, match=r"link\.txt: is a symbolic link; refusing to follow it"):
        _read(tmp_path, tmp_path / "link.txt")


def test_a_symlinked_directory_below_the_root_is_refused_and_nothing_is_made_behind_it(
    tmp_path: Path,
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / ".clew").symlink_to(outside)
    path = project / ".clew" / "tasks" / "f.txt"

    with pytest.raises(UnsafeFile, match=r"\.clew: is a symbolic link"):
        open_under(project, path, WRITE)
    with pytest.raises(UnsafeFile, match=r"\.clew: is a symbolic link"):
        _read(project, path)
    assert [] == list(outside.iterdir())


def test_a_file_where_a_directory_belongs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"")

    with pytest.raises(UnsafeFile, match=r"a: is a regular file, not a directory"):
        open_dir_under(tmp_path, tmp_path / "a" / "b")


def test_a_fifo_is_refused_at_once_instead_of_blocking_the_open(tmp_path: Path) -> None:
    fifo = tmp_path / "f.txt"
    os.mkfifo(fifo)

    with pytest.raises(UnsafeFile, match=r"f\.txt: is a FIFO, not a regular file"):
        _read(tmp_path, fifo)
    with pytest.raises(UnsafeFile, match="is a FIFO"):
        open_under(tmp_path, fifo, WRITE)  # a writer would block waiting for a reader
    with pytest.raises(UnsafeFile, match="is a FIFO"):
        read_regular_file(fifo, MIB, "a test file")


def test_a_named_file_may_be_a_symlink_but_not_to_a_device(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_bytes(b"{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    (tmp_path / "zero").symlink_to("/dev/zero")

    assert b"{}" == read_regular_file(tmp_path / "link.json", MIB, "a test file")
    with pytest.raises(UnsafeFile, match="is a character device, not a regular file"):
        read_regular_file(tmp_path / "zero", MIB, "a test file")
    with pytest.raises(UnsafeFile, match="is a directory, not a regular file"):
        read_regular_file(tmp_path, MIB, "a test file")


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        f.truncate(3 * MIB + 1)  # sparse: the refusal must come from the size, not a read

    too_big = r"big\.txt: 3,145,729 bytes is over the 2 MiB limit of a test file"
    with pytest.raises(UnsafeFile, match=too_big):
        read_regular_file(big, 2 * MIB, "a test file")
    with pytest.raises(UnsafeFile, match=r"over the 100 bytes limit"):
        _read(tmp_path, big, limit=100)


def test_a_file_at_the_limit_is_read_whole(tmp_path: Path) -> None:
    exact = tmp_path / "exact.txt"
    exact.write_bytes(b"x" * 100)

    assert b"x" * 100 == read_regular_file(exact, 100, "a test file")


def test_new_directories_are_0700_and_new_files_0600_under_umask_022(
    tmp_path: Path, umask_022: None
) -> None:
    path = tmp_path / ".clew" / "tasks" / "s" / "f.txt"

    fd = open_under(tmp_path, path, WRITE)
    assert fd is not None
    os.close(fd)

    modes = [_mode(p) for p in (path.parents[2], path.parents[1], path.parent, path)]
    assert [0o700, 0o700, 0o700, 0o600] == modes


def test_an_existing_file_is_appended_to_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"a")
    path.chmod(0o640)

    fd = open_under(tmp_path, path, WRITE)
    assert fd is not None
    os.write(fd, b"b")
    os.close(fd)

    assert (b"ab", 0o640) == (path.read_bytes(), _mode(path))
