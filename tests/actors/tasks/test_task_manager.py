"""The TaskManager actor: fsync before apply, replay equals live, crashes lose nothing acked."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from _processes import child_env
from _task_helpers import SyncTasks
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from actors.tasks.changes import AddDependency, CreateTask, RemoveTask, SetStatus, TaskChange
from eventlog.clock import ManualClock
from eventlog.errors import InvalidName, InvalidSessionId, TaskGraphError, TaskWalError
from eventlog.taskwal import (
    TaskCreated,
    TaskRemoved,
    TaskStatus,
    TaskStatusChanged,
    WalRecord,
    encode_record,
    replay_wal,
    wal_path,
)
from projections.taskdag import LEGAL_TRANSITIONS, TaskDag

SID = "sess_20260612_153022_a1b2"


@pytest.fixture
def handle(tmp_path: Path) -> Iterator[SyncTasks]:
    h = SyncTasks(tmp_path, SID, clock=ManualClock())
    yield h
    h.stop()


def replayed(path: Path) -> TaskDag:
    return TaskDag.rebuild(r.event for r in replay_wal(path, repair=False).records)


def seed_plan(h: SyncTasks, name: str = "plan") -> None:
    h.create_task(name, "a", "Write the parser", "coder")
    h.create_task(name, "b", "Test the parser", "tester", ["a"])
    h.create_task(name, "c", "Document it", "writer", ["b"])


def test_changes_are_acknowledged_with_consecutive_seqs_and_applied(
    handle: SyncTasks,
) -> None:
    assert 0 == handle.open("plan").lines

    seqs = [
        handle.create_task("plan", "a", "Write the parser", "coder"),
        handle.create_task("plan", "b", "Test it", "tester", ["a"]),
        handle.set_status("plan", "a", "running"),
        handle.set_status("plan", "a", "completed", "3 files parsed"),
    ]

    assert [1, 2, 3, 4] == seqs
    assert ["b"] == handle.ready("plan")
    assert "3 files parsed" == handle.task("plan", "a").result_summary
    assert "[completed] a: Write the parser (@coder) → 3 files parsed" in handle.board("plan")


def test_a_wal_is_opened_on_first_use(handle: SyncTasks, tmp_path: Path) -> None:
    handle.create_task("plan", "a", "A", "coder")

    assert 1 == handle.last_seq("plan")
    assert wal_path(tmp_path, SID, "plan").exists()


def test_a_refused_change_writes_nothing_and_raises_in_the_caller(
    handle: SyncTasks, tmp_path: Path
) -> None:
    seed_plan(handle)
    path = wal_path(tmp_path, SID, "plan")
    before = (path.read_bytes(), handle.snapshot("plan"))

    with pytest.raises(TaskGraphError, match="would close the cycle a → c → b → a"):
        handle.add_dependency("plan", "a", "c")
    with pytest.raises(TaskGraphError, match="task 'b': illegal transition pending → running"):
        handle.set_status("plan", "b", "running")
    with pytest.raises(TaskGraphError, match="unknown task 'zz'"):
        handle.remove_task("plan", "zz")

    assert before == (path.read_bytes(), handle.snapshot("plan"))


def test_a_failed_append_leaves_the_dag_unchanged_and_raises_task_wal_error(
    handle: SyncTasks, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_plan(handle)
    before = handle.snapshot("plan")

    def failing_write(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "write", failing_write)
        with pytest.raises(TaskWalError, match="nothing was committed"):
            handle.set_status("plan", "a", "running")

    assert before == handle.snapshot("plan")
    assert 4 == handle.set_status("plan", "a", "running")


def test_a_batch_is_one_append_and_all_or_nothing(handle: SyncTasks, tmp_path: Path) -> None:
    seqs = handle.apply_changes(
        "plan",
        [
            CreateTask(task_id="a", title="A", owner="coder"),
            CreateTask(task_id="b", title="B", owner="coder", deps=["a"]),
            SetStatus(task_id="a", to_status="running"),
        ],
    )
    before = handle.snapshot("plan")

    with pytest.raises(TaskGraphError, match="task 'c': illegal transition ready → completed"):
        handle.apply_changes(
            "plan",
            [
                SetStatus(task_id="a", to_status="completed"),
                CreateTask(task_id="c", title="C", owner="coder"),
                SetStatus(task_id="c", to_status="completed"),
            ],
        )

    assert [1, 2, 3] == seqs
    assert before == handle.snapshot("plan")
    assert before == replayed(wal_path(tmp_path, SID, "plan"))


def test_several_named_wals_of_one_session_are_independent(
    handle: SyncTasks, tmp_path: Path
) -> None:
    seed_plan(handle, "plan")
    handle.create_task("review-1", "a", "Review", "reviewer")

    assert ["a"] == handle.ready("review-1")
    assert 3 == handle.last_seq("plan")
    assert 1 == len(replay_wal(wal_path(tmp_path, SID, "review-1")).records)


def test_reopening_replays_the_wal_to_the_same_dag(tmp_path: Path) -> None:
    with SyncTasks(tmp_path, SID) as first:
        seed_plan(first)
        first.set_status("plan", "a", "running")
        first.set_status("plan", "a", "failed", "boom")
        live = first.snapshot("plan")

    with SyncTasks(tmp_path, SID) as second:
        report = second.open("plan")
        assert (5, False, True) == (report.lines, report.truncated_tail, report.available)
        assert live == second.snapshot("plan")
        assert ["b", "c"] == second.snapshot("plan").blocked()


def test_a_torn_tail_is_cut_on_reopen_reported_and_the_dag_is_the_state_before(
    tmp_path: Path,
) -> None:
    with SyncTasks(tmp_path, SID) as first:
        seed_plan(first)
        before = first.snapshot("plan")
    path = wal_path(tmp_path, SID, "plan")
    good = path.read_bytes()
    half = b'{"seq":4,"v":1,"at":"2026-01-01T00:00:00+00:00","event":{"event_type":"task_st'
    path.write_bytes(good + half)

    with SyncTasks(tmp_path, SID) as second:
        report = second.open("plan")
        assert (3, True, len(half)) == (report.lines, report.truncated_tail, report.truncated_bytes)
        assert good == path.read_bytes()
        assert before == second.snapshot("plan")
        assert 4 == second.set_status("plan", "a", "running")


def test_mid_file_corruption_makes_only_that_wal_unavailable_naming_file_and_line(
    tmp_path: Path,
) -> None:
    with SyncTasks(tmp_path, SID) as first:
        seed_plan(first)
        first.create_task("other", "x", "X", "coder")
    path = wal_path(tmp_path, SID, "plan")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"seq":2,"v":1,"at":"x","event":{"event_type":"task_cre\n'
    path.write_bytes(b"".join(lines))

    with SyncTasks(tmp_path, SID) as second:
        report = second.open("plan")
        with pytest.raises(TaskWalError, match=f"{path}:2: "):
            second.create_task("plan", "d", "D", "coder")

        assert (False, True) == (report.available, (report.error or "").startswith(f"{path}:2: "))
        assert ["x"] == second.ready("other")


def test_a_line_the_dag_refuses_makes_the_wal_unavailable_naming_file_and_line(
    tmp_path: Path,
) -> None:
    with SyncTasks(tmp_path, SID) as first:
        seed_plan(first)
    path = wal_path(tmp_path, SID, "plan")
    lines = path.read_bytes().splitlines(keepends=True)
    # A well-formed line that names a task created only later: a forged or reordered WAL.
    forged = TaskCreated(task_id="a", title="A", owner="coder", deps=["c"])
    lines[0] = encode_record(WalRecord(seq=1, v=1, at="x", event=forged))
    path.write_bytes(b"".join(lines))

    with SyncTasks(tmp_path, SID) as second:
        report = second.open("plan")

    assert not report.available
    assert (report.error or "").startswith(f"{path}:1: refused by the DAG")


@pytest.mark.parametrize("name", ["../x", "a/b", "a\x00b", "..", "", "x" * 300])
def test_malicious_wal_names_are_refused_and_never_touch_the_disk(
    handle: SyncTasks, tmp_path: Path, name: str
) -> None:
    with pytest.raises(InvalidName):
        handle.open(name)
    with pytest.raises(InvalidName):
        handle.create_task(name, "a", "A", "coder")

    assert not (tmp_path / ".clew").exists()


def test_an_unsafe_session_id_is_refused_when_the_actor_starts(tmp_path: Path) -> None:
    with pytest.raises(InvalidSessionId):
        SyncTasks(tmp_path, "../../etc")


# --- which files a Task WAL may be: nothing outside the project is touched ------------------


def _seeded_outside(tmp_path: Path) -> tuple[Path, bytes]:
    """A WAL outside the project with three lines and a torn fourth; return it and its bytes."""
    with SyncTasks(tmp_path / "elsewhere", SID) as other:
        seed_plan(other)
    outside = wal_path(tmp_path / "elsewhere", SID, "plan")
    data = outside.read_bytes() + b'{"seq":4,"v":1,"at":"x","ev'
    outside.write_bytes(data)
    return outside, data


def test_a_wal_symlinked_outside_the_project_is_unavailable_and_its_target_never_cut(
    tmp_path: Path,
) -> None:
    outside, before = _seeded_outside(tmp_path)
    project = tmp_path / "project"
    path = wal_path(project, SID, "plan")
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)

    with SyncTasks(project, SID) as tasks:
        report = tasks.open("plan")
        with pytest.raises(TaskWalError, match="is a symbolic link; refusing to follow it"):
            tasks.create_task("plan", "d", "D", "coder")

    assert (False, f"{path}: is a symbolic link; refusing to follow it") == (
        report.available,
        report.error,
    )
    assert before == outside.read_bytes()


@pytest.mark.parametrize("link", [".clew", ".clew/tasks", f".clew/tasks/{SID}"])
def test_a_symlinked_directory_leading_outside_is_refused_and_nothing_is_written_there(
    tmp_path: Path, link: str
) -> None:
    outside, before = _seeded_outside(tmp_path)
    project = tmp_path / "project"
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    # Each link leads to the matching directory of the other tree.
    (project / link).symlink_to(tmp_path / "elsewhere" / link)

    with SyncTasks(project, SID) as tasks:
        report = tasks.open("plan")
        with pytest.raises(TaskWalError, match=f"{link}: is a symbolic link"):
            tasks.create_task("fresh", "a", "A", "coder")

    assert not report.available
    assert before == outside.read_bytes()
    assert ["plan.wal.jsonl"] == sorted(p.name for p in outside.parent.iterdir())


def test_a_new_session_directory_and_wal_are_private_under_umask_022(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with SyncTasks(tmp_path, SID) as tasks:
            tasks.create_task("plan", "a", "A", "coder")
    finally:
        os.umask(old)
    path = wal_path(tmp_path, SID, "plan")

    modes = [p.stat().st_mode & 0o777 for p in (*path.parents[:3], path)]
    assert [0o700, 0o700, 0o700, 0o600] == modes


# --- model-based: the live DAG always equals the DAG replayed from the file -------------------

IDS = st.sampled_from(["a", "b", "c", "d", "e"])
ANY_STATUS = st.sampled_from(
    ["pending", "ready", "running", "completed", "failed", "cancelled", "blocked"]
)


class LiveEqualsReplayed(RuleBasedStateMachine):
    """Random task operations, refused ones included, through a real actor and a real file."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="clew-taskwal-")
        self.handle = SyncTasks(self.tmp, SID, clock=ManualClock())
        self.path = wal_path(self.tmp, SID, "sm")
        self.handle.open("sm")
        self.seq = 0

    def teardown(self) -> None:
        self.handle.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def _change(self, *changes: TaskChange) -> None:
        size = self._size()
        try:
            seqs = self.handle.apply_changes("sm", changes)
        except TaskGraphError:
            assert size == self._size()
            return
        assert list(range(self.seq + 1, self.seq + 1 + len(changes))) == seqs
        self.seq = seqs[-1]

    @rule(tid=IDS, deps=st.lists(IDS, max_size=3))
    def create(self, tid: str, deps: list[str]) -> None:
        self._change(CreateTask(task_id=tid, title=f"do {tid}", owner="coder", deps=deps))

    @rule(tid=IDS, deps=st.lists(IDS, max_size=3, unique=True))
    def create_on_known_tasks(self, tid: str, deps: list[str]) -> None:
        known = [d for d in deps if d in self.handle.snapshot("sm")]
        self._change(CreateTask(task_id=tid, title=f"do {tid}", owner="coder", deps=known))

    @rule(tid=IDS, dep=IDS)
    def add_dependency(self, tid: str, dep: str) -> None:
        self._change(AddDependency(task_id=tid, depends_on=dep))

    @rule(
        moves=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2)), min_size=1, max_size=4),
        summary=st.sampled_from(["", "ok", "boom"]),
    )
    def advance(self, moves: list[tuple[int, int]], summary: str) -> None:
        """Make legal moves on existing tasks, rarely a cancel (random moves are refused)."""
        for i, k in moves:
            dag = self.handle.snapshot("sm")
            if not len(dag):
                return
            tid = dag.topological_order()[i % len(dag)]
            legal = sorted(LEGAL_TRANSITIONS[dag.status(tid)], key=lambda s: (s == "cancelled", s))
            if legal and (k == 0 or legal[0] != "cancelled"):
                dst = legal[k % len(legal)]
                self._change(SetStatus(task_id=tid, to_status=dst, result_summary=summary))

    @rule(tid=IDS, dst=ANY_STATUS)
    def set_any_status(self, tid: str, dst: TaskStatus) -> None:
        self._change(SetStatus(task_id=tid, to_status=dst))

    @rule(tid=IDS)
    def remove(self, tid: str) -> None:
        self._change(RemoveTask(task_id=tid))

    @rule(a=IDS, b=IDS, dst=ANY_STATUS)
    def batch(self, a: str, b: str, dst: TaskStatus) -> None:
        self._change(
            CreateTask(task_id=a, title=a, owner="r"),
            AddDependency(task_id=b, depends_on=a),
            SetStatus(task_id=a, to_status=dst),
        )

    @rule()
    def restart(self) -> None:
        live = self.handle.snapshot("sm")
        self.handle.stop()
        self.handle = SyncTasks(self.tmp, SID, clock=ManualClock())
        report = self.handle.open("sm")
        assert (self.seq, False) == (report.lines, report.truncated_tail)
        assert live == self.handle.snapshot("sm")

    @invariant()
    def live_dag_equals_the_dag_replayed_from_the_wal(self) -> None:
        assert replayed(self.path) == self.handle.snapshot("sm")
        assert self.seq == self.handle.last_seq("sm")


LiveEqualsReplayed.TestCase.settings = settings(
    max_examples=40, stateful_step_count=40, deadline=None
)
TestLiveEqualsReplayed = LiveEqualsReplayed.TestCase


# --- SIGKILL: nothing acknowledged is lost, nothing is half-applied ---------------------------

CHILD = """
import sys
import msgspec
from actors.tasks.changes import TaskChange
from actors.tasks.manager import start_task_manager, stop_task_manager

project, sid, ops = sys.argv[1], sys.argv[2], sys.argv[3]
changes = msgspec.json.decode(open(ops, "rb").read(), type=list[TaskChange])
tasks = start_task_manager(project, sid)
tasks.open("burst").get()
print("ready", flush=True)
for change in changes:
    seq = tasks.apply_changes("burst", [change]).get()[0]
    print(f"ack {seq}", flush=True)
stop_task_manager(tasks)
"""


def burst(n: int) -> list[TaskChange]:
    """Return a deterministic burst of changes: a chain of tasks run to completion."""
    changes: list[TaskChange] = []
    for i in range(n):
        deps = [f"t{i - 1}"] if i % 4 else []
        changes += [
            CreateTask(task_id=f"t{i}", title=f"step {i}", owner="worker", deps=deps),
            SetStatus(task_id=f"t{i}", to_status="running"),
            SetStatus(task_id=f"t{i}", to_status="completed", result_summary=f"done {i}"),
        ]
        if i % 5 == 0:
            changes += [
                CreateTask(task_id=f"x{i}", title="side", owner="worker", deps=[f"t{i}"]),
                RemoveTask(task_id=f"x{i}"),
            ]
    return changes


def test_sigkill_during_a_burst_loses_no_acknowledged_change(tmp_path: Path) -> None:
    changes = burst(1000)
    ops = tmp_path / "ops.json"
    ops.write_bytes(msgspec.json.encode(changes))
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), SID, str(ops)],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as child:
        assert child.stdout is not None
        acks = 0
        for line in child.stdout:
            if line.startswith("ack "):
                acks += 1
                if acks == 60:
                    child.send_signal(signal.SIGKILL)
                    break
        rest = child.stdout.read()  # acks already in the pipe were acknowledged too
        child.wait(timeout=10)
    acked = [int(x.split()[1]) for x in rest.splitlines() if x.startswith("ack ")]
    last_ack = max([60, *acked])

    records = replay_wal(wal_path(tmp_path, SID, "burst")).records

    assert -signal.SIGKILL == child.returncode
    assert len(records) >= last_ack
    for record, change in zip(records, changes, strict=False):
        match record.event, change:
            case TaskCreated(task_id=a), CreateTask(task_id=b) if a == b:
                pass
            case TaskStatusChanged(task_id=a, to_status=s), SetStatus(task_id=b, to_status=t):
                assert (a, s) == (b, t)
            case TaskRemoved(task_id=a), RemoveTask(task_id=b):
                assert a == b
            case _:
                pytest.fail(f"line {record.seq} is {record.event!r}, expected {change!r}")
    with SyncTasks(tmp_path, SID) as h:
        report = h.open("burst")
        assert (True, len(records)) == (report.available, report.lines)
        assert TaskDag.rebuild(r.event for r in records) == h.snapshot("burst")


def test_the_blocked_set_topological_order_and_dependents_are_queries_of_the_actor(
    handle: SyncTasks,
) -> None:
    seed_plan(handle)
    handle.set_status("plan", "a", "running")
    handle.set_status("plan", "a", "failed")
    assert ["b", "c"] == handle.blocked("plan")
    assert ["a", "b", "c"] == handle.topological_order("plan")
    assert ["b"] == handle.dependents("plan", "a")
    assert ["b", "c"] == handle.dependents("plan", "a", transitive=True)
