"""``clew archive`` moves the session to its cold file (issue 35); every read command
prints what it printed before (plus the ``session_archived`` event), as a process too,
and ``clew delete`` removes the file."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import signal
from pathlib import Path

from _cli_helpers import Where, count_events, invoke, run_process, script_model
from _runtime_helpers import route, rule

from eventlog.sqlite.cold import cold_path

READS = ("show", "timeline", "calls", "export", "replay", "usage")


def test_a_cold_session_reads_as_before_and_deletes(tmp_path: Path) -> None:
    where = Where(tmp_path / "home", tmp_path / "project")
    where.project.mkdir()
    model = script_model(tmp_path / "model.json", route(), rule("lead", {"text": "Done."}))
    sid = invoke(where, "run", "Hello.", "--model", model, "--json").json()["session_id"]
    before = {c: invoke(where, c, sid) for c in READS}
    assert [0] * len(READS) == [r.code for r in before.values()]

    assert 0 == invoke(where, "archive", sid).code
    assert cold_path(where.home / "sessions.sqlite", sid).is_file()

    after = {c: invoke(where, c, sid) for c in READS}
    assert {c: (0, before[c].out) for c in ("show", "calls", "replay", "usage")} == {
        c: (after[c].code, after[c].out) for c in ("show", "calls", "replay", "usage")
    }
    exported = after["export"].out.splitlines()
    assert (before["export"].out.splitlines(), 0) == (exported[:-1], after["export"].code)
    assert '"event_type":"session_archived"' in exported[-1]
    timeline = after["timeline"].out.splitlines()  # its last line counts the events
    assert before["timeline"].out.splitlines()[:-1] == [
        line for line in timeline[:-1] if "session_archived" not in line
    ]
    assert 0 == invoke(where, "verify", sid).code
    shown = run_process(where, "show", sid)
    assert (0, before["show"].out) == (shown.code, shown.out)
    listed = run_process(where, "sessions", "--json")
    assert 0 == listed.code, listed.err
    assert [("archived", 23)] == [
        (s["status"], s["events"]) for s in listed.json() if s["session_id"] == sid
    ]

    assert 0 == invoke(where, "delete", sid, "--yes").code
    assert not cold_path(where.home / "sessions.sqlite", sid).exists()
    assert 0 != invoke(where, "show", sid).code


def test_a_kill_between_the_moves_two_steps_leaves_the_main_tables(tmp_path: Path) -> None:
    where = Where(tmp_path / "home", tmp_path / "project")
    where.project.mkdir()
    model = script_model(tmp_path / "model.json", route(), rule("lead", {"text": "Done."}))
    sid = invoke(where, "run", "Hello.", "--model", model, "--json").json()["session_id"]
    shown = invoke(where, "show", sid).out
    events = count_events(where.home, sid)

    killed = run_process(where, "archive", sid, CLEW_FAULT_KILL_BEFORE_COLD_RECORD="1")

    assert -signal.SIGKILL == killed.code, killed.err
    main = where.home / "sessions.sqlite"
    assert cold_path(main, sid).is_file()  # written whole, never recorded
    assert events + 1 == count_events(where.home, sid)  # session_archived, in the main table
    assert (0, shown) == (invoke(where, "show", sid).code, invoke(where, "show", sid).out)
    again = invoke(where, "archive", sid)
    assert (0, f"{sid}: already archived") == (again.code, again.out.strip())
    assert 0 == count_events(where.home, sid)  # moved: no table in the main file
    assert (0, shown) == (invoke(where, "show", sid).code, invoke(where, "show", sid).out)
    assert 0 == invoke(where, "verify", sid).code
