"""``Runtime.verify`` finds what a rebuild cannot: a changed event (the hash chain), and an
artifact file that no longer holds its bytes.

The changes are single-bit flips of the fields an earlier verify missed (the events'
``created_at`` and ``agent_id``, ``model_responded.model`` inside a payload).
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import shutil
from pathlib import Path

import apsw
import pytest

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.blocks import JsonBlock
from eventlog.events import Node, NodeAppended
from eventlog.records import AppendRequest

Home = tuple[Path, Path, str]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """A finished demo session with an artifact (do not change: copy it)."""
    base = tmp_path_factory.mktemp("integrity")
    home, project = base / "home", base / "project"
    with Runtime(home, project) as rt:
        session = rt.new_session()
        out = session.run(DEMO_PROMPT, model=demo_model(2), tools=demo_tools(project))
        assert "completed" == out.status
        big = JsonBlock(data={"rows": ["x" * 100] * 400})  # over the 16 KiB threshold
        node = Node(node_id="n1", parent_id=None, agent_id="a1", role="tool", content=[big])
        rt.writer.append(
            AppendRequest(session_id=session.id, event=NodeAppended(node=node), created_at="t")
        )
    return home, project, session.id


@pytest.fixture
def copy(recorded: Home, tmp_path: Path) -> Home:
    home, project, sid = recorded
    shutil.copytree(home, tmp_path / "home")
    shutil.copytree(project, tmp_path / "project")
    return tmp_path / "home", tmp_path / "project", sid


def problems(home: Path, project: Path, sid: str) -> list[str]:
    with Runtime(home, project) as rt:
        [check] = rt.verify(sid).sessions
    return check.problems


def flip_first_character(home: Path, sid: str, column: str, where: str) -> int:
    """Flip the low bit of the first character of ``column`` in one event row; return its seq."""
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        [(seq, value)] = conn.execute(f"SELECT seq, {column} FROM events_{sid} WHERE {where}")
        flipped = chr(ord(value[0]) ^ 1) + value[1:]
        conn.execute(f"UPDATE events_{sid} SET {column} = ? WHERE seq = ?", (flipped, seq))
    finally:
        conn.close()
    return int(seq)


@pytest.mark.parametrize(
    ("column", "where"),
    [
        ("created_at", "seq = (SELECT MIN(seq) FROM {t} WHERE event_type = 'model_responded')"),
        ("agent_id", "seq = (SELECT MIN(seq) FROM {t} WHERE event_type = 'model_requested')"),
    ],
)
def test_a_flipped_bit_in_an_events_column_fails_verify_naming_its_seq(
    copy: Home, column: str, where: str
) -> None:
    home, project, sid = copy
    seq = flip_first_character(home, sid, column, where.format(t=f"events_{sid}"))
    [problem] = problems(home, project, sid)
    assert problem.startswith(f"integrity: session {sid}: the hash chain breaks at seq {seq}:")


def test_a_flipped_bit_in_a_model_name_inside_a_payload_fails_verify_naming_its_seq(
    copy: Home,
) -> None:
    home, project, sid = copy
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    [(seq, payload)] = conn.execute(
        f"SELECT seq, payload_json FROM events_{sid} WHERE event_type = 'model_responded'"
        " ORDER BY seq LIMIT 1"
    )
    tampered = payload.replace('"model":"scripted:demo"', '"model":"scripted:deml"')
    assert tampered != payload
    conn.execute(f"UPDATE events_{sid} SET payload_json = ? WHERE seq = ?", (tampered, seq))
    conn.close()
    [problem] = problems(home, project, sid)
    assert f"breaks at seq {seq}:" in problem


def test_removing_the_newest_event_fails_verify(copy: Home) -> None:
    home, project, sid = copy
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    conn.execute(f"DELETE FROM events_{sid} WHERE seq = (SELECT MAX(seq) FROM events_{sid})")
    conn.close()
    assert any("hash chain head does not match" in p for p in problems(home, project, sid))


def test_an_artifact_file_that_no_longer_holds_its_bytes_fails_verify(copy: Home) -> None:
    home, project, sid = copy
    [artifact] = (home / "artifacts" / sid).iterdir()
    data = bytearray(artifact.read_bytes())
    data[100] ^= 1
    artifact.write_bytes(bytes(data))
    [problem] = problems(home, project, sid)
    assert problem.startswith("artifact art_")
    assert "does not hold the bytes it was written with" in problem


def test_a_missing_artifact_file_fails_verify(copy: Home) -> None:
    home, project, sid = copy
    [artifact] = (home / "artifacts" / sid).iterdir()
    artifact.unlink()
    [problem] = problems(home, project, sid)
    assert "cannot read artifact" in problem


def test_an_intact_session_with_an_artifact_verifies_ok(copy: Home) -> None:
    assert [] == problems(*copy)
