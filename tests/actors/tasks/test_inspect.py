"""Read-only inspection of Task WALs: special files and symlinks are reported, never followed."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
from pathlib import Path

from _task_helpers import SyncTasks

from actors.tasks.inspect import inspect_wals
from eventlog.taskwal import wal_dir, wal_path

SID = "sess_20260612_153022_a1b2"
#: The main run's WAL name (``run_wals`` names the main runs' WALs, in run order).
NAME = "fix-the-parser"


def _report(project: Path) -> list[tuple[str, bool, bool, str | None, int]]:
    return [
        (w.name, w.exists, w.available, w.error, len(tasks))
        for w, tasks in inspect_wals(project, SID, [NAME])
    ]


def test_a_healthy_wal_is_listed_with_its_tasks(tmp_path: Path) -> None:
    with SyncTasks(tmp_path, SID) as tasks:
        tasks.create_task(NAME, "a", "A", "coder")

    assert [(NAME, True, True, None, 1)] == _report(tmp_path)


def test_a_fifo_wal_is_reported_unavailable_at_once(tmp_path: Path) -> None:
    path = wal_path(tmp_path, SID, NAME)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)

    expected = [(NAME, True, False, f"{path}: is a FIFO, not a regular file", 0)]
    assert expected == _report(tmp_path)


def test_a_wal_linked_to_dev_zero_is_reported_unavailable_without_reading_it(
    tmp_path: Path,
) -> None:
    path = wal_path(tmp_path, SID, NAME)
    path.parent.mkdir(parents=True)
    path.symlink_to("/dev/zero")

    expected = [(NAME, True, False, f"{path}: is a symbolic link; refusing to follow it", 0)]
    assert expected == _report(tmp_path)


def test_a_dangling_symlink_is_reported_not_taken_for_a_missing_wal(tmp_path: Path) -> None:
    path = wal_path(tmp_path, SID, "extra")
    path.parent.mkdir(parents=True)
    path.symlink_to(tmp_path / "nowhere")

    assert ("extra", False) == next(
        (w.name, w.available) for w, _ in inspect_wals(tmp_path, SID, [NAME]) if w.name == "extra"
    )


def test_a_symlinked_session_directory_is_reported_and_not_listed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    with SyncTasks(outside, SID) as tasks:
        tasks.create_task("secret", "a", "A", "coder")
    project = tmp_path / "project"
    wal_dir(project, SID).parent.mkdir(parents=True)
    wal_dir(project, SID).symlink_to(wal_dir(outside, SID))

    # Only the run's own WAL is named, as unavailable; "secret" behind the link is not listed.
    error = f"{wal_dir(project, SID)}: is a symbolic link; refusing to follow it"
    assert [(NAME, True, False, error, 0)] == _report(project)
