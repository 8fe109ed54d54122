"""``TaskManagerHandle``: the blocking face 0.1 documented over the task manager actor."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.tasks.manager import TaskManagerHandle
from eventlog.errors import TaskGraphError

SID = "sess_20260101_000000_0001"


def test_a_handle_call_waits_for_the_actor_and_raises_its_error(tmp_path: Path) -> None:
    with TaskManagerHandle.start(tmp_path, SID) as tasks:
        tasks.open("plan")
        seq = tasks.create_task("plan", "a", "Write it", "coder")
        with pytest.raises(TaskGraphError):
            tasks.create_task("plan", "a", "Write it again", "coder")  # a duplicate id
        assert (1, ["a"]) == (seq, tasks.ready("plan"))
    assert not tasks.actor_ref.is_alive()


def test_a_method_the_handle_does_not_offer_is_a_clear_attribute_error(tmp_path: Path) -> None:
    with TaskManagerHandle.start(tmp_path, SID) as tasks, pytest.raises(AttributeError) as e:
        tasks.on_stop()
    assert "a TaskManagerHandle has no method 'on_stop'" == str(e.value)
