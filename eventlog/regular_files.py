"""Open only regular files: no symlink below a root, no FIFO or device, a bounded read.

What clew reads or appends to in a project directory (Task WALs, the demo's notes) comes
from a tree that anyone with a checkout can shape — a cloned repository may carry a
symlink. So :func:`open_under` walks from the root one component at a time with
``O_NOFOLLOW`` (a symlinked ``.clew``, ``tasks``, session directory or file is refused,
whether it leads inside the project or out), opens with ``O_NONBLOCK`` (a FIFO cannot
block the open) and checks with ``fstat`` on the opened descriptor that it holds a
regular file. Directories it creates are ``0700`` and files ``0600`` whatever the umask,
each fsynced into its parent (a power loss must not drop a directory whose files were
fsynced). :func:`read_fd` reads at most a caller's limit, so ``/dev/zero`` or a
runaway file cannot fill the memory.

POSIX only, like the rest of the durable layer (``O_NOFOLLOW``, ``dir_fd``).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from eventlog.durable_fs import make_dirs_durable
from eventlog.errors import UnsafeFile

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
MIB = 1024 * 1024

# O_NONBLOCK: opening a FIFO for reading would wait for a writer; with it the open
# returns at once and fstat refuses the FIFO. It changes nothing for a regular file.
_SAFE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def kind_of(mode: int) -> str:
    """Return what ``st_mode`` is, for a message ("a FIFO")."""
    kinds = [
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ]
    return next((name for test, name in kinds if test(mode)), "an unknown kind of file")


def _open_dir(name: str, parent_fd: int, shown: Path, *, create: bool) -> int | None:
    """Open the directory ``name`` below ``parent_fd`` without following a link."""
    try:
        return os.open(name, _DIR, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            return None
    except OSError:
        # A symlink gives ENOTDIR (O_DIRECTORY is checked first) or ELOOP.
        refusal = _refusal(name, parent_fd, shown, "a directory")
        if refusal is None:
            raise
        raise refusal from None
    try:
        os.mkdir(name, PRIVATE_DIR_MODE, dir_fd=parent_fd)
        created = True
    except FileExistsError:
        created = False  # made concurrently: whoever made it fsyncs the parent
    fd = _open_dir(name, parent_fd, shown, create=False)
    if fd is None:  # removed again between mkdir and open
        raise FileNotFoundError(errno.ENOENT, "directory vanished while created", str(shown))
    if created:
        os.fchmod(fd, PRIVATE_DIR_MODE)  # the umask may have taken bits from mkdir's mode
        os.fsync(parent_fd)
    return fd


def open_dir_under(root: Path, path: Path, *, create: bool = False) -> int | None:
    """Return an fd of the directory ``path``, reached from ``root`` without symlinks.

    ``root`` itself is opened normally (it is the caller's choice, and made with its
    parents if missing and ``create``); every component of ``path`` below it must be a
    real directory. Missing ones are created (0700, fsynced into their parent) when
    ``create``; otherwise ``None`` is returned.

    Raises:
        UnsafeFile: a component below ``root`` is a symlink or not a directory.
        OSError: a directory cannot be opened or created.
        ValueError: ``path`` is not below ``root`` (a caller's bug).
    """
    parts = path.relative_to(root).parts
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if not create:
            return None
        make_dirs_durable(root)
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = root
    try:
        for name in parts:
            shown = shown / name
            child = _open_dir(name, fd, shown, create=create)
            os.close(fd)
            fd = -1
            if child is None:
                return None
            fd = child
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    return fd


def _open_file(name: str, dir_fd: int, flags: int, shown: Path) -> tuple[int, bool]:
    """Open ``name`` in ``dir_fd`` without following a link; say whether it was created."""
    try:
        if flags & os.O_CREAT:
            try:
                return os.open(name, flags | os.O_EXCL, PRIVATE_FILE_MODE, dir_fd=dir_fd), True
            except FileExistsError:
                flags &= ~os.O_CREAT
        return os.open(name, flags, dir_fd=dir_fd), False
    except FileNotFoundError:
        raise
    except OSError:
        # ELOOP for a symlink; ENXIO for a FIFO without a reader opened to write; …
        refusal = _refusal(name, dir_fd, shown, "a regular file")
        if refusal is None:
            raise
        raise refusal from None


def _refusal(name: str, dir_fd: int, shown: Path, wanted: str) -> UnsafeFile | None:
    """Return why the entry ``name`` is not ``wanted``, or None when it is (or is gone)."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return UnsafeFile(f"{shown}: is a symbolic link; refusing to follow it")
    if stat.S_ISDIR(mode) if wanted == "a directory" else stat.S_ISREG(mode):
        return None
    return UnsafeFile(f"{shown}: is {kind_of(mode)}, not {wanted}")


def open_under(root: Path, path: Path, flags: int) -> int | None:
    """Open the regular file ``path`` below ``root`` following no symlink; ``None`` if missing.

    With ``os.O_CREAT`` in ``flags`` the missing directories and the file are created
    (0700 / 0600 whatever the umask) and each new entry is fsynced into its directory.

    Raises:
        UnsafeFile: the file or a directory below ``root`` is a symlink, or the file is a
            FIFO, a device, a directory, … — nothing else was opened or changed.
        OSError: the file cannot be opened.
    """
    create = bool(flags & os.O_CREAT)
    dir_fd = open_dir_under(root, path.parent, create=create)
    if dir_fd is None:
        return None
    try:
        try:
            fd, created = _open_file(path.name, dir_fd, flags | _SAFE, path)
        except FileNotFoundError:
            if create:
                raise
            return None
        if created:
            os.fchmod(fd, PRIVATE_FILE_MODE)  # whatever the umask took from the mode
            os.fsync(dir_fd)  # the new entry must survive a power loss like its lines
    finally:
        os.close(dir_fd)
    return check_regular(fd, path)


def check_regular(fd: int, shown: Path) -> int:
    """Return ``fd`` if it holds a regular file; else close it and refuse.

    Raises:
        UnsafeFile: a FIFO, a device, a directory or a socket.
    """
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UnsafeFile(f"{shown}: is {kind_of(mode)}, not a regular file")
    return fd


def read_fd(fd: int, limit: int, shown: Path, what: str) -> bytes:
    """Read the whole regular file open at ``fd``, refusing more than ``limit`` bytes.

    Raises:
        UnsafeFile: the file is larger than ``limit`` (checked before reading, and again
            while reading, for a file that grows).
        OSError: the read failed.
    """
    size = os.fstat(fd).st_size
    if size > limit:
        raise UnsafeFile(_too_big(shown, size, limit, what))
    chunks: list[bytes] = []
    total = 0
    want = size + 1  # one read for a file that does not change meanwhile, +1 to see EOF
    while chunk := os.read(fd, want):
        total += len(chunk)
        if total > limit:
            raise UnsafeFile(_too_big(shown, total, limit, what))
        chunks.append(chunk)
        want = MIB
    return b"".join(chunks)


def read_regular_file(path: Path, limit: int, what: str) -> bytes:
    """Read the regular file at ``path`` (a symlink to one is fine), at most ``limit`` bytes.

    For a file the user names on purpose (a model script): links are followed, but what
    they lead to must be a regular file, so ``/dev/zero`` or a FIFO is refused at once.

    Raises:
        UnsafeFile: not a regular file, or larger than ``limit``.
        OSError: it cannot be opened or read.
    """
    fd = check_regular(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), path)
    try:
        return read_fd(fd, limit, path, what)
    finally:
        os.close(fd)


def _too_big(shown: Path, size: int, limit: int, what: str) -> str:
    cap = f"{limit // MIB:,} MiB" if limit % MIB == 0 else f"{limit:,} bytes"
    return f"{shown}: {size:,} bytes is over the {cap} limit of {what}"
