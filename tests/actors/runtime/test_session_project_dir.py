"""A session's Task WALs live in its own project directory, whatever the cwd.

A resume from another working directory once wrote a second Task WAL there, left the
original stale, and ``verify`` passed. Now ``resume``, ``tasks`` and ``verify`` use the
directory the session was created in (or refuse, one line, if it is gone), and
``verify`` fails when an ended main run's WAL is missing or disagrees with its log.
The demo is a real process SIGKILLed mid-run; ``clew`` then runs from another working
directory (a real ``chdir``), with no ``--project``.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _processes import child_env

from actors.cli import main
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime

WORKERS = 3


def clew(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``clew ARGS`` as a real process in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "actors", *args],
        cwd=cwd,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def clew_in(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Ran:
    """Run ``clew ARGS`` in this process with ``cwd`` as the working directory."""
    out, err = io.StringIO(), io.StringIO()
    with (
        monkeypatch.context() as m,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        m.chdir(cwd)
        code = main(list(args))
    return Ran(code, out.getvalue(), err.getvalue())


def interrupted_demo(tmp_path: Path) -> tuple[Path, Path, str]:
    """Run ``clew demo`` in project ``a`` and SIGKILL it mid-run; return (home, project, sid)."""
    home, project = tmp_path / "home", tmp_path / "a"
    project.mkdir()
    done = clew(project, "demo", "--home", str(home), CLEW_FAULT_KILL_AFTER_EVENTS="46")
    assert -9 == done.returncode, done.stderr
    return home, project, done.stdout.split()[1]


#: The demo's Task WAL: named after its plan's task name (flow 2).
DEMO_WAL = "notes-app-plan"


def wal_of(project: Path, sid: str) -> Path:
    return project / ".clew" / "tasks" / sid / f"{DEMO_WAL}.wal.jsonl"


def test_a_resume_from_another_directory_finishes_the_sessions_own_task_wal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project, sid = interrupted_demo(tmp_path)
    elsewhere = tmp_path / "b"
    elsewhere.mkdir()

    def clew_elsewhere(*args: str) -> Ran:
        return clew_in(elsewhere, monkeypatch, *args, "--home", str(home))

    resumed = clew_elsewhere("resume", sid)

    assert 0 == resumed.returncode, resumed.stdout + resumed.stderr
    assert not (elsewhere / ".clew").exists()  # no second Task WAL, no stray notes
    tasks = json.loads(clew_elsewhere("tasks", sid, "--json").stdout)
    assert str(wal_of(project, sid)) == tasks["wal"]["path"]
    assert {"completed"} == {t["status"] for t in tasks["tasks"]}
    verified = clew_elsewhere("verify", sid)
    assert 0 == verified.returncode, verified.stdout
    with Runtime(home, elsewhere) as rt:
        assert project == rt.session_dir(sid)
        assert rt.replay(sid).identical


def test_a_session_whose_project_directory_is_gone_is_refused_until_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project, sid = interrupted_demo(tmp_path)
    moved = tmp_path / "moved-away"
    project.rename(moved)
    elsewhere = tmp_path / "b"
    elsewhere.mkdir()

    def clew_elsewhere(*args: str) -> Ran:
        return clew_in(elsewhere, monkeypatch, *args, "--home", str(home))

    for command in ("resume", "tasks"):
        refused = clew_elsewhere(command, sid)
        lines = refused.stderr.strip().splitlines()
        assert (2, 1) == (refused.returncode, len(lines)), refused.stderr
        assert f"{project}, which no longer exists" in lines[0]
    verified = clew_elsewhere("verify", sid)
    assert 0 == verified.returncode  # interrupted: nothing to compare yet, nothing missing
    assert not (elsewhere / ".clew").exists()

    moved.rename(project)
    assert 0 == clew_elsewhere("resume", sid).returncode
    project.rename(moved)
    verified = clew_elsewhere("verify", sid)
    assert 1 == verified.returncode
    assert f"{project}, which no longer exists" in verified.stdout


@pytest.fixture
def completed(tmp_path: Path) -> tuple[Runtime, str, Path]:
    """A completed demo session (and its open runtime) in project ``a``."""
    project = tmp_path / "a"
    rt = Runtime(tmp_path / "home", project)
    session = rt.new_session()
    assert (
        "completed"
        == session.run(DEMO_PROMPT, model=demo_model(WORKERS), tools=demo_tools(project)).status
    )
    return rt, session.id, project


def problems(rt: Runtime, sid: str) -> list[str]:
    report = rt.verify(sid)
    assert report.ok == (not report.sessions[0].problems)
    return report.sessions[0].problems


def test_verify_fails_when_an_ended_runs_task_wal_is_missing(
    completed: tuple[Runtime, str, Path],
) -> None:
    rt, sid, project = completed
    assert [] == problems(rt, sid)

    wal_of(project, sid).unlink()

    assert [
        f"task WAL {DEMO_WAL}: missing, though run {sid}:brain:r1"
        " planned 5 tasks (written in another project directory?)"
    ] == problems(rt, sid)
    rt.close()


def test_verify_fails_when_an_ended_runs_task_wal_is_stale(
    completed: tuple[Runtime, str, Path],
) -> None:
    rt, sid, project = completed
    wal = wal_of(project, sid)
    lines = wal.read_bytes().splitlines(keepends=True)
    # What the crashed run's WAL looked like: the primary and the review never moved.
    wal.write_bytes(b"".join(lines[:-4]))

    (problem,) = problems(rt, sid)

    assert problem.startswith(f"task WAL {DEMO_WAL}: stale: ")
    assert "primary is ready where the log says completed" in problem
    rt.close()


def test_a_project_copied_with_its_task_wals_is_used_where_it_now_is(
    completed: tuple[Runtime, str, Path], tmp_path: Path
) -> None:
    rt, sid, project = completed
    rt.close()
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    shutil.rmtree(project)

    with Runtime(tmp_path / "home", copy) as moved:
        assert (copy, []) == (moved.session_dir(sid), problems(moved, sid))
