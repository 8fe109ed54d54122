"""Archived sessions in cold files (issue 35): a home whose sessions are mostly archived
keeps only the live ones' tables in its main file, and every read — list, show, verify,
replay, fork, ``@@`` references, copy, delete — still finds the archived ones."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

import apsw
import msgspec
from _runtime_helpers import route, rule, scripted

from actors.documents.sessions import session_doc
from actors.documents.tree import tree_shape_doc
from actors.runtime.runtime import Runtime
from actors.runtime.upkeep import copy_sessions
from eventlog.sqlite.cold import cold_path

MODEL = scripted(route(), rule("lead", {"text": "Done."}))
SESSIONS, ARCHIVED, WITH_RUNS = 300, 290, 30


def _schema(home: Path) -> tuple[int, set[str]]:
    """The main file's ``sqlite_schema`` size and its session tables."""
    conn = apsw.Connection(str(home / "sessions.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        entries = conn.execute("SELECT COUNT(*) FROM sqlite_schema").fetchall()[0][0]
        assert isinstance(entries, int)
        names = conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
        return entries, {r[0] for r in names if r[0].startswith(("nodes_", "events_"))}
    finally:
        conn.close()


def test_a_home_of_300_sessions_290_archived_reads_every_one(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    with Runtime(home, project) as rt:
        sids = []
        for i in range(SESSIONS):
            session = rt.new_session()
            if i % (SESSIONS // WITH_RUNS) == 0:
                session.run("Hello.", model=MODEL)
            sids.append(session.id)
        entries, _ = _schema(home)
        events = rt.store.count_events_of(sids)
        trees = {s: tree_shape_doc(rt, s) for s in sids}
        for sid in sids[:ARCHIVED]:
            assert rt.archive(sid) is True

        archived_entries, tables = _schema(home)
        live = sids[ARCHIVED:]
        assert {f"{t}_{s}" for s in live for t in ("nodes", "events")} == tables
        assert entries - ARCHIVED * 5 + 2 == archived_entries  # + the location table, its key
        assert all(cold_path(home / "sessions.sqlite", s).is_file() for s in sids[:ARCHIVED])

    with Runtime(home, project) as rt:
        infos = {i.session_id: i for i in rt.sessions()}
        assert set(sids) == set(infos)
        assert {s: events[s] + (s in sids[:ARCHIVED]) for s in sids} == {
            s: infos[s].events for s in sids
        }
        assert ["archived"] * ARCHIVED == [infos[s].status for s in sids[:ARCHIVED]]
        report = rt.verify()
        assert report.ok, report
        assert SESSIONS == len(report.sessions)
        for sid in sids:
            assert rt.replay(sid).identical, sid
            assert trees[sid] == tree_shape_doc(rt, sid)
            assert infos[sid].status == session_doc(rt, sid)["status"]


def test_fork_references_copy_and_delete_read_a_cold_session(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    with Runtime(home, project) as rt:
        old = rt.new_session()
        old.run("Hello.", model=MODEL)
        nodes = rt.store.read_nodes(old.id)
        assert old.archive("done")
        assert not any(f"_{old.id}" in t for t in _schema(home)[1])

        fork = old.fork()
        assert len(rt.store.read_active_path(old.id)) == len(rt.store.read_active_path(fork.id))
        assert rt.verify(fork.id).ok

        asker = rt.new_session()
        asker.run(f"What did @@{old.id} say?", model=MODEL)
        prompt = msgspec.json.encode(rt.store.read_nodes(asker.id)).decode()
        assert "Hello." in prompt, prompt  # the archived session's snapshot
        assert "unknown session" not in prompt

        copied = copy_sessions(home, tmp_path / "copy", [old.id], project)
        assert [old.id] == [c.session_id for c in copied]
        assert cold_path(tmp_path / "copy" / "sessions.sqlite", old.id).is_file()
        with Runtime(tmp_path / "copy", project) as other:
            assert nodes == other.store.read_nodes(old.id)
            assert other.verify(old.id).ok

        deletion = rt.delete_session(old.id, force=True)
        assert len(nodes) == deletion.nodes
        assert not cold_path(home / "sessions.sqlite", old.id).exists()
        assert rt.verify(fork.id).ok


def test_a_read_only_home_reads_its_cold_sessions(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    with Runtime(home, project) as rt:
        session = rt.new_session()
        session.run("Hello.", model=MODEL)
        session.archive()
        events = rt.store.read_events(session.id)
    with Runtime(home, project, read_only=True) as rt:
        assert events == rt.store.read_events(session.id)
        assert rt.verify(session.id).ok


def test_archiving_on_postgresql_moves_nothing_and_reads_as_before(
    tmp_path: Path, pg_url: str
) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project", store=pg_url) as rt:
        session = rt.new_session()
        session.run("Hello.", model=MODEL)
        events = rt.store.read_events(session.id)

        assert (True, False) == (session.archive(), session.archive())

        assert events == rt.store.read_events(session.id)[:-1]
        assert rt.verify(session.id).ok
        assert not (tmp_path / "home" / "cold").exists()
