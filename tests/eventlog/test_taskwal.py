"""The Task WAL file format: append, replay, torn tails, corruption, names."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from _fsync_spy import spy_fsync
from structlog.testing import capture_logs

from eventlog.clock import ManualClock
from eventlog.errors import InvalidName, InvalidSessionId, TaskWalCorrupt, TaskWalError
from eventlog.taskwal import (
    MAX_WAL_BYTES,
    TaskCreated,
    TaskDependencyAdded,
    TaskEvent,
    TaskRemoved,
    TaskStatusChanged,
    TaskWal,
    WalRecord,
    encode_record,
    replay_wal,
    validate_wal_name,
    wal_path,
)

EVENTS: list[TaskEvent] = [
    TaskCreated(task_id="a", title="Write the parser", owner="coder"),
    TaskCreated(task_id="b", title="Test it", owner="agent:sess_1/w2", deps=["a"]),
    TaskDependencyAdded(task_id="b", depends_on="a"),
    TaskStatusChanged(task_id="a", from_status="ready", to_status="running"),
    TaskStatusChanged(
        task_id="a", from_status="running", to_status="completed", result_summary="ok ✓"
    ),
    TaskRemoved(task_id="b"),
]


def _write(path: Path, events: list[TaskEvent]) -> TaskWal:
    wal = TaskWal(path, last_seq=0, clock=ManualClock())
    wal.append(events)
    return wal


def test_every_task_event_round_trips_through_a_wal_line(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS).close()

    result = replay_wal(path)

    assert EVENTS == [r.event for r in result.records]
    assert list(range(1, len(EVENTS) + 1)) == [r.seq for r in result.records]
    assert not result.truncated_tail


def test_each_line_is_one_json_object_with_seq_version_time_and_tagged_event(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:1]).close()

    expected = (
        b'{"seq":1,"v":1,"at":"2026-01-01T00:00:00.001000+00:00","event":'
        b'{"event_type":"task_created","task_id":"a","title":"Write the parser",'
        b'"owner":"coder","deps":[],"after":[]}}\n'
    )
    assert expected == path.read_bytes()


def test_a_line_written_before_after_existed_reads_with_no_after_edges(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    path.write_bytes(
        b'{"seq":1,"v":1,"at":"2026-01-01T00:00:00.001000+00:00","event":'
        b'{"event_type":"task_created","task_id":"a","title":"T","owner":"coder","deps":[]}}\n'
    )

    [record] = replay_wal(path).records

    assert TaskCreated(task_id="a", title="T", owner="coder") == record.event


def test_appends_continue_the_seq_after_a_reopen_without_gaps(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:2]).close()
    wal = TaskWal(path, last_seq=replay_wal(path).lines, clock=ManualClock())

    records = wal.append(EVENTS[2:4])
    wal.close()

    assert [3, 4] == [r.seq for r in records]
    assert [1, 2, 3, 4] == [r.seq for r in replay_wal(path).records]


def test_a_missing_file_is_an_empty_wal(tmp_path: Path) -> None:
    result = replay_wal(tmp_path / "nope.wal.jsonl")

    assert 0 == result.lines
    assert not (tmp_path / "nope.wal.jsonl").exists()


def test_torn_last_line_without_newline_is_cut_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:3]).close()
    good = path.read_bytes()
    torn = encode_record(WalRecord(seq=4, v=1, at="x", event=EVENTS[3]))[:-9]
    path.write_bytes(good + torn)

    result = replay_wal(path)

    assert (3, True, len(torn)) == (result.lines, result.truncated_tail, result.truncated_bytes)
    assert good == path.read_bytes()


def test_complete_last_record_missing_only_its_newline_is_cut(tmp_path: Path) -> None:
    # It was never acknowledged (the ack follows the fsync of the whole line).
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:2]).close()
    good = path.read_bytes()
    path.write_bytes(good + encode_record(WalRecord(seq=3, v=1, at="x", event=EVENTS[2]))[:-1])

    result = replay_wal(path)

    assert (2, True) == (result.lines, result.truncated_tail)
    assert good == path.read_bytes()


def test_undecodable_last_line_is_cut_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:2]).close()
    good = path.read_bytes()
    path.write_bytes(good + b"\x00\x00\x00\x00\n")

    result = replay_wal(path)

    assert (2, True, 5) == (result.lines, result.truncated_tail, result.truncated_bytes)
    assert good == path.read_bytes()


def test_a_cut_tail_is_logged_as_a_warning_with_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:2]).close()
    path.write_bytes(path.read_bytes() + b'{"seq":3')

    with capture_logs() as logs:
        replay_wal(path)

    expected = [("task_wal_torn_tail", "warning", str(path), 3, 8)]
    assert expected == [
        (e["event"], e["log_level"], e["path"], e["line"], e["truncated_bytes"]) for e in logs
    ]


def test_replay_without_repair_reports_the_torn_tail_but_leaves_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:2]).close()
    torn = path.read_bytes() + b'{"seq":3,"v"'
    path.write_bytes(torn)

    result = replay_wal(path, repair=False)

    assert (2, True) == (result.lines, result.truncated_tail)
    assert torn == path.read_bytes()


def test_a_bad_line_in_the_middle_is_corruption_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:4]).close()
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"seq":2,"v":1,"at":"x","event":{"event_type":"task_exploded"}}\n'
    path.write_bytes(b"".join(lines))
    before = path.read_bytes()

    with pytest.raises(TaskWalCorrupt) as info:
        replay_wal(path)

    assert f"{path}:2" == f"{info.value.path}:{info.value.line}"
    assert str(info.value).startswith(f"{path}:2: ")
    assert before == path.read_bytes()


def test_a_seq_gap_is_corruption_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    _write(path, EVENTS[:4]).close()
    lines = path.read_bytes().splitlines(keepends=True)
    del lines[2]
    path.write_bytes(b"".join(lines))

    with pytest.raises(TaskWalCorrupt, match=r":3: seq 4 where 3 was expected"):
        replay_wal(path)


def test_a_line_from_a_newer_format_is_refused_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    newer = encode_record(WalRecord(seq=1, v=2, at="x", event=EVENTS[0]))
    path.write_bytes(newer + encode_record(WalRecord(seq=2, v=1, at="x", event=EVENTS[1])))

    with pytest.raises(TaskWalCorrupt, match=r":1: record format v2"):
        replay_wal(path)


def test_a_failed_fsync_rolls_the_file_back_and_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.wal.jsonl"
    wal = _write(path, EVENTS[:2])
    before = path.read_bytes()

    real_fsync = os.fsync
    calls: list[int] = []

    def failing_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:  # the append's fsync fails; the rollback's succeeds
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", failing_fsync)
        with pytest.raises(TaskWalError, match="nothing was committed"):
            wal.append(EVENTS[2:4])

    assert before == path.read_bytes()
    assert 2 == wal.last_seq
    assert [3] == [r.seq for r in wal.append(EVENTS[2:3])]
    wal.close()


def test_a_wal_whose_rollback_failed_refuses_further_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.wal.jsonl"
    wal = _write(path, EVENTS[:2])

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", failing_fsync)
        with pytest.raises(TaskWalError, match="nothing was committed"):
            wal.append(EVENTS[2:3])

    with pytest.raises(TaskWalError, match="refusing to append"):
        wal.append(EVENTS[2:3])
    wal.close()
    assert 2 == replay_wal(path).lines


@pytest.mark.parametrize(
    "name",
    ["../x", "a/b", "a\x00b", "..", ".", "", "x" * 300, "x" * 101, "a b", "a.b", "é", "a\n", 7],
)
def test_unsafe_wal_names_are_refused_before_any_path_is_built(
    tmp_path: Path, name: object
) -> None:
    with pytest.raises(InvalidName):
        validate_wal_name(name)
    with pytest.raises(InvalidName):
        wal_path(tmp_path, "sess_1", name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["plan", "review-1", "A_b-9", "x" * 100, "-"])
def test_safe_wal_names_are_accepted(name: str) -> None:
    assert name == validate_wal_name(name)


def test_the_wal_path_lives_under_the_project_clew_tasks_session_dir(tmp_path: Path) -> None:
    expected = tmp_path / ".clew" / "tasks" / "sess_1" / "plan.wal.jsonl"
    assert expected == wal_path(tmp_path, "sess_1", "plan")


@pytest.mark.parametrize("session_id", ["../s", "s/1", "", "s-1"])
def test_an_unsafe_session_id_is_refused_in_the_wal_path(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(InvalidSessionId):
        wal_path(tmp_path, session_id, "plan")


def test_every_directory_created_for_a_new_wal_is_fsynced_into_its_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("names fsynced fds through /proc/self/fd")
    project = tmp_path / "project"
    project.mkdir()
    path = wal_path(project, "sess_1", "plan")
    synced = spy_fsync(monkeypatch)
    _write(path, EVENTS[:1])
    monkeypatch.undo()
    root = project.resolve()
    # .clew, .clew/tasks and .clew/tasks/sess_1 are new: a power loss must not drop them.
    expected = {
        str(root),
        str(root / ".clew"),
        str(root / ".clew" / "tasks"),
        str(root / ".clew" / "tasks" / "sess_1"),
        str(path.resolve()),
    }
    assert expected <= set(synced)


# --- which files a Task WAL may be ----------------------------------------------------------


def _torn_wal(path: Path) -> bytes:
    """Write two good lines and a torn third to ``path``; return the bytes."""
    _write(path, EVENTS[:2]).close()
    data = path.read_bytes() + b'{"seq":3,"v'
    path.write_bytes(data)
    return data


def test_a_symlinked_wal_is_refused_and_its_target_is_never_cut(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    before = _torn_wal(outside)
    path = wal_path(tmp_path / "project", "sess_1", "plan")
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)

    with pytest.raises(TaskWalError, match=r"plan\.wal\.jsonl: is a symbolic link"):
        replay_wal(path, root=tmp_path / "project")
    with pytest.raises(TaskWalError, match="is a symbolic link"):
        TaskWal(path, last_seq=2, clock=ManualClock()).append(EVENTS[2:3])

    assert before == outside.read_bytes()


def test_a_symlinked_directory_above_the_wal_is_refused_below_the_root(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    before = _torn_wal(outside / "tasks" / "sess_1" / "plan.wal.jsonl")
    project.mkdir()
    (project / ".clew").symlink_to(outside)
    path = wal_path(project, "sess_1", "plan")

    with pytest.raises(TaskWalError, match=r"\.clew: is a symbolic link"):
        replay_wal(path, root=project)
    with pytest.raises(TaskWalError, match=r"\.clew: is a symbolic link"):
        TaskWal(path, last_seq=2, clock=ManualClock(), root=project).append(EVENTS[2:3])

    assert before == (outside / "tasks" / "sess_1" / "plan.wal.jsonl").read_bytes()


def test_a_fifo_wal_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    os.mkfifo(path)

    with pytest.raises(TaskWalError, match=r"t\.wal\.jsonl: is a FIFO, not a regular file"):
        replay_wal(path, repair=False)
    with pytest.raises(TaskWalError, match="is a FIFO"):
        TaskWal(path, last_seq=0, clock=ManualClock()).append(EVENTS[:1])


def test_a_wal_linked_to_dev_zero_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    path.symlink_to("/dev/zero")

    with pytest.raises(TaskWalError, match="is a symbolic link"):
        replay_wal(path, repair=False)


def test_a_wal_over_256_mib_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.wal.jsonl"
    with path.open("wb") as f:
        f.truncate(MAX_WAL_BYTES + 1)  # sparse: refused by its size, never read

    with pytest.raises(TaskWalError, match=r"over the 256 MiB limit of a Task WAL"):
        replay_wal(path)
    assert MAX_WAL_BYTES + 1 == path.stat().st_size


def test_an_append_that_would_pass_the_size_limit_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.wal.jsonl"
    with path.open("wb") as f:
        f.truncate(MAX_WAL_BYTES - 10)  # sparse
    wal = TaskWal(path, last_seq=0, clock=ManualClock())

    with pytest.raises(TaskWalError, match="would pass its 256 MiB limit; nothing was committed"):
        wal.append(EVENTS[:1])
    wal.close()

    assert (MAX_WAL_BYTES - 10, 0) == (path.stat().st_size, wal.last_seq)


def test_a_torn_tail_below_real_directories_is_cut(tmp_path: Path) -> None:
    path = wal_path(tmp_path, "sess_1", "plan")
    path.parent.mkdir(parents=True)
    _torn_wal(path)

    result = replay_wal(path, root=tmp_path)

    assert (2, True) == (result.lines, result.truncated_tail)
    assert 2 == len(path.read_bytes().splitlines())


def test_a_new_wal_and_its_directories_are_private_whatever_the_umask(tmp_path: Path) -> None:
    path = wal_path(tmp_path, "sess_1", "plan")
    old = os.umask(0o022)
    try:
        _write_under(tmp_path, path)
    finally:
        os.umask(old)

    modes = [stat.S_IMODE(p.stat().st_mode) for p in (*path.parents[:3], path)]
    assert [0o700, 0o700, 0o700, 0o600] == modes


def _write_under(root: Path, path: Path) -> None:
    wal = TaskWal(path, last_seq=0, clock=ManualClock(), root=root)
    wal.append(EVENTS[:1])
    wal.close()
