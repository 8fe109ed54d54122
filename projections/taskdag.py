"""The task DAG: a pure fold over the task events of one Task WAL.

Only the *stored* status of a task is ever written (``pending``, ``running``,
``completed``, ``failed``, ``cancelled``). ``ready`` and ``blocked`` are **derived**
from the dependencies on every change, never written:

- a pending task whose dependencies are all ``completed`` is ``ready``;
- a pending task with a dependency that is ``failed``, ``cancelled`` or ``blocked`` is
  ``blocked`` — so blocking propagates to every transitive dependent;
- otherwise it stays ``pending``.

A task may also wait *after* others (``TaskCreated.after``): it is ``ready`` only once
each of them has settled (completed, failed, cancelled or blocked), but their failure
does not block it. The Brain's primary waits for every worker this way: it runs even
when a worker failed, and reports the failure.

Deriving them means a failure, a retry or a new edge needs one WAL line, not a cascade
of lines, and the DAG replayed from the WAL equals the live one by construction.
A status change names the status it was observed in (``from_status``, which may be a
derived one: ``ready → running``); :meth:`TaskDag.check` refuses it when the task has
moved on, so a stale decision is never applied. The legal moves are
:data:`LEGAL_TRANSITIONS` (a table in ``docs/tasks.md``).

In cycle messages an arrow reads "depends on": ``a → b → a``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Final

import msgspec

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

LEGAL_TRANSITIONS: Final[dict[TaskStatus, frozenset[TaskStatus]]] = {
    "pending": frozenset({"cancelled"}),
    "ready": frozenset({"running", "cancelled"}),
    "blocked": frozenset({"cancelled"}),
    # running → pending requeues a task whose worker died (e.g. found running on resume).
    "running": frozenset({"completed", "failed", "cancelled", "pending"}),
    "failed": frozenset({"pending"}),  # retry
    "completed": frozenset(),
    "cancelled": frozenset(),
}
DERIVED_STATUSES: Final = frozenset({"ready", "blocked"})
_BLOCKING: Final = frozenset({"failed", "cancelled", "blocked"})
#: Statuses after which a task waiting *after* this one may start.
_SETTLED: Final = frozenset({"completed", "failed", "cancelled", "blocked"})
MAX_TASK_ID_LEN: Final = 200
_BOARD_TEXT_LEN: Final = 80
_STATUS_ORDER: Final[tuple[TaskStatus, ...]] = (
    "completed",
    "running",
    "ready",
    "pending",
    "blocked",
    "failed",
    "cancelled",
)


class Task(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of one task; ``status`` is the effective (derived) status."""

    task_id: str
    title: str
    owner: str
    status: TaskStatus
    result_summary: str = ""
    deps: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


class _Node:
    """The mutable record of one task inside a ``TaskDag``."""

    __slots__ = (
        "after",
        "dependents",
        "deps",
        "order",
        "owner",
        "status",
        "stored",
        "summary",
        "title",
    )

    def __init__(self, ev: TaskCreated, order: int) -> None:
        self.title = ev.title
        self.owner = ev.owner
        self.stored: TaskStatus = "pending"
        self.status: TaskStatus = "pending"
        self.summary = ""
        self.deps: list[str] = list(ev.deps)
        self.after: list[str] = list(ev.after)
        # Every task waiting for this one, by ``deps`` or ``after``: an ordered set.
        self.dependents: dict[str, None] = {}
        self.order = order


def _clip(text: str, n: int = _BOARD_TEXT_LEN) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class TaskDag:
    """The in-memory task DAG, built by applying task events in WAL order.

    ``apply`` is the fold: it validates with ``check`` and then mutates; it does no I/O.
    """

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}
        self._created = 0
        #: The WAL's header (a main run's WAL starts with one), if any.
        self.header: WalStarted | None = None

    @classmethod
    def rebuild(cls, events: Iterable[TaskEvent]) -> TaskDag:
        """Return the DAG obtained by applying ``events`` in order to an empty DAG.

        Raises:
            TaskGraphError: an event is refused.
        """
        dag = cls()
        for event in events:
            dag.apply(event)
        return dag

    # --- validation --------------------------------------------------------------------

    def _node(self, task_id: str) -> _Node:
        node = self._nodes.get(task_id)
        if node is None:
            raise TaskGraphError(f"unknown task {task_id!r}")
        return node

    def check(self, event: TaskEvent) -> None:
        """Raise ``TaskGraphError`` if ``event`` cannot be applied to the current DAG."""
        match event:
            case WalStarted():
                if self.header is not None or self._nodes:
                    raise TaskGraphError("a WAL header must be the WAL's first line")
            case TaskCreated():
                self._check_created(event)
            case TaskDependencyAdded():
                self._check_dependency(event)
            case TaskStatusChanged():
                self._check_transition(event)
            case TaskRemoved(task_id=tid):
                node = self._node(tid)
                if node.stored == "running":
                    raise TaskGraphError(f"task {tid!r} is running: end it before removing it")
                if node.dependents:
                    raise TaskGraphError(
                        f"task {tid!r} cannot be removed: {', '.join(node.dependents)} depend on it"
                    )

    def _check_created(self, event: TaskCreated) -> None:
        tid = event.task_id
        self._check_task_id(tid)
        if tid in self._nodes:
            raise TaskGraphError(f"task {tid!r} already exists")
        seen: set[str] = set()
        for dep in [*event.deps, *event.after]:
            if dep == tid:
                raise TaskGraphError(f"task {tid!r} cannot depend on itself: {tid} → {tid}")
            if dep in seen:
                raise TaskGraphError(f"task {tid!r} lists dependency {dep!r} twice")
            if dep not in self._nodes:
                raise TaskGraphError(f"task {tid!r} depends on unknown task {dep!r}")
            seen.add(dep)

    def _check_dependency(self, event: TaskDependencyAdded) -> None:
        tid, dep = event.task_id, event.depends_on
        node = self._node(tid)
        self._node(dep)
        if tid == dep:
            raise TaskGraphError(f"task {tid!r} cannot depend on itself: {tid} → {tid}")
        if node.stored != "pending":
            raise TaskGraphError(
                f"task {tid!r} is {node.status}: dependencies can only be added "
                "to a task that has not started"
            )
        if dep in node.deps or dep in node.after:
            raise TaskGraphError(f"task {tid!r} already depends on {dep!r}")
        cycle = self._path(dep, tid)
        if cycle is not None:
            names = " → ".join([tid, *cycle])
            raise TaskGraphError(f"dependency {tid} → {dep} would close the cycle {names}")

    def _check_transition(self, event: TaskStatusChanged) -> None:
        tid, src, dst = event.task_id, event.from_status, event.to_status
        node = self._node(tid)
        if node.status != src:
            raise TaskGraphError(
                f"task {tid!r} is {node.status}, not {src}: "
                f"refusing the stale transition {src} → {dst}"
            )
        if dst not in LEGAL_TRANSITIONS[src]:
            why = ""
            if dst in DERIVED_STATUSES:
                why = f" ({dst} is derived from the dependencies, never set)"
            elif src == "pending" and dst == "running":
                waiting = [d for d in node.deps if self._nodes[d].status != "completed"]
                waiting += [d for d in node.after if self._nodes[d].status not in _SETTLED]
                why = f" (it waits for {', '.join(waiting)})"
            raise TaskGraphError(f"task {tid!r}: illegal transition {src} → {dst}{why}")

    @staticmethod
    def _check_task_id(tid: str) -> None:
        if not tid or len(tid) > MAX_TASK_ID_LEN or not tid.isprintable() or " " in tid:
            raise TaskGraphError(
                f"invalid task id {tid[:40]!r}: use 1 to {MAX_TASK_ID_LEN} printable "
                "characters without spaces"
            )

    def _path(self, start: str, goal: str) -> list[str] | None:
        """Return the dependency path ``start → … → goal``, or None if there is none."""
        parent: dict[str, str | None] = {start: None}
        stack = [start]
        while stack:
            tid = stack.pop()
            if tid == goal:
                path: list[str] = []
                cur: str | None = tid
                while cur is not None:
                    path.append(cur)
                    cur = parent[cur]
                return path[::-1]
            node = self._nodes[tid]
            for dep in reversed([*node.deps, *node.after]):
                if dep not in parent:
                    parent[dep] = tid
                    stack.append(dep)
        return None

    # --- the fold ------------------------------------------------------------------------

    def apply(self, event: TaskEvent) -> None:
        """Validate ``event`` and fold it into the DAG.

        Raises:
            TaskGraphError: the event is refused; the DAG is unchanged.
        """
        self.check(event)
        match event:
            case WalStarted():
                self.header = event
            case TaskCreated(task_id=tid):
                self._created += 1
                node = _Node(event, self._created)
                self._nodes[tid] = node
                for dep in [*node.deps, *node.after]:
                    self._nodes[dep].dependents[tid] = None
                self._refresh([tid])
            case TaskDependencyAdded(task_id=tid, depends_on=dep):
                self._nodes[tid].deps.append(dep)
                self._nodes[dep].dependents[tid] = None
                self._refresh([tid])
            case TaskStatusChanged(task_id=tid, to_status=dst, result_summary=summary):
                node = self._nodes[tid]
                node.stored = dst
                node.summary = summary
                self._refresh([tid])
            case TaskRemoved(task_id=tid):
                node = self._nodes.pop(tid)
                for dep in [*node.deps, *node.after]:
                    del self._nodes[dep].dependents[tid]

    def _derive(self, node: _Node) -> TaskStatus:
        if node.stored != "pending":
            return node.stored
        all_done = True
        for dep in node.deps:
            status = self._nodes[dep].status
            if status in _BLOCKING:
                return "blocked"
            if status != "completed":
                all_done = False
        if all_done:
            all_done = all(self._nodes[a].status in _SETTLED for a in node.after)
        return "ready" if all_done else "pending"

    def _refresh(self, task_ids: list[str]) -> None:
        # Re-derive, and follow dependents only where the status changed: the cost is the
        # size of the change, not of the DAG. The DAG is acyclic, so this terminates at
        # the unique fixpoint whatever the visiting order.
        stack = task_ids
        while stack:
            node = self._nodes[stack.pop()]
            status = self._derive(node)
            if status != node.status:
                node.status = status
                stack.extend(node.dependents)

    # --- queries -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._nodes

    def get(self, task_id: str) -> Task:
        """Return the snapshot of ``task_id``.

        Raises:
            TaskGraphError: no such task.
        """
        return self._task(task_id, self._node(task_id))

    @staticmethod
    def _task(tid: str, node: _Node) -> Task:
        return Task(
            task_id=tid,
            title=node.title,
            owner=node.owner,
            status=node.status,
            result_summary=node.summary,
            deps=tuple(node.deps),
            after=tuple(node.after),
        )

    def status(self, task_id: str) -> TaskStatus:
        """Return the effective status of ``task_id`` (raises ``TaskGraphError`` if unknown)."""
        return self._node(task_id).status

    def tasks(self) -> list[Task]:
        """Return every task in creation order."""
        return [self._task(tid, n) for tid, n in self._nodes.items()]

    def ready(self) -> list[str]:
        """Return the ids of the tasks that can start now, in creation order."""
        return [tid for tid, n in self._nodes.items() if n.status == "ready"]

    def blocked(self) -> list[str]:
        """Return the ids of the tasks held back by a failed or cancelled upstream."""
        return [tid for tid, n in self._nodes.items() if n.status == "blocked"]

    def dependents(self, task_id: str, *, transitive: bool = False) -> list[str]:
        """Return the tasks that depend on ``task_id`` (directly, or transitively).

        Raises:
            TaskGraphError: no such task.
        """
        direct = list(self._node(task_id).dependents)
        if not transitive:
            return direct
        seen: dict[str, None] = {}
        stack = direct[::-1]
        while stack:
            tid = stack.pop()
            if tid not in seen:
                seen[tid] = None
                stack.extend(reversed(self._nodes[tid].dependents))
        return list(seen)

    def topological_order(self) -> list[str]:
        """Return every task after all its dependencies; ties go to the earlier created."""
        waiting = {tid: len(n.deps) + len(n.after) for tid, n in self._nodes.items()}
        heap = [(n.order, tid) for tid, n in self._nodes.items() if not waiting[tid]]
        heapq.heapify(heap)
        order: list[str] = []
        while heap:
            _, tid = heapq.heappop(heap)
            order.append(tid)
            for child in self._nodes[tid].dependents:
                waiting[child] -= 1
                if waiting[child] == 0:
                    heapq.heappush(heap, (self._nodes[child].order, child))
        return order

    def task_board(self) -> str:
        """Return a compact text board of the DAG, in topological order, for a prompt."""
        if not self._nodes:
            return "Task board: no tasks."
        counts = {s: 0 for s in _STATUS_ORDER}
        for n in self._nodes.values():
            counts[n.status] += 1
        summary = ", ".join(f"{c} {s}" for s, c in counts.items() if c)
        lines = [f"Task board: {len(self._nodes)} tasks — {summary}"]
        for tid in self.topological_order():
            n = self._nodes[tid]
            line = f"[{n.status}] {tid}: {_clip(n.title)} (@{n.owner})"
            if n.deps or n.after:
                line += f" after {', '.join([*n.deps, *n.after])}"
            if n.summary:
                line += f" → {_clip(n.summary)}"
            lines.append(line)
        return "\n".join(lines)

    def copy(self) -> TaskDag:
        """Return an independent copy (a snapshot another thread may keep)."""
        dag = TaskDag()
        dag._created = self._created
        dag.header = self.header
        for tid, n in self._nodes.items():
            c = _Node.__new__(_Node)
            c.title, c.owner, c.stored, c.status = n.title, n.owner, n.stored, n.status
            c.summary, c.order = n.summary, n.order
            c.deps = list(n.deps)
            c.after = list(n.after)
            c.dependents = dict(n.dependents)
            dag._nodes[tid] = c
        return dag

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskDag):
            return NotImplemented
        return self.tasks() == other.tasks()

    def __repr__(self) -> str:
        return f"<TaskDag {len(self._nodes)} tasks, ready={self.ready()}>"
