"""``Runtime.verify``: rebuilt projections against the stored rows, every Task WAL replayed.

Each test works on a home with two finished demo sessions, recorded once per module
and copied before a test changes it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from _cli_helpers import reseal

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.errors import InvalidSessionId, UnknownSession

Home = tuple[Path, Path, list[str]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """A home and project with two finished demo sessions (do not change: copy it)."""
    base = tmp_path_factory.mktemp("verify")
    home, project = base / "home", base / "project"
    sids = []
    with Runtime(home, project) as rt:
        for workers in (2, 3):
            session = rt.new_session()
            out = session.run(DEMO_PROMPT, model=demo_model(workers), tools=demo_tools(project))
            assert "completed" == out.status
            sids.append(session.id)
    return home, project, sids


@pytest.fixture
def copy(recorded: Home, tmp_path: Path) -> Home:
    home, project, sids = recorded
    shutil.copytree(home, tmp_path / "home")
    shutil.copytree(project, tmp_path / "project")
    return tmp_path / "home", tmp_path / "project", sids


@pytest.fixture
def rt(recorded: Home) -> Iterator[Runtime]:
    home, project, _ = recorded
    with Runtime(home, project) as runtime:
        yield runtime


def test_a_fresh_demo_session_verifies_ok_with_its_task_wal(rt: Runtime, recorded: Home) -> None:
    sid = recorded[2][0]

    report = rt.verify(sid)

    assert report.ok
    [check] = report.sessions
    assert (sid, True, []) == (check.session_id, check.ok, check.problems)
    assert 0 < check.events == rt.store.count_events(sid)
    assert [("notes-app-plan", True)] == [(w.name, w.available) for w in check.wals]


def test_one_session_is_verified_alone_and_none_verifies_every_session(
    rt: Runtime, recorded: Home
) -> None:
    first, second = recorded[2]

    one = rt.verify(second)
    every = rt.verify()

    assert [second] == [c.session_id for c in one.sessions]
    assert {first, second} == {c.session_id for c in every.sessions}
    assert (True, "2 sessions verified: ok") == (every.ok, every.summary())


def test_a_tampered_node_row_fails_verification_naming_the_row_and_field(copy: Home) -> None:
    home, project, (tampered, untouched) = copy
    node = f"{tampered}:brain:r1:n1"
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        conn.execute(f"UPDATE nodes_{tampered} SET role = 'tool' WHERE node_id = ?", (node,))
        assert 1 == conn.changes()
    finally:
        conn.close()

    with Runtime(home, project) as rt:
        one = rt.verify(tampered)
        every = rt.verify()

    assert not one.ok
    [check] = one.sessions
    expected = f"nodes_{tampered}[{node}].role: expected 'user', actual 'tool'"
    assert (False, [expected]) == (check.ok, check.problems)
    assert not every.ok
    assert {tampered: False, untouched: True} == {c.session_id: c.ok for c in every.sessions}


@pytest.mark.parametrize(
    ("session_id", "error"),
    [
        ("sess_20990101_000000_dead", UnknownSession),
        ("../sessions", InvalidSessionId),
        ("sess 1", InvalidSessionId),
        ("", InvalidSessionId),
    ],
)
def test_an_unknown_or_invalid_session_id_is_refused(
    rt: Runtime, session_id: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        rt.verify(session_id)


def test_a_run_whose_usage_differs_from_its_token_usage_events_fails_verification(
    copy: Home,
) -> None:
    # A run_ended that under-reports (as flow 1 left the router out), with the runs row to
    # match and the chain resealed: only the usage projection can tell.
    home, project, (tampered, _) = copy
    run = f"{tampered}:brain:r1"
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        [(seq, payload)] = conn.execute(
            f"SELECT seq, payload_json FROM events_{tampered}"
            " WHERE run_id = ? AND event_type = 'run_ended'",
            (run,),
        )
        event = json.loads(payload)
        real = dict(event["usage"])
        event["usage"]["input_tokens"] -= 7
        conn.execute(
            f"UPDATE events_{tampered} SET payload_json = ? WHERE seq = ?",
            (json.dumps(event), seq),
        )
        conn.execute(
            "UPDATE runs SET usage_json = ? WHERE run_id = ?", (json.dumps(event["usage"]), run)
        )
    finally:
        conn.close()
    reseal(home, tampered)

    with Runtime(home, project) as rt:
        [check] = rt.verify(tampered).sessions

    assert [f"runs[{run}].usage_json: expected {real!r}, actual {event['usage']!r}"] == (
        check.problems
    )


def test_a_session_recorded_by_an_older_clew_is_not_held_to_the_usage_rule(copy: Home) -> None:
    # Flow 1 (clew 0.1) left the router out of the main run's usage: its rows stay as
    # recorded, and verify accepts them (the golden sessions prove it on real recordings).
    home, project, (sid, _) = copy
    run = f"{sid}:brain:r1"
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        [(metadata,)] = conn.execute("SELECT metadata_json FROM runs WHERE run_id = ?", (run,))
        legacy = {k: v for k, v in json.loads(metadata).items() if k != "flow"}
        conn.execute(
            "UPDATE runs SET metadata_json = ?, usage_json = ? WHERE run_id = ?",
            (json.dumps(legacy), json.dumps({"input_tokens": 1}), run),
        )
    finally:
        conn.close()

    with Runtime(home, project) as rt:
        [check] = rt.verify(sid).sessions

    # The rows now differ from the rebuild (that check still holds); the usage rule is off.
    assert [p for p in check.problems if "usage_json" in p and "metadata" not in p] == [
        p for p in check.problems if p.startswith(f"runs[{run}].usage_json: expected {{'")
    ]
    assert all("token_usage" not in p for p in check.problems)
