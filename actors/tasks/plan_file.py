"""The plan as a project file: ``<project>/.clew/plans/<session_id>/<task_name>.md``.

Seed 004 keeps the plan as an ordinary Markdown file of the project. In clew it is
*derived*: the Brain rewrites it from its run's todo events as they happen
(:func:`projections.todos.render_plan`), and nothing ever reads it back — the log and
the Task WAL are the truth, so a deleted or edited file loses nothing (the run's next
todo change, a resume or a replay writes it again).

Written like the Task WALs: no symlink is followed below the project, directories are
``0700`` and the file ``0600``; it is replaced atomically (a temporary file renamed over
it), so a reader never sees half a plan. A file that cannot be written is logged, never
an error of the run: it is not the source of truth.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import structlog

from eventlog.errors import ClewError
from eventlog.ids import validate_session_id
from eventlog.regular_files import PRIVATE_FILE_MODE, open_dir_under
from eventlog.taskwal import validate_wal_name

PLAN_SUFFIX = ".md"

log = structlog.get_logger("clew.plans")


def plan_dir(project_dir: str | os.PathLike[str], session_id: str) -> Path:
    """Return ``<project>/.clew/plans/<session_id>`` (the session id validated)."""
    return Path(project_dir) / ".clew" / "plans" / validate_session_id(session_id)


def plan_path(project_dir: str | os.PathLike[str], session_id: str, name: str) -> Path:
    """Return the path of the plan file of task name ``name`` (a safe WAL-style name)."""
    return plan_dir(project_dir, session_id) / (validate_wal_name(name) + PLAN_SUFFIX)


def write_plan_file(project_dir: Path, session_id: str, name: str, text: str) -> Path | None:
    """Replace the plan file ``name`` of the session with ``text``; return its path.

    Returns None when the file cannot be written (logged at ``info``: the file is
    derived, so its absence is never a problem of the run — and a full disk, say, is
    reported once, by the run's own interruption).
    """
    path = plan_dir(project_dir, session_id) / f"{name}{PLAN_SUFFIX}"
    try:
        validate_wal_name(name)
        fd = open_dir_under(Path(project_dir), path.parent, create=True)
        assert fd is not None  # create=True: made when missing
        try:
            _replace(fd, path.name, text.encode())
        finally:
            os.close(fd)
    except (OSError, ClewError) as e:
        log.bind(session_id=session_id).info("plan_file_not_written", path=str(path), error=str(e))
        return None
    return path


def _replace(dir_fd: int, name: str, data: bytes) -> None:
    """Write ``data`` to a temporary file in ``dir_fd`` and rename it over ``name``."""
    tmp = f".{name}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    out = os.open(tmp, flags, PRIVATE_FILE_MODE, dir_fd=dir_fd)
    try:
        try:
            os.fchmod(out, PRIVATE_FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)  # no half plan left behind
        raise
