"""``rt.delete_session`` on both stores: a demo session deleted for good (rows, artifacts,
Task WALs, plan files, lock), the audit row, the other session untouched and verifying;
a waiting, running or forked session refused without ``force``."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _processes import child_env

from actors import DeletedSession, DeleteRefused, UnknownSession
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.store import DeletesSessions

HITL_CHILD = Path(__file__).parents[2] / "helpers" / "_hitl_child.py"


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Runtime keywords for one store: a home (SQLite) or a fresh database (PostgreSQL)."""
    opened: dict[str, Any] = {"home": tmp_path / "home", "project_dir": tmp_path / "proj"}
    (tmp_path / "proj").mkdir()
    if request.param == "postgres":
        opened["store"] = request.getfixturevalue("pg_url")
    yield opened


def _demo(rt: Runtime, project: Path) -> str:
    session = rt.new_session()
    out = session.run(DEMO_PROMPT, model=demo_model(2), tools=demo_tools(project))
    assert "completed" == out.status
    return session.id


def test_a_demo_session_is_deleted_for_good_and_the_other_one_still_verifies(
    where: dict[str, Any],
) -> None:
    project, home = where["project_dir"], where["home"]
    with Runtime(**where) as rt:
        gone, kept = _demo(rt, project), _demo(rt, project)
        [wal] = rt.task_wals(gone).names(gone)
        on_files = "store" not in where
        assert on_files == (project / ".clew" / "tasks" / gone).is_dir()
        assert (project / ".clew" / "plans" / gone).is_dir()
        (home / "locks").mkdir(exist_ok=True)
        (home / "locks" / f"{gone}.lock").touch()
        counts = (rt.store.count_events(gone), len(rt.store.read_runs(gone)))

        deletion = rt.delete_session(gone)

        assert (gone, *counts, 1) == (
            deletion.session_id,
            deletion.events,
            deletion.runs,
            deletion.task_wals,
        )
        assert [kept] == [s.session_id for s in rt.sessions()]
        assert rt.verify().ok  # verify --all
        assert [] == rt.task_wals(kept).names(gone)
        assert 1 == len(rt.task_wals(kept).names(kept))
        assert wal not in rt.task_wals(kept).names(gone)
    assert not (project / ".clew" / "tasks" / gone).exists()
    assert not (project / ".clew" / "plans" / gone).exists()
    assert (project / ".clew" / "plans" / kept).is_dir()
    assert not (home / "locks" / f"{gone}.lock").exists()
    with Runtime(**where, read_only=True) as rt:
        store = rt.store
        assert isinstance(store, DeletesSessions)
        assert [deletion] == store.list_deletions()
        assert deletion.deleted_at.startswith("20")
        with pytest.raises(DeletedSession, match=f"session {gone} was deleted at 20"):
            rt.store.read_session(gone)
        assert rt.verify(kept).ok
        assert rt.replay(kept).identical


def test_an_unknown_or_deleted_session_is_refused_and_a_deleted_one_says_so(
    where: dict[str, Any],
) -> None:
    with Runtime(**where) as rt:
        sid = _demo(rt, where["project_dir"])
        with pytest.raises(UnknownSession, match="unknown session sess_20260101_000000_beef"):
            rt.delete_session("sess_20260101_000000_beef")
        rt.delete_session(sid)
        with pytest.raises(DeletedSession, match=f"session {sid} was deleted at"):
            rt.delete_session(sid)
        with pytest.raises(DeletedSession):
            rt.session(sid)


def test_a_forked_session_keeps_its_parent_unless_forced_and_still_verifies(
    where: dict[str, Any],
) -> None:
    with Runtime(**where) as rt:
        parent = _demo(rt, where["project_dir"])
        child = rt.fork(parent).id
        with pytest.raises(DeleteRefused, match=f"has forked sessions \\({child}\\)"):
            rt.delete_session(parent)
        assert rt.store.session_exists(parent)
        rt.delete_session(parent, force=True)
        assert [child] == [s.session_id for s in rt.sessions()]
        assert rt.verify().ok


def test_a_session_this_process_is_running_is_refused(where: dict[str, Any]) -> None:
    with Runtime(**where) as rt:
        sid = _demo(rt, where["project_dir"])
        rt.lock(sid)  # as a run does for its duration
        with pytest.raises(DeleteRefused, match=f"session {sid} is running"):
            rt.delete_session(sid)
        rt.unlock(sid)
        rt.delete_session(sid)
        assert not rt.store.session_exists(sid)


def test_a_waiting_session_is_refused_without_force(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    done = subprocess.run(
        [sys.executable, str(HITL_CHILD), str(home), str(project), "run"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = json.loads([ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1])
    assert "waiting" == out["status"]
    sid = out["sid"]
    with Runtime(home, project) as rt:
        with pytest.raises(DeleteRefused, match=f"session {sid} is waiting"):
            rt.delete_session(sid)
        assert rt.verify(sid).ok
        deletion = rt.delete_session(sid, force=True)
        assert deletion.runs > 0
        assert [] == rt.sessions()
    assert not (project / ".clew" / "tasks" / sid).exists()
