"""Durable directory creation: a new directory's entry is fsynced into its parent.

fsyncing a file and its directory makes the file's *entry* durable, but not the
directory itself when it was just created: after a power loss a fresh
``artifacts/<sid>/`` (or ``.clew/tasks/<sid>/``) could vanish with every fsynced file
in it. So each directory this call creates is fsynced into its parent.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """fsync the directory ``path`` (makes the entries it holds durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs_durable(path: Path, mode: int = 0o777) -> None:
    """Create ``path`` and its missing parents, fsyncing the parent of each new one.

    Args:
        mode: of each directory created (the umask still applies; 0o700 stays 0o700).

    Raises:
        OSError: a directory cannot be created or fsynced.
    """
    missing: list[Path] = []
    current = path
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=mode)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # created concurrently: whoever created it fsyncs its parent
        fsync_dir(directory.parent)
