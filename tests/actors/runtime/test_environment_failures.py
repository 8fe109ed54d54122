"""An environment failure stops a run as *interrupted*, records nothing, and resumes.

Disk full once became a recorded ``worker_failed``, and every later resume was refused as
a divergence. Here the store really fills — SQLite's own ``SQLITE_FULL`` (the write
connection's ``max_page_count``), a size-limited tmpfs under the home (root only), a
tmpfs under the project's Task WAL — or another writer holds the database past the busy
timeout, and each time: the outcome is ``interrupted`` with
the cause, no failure is recorded, the session lists as interrupted, a resume while the
disk is still full says so (no divergence), and once space is back the resume completes,
the session replays identically and verifies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pydantic
import pytest
from _cli_helpers import invoke
from _processes import child_env
from _runtime_helpers import route, rule, scripted, worker

from actors.models.tools import FunctionTool
from actors.runtime.runtime import Runtime
from eventlog.events import (
    RunEnded,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    WorkerFailed,
)

PROMPT = "Fill the disk, then report."


class NoArgs(pydantic.BaseModel):
    pass


def model() -> Any:
    """w1 calls ``arm`` (which fills the disk) then reports; w2 just answers."""
    return scripted(
        route([worker("w1", "filler", "Fill"), worker("w2", "other", "Other")]),
        rule("filler", {"tool_calls": [{"name": "arm"}]}, {"text": "filled"}),
        rule("other", {"text": "other done"}),
    )


def model_with_a_long_tail() -> Any:
    """As :func:`model`, with twelve more workers waiting for w1: after w1's tool call the
    Task WAL gets ~30 more lines, more than the page of it a full tmpfs still has room in."""
    others = [worker(f"w{i}", "other", f"Other {i}", deps=["w1"]) for i in range(2, 14)]
    return scripted(
        route([worker("w1", "filler", "Fill"), *others]),
        rule("filler", {"tool_calls": [{"name": "arm"}]}, {"text": "filled"}),
        rule("other", {"text": "other done"}),
    )


def arm_tool(fill: Any) -> FunctionTool:
    """An idempotent tool that runs ``fill()`` the first time it is called, only."""
    once = threading.Event()

    def arm(_args: NoArgs) -> str:
        if not once.is_set():
            once.set()
            fill()
        return "armed"

    return FunctionTool("arm", arm, NoArgs, idempotent=True)


def write_connection(rt: Runtime) -> apsw.Connection:
    # The store's one write connection: max_page_count is a per-connection limit.
    conn: apsw.Connection = rt.store._connections.writer()  # type: ignore[attr-defined]
    return conn


def cap_database(rt: Runtime) -> None:
    """Let the database grow no more: SQLite itself then answers SQLITE_FULL."""
    conn = write_connection(rt)
    conn.pragma("max_page_count", conn.pragma("page_count"))


def uncap_database(rt: Runtime) -> None:
    write_connection(rt).pragma("max_page_count", 2**31)


def assert_nothing_failed_was_recorded(rt: Runtime, sid: str) -> None:
    events = rt.store.read_events(sid)
    assert [] == [e for e in events if isinstance(e.event, WorkerFailed)]
    assert [] == [e for e in events if isinstance(e.event, RunEnded) and e.event.status == "failed"]


def assert_finished_and_sound(rt: Runtime, sid: str) -> None:
    assert [] == rt.interrupted_runs(sid)
    assert_nothing_failed_was_recorded(rt, sid)
    events = rt.store.read_events(sid)
    started = [e.tool_call_id for e in events if isinstance(e.event, ToolCallStarted)]
    # A tool's own failure (save_note on a full disk, an in-doubt call failed by policy)
    # is an outcome like any other; what must not exist is a call without one, or two.
    outcomes = [
        e.tool_call_id for e in events if isinstance(e.event, ToolCallFinished | ToolFailed)
    ]
    assert sorted(set(started)) == sorted(outcomes)
    report = rt.replay(sid)
    assert (True, []) == (report.identical, report.incomplete_runs), report.summary()
    assert rt.verify(sid).ok, rt.verify(sid).sessions[0].problems


# --- SQLITE_FULL from SQLite itself -----------------------------------------------------------


def test_sqlite_full_interrupts_the_run_and_a_resume_completes_it(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    with Runtime(home, project) as rt:
        session = rt.new_session()
        outcome = session.run(PROMPT, model=model(), tools=[arm_tool(lambda: cap_database(rt))])

        assert "interrupted" == outcome.status
        assert "disk full" in (outcome.error or "")
        assert f"resume it: clew resume {session.id}" in (outcome.error or "")
        assert_nothing_failed_was_recorded(rt, session.id)
        assert rt.session(session.id).info().interrupted

    with Runtime(home, project) as rt:  # the cause is gone: a fresh connection has no cap
        resumed = rt.resume(session.id, model=model(), tools=[arm_tool(lambda: None)])

        assert "completed" == resumed.status
        assert_finished_and_sound(rt, session.id)


def test_a_resume_while_the_disk_is_still_full_says_so_and_a_later_one_completes(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    with Runtime(home, project) as rt:
        session = rt.new_session()
        first = session.run(PROMPT, model=model(), tools=[arm_tool(lambda: cap_database(rt))])
        assert "interrupted" == first.status

    with Runtime(home, project) as rt:
        cap_database(rt)
        still_full = rt.resume(session.id, model=model(), tools=[arm_tool(lambda: None)])

        assert "interrupted" == still_full.status  # not a divergence
        assert "disk full" in (still_full.error or "")
        assert rt.session(session.id).info().interrupted

        uncap_database(rt)
        resumed = rt.resume(session.id, model=model(), tools=[arm_tool(lambda: None)])

        assert "completed" == resumed.status
        assert_finished_and_sound(rt, session.id)


def test_a_database_locked_past_its_timeout_interrupts_and_the_run_can_be_run_again(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()
        write_connection(rt).set_busy_timeout(300)  # the default waits 10 s
        other = apsw.Connection(str(tmp_path / "home" / "sessions.sqlite"))
        other.execute("BEGIN IMMEDIATE")  # another writer holds the database

        outcome = session.run(PROMPT, model=model(), tools=[arm_tool(lambda: None)])

        assert "interrupted" == outcome.status
        assert "database is locked" in (outcome.error or "")
        # run_started never landed: there is nothing to resume.
        assert "nothing of the run was written; once the cause is fixed, run it again" in (
            outcome.error or ""
        )
        assert ([], False) == (rt.store.read_runs(session.id), session.info().interrupted)

        other.execute("ROLLBACK")
        other.close()
        again = session.run(PROMPT, model=model(), tools=[arm_tool(lambda: None)])

        assert "completed" == again.status
        assert_finished_and_sound(rt, session.id)


# --- a real, tiny filesystem --------------------------------------------------------------------


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for the test (needs root: skipped otherwise)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path, leave: int = 0) -> Path:
    """Fill the filesystem of ``directory`` with one file, then free ``leave`` bytes of it."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (1 << 16, 1 << 12, 1 << 9):
            try:
                while True:
                    os.write(fd, bytes(chunk))
            except OSError:
                pass
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def clew(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``clew ARGS`` as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "actors", *args],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_full_filesystem_interrupts_the_demo_and_it_resumes_once_space_is_freed(
    tiny_fs: Path,
) -> None:
    home, project = tiny_fs / "home", tiny_fs / "project"
    project.mkdir()
    Runtime(home, project).close()  # the home exists; then the disk fills up
    where = ["--home", str(home), "--project", str(project)]
    # 1 MiB left: the run gets into its workers (~40 events), then the disk is full.
    filler = fill(tiny_fs, leave=1 << 20)

    demo = clew("demo", *where)

    assert 1 == demo.returncode, demo.stderr
    sid = demo.stdout.split()[1]
    assert "status: interrupted" in demo.stdout
    assert "disk full" in demo.stdout
    listed = json.loads(invoke(None, "sessions", "--json", *where).out)
    assert [(sid, True)] == [(s["session_id"], s["interrupted"]) for s in listed]

    still_full = clew("resume", sid, *where)
    assert 1 == still_full.returncode
    # One line on stderr with the cause and what to do (docs/cli.md).
    [line] = still_full.stderr.strip().splitlines()
    assert "interrupted" in line and "disk full" in line and f"clew resume {sid}" in line
    assert "diverged" not in still_full.stdout + still_full.stderr

    filler.unlink()
    resumed = invoke(None, "resume", sid, *where)
    assert 0 == resumed.code, resumed.out + resumed.err
    assert 0 == invoke(None, "replay", sid, *where).code
    assert 0 == invoke(None, "verify", sid, *where).code
    with Runtime(home, project) as rt:
        assert_finished_and_sound(rt, sid)


def test_a_task_wal_that_cannot_be_written_interrupts_the_run_and_it_resumes(
    tiny_fs: Path, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tiny_fs  # the store has room; the project does not
    fillers: list[Path] = []
    with Runtime(home, project) as rt:
        session = rt.new_session()
        tools = [arm_tool(lambda: fillers.append(fill(project)))]
        outcome = session.run(PROMPT, model=model_with_a_long_tail(), tools=tools)

        assert "interrupted" == outcome.status
        assert "task WAL" in (outcome.error or "") or ".wal.jsonl" in (outcome.error or "")
        assert "No space left on device" in (outcome.error or "")
        assert_nothing_failed_was_recorded(rt, session.id)

    fillers[0].unlink()
    with Runtime(home, project) as rt:
        resumed = rt.resume(
            session.id, model=model_with_a_long_tail(), tools=[arm_tool(lambda: None)]
        )

        assert "completed" == resumed.status
        assert_finished_and_sound(rt, session.id)
