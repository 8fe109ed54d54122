"""The runtime end to end on both stores: a run, verify, replay, tasks, a crash and a resume
on another "host" (another home and project directory, the same PostgreSQL database)."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _processes import run_crash_demo

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.events import ModelResponded, RunEnded
from projections import verify

WORKERS = 3


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Runtime keywords for one store: a home (SQLite) or a fresh database (PostgreSQL)."""
    opened: dict[str, Any] = {"home": tmp_path / "home", "project_dir": tmp_path / "proj"}
    (tmp_path / "proj").mkdir()
    if request.param == "postgres":
        opened["store"] = request.getfixturevalue("pg_url")
    yield opened


def test_a_demo_session_runs_verifies_replays_and_keeps_its_task_dag(
    where: dict[str, Any],
) -> None:
    project = where["project_dir"]
    with Runtime(**where) as rt:
        session = rt.new_session()
        out = session.run(DEMO_PROMPT, model=demo_model(WORKERS), tools=demo_tools(project))
        sid = session.id
        assert "completed" == out.status
    with Runtime(**where, read_only=True) as rt:
        assert verify(rt.store, sid).ok, verify(rt.store, sid).lines()
        assert rt.verify(sid).ok
        report = rt.replay(sid)
        assert report.identical, report.summary()
        [name] = rt.task_wals(sid).names(sid)
        records = rt.task_wals(sid).replay(sid, name).records
        # After the WAL's header line (flow 2), a line per task change.
        tasks = {getattr(r.event, "task_id", None) for r in records}
        assert {"w1", "w2", "w3", "primary", "review"} <= tasks
    table = "store" in where
    assert table == (not (project / ".clew" / "tasks").exists())


def test_a_session_killed_on_postgres_resumes_on_another_host(pg_url: str, tmp_path: Path) -> None:
    env = {"CLEW_STORE": pg_url, "CLEW_FAULT_KILL_AFTER_EVENTS": "37"}
    killed = run_crash_demo(tmp_path / "home-a", tmp_path / "proj-a", "run", str(WORKERS), env=env)
    assert -9 == killed.returncode, killed.stderr[-2000:]
    sid = killed.stdout.split()[0]
    # "Another host": its own home (locks) and project directory; only the database is shared.
    (tmp_path / "proj-b").mkdir()
    resumed = run_crash_demo(
        tmp_path / "home-b",
        tmp_path / "proj-b",
        "resume",
        sid,
        str(WORKERS),
        env={"CLEW_STORE": pg_url},
    )
    assert 0 == resumed.returncode, resumed.stderr[-2000:]
    with Runtime(tmp_path / "home-b", tmp_path / "proj-b", store=pg_url) as rt:
        events = rt.store.read_events(sid)
        ends = [e.event.status for e in events if isinstance(e.event, RunEnded)]
        assert "completed" == ends[-1]
        answered = collections.Counter(
            (e.run_id, e.event.call_index) for e in events if isinstance(e.event, ModelResponded)
        )
        assert [] == [k for k, c in answered.items() if c != 1]  # no model call re-paid
        assert verify(rt.store, sid).ok, verify(rt.store, sid).lines()
        report = rt.replay(sid)
        assert report.identical, report.summary()


def test_item21_a_read_only_runtime_on_postgres_names_the_store_not_a_home(
    pg_url: str, tmp_path: Path
) -> None:
    from eventlog.errors import ReadOnlyStore  # noqa: PLC0415

    with Runtime(tmp_path / "home", tmp_path / "proj", store=pg_url):
        pass  # clew's tables
    with_password = pg_url.replace("://postgres@", "://postgres:hunter2@", 1)
    reader = Runtime(tmp_path / "home", tmp_path / "proj", store=with_password, read_only=True)
    with reader as rt, pytest.raises(ReadOnlyStore) as refused:
        rt.new_session()
    message = str(refused.value)
    assert f"the store {pg_url} is open read-only: creating a session refused" == message
