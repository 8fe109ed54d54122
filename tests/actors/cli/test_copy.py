"""``clew copy``: sessions move SQLite → PostgreSQL → SQLite exactly (events, seq, hash chain,
artifacts, Task WALs); verify passes and replay is identical on each target."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.cli.main import main
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.wals import FileWals

WORKERS = 3


def _demo_session(home: Path, project: Path) -> str:
    with Runtime(home, project) as rt:
        session = rt.new_session()
        out = session.run(DEMO_PROMPT, model=demo_model(WORKERS), tools=demo_tools(project))
        assert "completed" == out.status
        return session.id


def _rows(location: str | Path, sid: str) -> list[tuple[object, ...]]:
    """Every stored column of every event, hash included, whatever the backend."""
    from eventlog.locations import open_store  # noqa: PLC0415

    store = open_store(location, read_only=True)
    try:
        return [
            (e.event_id, e.seq, e.run_seq, e.created_at, e.event) for e in store.iter_events(sid)
        ]
    finally:
        store.close()


def _clew(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_session_copied_sqlite_to_postgres_to_sqlite_is_exact_and_verifies(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    first, back = tmp_path / "first", tmp_path / "back"
    sid = _demo_session(first, project)

    code, out, err = _clew(capsys, "copy", "--from", str(first), "--to", pg_url, "--json")
    assert 0 == code, err
    [result] = json.loads(out)["sessions"]
    assert (sid, "copied") == (result["session_id"], result["outcome"])
    assert 0 < result["task_wal_lines"]
    for location in (str(first), pg_url):
        _verify_and_replay(capsys, location, project)
    # The copy back lands on "another host": the recorded project directory is not there.
    original = project.rename(tmp_path / "proj-elsewhere")
    here = tmp_path / "proj-here"
    here.mkdir()
    code, _, err = _clew(capsys, "copy", "--from", pg_url, "--to", str(back), sid,
                         "--project", str(here))  # fmt: skip
    assert 0 == code, err
    _verify_and_replay(capsys, str(back), here)

    assert _rows(first, sid) == _rows(pg_url, sid) == _rows(back, sid)
    heads = {_chain_head(location, sid) for location in (str(first), pg_url, str(back))}
    assert 1 == len(heads)
    [name] = FileWals(here).names(sid)
    wal = Path(FileWals(here).location(sid, name))
    assert (original / wal.relative_to(here)).read_bytes() == wal.read_bytes()


def _verify_and_replay(capsys: pytest.CaptureFixture[str], location: str, project: Path) -> None:
    flag = "--store" if location.startswith("postgresql://") else "--home"
    code, out, err = _clew(capsys, flag, location, "--project", str(project), "verify", "last")
    assert 0 == code, (location, out, err)
    code, out, err = _clew(capsys, flag, location, "--project", str(project), "replay", "last")
    assert 0 == code, (location, out, err)
    assert "reproduced identically" in out


def _chain_head(location: str, sid: str) -> str:
    if location.startswith("postgresql://"):
        import psycopg  # noqa: PLC0415

        with psycopg.connect(location) as conn:
            row = conn.execute(
                "SELECT chain_head FROM sessions WHERE session_id = %s", (sid,)
            ).fetchone()
    else:
        import apsw  # noqa: PLC0415

        conn2 = apsw.Connection(str(Path(location) / "sessions.sqlite"))
        row = conn2.execute(
            "SELECT chain_head FROM sessions WHERE session_id = ?", (sid,)
        ).fetchone()
        conn2.close()
    assert row is not None
    return str(row[0])


def test_copying_again_skips_an_identical_session_and_refuses_a_different_one(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    sid = _demo_session(home, project)
    assert 0 == _clew(capsys, "copy", "--from", str(home), "--to", pg_url)[0]
    code, out, _ = _clew(capsys, "copy", "--from", str(home), "--to", pg_url, sid)
    assert 0 == code
    assert f"{sid}: identical" in out
    # The source moves on; the target's copy is now a different session of the same id.
    with Runtime(home, project) as rt:
        rt.session(sid).run("once more", model=demo_model(WORKERS), tools=demo_tools(project))
    before = _rows(pg_url, sid)
    code, _, err = _clew(capsys, "copy", "--from", str(home), "--to", pg_url, sid)
    assert 2 == code
    assert 1 == len(err.strip().splitlines())
    assert "already exists on the target and differs" in err
    assert before == _rows(pg_url, sid)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["copy", "--to", "x"], "needs --from"),
        (["copy", "--from", "/nonexistent-home", "--to", "/tmp/x"], "holds no clew store"),
    ],
)
def test_bad_copy_arguments_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _clew(capsys, *argv)
    assert 2 == code
    assert message in err
    assert 1 == len(err.strip().splitlines())


def test_an_unknown_session_is_refused(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    _demo_session(tmp_path / "home", project)
    code, _, err = _clew(capsys, "copy", "--from", str(tmp_path / "home"), "--to", pg_url,
                         "sess_20990101_000000_ffff")  # fmt: skip
    assert 2 == code
    assert "unknown session" in err


def test_item21_copy_back_checks_every_session_first_and_honours_project(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    project.mkdir()
    home, back = tmp_path / "home", tmp_path / "back"
    first, second = _demo_session(home, project), _demo_session(home, project)
    assert 0 == _clew(capsys, "copy", "--from", str(home), "--to", pg_url)[0]
    # The home moves on: its project's Task WAL of the second session is now ahead of the
    # database's, and a copy back to this host would land on that file.
    with Runtime(home, project) as rt:
        rt.session(second).run("once more", model=demo_model(WORKERS), tools=demo_tools(project))

    code, out, err = _clew(capsys, "copy", "--from", pg_url, "--to", str(back))
    assert (2, "", 1) == (code, out, len(err.strip().splitlines())), err
    assert "the target already holds a Task WAL" in err and f" of {second} " in err
    assert "--project DIR" in err and err.strip().endswith("nothing was copied")
    assert [] == _sessions(back)  # true: the first session was not copied either

    code, out, err = _clew(capsys, "copy", "--from", pg_url, "--to", str(back),
                           "--project", str(elsewhere))  # fmt: skip
    assert 0 == code, err
    assert "2 sessions: 2 copied" in out
    assert sorted([first, second]) == _sessions(back)
    assert all(FileWals(elsewhere).names(sid) for sid in (first, second))
    code, out, err = _clew(capsys, "--home", str(back), "--project", str(elsewhere),
                           "verify", "--all")  # fmt: skip
    assert 0 == code, out + err


def test_item21_a_copy_failing_midway_names_the_sessions_it_copied(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from actors.runtime import upkeep  # noqa: PLC0415
    from eventlog.errors import StoreError  # noqa: PLC0415

    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    first, second = _demo_session(home, project), _demo_session(home, project)
    real = upkeep._append_all

    def fail_second(store: object, sid: str, events: object) -> None:
        if sid == second:
            raise StoreError("writing: the connection is lost")
        real(store, sid, events)  # type: ignore[arg-type]

    monkeypatch.setattr(upkeep, "_append_all", fail_second)
    code, _, err = _clew(capsys, "copy", "--from", str(home), "--to", pg_url)
    assert 1 == code, err
    assert f"copied before it (on the target, verified): {first}" in err
    assert [first] == _sessions(pg_url)


def _sessions(location: str | Path) -> list[str]:
    from eventlog.locations import open_store  # noqa: PLC0415

    if not str(location).startswith("postgresql://") and not Path(location).exists():
        return []
    store = open_store(location, read_only=True)
    try:
        return sorted(r.session_id for r in store.list_sessions())
    finally:
        store.close()


def test_item21_copy_to_a_role_that_may_only_select_exits_2_and_copies_nothing(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import secrets  # noqa: PLC0415

    import psycopg  # noqa: PLC0415
    import pydantic  # noqa: PLC0415
    from _runtime_helpers import route, rule, scripted, worker  # noqa: PLC0415

    from actors.models.tools import FunctionTool  # noqa: PLC0415
    from eventlog.locations import open_store  # noqa: PLC0415

    class NoArgs(pydantic.BaseModel):
        pass

    big = "a line of a large result\n" * 4000  # an artifact: written before the events
    dump = FunctionTool("dump", lambda args: big, NoArgs, description="Dump.")
    model = scripted(
        route([worker("w1", "reader", "Dump it")]),
        rule("reader", {"tool_calls": [{"name": "dump"}]}, {"text": "Dumped."}),
    )
    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    with Runtime(home, project) as rt:
        out = rt.new_session().run("Dump.", model=model, tools=[dump])
        assert ("completed", 1) == (out.status, len(rt.store.read_artifacts(out.session_id)))
    open_store(pg_url).close()  # clew's tables, empty
    with psycopg.connect(pg_url, autocommit=True) as conn:
        role = f"clew_sel_{secrets.token_hex(4)}"
        conn.execute(f"CREATE ROLE {role} LOGIN")
        # CREATE on the schema (as every role had before PostgreSQL 15): the store opens,
        # and the first write is what the server refuses.
        conn.execute(f"GRANT CREATE, USAGE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    url = pg_url.replace("://postgres@", f"://{role}:hunter2@", 1)
    try:
        code, out, err = _clew(capsys, "copy", "--from", str(home), "--to", url)
        assert (2, 1) == (code, len(err.strip().splitlines())), err
        assert "refused to this role (permission denied for table" in err
        assert err.strip().endswith("nothing was copied") and "hunter2" not in err
        assert [] == _sessions(pg_url)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
