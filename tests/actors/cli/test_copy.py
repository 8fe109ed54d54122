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
