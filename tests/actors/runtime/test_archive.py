"""Archiving a session (issue 22, item 11: ``archived`` is produced, no dead status).

An archived session reads as before and refuses every write; archiving is final.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

import pytest
from _cli_helpers import sql
from _runtime_helpers import route, rule, scripted

from actors.errors import ArchivedSession, NeedsResume, UsageError
from actors.runtime.runtime import Runtime
from eventlog.errors import ReadOnlyStore
from eventlog.events import SessionArchived

MODEL = scripted(route(), rule("lead", {"text": "Done."}))


def test_an_archived_session_is_recorded_reads_and_refuses_every_write(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()
        session.run("Hello.", model=MODEL)
        events = rt.store.count_events(session.id)

        assert session.archive("finished") is True

        assert "archived" == session.info().status
        [archived] = [
            e for e in rt.store.read_events(session.id) if isinstance(e.event, SessionArchived)
        ]
        assert (SessionArchived(reason="finished"), None) == (archived.event, archived.run_id)
        writes = {
            "run": lambda: session.run("More.", model=MODEL),
            "retry": lambda: session.retry(model=MODEL),
            "resume": lambda: rt.resume(session.id, model=MODEL),
            "switch": lambda: rt.switch_node(session.id, f"{session.id}:brain:r1:n1"),
        }
        for name, write in writes.items():
            with pytest.raises(ArchivedSession, match=f"session {session.id} is archived"):
                write()
            assert events + 1 == rt.store.count_events(session.id), name
        assert rt.replay(session.id).identical
        assert rt.verify(session.id).ok


def test_archiving_twice_writes_once(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()

        assert (True, False) == (session.archive(), session.archive())
        assert 2 == rt.store.count_events(session.id)


def test_a_session_with_an_interrupted_run_is_not_archived(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()
        session.run("Hello.", model=MODEL)
    sql(tmp_path / "home", f"UPDATE runs SET status = 'running' WHERE session_id = '{session.id}'")
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        with pytest.raises(NeedsResume, match="before archiving it"):
            rt.archive(session.id)
        assert "active" == rt.store.read_session(session.id).status


def test_archive_refuses_a_reason_the_log_cannot_hold_and_a_read_only_home(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        sid = rt.new_session().id
        with pytest.raises(UsageError, match="reason"):
            rt.archive(sid, "bad \udcff byte")
    with (
        Runtime(tmp_path / "home", tmp_path / "project", read_only=True) as rt,
        pytest.raises(ReadOnlyStore),
    ):
        rt.archive(sid)
