"""The Task WAL protocol (:class:`eventlog.wals.TaskWals`), written once, run over every backend.

A backend's test module subclasses :class:`TaskWalConformance` and overrides
``make_wals`` (a factory of handles on the *same* WALs, so a reopen can be checked) and
``put_raw`` (writes one raw line at a seq behind the protocol's back: the way a test
corrupts a WAL on that backend).
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Callable

import pytest

from eventlog.clock import ManualClock
from eventlog.errors import InvalidName, InvalidSessionId, TaskWalCorrupt
from eventlog.taskwal import (
    TaskCreated,
    TaskDependencyAdded,
    TaskEvent,
    TaskRemoved,
    TaskStatusChanged,
    WalRecord,
    encode_record,
)
from eventlog.wals import TaskWals

SID = "sess_20260101_000000_a1b2"
OTHER = "sess_20260101_000001_c3d4"

EVENTS: list[TaskEvent] = [
    TaskCreated(task_id="a", title="Write the parser", owner="coder"),
    TaskCreated(task_id="b", title="Test it ✓", owner="agent:sess_1/w2", deps=["a"]),
    TaskDependencyAdded(task_id="b", depends_on="a"),
    TaskStatusChanged(task_id="a", from_status="ready", to_status="running"),
    TaskStatusChanged(task_id="a", from_status="running", to_status="completed"),
    TaskRemoved(task_id="b"),
]

WalsFactory = Callable[[], TaskWals]


class TaskWalConformance:
    """The Task WAL contract. Subclass and override ``make_wals`` and :meth:`put_raw`."""

    @pytest.fixture
    def make_wals(self) -> WalsFactory:
        raise NotImplementedError("a backend's test class must override make_wals")

    @pytest.fixture
    def wals(self, make_wals: WalsFactory) -> TaskWals:
        return make_wals()

    def put_raw(self, wals: TaskWals, session_id: str, name: str, seq: int, line: bytes) -> None:
        """Store ``line`` as the WAL's line ``seq`` without the protocol's checks."""
        raise NotImplementedError

    def test_it_is_a_task_wal_backend(self, wals: TaskWals) -> None:
        assert isinstance(wals, TaskWals)

    def test_a_missing_wal_is_empty_and_not_listed(self, wals: TaskWals) -> None:
        assert [] == wals.replay(SID, "plan").records
        assert [] == wals.names(SID)

    def test_every_task_event_round_trips_in_order_with_gapless_seqs(self, wals: TaskWals) -> None:
        clock = ManualClock()
        appender = wals.appender(SID, "plan", last_seq=0, clock=clock)
        written = appender.append(EVENTS[:2]) + appender.append(EVENTS[2:])
        appender.close()
        assert [1, 2, 3, 4, 5, 6] == [r.seq for r in written]
        assert 6 == appender.last_seq
        result = wals.replay(SID, "plan")
        assert written == result.records
        assert EVENTS == [r.event for r in result.records]
        assert (6, False) == (result.lines, result.truncated_tail)

    def test_an_append_is_committed_when_it_returns_another_handle_sees_it(
        self, wals: TaskWals, make_wals: WalsFactory
    ) -> None:
        appender = wals.appender(SID, "plan", last_seq=0, clock=ManualClock())
        appender.append(EVENTS[:1])
        assert EVENTS[:1] == [r.event for r in make_wals().replay(SID, "plan").records]
        appender.close()

    def test_appends_continue_after_a_reopen_without_gaps(
        self, wals: TaskWals, make_wals: WalsFactory
    ) -> None:
        first = wals.appender(SID, "plan", last_seq=0, clock=ManualClock())
        first.append(EVENTS[:3])
        first.close()
        other = make_wals()
        replayed = other.replay(SID, "plan")
        second = other.appender(SID, "plan", last_seq=replayed.lines, clock=ManualClock())
        [record] = second.append(EVENTS[3:4])
        second.close()
        assert 4 == record.seq
        assert [1, 2, 3, 4] == [r.seq for r in make_wals().replay(SID, "plan").records]

    def test_wals_of_sessions_and_names_are_separate_and_listed_sorted(
        self, wals: TaskWals
    ) -> None:
        for sid, name in ((SID, "review-1"), (SID, "plan"), (OTHER, "plan")):
            appender = wals.appender(sid, name, last_seq=0, clock=ManualClock())
            appender.append(EVENTS[:1] if sid == OTHER else EVENTS[:2])
            appender.close()
        assert ["plan", "review-1"] == wals.names(SID)
        assert ["plan"] == wals.names(OTHER)
        assert 1 == wals.replay(OTHER, "plan").lines
        assert 2 == wals.replay(SID, "review-1").lines

    def test_an_empty_append_writes_nothing(self, wals: TaskWals) -> None:
        appender = wals.appender(SID, "plan", last_seq=0, clock=ManualClock())
        assert [] == appender.append([])
        appender.close()
        assert [] == wals.names(SID)

    def test_a_bad_line_before_the_last_is_corruption_naming_the_wal_and_line(
        self, wals: TaskWals
    ) -> None:
        appender = wals.appender(SID, "plan", last_seq=0, clock=ManualClock())
        appender.append(EVENTS[:1])
        appender.close()
        self.put_raw(wals, SID, "plan", 2, b'{"seq":2,"v":1,"at":"x","event":{"nope":1}}\n')
        line3 = WalRecord(seq=3, v=1, at="x", event=EVENTS[1])
        self.put_raw(wals, SID, "plan", 3, encode_record(line3))
        with pytest.raises(TaskWalCorrupt) as caught:
            wals.replay(SID, "plan")
        assert caught.value.line == 2
        assert wals.location(SID, "plan") in str(caught.value)

    def test_a_seq_gap_is_corruption(self, wals: TaskWals) -> None:
        self.put_raw(
            wals, SID, "plan", 1, encode_record(WalRecord(seq=1, v=1, at="x", event=EVENTS[0]))
        )
        self.put_raw(
            wals, SID, "plan", 3, encode_record(WalRecord(seq=3, v=1, at="x", event=EVENTS[1]))
        )
        with pytest.raises(TaskWalCorrupt, match="seq 3 where 2 was expected"):
            wals.replay(SID, "plan")

    def test_a_line_of_a_newer_format_is_refused(self, wals: TaskWals) -> None:
        self.put_raw(
            wals, SID, "plan", 1, encode_record(WalRecord(seq=1, v=9, at="x", event=EVENTS[0]))
        )
        self.put_raw(
            wals, SID, "plan", 2, encode_record(WalRecord(seq=2, v=1, at="x", event=EVENTS[1]))
        )
        with pytest.raises(TaskWalCorrupt, match="v9"):
            wals.replay(SID, "plan")

    @pytest.mark.parametrize("name", ["", "../x", "a/b", "x" * 101, "a b"])
    def test_unsafe_names_are_refused(self, wals: TaskWals, name: str) -> None:
        with pytest.raises(InvalidName):
            wals.location(SID, name)
        with pytest.raises(InvalidName):
            wals.replay(SID, name)

    def test_an_unsafe_session_id_is_refused(self, wals: TaskWals) -> None:
        with pytest.raises(InvalidSessionId):
            wals.replay("../x", "plan")
        with pytest.raises(InvalidSessionId):
            wals.names("a;DROP TABLE task_wal")
