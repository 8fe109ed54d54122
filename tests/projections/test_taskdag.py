"""The pure task DAG fold: derived readiness, blocking, cycles, the status machine."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.errors import TaskGraphError
from eventlog.taskwal import (
    TaskCreated,
    TaskDependencyAdded,
    TaskEvent,
    TaskRemoved,
    TaskStatus,
    TaskStatusChanged,
    WalStarted,
)
from projections.taskdag import LEGAL_TRANSITIONS, Task, TaskDag

ALL_STATUSES: tuple[TaskStatus, ...] = (
    "pending",
    "ready",
    "running",
    "completed",
    "failed",
    "cancelled",
    "blocked",
)


def created(tid: str, *deps: str) -> TaskCreated:
    return TaskCreated(task_id=tid, title=f"do {tid}", owner="coder", deps=list(deps))


def waiting_after(tid: str, *after: str) -> TaskCreated:
    """A task that waits *after* ``after`` (settled, not necessarily completed)."""
    return TaskCreated(task_id=tid, title=f"do {tid}", owner="coder", after=list(after))


def moved(tid: str, src: TaskStatus, dst: TaskStatus, summary: str = "") -> TaskStatusChanged:
    return TaskStatusChanged(task_id=tid, from_status=src, to_status=dst, result_summary=summary)


def run(dag: TaskDag, tid: str, end: TaskStatus = "completed") -> None:
    dag.apply(moved(tid, "ready", "running"))
    dag.apply(moved(tid, "running", end, f"{tid} {end}"))


def chain() -> TaskDag:
    """Return a → b → c (c depends on b, b on a) plus an independent d."""
    return TaskDag.rebuild([created("a"), created("b", "a"), created("c", "b"), created("d")])


def test_a_task_without_deps_is_ready_and_one_with_open_deps_is_pending() -> None:
    dag = chain()

    assert ["a", "d"] == dag.ready()
    assert "pending" == dag.status("b")


def test_a_task_becomes_ready_when_all_its_deps_complete() -> None:
    dag = TaskDag.rebuild([created("a"), created("b"), created("c", "a", "b")])

    run(dag, "a")
    assert "pending" == dag.status("c")
    run(dag, "b")

    assert "ready" == dag.status("c")


def test_a_failure_blocks_every_transitive_dependent() -> None:
    dag = chain()

    run(dag, "a", "failed")

    assert ["b", "c"] == dag.blocked()
    assert "ready" == dag.status("d")


def test_cancelling_an_upstream_blocks_its_dependents() -> None:
    dag = chain()

    dag.apply(moved("a", "ready", "cancelled"))

    assert ["b", "c"] == dag.blocked()


def test_retrying_a_failed_task_unblocks_its_dependents() -> None:
    dag = chain()
    run(dag, "a", "failed")

    dag.apply(moved("a", "failed", "pending"))

    assert ("ready", "pending", "pending") == tuple(dag.status(t) for t in "abc")
    assert "" == dag.get("a").result_summary


def test_a_new_dependency_on_an_unfinished_task_makes_a_ready_task_pending() -> None:
    dag = chain()

    dag.apply(TaskDependencyAdded(task_id="d", depends_on="c"))

    assert "pending" == dag.status("d")
    assert ("c",) == dag.get("d").deps[-1:]


def test_an_edge_that_closes_a_cycle_is_refused_naming_the_cycle() -> None:
    dag = chain()
    before = dag.copy()

    with pytest.raises(TaskGraphError, match="would close the cycle a → c → b → a"):
        dag.apply(TaskDependencyAdded(task_id="a", depends_on="c"))

    assert before == dag


def test_a_task_cannot_depend_on_itself() -> None:
    dag = chain()

    with pytest.raises(TaskGraphError, match="d → d"):
        dag.apply(TaskDependencyAdded(task_id="d", depends_on="d"))
    with pytest.raises(TaskGraphError, match="e → e"):
        dag.apply(created("e", "e"))


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (src, dst)
        for src, dst in itertools.product(ALL_STATUSES, ALL_STATUSES)
        if dst not in LEGAL_TRANSITIONS[src]
    ],
)
def test_an_illegal_transition_is_refused_naming_the_task_and_both_states(
    src: TaskStatus, dst: TaskStatus
) -> None:
    dag = dag_with_task_in(src)
    before = dag.copy()

    with pytest.raises(TaskGraphError, match=f"task 'x': illegal transition {src} → {dst}"):
        dag.apply(moved("x", src, dst))

    assert before == dag


@pytest.mark.parametrize(
    ("src", "dst"),
    [(src, dst) for src in ALL_STATUSES for dst in sorted(LEGAL_TRANSITIONS[src])],  # one order
)
def test_every_legal_transition_is_applied(src: TaskStatus, dst: TaskStatus) -> None:
    dag = dag_with_task_in(src)

    dag.apply(moved("x", src, dst, "why"))

    assert (dst if dst != "pending" else "ready") == dag.status("x")


def dag_with_task_in(status: TaskStatus) -> TaskDag:
    """Return a DAG where task ``x`` has the effective ``status``."""
    dag = TaskDag.rebuild([created("up"), created("x", "up")])
    path: dict[TaskStatus, list[tuple[str, TaskStatus, TaskStatus]]] = {
        "pending": [],
        "ready": [("up", "ready", "running"), ("up", "running", "completed")],
        "blocked": [("up", "ready", "cancelled")],
    }
    ready = path["ready"]
    path["running"] = [*ready, ("x", "ready", "running")]
    for end in ("completed", "failed", "cancelled"):
        path[end] = [*path["running"], ("x", "running", end)]
    for tid, src, dst in path[status]:
        dag.apply(moved(tid, src, dst))
    assert status == dag.status("x")
    return dag


def test_a_transition_from_a_stale_status_is_refused() -> None:
    dag = chain()

    with pytest.raises(TaskGraphError, match="task 'a' is ready, not running"):
        dag.apply(moved("a", "running", "completed"))


def test_starting_a_pending_task_names_what_it_waits_for() -> None:
    dag = chain()

    with pytest.raises(TaskGraphError, match=r"pending → running \(it waits for a\)"):
        dag.apply(moved("b", "pending", "running"))


def test_check_refuses_without_changing_and_accepts_without_applying() -> None:
    dag = chain()
    before = dag.copy()

    dag.check(moved("a", "ready", "running"))
    with pytest.raises(TaskGraphError):
        dag.check(created("a"))

    assert before == dag


@pytest.mark.parametrize(
    "event",
    [
        moved("zz", "ready", "running"),
        TaskDependencyAdded(task_id="zz", depends_on="a"),
        TaskDependencyAdded(task_id="a", depends_on="zz"),
        TaskRemoved(task_id="zz"),
        created("e", "zz"),
    ],
)
def test_an_event_about_an_unknown_task_is_refused(event: TaskEvent) -> None:
    with pytest.raises(TaskGraphError, match="unknown task 'zz'"):
        chain().apply(event)


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (created("a"), "already exists"),
        (created("e", "a", "a"), "twice"),
        (created(""), "invalid task id"),
        (created("a b"), "invalid task id"),
        (TaskDependencyAdded(task_id="b", depends_on="a"), "already depends on"),
    ],
)
def test_malformed_graph_changes_are_refused(event: TaskEvent, reason: str) -> None:
    with pytest.raises(TaskGraphError, match=reason):
        chain().apply(event)


def test_a_dependency_is_refused_on_a_task_that_has_started() -> None:
    dag = chain()
    dag.apply(moved("d", "ready", "running"))

    with pytest.raises(TaskGraphError, match="task 'd' is running"):
        dag.apply(TaskDependencyAdded(task_id="d", depends_on="a"))


def test_a_task_with_dependents_or_running_cannot_be_removed() -> None:
    dag = chain()
    dag.apply(moved("d", "ready", "running"))

    with pytest.raises(TaskGraphError, match="b depend on it"):
        dag.apply(TaskRemoved(task_id="a"))
    with pytest.raises(TaskGraphError, match="is running"):
        dag.apply(TaskRemoved(task_id="d"))
    dag.apply(TaskRemoved(task_id="c"))

    assert ["a", "b", "d"] == [t.task_id for t in dag.tasks()]
    assert [] == dag.dependents("b")


def test_topological_order_puts_every_dependency_first_ties_by_creation() -> None:
    dag = chain()
    dag.apply(TaskDependencyAdded(task_id="a", depends_on="d"))

    assert ["d", "a", "b", "c"] == dag.topological_order()


def test_dependents_are_listed_directly_or_transitively() -> None:
    dag = chain()

    assert ["b"] == dag.dependents("a")
    assert ["b", "c"] == dag.dependents("a", transitive=True)


def test_the_task_board_is_a_compact_text_in_topological_order() -> None:
    dag = chain()
    run(dag, "a")
    dag.apply(moved("b", "ready", "running"))

    expected = (
        "Task board: 4 tasks — 1 completed, 1 running, 1 ready, 1 pending\n"
        "[completed] a: do a (@coder) → a completed\n"
        "[running] b: do b (@coder) after a\n"
        "[pending] c: do c (@coder) after b\n"
        "[ready] d: do d (@coder)"
    )
    assert expected == dag.task_board()
    assert "Task board: no tasks." == TaskDag().task_board()


def test_a_copy_is_independent_and_equal_until_changed() -> None:
    dag = chain()
    snap = dag.copy()

    assert snap == dag
    run(dag, "a")

    assert snap != dag
    assert "ready" == snap.status("a")
    assert Task(task_id="a", title="do a", owner="coder", status="ready") == snap.get("a")


# --- waiting after (the primary after the workers) ---------------------------------------


def test_a_task_after_others_stays_pending_until_each_settled_and_a_failure_does_not_block_it() -> (
    None
):
    dag = TaskDag.rebuild([created("w1"), created("w2"), waiting_after("primary", "w1", "w2")])
    assert "pending" == dag.status("primary")  # (a crash here: never shown ready too early)

    run(dag, "w1", "failed")
    assert "pending" == dag.status("primary")
    run(dag, "w2")

    assert "ready" == dag.status("primary")
    assert ["primary"] == dag.ready()


def test_a_blocked_task_counts_as_settled_for_a_task_after_it() -> None:
    dag = TaskDag.rebuild(
        [created("w1"), created("w2", "w1"), waiting_after("primary", "w1", "w2")]
    )
    run(dag, "w1", "failed")

    assert ("blocked", "ready") == (dag.status("w2"), dag.status("primary"))


def test_after_edges_count_for_cycles_order_removal_and_the_board() -> None:
    dag = TaskDag.rebuild([created("w1"), waiting_after("primary", "w1"), created("review")])
    with pytest.raises(TaskGraphError, match="would close the cycle"):
        dag.apply(TaskDependencyAdded(task_id="w1", depends_on="primary"))
    with pytest.raises(TaskGraphError, match=r"w1.*cannot be removed: primary depend"):
        dag.apply(TaskRemoved(task_id="w1"))
    with pytest.raises(TaskGraphError, match="already depends"):
        dag.apply(TaskDependencyAdded(task_id="primary", depends_on="w1"))

    assert ["w1", "primary", "review"] == dag.topological_order()
    assert ("w1",) == dag.get("primary").after
    assert "[pending] primary: do primary (@coder) after w1" in dag.task_board()


def test_a_task_listing_a_task_in_deps_and_after_is_refused() -> None:
    dag = TaskDag.rebuild([created("a")])
    event = TaskCreated(task_id="b", title="b", owner="x", deps=["a"], after=["a"])

    with pytest.raises(TaskGraphError, match="lists dependency 'a' twice"):
        dag.apply(event)


def test_a_wal_header_is_its_first_line_only() -> None:
    dag = TaskDag()
    dag.apply(WalStarted(run_id="sess_x:brain:r1", task_name="fix-bug"))
    assert "sess_x:brain:r1" == (dag.header.run_id if dag.header else None)
    with pytest.raises(TaskGraphError, match="first line"):
        dag.apply(WalStarted(run_id="sess_x:brain:r2"))
    with pytest.raises(TaskGraphError, match="first line"):
        TaskDag.rebuild([created("a"), WalStarted(run_id="r")])


# --- properties ---------------------------------------------------------------------------

IDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
EVENTS = st.one_of(
    st.builds(created, IDS),
    st.builds(created, IDS, IDS),
    st.builds(waiting_after, IDS, IDS),
    st.builds(lambda t, d: TaskDependencyAdded(task_id=t, depends_on=d), IDS, IDS),
    st.builds(moved, IDS, st.sampled_from(ALL_STATUSES), st.sampled_from(ALL_STATUSES)),
    st.builds(lambda t: TaskRemoved(task_id=t), IDS),
)


def naive_status(dag: TaskDag, tid: str, stored: dict[str, TaskStatus]) -> TaskStatus:
    """Recompute the effective status from scratch, by the definition in the docs."""
    if stored[tid] != "pending":
        return stored[tid]
    deps = [naive_status(dag, d, stored) for d in dag.get(tid).deps]
    if any(s in ("failed", "cancelled", "blocked") for s in deps):
        return "blocked"
    after = [naive_status(dag, d, stored) for d in dag.get(tid).after]
    settled = all(s in ("completed", "failed", "cancelled", "blocked") for s in after)
    return "ready" if all(s == "completed" for s in deps) and settled else "pending"


@settings(max_examples=150, deadline=None)
@given(st.lists(EVENTS, max_size=60))
def test_incremental_state_equals_rebuild_and_the_definition_of_status(
    events: list[TaskEvent],
) -> None:
    dag = TaskDag()
    accepted: list[TaskEvent] = []
    stored: dict[str, TaskStatus] = {}
    for drawn in events:
        # Steer status changes to the observed status, so most of them are decided by
        # the transition table rather than refused as stale.
        event = drawn
        if isinstance(drawn, TaskStatusChanged) and drawn.task_id in dag:
            event = moved(drawn.task_id, dag.status(drawn.task_id), drawn.to_status)
        try:
            dag.apply(event)
        except TaskGraphError:
            continue
        accepted.append(event)
        match event:
            case TaskCreated(task_id=tid):
                stored[tid] = "pending"
            case TaskStatusChanged(task_id=tid, to_status=dst):
                stored[tid] = dst
            case TaskRemoved(task_id=tid):
                del stored[tid]

    assert TaskDag.rebuild(accepted) == dag
    assert {t: naive_status(dag, t, stored) for t in stored} == {
        t.task_id: t.status for t in dag.tasks()
    }
    order = dag.topological_order()
    assert sorted(stored) == sorted(order)
    position = {tid: i for i, tid in enumerate(order)}
    assert all(position[d] < position[t.task_id] for t in dag.tasks() for d in (*t.deps, *t.after))
