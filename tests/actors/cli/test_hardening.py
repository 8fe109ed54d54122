"""Hostile input to the ``clew`` CLI (issue 12, classes 2, 10 and 11): one ``error:`` line,
the right exit code, nothing written — and messages that name the real cause."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import apsw
import pytest
import structlog
from _cli_helpers import (
    CliResult,
    Where,
    copy_where,
    count_events,
    invoke,
    run_process,
    total_rows,
)
from _processes import child_env

from eventlog.errors import ECHO_LIMIT, StoreError
from eventlog.sqlite.store import SQLiteStore
from eventlog.sqlite.transaction import translate_error


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    """A demo killed after 60 events (its Task WAL has lines), recorded once for the module."""
    base = tmp_path_factory.mktemp("interrupted")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    killed = run_process(where, "demo", CLEW_FAULT_KILL_AFTER_EVENTS="60")
    assert -signal.SIGKILL == killed.code, killed.err
    [info] = invoke(where, "sessions", "--json").json()
    structlog.reset_defaults()
    assert info["interrupted"]
    return where, info["session_id"]


@pytest.fixture
def interrupted_copy(interrupted: tuple[Where, str], tmp_path: Path) -> tuple[Where, str]:
    where, sid = interrupted
    return copy_where(where, tmp_path), sid


def _refused(result: CliResult, fragment: str) -> str:
    """Assert exit 2, nothing on stdout and one ``error:`` line holding ``fragment``."""
    assert 2 == result.code, result.err
    assert "" == result.out
    [line] = result.err_lines()
    assert line.startswith("error: ") and fragment in line, line
    return line


def _run_bytes(where: Where, *args: str | bytes) -> CliResult:
    """Run ``python -m actors ARGS`` with arguments that may be raw (non-UTF-8) bytes."""
    child = subprocess.run(
        [sys.executable, "-m", "actors", *args, *where.flags()],
        capture_output=True,
        env=child_env(),
        cwd=where.project,
        timeout=60,
        check=False,
    )
    return CliResult(
        child.returncode,
        child.stdout.decode(errors="replace"),
        child.stderr.decode(errors="replace"),
    )


# --- class 10: tracebacks become one line, exit 2, nothing written --------------------------

SCRIPTS = [
    pytest.param(b'{"rules": [{"replies": [{"text": "\xff"}]}]}', "not UTF-8 text", id="utf8"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, "nests deeper than", id="deep"),
    pytest.param(
        b'{"rules": [{"replies": [{"text": "x", "delay_ms": -5}]}]}',
        "delay_ms: Input should be greater than or equal to 0",
        id="negative-delay",
    ),
    pytest.param(
        b'{"rules": [{"replies": [{"text": "x\\udcff"}]}]}', "not valid Unicode", id="surrogate"
    ),
]


@pytest.mark.parametrize(("content", "fragment"), SCRIPTS)
def test_a_bad_script_is_refused_before_a_session_exists(
    empty: Where, tmp_path: Path, content: bytes, fragment: str
) -> None:
    script = tmp_path / "script.json"
    script.write_bytes(content)
    _refused(invoke(empty, "run", "hi", "--model", f"scripted:{script}"), fragment)
    assert not empty.home.exists()


OUT_OF_RANGE = [
    (["demo", "--slow", "9999999999999"], "Invalid value for '--slow'"),
    (["demo", "--slow", "-1"], "Invalid value for '--slow'"),
    (["demo", "--workers", "33"], "Invalid value for '--workers'"),
    (["demo", "--workers", "9" * 5000], "Invalid value for '--workers'"),
    (["resume", "sess_20260101_000000_abcd", "--slow", "9999999999999"], "'--slow'"),
]


@pytest.mark.parametrize(("args", "fragment"), OUT_OF_RANGE)
def test_a_numeric_option_out_of_range_is_refused_before_anything_is_written(
    empty: Where, args: list[str], fragment: str
) -> None:
    _refused(invoke(empty, *args), fragment)
    assert not empty.home.exists()


def test_a_prompt_that_is_not_utf8_is_refused_and_no_session_exists(
    empty: Where, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [{"replies": [{"text": "hello"}]}]}))
    result = _run_bytes(empty, "run", b"hi \xff", "--model", f"scripted:{script}")
    _refused(result, "the prompt is not valid UTF-8 text (byte 0xff at character 3)")
    assert not empty.home.exists()


def test_a_project_path_that_is_not_utf8_is_refused_before_a_demo_session_exists(
    empty: Where,
) -> None:
    project = bytes(empty.project) + b"/p\xff"
    Path(project.decode(errors="surrogateescape")).mkdir()
    child = subprocess.run(
        [sys.executable, "-m", "actors", "demo", "--home", str(empty.home), "--project", project],
        capture_output=True,
        env=child_env(),
        timeout=60,
        check=False,
    )
    result = CliResult(child.returncode, child.stdout.decode(), child.stderr.decode())
    _refused(result, "the --project path is not valid UTF-8 text (byte 0xff")
    assert not empty.home.exists()


# --- class 11: messages that name the cause --------------------------------------------------


def test_resume_with_a_garbled_middle_task_wal_line_names_the_file_and_line(
    interrupted_copy: tuple[Where, str],
) -> None:
    where, sid = interrupted_copy
    [wal] = (where.project / ".clew" / "tasks" / sid).glob("*.wal.jsonl")
    lines = wal.read_bytes().splitlines(keepends=True)
    assert len(lines) > 3
    wal.write_bytes(b"".join([*lines[:2], b"{garbled\n", *lines[3:]]))
    before = count_events(where.home, sid)
    tasks = invoke(where, "tasks", sid)
    assert f"{wal}:3" in tasks.out
    line = _refused(invoke(where, "resume", sid), f"its Task WAL is corrupt at {wal}:3:")
    assert "diverged" not in line
    assert before == count_events(where.home, sid)
    [info] = invoke(where, "sessions", "--json").json()
    assert info["interrupted"]


def test_resume_while_the_disk_is_still_full_says_so_and_resumes_once_it_is_not(
    interrupted_copy: tuple[Where, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    where, sid = interrupted_copy

    def disk_full(self: SQLiteStore, requests: Sequence[object]) -> list[StoreError]:
        error = translate_error(apsw.FullError("database or disk is full"), "append")
        return [error for _ in requests]

    with monkeypatch.context() as m:
        m.setattr(SQLiteStore, "append_batch", disk_full)
        full = invoke(where, "resume", sid)
    assert (1, "") == (full.code, full.out)
    last = full.err_lines()[-1]
    assert last.startswith(f"error: resume of session {sid} stopped:"), last
    assert "disk full" in last
    assert last.endswith(f"resume it: clew resume {sid}")
    assert "diverge" not in full.err
    assert 1 == len(full.err_lines()), full.err
    resumed = invoke(where, "resume", sid, "--json")
    assert (0, "completed") == (resumed.code, resumed.json()["status"])
    assert 0 == invoke(where, "replay", sid).code


@pytest.mark.parametrize("command", [["sessions"], ["verify", "--all"], ["show", "sess_x"]])
def test_a_home_that_is_a_file_is_refused(empty: Where, tmp_path: Path, command: list[str]) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a home")
    _refused(invoke(Where(a_file, empty.project), *command), "not a directory")
    assert "not a home" == a_file.read_text()


@pytest.mark.parametrize(
    "command", [["sessions"], ["verify", "--all"], ["show", "SID"], ["demo"]], ids=str
)
def test_a_zero_byte_database_beside_locks_and_task_wals_is_a_damaged_home(
    interrupted_copy: tuple[Where, str], command: list[str]
) -> None:
    where, sid = interrupted_copy
    for suffix in ("-wal", "-shm"):
        (where.home / f"sessions.sqlite{suffix}").unlink(missing_ok=True)
    (where.home / "sessions.sqlite").write_bytes(b"")
    args = [sid if a == "SID" else a for a in command]
    line = _refused(invoke(where, *args), "is damaged: sessions.sqlite is empty (0 bytes)")
    assert "1 session lock(s) and 1 Task WAL(s)" in line
    assert 0 == (where.home / "sessions.sqlite").stat().st_size


# --- at most ~200 characters of any argument are echoed --------------------------------------

LONG = "x" * 5000
ECHOED = [
    ["show", LONG],
    ["timeline", "SID", "--run", LONG],
    ["timeline", "SID", "--type", LONG],
    ["switch-node", "SID", LONG],
    ["run", "hi", "--model", LONG],
    ["run", "hi", "--model", f"scripted:{LONG}"],
    ["run", "hi", "--model", f"openai:{LONG}", "--base-url", f"http://{LONG}"],
    ["run", "hi", "--model", "openai:m", "--base-url", f"ftp://{LONG}"],
    ["sessions", f"--x{LONG}"],
]


@pytest.mark.parametrize("args", ECHOED, ids=lambda a: " ".join(x[:12] for x in a))
def test_an_error_echoes_at_most_200_characters_of_an_argument(
    interrupted_copy: tuple[Where, str], args: list[str]
) -> None:
    where, sid = interrupted_copy
    before = total_rows(where.home)
    result = invoke(where, *[sid if a == "SID" else a for a in args])
    assert result.code in (1, 2), result.err
    [line] = result.err_lines()
    assert "x" * (ECHO_LIMIT + 1) not in line, line[:300]
    assert "(5,0" in line, line[:300]  # the length of what was cut is said
    assert before == total_rows(where.home)


@pytest.mark.parametrize("flag", ["--home", "--project"])
def test_a_home_or_project_path_is_echoed_clipped(empty: Where, flag: str) -> None:
    other = "--project" if flag == "--home" else "--home"
    shown = str(empty.project if other == "--project" else empty.home)
    result = invoke(None, "sessions", flag, f"/{LONG}", other, shown)
    line = _refused(result, "(5,001 characters)")
    assert "x" * (ECHO_LIMIT + 1) not in line


def test_a_fault_variable_is_echoed_clipped(empty: Where, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLEW_FAULT_KILL_AFTER_EVENTS", LONG)
    line = _refused(invoke(empty, "demo"), "must be a positive integer")
    assert "x" * (ECHO_LIMIT + 1) not in line
