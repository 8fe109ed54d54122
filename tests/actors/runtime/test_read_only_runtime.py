"""``Runtime(..., read_only=True)``: reads, replays and verifies; starts no writer; refuses
every write with ``ReadOnlyStore`` and leaves the home exactly as it was."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pykka
import pytest
from _read_only import snapshot

from actors.demo import demo_model
from actors.runtime.runtime import Runtime
from eventlog.errors import ReadOnlyStore, StoreError
from eventlog.events import TodoUpdated
from eventlog.records import AppendRequest

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "sessions"
#: The interrupted fixture: a resume would write (if it were allowed to).
SID = "sess_20261130_232215_8ae8"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A copy of a session recorded by clew 0a7c95d, killed mid-run (schema version 1)."""
    shutil.copytree(GOLDEN / "interrupted", tmp_path / "fixture")
    return tmp_path / "fixture"


def test_a_read_only_runtime_reads_replays_and_verifies_an_old_home_and_changes_nothing(
    home: Path,
) -> None:
    before = snapshot(home)
    with Runtime(home / "home", home / "project", read_only=True) as rt:
        assert [(SID, True)] == [(s.session_id, s.interrupted) for s in rt.sessions()]
        assert rt.replay(SID).identical
        report = rt.verify(SID)
    assert (True, 40) == (report.ok, report.sessions[0].unchained_events)
    assert before == {k: v for k, v in snapshot(home).items() if not k.endswith(("-wal", "-shm"))}


def test_a_read_only_runtime_starts_no_writer(home: Path) -> None:
    actors_before = len(pykka.ActorRegistry.get_all())
    with Runtime(home / "home", home / "project", read_only=True):
        assert actors_before == len(pykka.ActorRegistry.get_all())


WRITES: dict[str, Callable[[Runtime], Any]] = {
    "new_session": lambda rt: rt.new_session(),
    "run": lambda rt: rt.session(SID).run("hi", model=demo_model(1)),
    "resume": lambda rt: rt.resume(SID, model=demo_model(3)),
    "switch_node": lambda rt: rt.switch_node(SID, f"{SID}:brain:r1:n1"),
    "retry": lambda rt: rt.retry(SID, model=demo_model(1)),
    "archive": lambda rt: rt.archive(SID),
    "lock": lambda rt: rt.lock(SID),
    "task_manager": lambda rt: rt.task_manager(SID),
    "writer": lambda rt: rt.writer.append(
        AppendRequest(session_id=SID, event=TodoUpdated(todo_id="t", status="x"), created_at="t")
    ),
}


@pytest.mark.parametrize("write", WRITES)
def test_every_write_of_a_read_only_runtime_is_refused_and_writes_nothing(
    home: Path, write: str
) -> None:
    before = snapshot(home)
    with (
        Runtime(home / "home", home / "project", read_only=True) as rt,
        pytest.raises(ReadOnlyStore, match="read-only"),
    ):
        WRITES[write](rt)
    assert before == {k: v for k, v in snapshot(home).items() if not k.endswith(("-wal", "-shm"))}


def test_a_read_only_runtime_of_a_home_without_a_store_is_refused_and_creates_nothing(
    tmp_path: Path,
) -> None:
    with pytest.raises(StoreError, match="no such file"):
        Runtime(tmp_path / "home", tmp_path, read_only=True)
    assert [] == list(tmp_path.iterdir())
