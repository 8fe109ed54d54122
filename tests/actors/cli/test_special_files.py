"""The CLI against special files, through real processes: refused in one line, never a hang.

A FIFO where a Task WAL belongs, a link to ``/dev/zero``, a Task WAL symlinked outside the
project, ``--model scripted:/dev/zero``: each used to hang or grow without bound.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import structlog
from _cli_helpers import Where, copy_where, invoke, main_wal, run_process


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    """One finished demo session (copy it before changing it)."""
    base = tmp_path_factory.mktemp("recorded")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    result = invoke(where, "demo", "--workers", "1", "--json")
    structlog.reset_defaults()
    assert 0 == result.code, result.err
    return where, result.json()["session_id"]


@pytest.fixture
def demo_copy(recorded: tuple[Where, str], tmp_path: Path) -> tuple[Where, str]:
    where, sid = recorded
    return copy_where(where, tmp_path, symlinks=True), sid


def _fifo(wal: Path) -> None:
    wal.unlink()
    os.mkfifo(wal)


def _dev_zero(wal: Path) -> None:
    wal.unlink()
    wal.symlink_to("/dev/zero")


@pytest.mark.parametrize(
    ("make", "reason"),
    [(_fifo, "is a FIFO, not a regular file"), (_dev_zero, "is a symbolic link")],
)
def test_tasks_and_verify_report_a_special_wal_at_once_instead_of_hanging(
    demo_copy: tuple[Where, str], make: Callable[[Path], None], reason: str
) -> None:
    where, sid = demo_copy
    wal = main_wal(where, sid)
    make(wal)

    tasks = run_process(where, "tasks", sid)  # a hang fails the 60 s communicate()
    verify = run_process(where, "verify", sid)

    assert 0 == tasks.code, tasks.err
    assert f"unavailable — {wal}: {reason}" in " ".join(tasks.out.split())
    assert 1 == verify.code
    assert f"{wal}: {reason}" in verify.out


def test_resume_with_a_wal_symlinked_outside_leaves_the_target_uncut(empty: Where) -> None:
    killed = run_process(empty, "demo", "--workers", "1", CLEW_FAULT_KILL_AFTER_EVENTS="30")
    assert -signal.SIGKILL == killed.code
    sid = killed.out.split()[1]
    wal = main_wal(empty, sid)
    outside = empty.project.parent / "outside.wal.jsonl"
    outside.write_bytes(wal.read_bytes() + b'{"seq":99,"torn')
    before = outside.read_bytes()
    wal.unlink()
    wal.symlink_to(outside)

    resumed = run_process(empty, "resume", sid)

    assert 0 != resumed.code
    assert f"{wal}: is a symbolic link; refusing to follow it" in resumed.err
    assert before == outside.read_bytes()


@pytest.mark.parametrize("script", ["/dev/zero", "FIFO", "BIG"])
def test_a_scripted_model_from_a_special_or_huge_file_exits_2_in_one_line(
    empty: Where, script: str
) -> None:
    path = Path(script)
    if script == "FIFO":
        path = empty.project / "script.json"
        os.mkfifo(path)
    elif script == "BIG":
        path = empty.project / "script.json"
        with path.open("wb") as f:
            f.truncate(17 * 1024 * 1024)  # sparse: refused by its size, never read

    result = run_process(empty, "run", "hi", "--model", f"scripted:{path}")

    assert (2, 1) == (result.code, len(result.err_lines())), result.err
    assert result.err.startswith(f"error: cannot read script {path}: ")
    assert not (empty.home / "sessions.sqlite").exists()
