"""Helpers of the CLI tests: run ``clew`` in-process or as a real process, read the store."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
from _processes import child_env

from actors.cli import main
from actors.runtime.runtime import Runtime
from eventlog.chain import EVENT_COLUMNS, GENESIS, link


@dataclass(frozen=True)
class CliResult:
    """What one ``clew`` invocation did."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """Parse stdout as exactly one JSON document."""
        return json.loads(self.out)

    def err_lines(self) -> list[str]:
        """Return the non-empty lines of stderr."""
        return [line for line in self.err.splitlines() if line.strip()]


@dataclass(frozen=True)
class Where:
    """A clew home and a project directory."""

    home: Path
    project: Path

    def flags(self) -> list[str]:
        return ["--home", str(self.home), "--project", str(self.project)]


def script_model(path: Path, *rules: dict[str, Any]) -> str:
    """Write a model script of ``rules`` to ``path``; return the ``--model`` spec naming it."""
    path.write_text(json.dumps({"rules": list(rules)}))
    return f"scripted:{path}"


def invoke(where: Where | None, *args: str) -> CliResult:
    """Run ``clew ARGS --home … --project …`` in this process; capture stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    argv = [*args, *where.flags()] if where is not None else list(args)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return CliResult(code, out.getvalue(), err.getvalue())


def spawn(where: Where, *args: str, **env: str) -> subprocess.Popen[str]:
    """Start ``python -m actors ARGS --home … --project …`` as a real process."""
    return subprocess.Popen(
        [sys.executable, "-m", "actors", *args, *where.flags()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(**env),
        cwd=where.project,
    )


def run_process(where: Where, *args: str, **env: str) -> CliResult:
    """Run ``python -m actors ARGS`` to completion as a real process."""
    child = spawn(where, *args, **env)
    out, err = child.communicate(timeout=60)
    return CliResult(child.returncode, out, err)


def count_events(home: Path, session_id: str, *, runs_only: bool = False) -> int:
    """Count the committed events of a session with a read-only connection (0 if none yet).

    ``runs_only``: only the runs' events (what a replay compares), not the session-level
    ones (``session_created``, ``content_stored``…)."""
    db = home / "sessions.sqlite"
    if not db.exists():
        return 0
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.setbusytimeout(1000)
        where = " WHERE run_id IS NOT NULL" if runs_only else ""
        rows = list(conn.execute(f"SELECT count(*) FROM events_{session_id}{where}"))
        return int(rows[0][0])
    except apsw.SQLError:
        return 0  # the session's table does not exist yet
    finally:
        conn.close()


def sql(home: Path, statement: str) -> None:
    """Run one SQL statement against the home's database (to corrupt it on purpose)."""
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        conn.execute(statement)
    finally:
        conn.close()


def reseal(home: Path, session_id: str) -> None:
    """Recompute the session's hash chain after an edit made on purpose.

    For tests that stand in for a code change by editing the recording: without this, the
    edit is (rightly) reported as tampering before any replay compares anything.
    """
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        conn.execute("BEGIN IMMEDIATE")
        prev = GENESIS
        rows = list(conn.execute(f"SELECT {EVENT_COLUMNS} FROM events_{session_id} ORDER BY seq"))
        for values in rows:
            prev = link(prev, values)
            conn.execute(
                f"UPDATE events_{session_id} SET hash = ? WHERE seq = ?", (prev, values[1])
            )
        conn.execute("UPDATE sessions SET chain_head = ? WHERE session_id = ?", (prev, session_id))
        conn.execute("COMMIT")
    finally:
        conn.close()


def total_rows(home: Path) -> int:
    """Count every row of every table: "nothing written" means this does not change."""
    db = home / "sessions.sqlite"
    if not db.exists():
        return 0
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return sum(int(next(iter(conn.execute(f'SELECT count(*) FROM "{n}"')))[0]) for n in names)
    finally:
        conn.close()


def copy_where(where: Where, dest: Path, *, symlinks: bool = False) -> Where:
    """Copy a recorded home and project under ``dest``; return the copy a test may change."""
    copy = Where(dest / "home", dest / "project")
    shutil.copytree(where.home, copy.home)
    shutil.copytree(where.project, copy.project, symlinks=symlinks)
    return copy


def main_wal(where: Where, sid: str, n: int = 1) -> Path:
    """Return the Task WAL of the session's ``n``-th main run (named after its task, as
    the run's ``todo_planned`` records)."""
    with Runtime(where.home, where.project, read_only=True) as rt:
        name = rt.wal_names(sid)[n - 1]
    return where.project / ".clew" / "tasks" / sid / f"{name}.wal.jsonl"
