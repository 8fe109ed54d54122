"""A byte flipped in the real database file: every reader says so in one line, never a
traceback — ``timeline``, ``export`` and ``replay`` exit 1 with one ``error:`` line,
``verify`` exits 1 and names the problem in its report.

The session is recorded by a real ``clew demo`` process and checkpointed into the main
file; the commands run in one real process (tests/helpers/_clew_many.py).
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from _cli_helpers import Where, run_process
from _processes import child_env

CLEW_MANY = Path(__file__).resolve().parents[2] / "helpers" / "_clew_many.py"
Recorded = tuple[Where, str]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """A demo session in a checkpointed file: everything is in sessions.sqlite itself."""
    root = tmp_path_factory.mktemp("flip")
    where = Where(root / "home", root / "project")
    where.project.mkdir()
    done = run_process(where, "demo", "--workers", "2", "--json")
    assert 0 == done.code, done.err
    conn = apsw.Connection(str(where.home / "sessions.sqlite"))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return where, done.json()["session_id"]


@pytest.fixture
def copy(recorded: Recorded, tmp_path: Path) -> Recorded:
    where, sid = recorded
    shutil.copytree(where.home, tmp_path / "home")
    shutil.copytree(where.project, tmp_path / "project")
    return Where(tmp_path / "home", tmp_path / "project"), sid


def first_event(where: Where, sid: str, event_type: str, column: str) -> tuple[int, str]:
    conn = apsw.Connection(str(where.home / "sessions.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        [(seq, value)] = conn.execute(
            f"SELECT seq, {column} FROM events_{sid} WHERE event_type = ? ORDER BY seq LIMIT 1",
            (event_type,),
        )
    finally:
        conn.close()
    return int(seq), str(value)


def first_event_holding(where: Where, sid: str, text: str) -> tuple[int, str]:
    """Return the first event row holding ``text`` in any column, and its type."""
    conn = apsw.Connection(str(where.home / "sessions.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        [(seq, event_type)] = conn.execute(
            f"SELECT seq, event_type FROM events_{sid} WHERE instr(created_at, ?1)"
            " OR instr(payload_json, ?1) ORDER BY seq LIMIT 1",
            (text,),
        )
    finally:
        conn.close()
    return int(seq), str(event_type)


def flip_in_file(path: Path, needle: bytes, replacement: bytes) -> None:
    """Replace ``needle`` in the file's bytes (each copy: free pages may hold an old one)."""
    data = path.read_bytes()
    assert needle in data
    path.write_bytes(data.replace(needle, replacement))


def clew(where: Where, *commands: list[str]) -> list[tuple[int, str, str]]:
    argvs = [[*c, *where.flags()] for c in commands]
    done = subprocess.run(
        [sys.executable, str(CLEW_MANY), json.dumps(argvs)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    return [(code, out, err) for code, out, err in json.loads(done.stdout)]


def test_a_byte_flipped_into_invalid_utf8_is_one_integrity_line_from_every_reader(
    copy: Recorded,
) -> None:
    where, sid = copy
    seq, payload = first_event(where, sid, "model_requested", "payload_json")
    request_hash = payload.split('"request_hash":"')[1][:24].encode()
    flip_in_file(where.home / "sessions.sqlite", request_hash, b"\xff" + request_hash[1:])
    timeline, export, replay, verify = clew(
        where, ["timeline", sid], ["export", sid], ["replay", sid], ["verify", sid]
    )
    expected = f"error: session {sid}: event seq {seq} is not valid UTF-8"
    for code, _, err in (timeline, export, replay):
        [line] = err.splitlines()
        assert (1, expected) == (code, line[: len(expected)])
    code, out, err = verify
    assert (1, "") == (code, err)
    assert f"  integrity: session {sid}: event seq {seq} is not valid UTF-8" in out


def test_a_flipped_bit_in_a_created_at_fails_verify_replay_and_timeline_naming_its_seq(
    copy: Recorded,
) -> None:
    where, sid = copy
    _, created_at = first_event(where, sid, "model_responded", "created_at")
    # Another row may hold the same instant: the chain then breaks at the first of them.
    seq, _ = first_event_holding(where, sid, created_at)
    stamp = created_at.encode()
    flipped = stamp[:-7] + bytes([stamp[-7] ^ 1]) + stamp[-6:]  # a microsecond digit
    flip_in_file(where.home / "sessions.sqlite", stamp, flipped)
    timeline, replay, verify = clew(where, ["timeline", sid], ["replay", sid], ["verify", sid])
    broken = f"session {sid}: the hash chain breaks at seq {seq}:"
    for code, _, err in (timeline, replay):
        [line] = err.splitlines()
        assert (1, f"error: {broken}") == (code, line[: len(broken) + 7])
    code, out, err = verify
    assert (1, "") == (code, err)
    assert f"  integrity: {broken}" in out
