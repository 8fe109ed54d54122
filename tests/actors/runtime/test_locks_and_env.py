"""Session ownership locks and the environment edge of the Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.runtime.coord.ownership import SessionLock
from actors.runtime.runtime import Runtime
from eventlog.errors import ClewError


def test_a_held_lock_is_seen_by_another_handle_and_released_with_it(tmp_path: Path) -> None:
    path = tmp_path / "locks" / "s.lock"
    owner, other = SessionLock(path), SessionLock(path)
    assert owner.acquire()
    assert other.held_elsewhere()
    assert not other.acquire()
    owner.release()
    assert not other.held_elsewhere()


def test_probing_a_lock_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    assert not SessionLock(path).held_elsewhere()
    assert not path.exists()
    path.write_text("4242\n")
    assert not SessionLock(path).held_elsewhere()
    assert "4242\n" == path.read_text()


@pytest.mark.parametrize("raw", ["abc", "0", "-3", "1.5"])
def test_a_bad_fault_variable_is_one_clear_clew_error(tmp_path: Path, raw: str) -> None:
    with pytest.raises(ClewError, match="CLEW_FAULT_KILL_AFTER_EVENTS must be a positive"):
        Runtime.from_env({"CLEW_FAULT_KILL_AFTER_EVENTS": raw}, home=str(tmp_path / "h"))
