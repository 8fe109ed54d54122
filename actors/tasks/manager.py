"""The task manager: the one writer of a session's Task WALs, and the owner of their DAGs.

For every change the actor (1) builds the task event and validates it on the DAG,
(2) appends the WAL line and fsyncs it, (3) only then folds it into the in-memory DAG,
(4) replies with the line's seq. A refused change writes nothing; a failed append
leaves the DAG unchanged. So an acknowledged seq is durable, and the DAG the actor
holds is always exactly the replay of its WAL.

One actor serves every named WAL of one session (``plan``, ``review-1``, …). A WAL
whose replay fails is *unavailable*: its operations raise ``TaskWalError`` naming
``file:line``, while the other WALs — and the SQLite conversation — are unaffected. So is
one that is not a regular file reached from the project without a symlink (nothing
outside the project is read, cut or written).

Callers use :class:`TaskManagerProxy` (pykka's typed proxy): every call returns a
future; ``get()`` re-raises the actor's exception. :class:`TaskManagerHandle` is the
blocking face clew 0.1 documented (``from actors.task_manager import TaskManagerHandle``):
each call waits for the actor's reply.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from actors.tasks.changes import (
    AddDependency,
    CreateTask,
    RemoveTask,
    SetStatus,
    TaskChange,
    TaskWalReport,
    to_event,
)
from eventlog.clock import Clock, SystemClock
from eventlog.errors import TaskGraphError, TaskWalCorrupt, TaskWalError
from eventlog.ids import validate_session_id
from eventlog.logs import get_logger
from eventlog.taskwal import TaskEvent, TaskStatus, validate_wal_name
from eventlog.wals import FileWals, TaskWalAppender, TaskWals
from projections.taskdag import Task, TaskDag


class _OpenWal:
    __slots__ = ("dag", "report", "wal")

    def __init__(self, wal: TaskWalAppender, dag: TaskDag, report: TaskWalReport) -> None:
        self.wal = wal
        self.dag = dag
        self.report = report


# --- the actor --------------------------------------------------------------------------


class TaskManager(pykka.ThreadingActor):
    """The single writer of the Task WALs of one session."""

    #: A runtime its owner never closes must not keep the interpreter alive; each line
    #: is fsynced before it is acknowledged, so stopping with the process loses nothing.
    use_daemon_thread = True

    def __init__(
        self,
        project_dir: str | os.PathLike[str],
        session_id: str,
        *,
        clock: Clock | None = None,
        wals: TaskWals | None = None,
    ) -> None:
        """Serve the WALs under ``<project_dir>/.clew/tasks/<session_id>/`` — or in
        ``wals`` (the ``task_wal`` table of a PostgreSQL store).

        Raises:
            InvalidSessionId: ``session_id`` is unsafe (raised by ``start``, synchronously).
        """
        super().__init__()
        self._project_dir = os.fspath(project_dir)
        self._session_id = validate_session_id(session_id)
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._wals: TaskWals = wals if wals is not None else FileWals(self._project_dir)
        self._open: dict[str, _OpenWal] = {}
        self._unavailable: dict[str, TaskWalReport] = {}
        self._log = get_logger("clew.tasks").bind(session_id=session_id)

    def on_stop(self) -> None:
        for w in self._open.values():
            w.wal.close()

    def on_failure(self, *_exc_info: Any) -> None:
        self.on_stop()

    # --- opening ---------------------------------------------------------------------------

    def open(self, name: str) -> TaskWalReport:
        """Replay the WAL ``name`` (cutting a torn tail) and make it writable.

        Opening an open WAL returns its first report; an unavailable one is replayed again
        (someone may have repaired the file).

        Raises:
            InvalidName: ``name`` is unsafe as a file name.
        """
        validate_wal_name(name)
        if name in self._open:
            return self._open[name].report
        path = self._wals.location(self._session_id, name)
        log = self._log.bind(task_wal=name)
        try:
            result = self._wals.replay(self._session_id, name, log=log)
            dag = TaskDag()
            for record in result.records:
                try:
                    dag.apply(record.event)
                except TaskGraphError as e:
                    # Lines are gapless from seq 1, so the seq is the line number.
                    raise TaskWalCorrupt(str(path), record.seq, f"refused by the DAG: {e}") from e
        except TaskWalError as e:
            report = TaskWalReport(name=name, path=str(path), available=False, error=str(e))
            self._unavailable[name] = report
            log.error("task_wal_unavailable", error=str(e))
            return report
        report = TaskWalReport(
            name=name,
            path=str(path),
            lines=result.lines,
            truncated_tail=result.truncated_tail,
            truncated_bytes=result.truncated_bytes,
        )
        self._unavailable.pop(name, None)
        self._open[name] = _OpenWal(
            self._wals.appender(self._session_id, name, last_seq=result.lines, clock=self._clock),
            dag,
            report,
        )
        log.debug("task_wal_opened", lines=report.lines, truncated_tail=report.truncated_tail)
        return report

    def _get(self, name: str) -> _OpenWal:
        w = self._open.get(name)
        if w is None:
            self.open(name)
            w = self._open.get(name)
            if w is None:
                error = self._unavailable[name].error
                raise TaskWalError(f"task WAL {name!r} is unavailable: {error}")
        return w

    def close(self, name: str) -> None:
        """Close the WAL ``name``; a later call reopens (replays) it."""
        w = self._open.pop(name, None)
        if w is not None:
            w.wal.close()
        self._unavailable.pop(name, None)

    # --- changes ---------------------------------------------------------------------------

    def apply_changes(self, name: str, changes: Sequence[TaskChange]) -> list[int]:
        """Validate ``changes`` in order, append them with one fsync, then apply them.

        All or nothing while the process lives: one refused change refuses the batch and
        nothing is written. It is not a crash transaction: a crash during the write can
        leave a prefix of an unacknowledged batch in the WAL (each line a valid change).

        Returns:
            The seq of each change, in order.

        Raises:
            TaskGraphError: a change is refused (nothing written, DAG unchanged).
            TaskWalError: the WAL is unavailable or the append failed (DAG unchanged).
        """
        w = self._get(name)
        if len(changes) == 1:
            # The common case validates on the live DAG: no copy.
            event = to_event(w.dag, changes[0])
            w.dag.check(event)
            records = w.wal.append([event])
            w.dag.apply(event)
            return [records[0].seq]
        scratch = w.dag.copy()
        events: list[TaskEvent] = []
        for change in changes:
            event = to_event(scratch, change)
            scratch.apply(event)
            events.append(event)
        records = w.wal.append(events)
        w.dag = scratch
        return [r.seq for r in records]

    def create_task(
        self, name: str, task_id: str, title: str, owner: str, deps: Sequence[str] = ()
    ) -> int:
        """Add a task; return its WAL seq."""
        change = CreateTask(task_id=task_id, title=title, owner=owner, deps=list(deps))
        return self.apply_changes(name, [change])[0]

    def add_dependency(self, name: str, task_id: str, depends_on: str) -> int:
        """Make ``task_id`` wait for ``depends_on``; return the WAL seq."""
        return self.apply_changes(name, [AddDependency(task_id=task_id, depends_on=depends_on)])[0]

    def set_status(
        self, name: str, task_id: str, to_status: TaskStatus, result_summary: str = ""
    ) -> int:
        """Move ``task_id`` to ``to_status``; return the WAL seq."""
        change = SetStatus(task_id=task_id, to_status=to_status, result_summary=result_summary)
        return self.apply_changes(name, [change])[0]

    def remove_task(self, name: str, task_id: str) -> int:
        """Drop ``task_id``; return the WAL seq."""
        return self.apply_changes(name, [RemoveTask(task_id=task_id)])[0]

    # --- queries ---------------------------------------------------------------------------

    def snapshot(self, name: str) -> TaskDag:
        """Return a copy of the DAG of ``name`` that the caller may keep."""
        return self._get(name).dag.copy()

    def task(self, name: str, task_id: str) -> Task:
        """Return one task of ``name``."""
        return self._get(name).dag.get(task_id)

    def board(self, name: str) -> str:
        """Return the compact text board of ``name``."""
        return self._get(name).dag.task_board()

    def last_seq(self, name: str) -> int:
        """Return the seq of the last acknowledged line of ``name``."""
        return self._get(name).wal.last_seq

    def names(self) -> list[str]:
        """Return the names of the open WALs."""
        return list(self._open)


# --- the typed proxy --------------------------------------------------------------------

#: Seconds a caller waits for the task manager's reply (an fsync is a few ms).
CALL_TIMEOUT = 30.0


class TaskManagerProxy(ActorMemberMixin, pykka.ActorProxy[TaskManager]):
    """The typed proxy of a ``TaskManager``: each call returns a future of its reply.

    Only what production uses is declared; ``future.get()`` re-raises the actor's
    exception (``TaskGraphError``, ``TaskWalError``, ``InvalidName``) in the caller.
    """

    open = proxy_method(TaskManager.open)
    apply_changes = proxy_method(TaskManager.apply_changes)
    snapshot = proxy_method(TaskManager.snapshot)


def start_task_manager(
    project_dir: str | os.PathLike[str],
    session_id: str,
    *,
    clock: Clock | None = None,
    wals: TaskWals | None = None,
) -> TaskManagerProxy:
    """Start a ``TaskManager`` actor for ``session_id``; return its typed proxy.

    Raises:
        InvalidSessionId: ``session_id`` is unsafe.
    """
    ref = TaskManager.start(project_dir, session_id, clock=clock, wals=wals)
    # pykka's typed-proxy pattern: the proxy is an ActorProxy[TaskManager] at run time.
    return cast(TaskManagerProxy, ref.proxy())


def stop_task_manager(tasks: TaskManagerProxy) -> None:
    """Stop the actor (closing its WAL files); idempotent."""
    if tasks.actor_ref.is_alive():
        tasks.actor_ref.stop(timeout=CALL_TIMEOUT)


@contextmanager
def task_manager(
    project_dir: str | os.PathLike[str], session_id: str, *, clock: Clock | None = None
) -> Iterator[TaskManagerProxy]:
    """Run a ``TaskManager`` for the duration of a ``with`` block."""
    tasks = start_task_manager(project_dir, session_id, clock=clock)
    try:
        yield tasks
    finally:
        stop_task_manager(tasks)


class TaskManagerHandle:
    """A blocking face over a ``TaskManager`` actor (clew 0.1's documented API).

    Every message of the actor — ``open``, ``close``, ``apply_changes``, ``create_task``,
    ``add_dependency``, ``set_status``, ``remove_task``, ``snapshot``, ``task``,
    ``board``, ``last_seq``, ``names`` — is a method here with the actor's signature that
    waits for its reply and re-raises the actor's exception (``TaskGraphError``,
    ``TaskWalError``, ``InvalidName``) in the caller; the DAG's queries — ``ready(name)``,
    ``blocked(name)``, ``topological_order(name)``, ``dependents(name, task_id,
    transitive=False)`` — are answered from a ``snapshot`` of it. A ``with`` block stops
    the actor at its end.
    """

    #: The actor's messages a handle offers, each one call and one wait.
    CALLS = frozenset(
        {"open", "close", "apply_changes", "create_task", "add_dependency", "set_status",
         "remove_task", "snapshot", "task", "board", "last_seq", "names"}
    )  # fmt: skip
    #: The DAG's queries (0.1 asked the actor; a snapshot answers the same).
    QUERIES = frozenset({"ready", "blocked", "topological_order", "dependents"})

    def __init__(self, ref: pykka.ActorRef[TaskManager], *, timeout: float | None = 30.0) -> None:
        self.actor_ref = ref
        self._proxy = ref.proxy()
        self._timeout = timeout

    @classmethod
    def start(
        cls,
        project_dir: str | os.PathLike[str],
        session_id: str,
        *,
        clock: Clock | None = None,
        timeout: float | None = 30.0,
    ) -> TaskManagerHandle:
        """Start a ``TaskManager`` actor for ``session_id`` and return its handle.

        Raises:
            InvalidSessionId: ``session_id`` is unsafe.
        """
        return cls(TaskManager.start(project_dir, session_id, clock=clock), timeout=timeout)

    def __getattr__(self, name: str) -> Any:
        if name in self.QUERIES:

            def query(wal: str, *args: Any, **kwargs: Any) -> Any:
                return getattr(self.snapshot(wal), name)(*args, **kwargs)

            query.__name__ = name
            query.__doc__ = getattr(TaskDag, name).__doc__
            return query
        if name not in self.CALLS:
            raise AttributeError(f"a TaskManagerHandle has no method {name!r}")
        ask = getattr(self._proxy, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return ask(*args, **kwargs).get(timeout=self._timeout)

        call.__name__ = name
        call.__doc__ = getattr(TaskManager, name).__doc__
        return call

    def stop(self) -> None:
        """Stop the actor (closing its WAL files); idempotent."""
        if self.actor_ref.is_alive():
            self.actor_ref.stop(timeout=self._timeout)

    def __enter__(self) -> TaskManagerHandle:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
