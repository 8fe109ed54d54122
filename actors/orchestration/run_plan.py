"""A main run's plan as it moves: the log, the Task WAL, the plan file, the board nodes.

The run's todos live in three places, moved in lockstep by :class:`RunPlan`:

- the log: ``todo_planned``, then a ``todo_updated`` per change — the truth a replay
  checks;
- the Task WAL (:class:`~actors.tasks.run_board.RunTaskBoard`) — the task DAG's truth;
- derived from the log, never read back (flow 2): the plan file under the project's
  ``.clew/plans/`` and the ``task_board`` nodes of the Brain's conversation.

The Task WAL's name. Flow 1 named it after the run id. From flow 2 it is the plan's task
name — the router's ``task_name`` (else the request's first words), sanitised and made
unique among the session's WALs — recorded in ``todo_planned.task_name``, with the run
id in the WAL's header line. Re-executing, the recorded name is taken (it was decided
live, against the files there were then), so a replay and a resume reproduce it.
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.orchestration.env import SessionEnv
from actors.orchestration.loop import Conversation
from actors.orchestration.plan import Plan
from actors.recording.recorder import RunRecorder
from actors.tasks.agreement import run_wal_name
from actors.tasks.changes import StartWal
from actors.tasks.manager import TaskManagerProxy
from actors.tasks.plan_file import write_plan_file
from actors.tasks.run_board import RunTaskBoard
from eventlog.blocks import TextBlock
from eventlog.errors import TaskWalError
from eventlog.events import Todo, TodoPlanned, TodoStatus, TodoUpdated
from eventlog.ids import main_run_of, session_of, task_name, unique_task_name, wal_name_for
from eventlog.packets import BrainTaskContext
from eventlog.wals import FileWals
from projections.todos import RunTodos, render_board, render_plan


class RunPlan:
    """The todos of one main run, moved in the log, the Task WAL and the derived texts."""

    def __init__(self, env: SessionEnv, tasks: TaskManagerProxy, rec: RunRecorder) -> None:
        self.env = env
        self.tasks = tasks
        self.rec = rec
        self.todos = RunTodos()
        self.board: RunTaskBoard | None = None
        self.task_name = ""

    @property
    def wal_name(self) -> str:
        """The run's Task WAL name."""
        return self.task_name or wal_name_for(self.rec.run_id)

    def choose_name(self, plan: Plan, request: str) -> str:
        """Return the plan's task name (flow 2): recorded when re-executing, else chosen."""
        recorded = self.rec.next_recorded(TodoPlanned) if self.rec.replaying else None
        if recorded is not None and recorded.task_name:
            return recorded.task_name
        first_line = request.strip().split("\n", 1)[0]
        name = task_name(plan.task_name or first_line)
        try:
            wals = self.env.task_wals or FileWals(self.env.project_dir)
            taken = set(wals.names(self.env.session_id)) | self._inherited_names()
        except TaskWalError:
            taken = set()  # the directory is unusable: the WAL will say so when opened
        return unique_task_name(name, taken)

    def _inherited_names(self) -> set[str]:
        """Return the task names of the main runs a fork's copied history comes from, so a
        fork names its runs as its parent did after them (a rerun with no change then
        writes the same task board as the original)."""
        store, sid = self.env.store, self.env.session_id
        if store.read_session(sid).parent_session_id is None:
            return set()
        runs = {
            (session_of(n.run_id), main_run_of(n.run_id) or n.run_id)
            for n in store.read_active_path(sid)
            if n.run_id is not None and session_of(n.run_id) != sid
        }
        return {run_wal_name(r, store.read_run(owner, r)) for owner, r in sorted(runs)}

    def start(self, todos: Sequence[Todo], context: BrainTaskContext, name: str = "") -> None:
        """Record the plan (``todo_planned``), create its Task WAL, write the plan file."""
        self.task_name = name
        event = TodoPlanned(todos=list(todos), context=context, task_name=name)
        self.rec.emit(event)
        self.todos.apply_event(event)
        # The Task WAL (the task manager's, fsynced) never gets ahead of the log's commit.
        self.rec.flush()
        self.board = RunTaskBoard(self.tasks, self.wal_name)
        header = StartWal(run_id=self.rec.run_id, task_name=name) if name else None
        self.board.plan(todos, header)
        self._write()

    def update(self, todo_id: str, status: TodoStatus | str, note: str = "") -> None:
        """Record a todo's new status (``todo_updated``) and rewrite the plan file."""
        event = TodoUpdated(todo_id=todo_id, status=status, note=note)  # type: ignore[arg-type]
        self.rec.emit(event)
        self.todos.apply_event(event)
        self._write()

    def move(self, task_id: str, to_status: str, summary: str = "") -> None:
        """Move the Task WAL's task (an *ensure* operation, see ``RunTaskBoard``)."""
        assert self.board is not None
        self.rec.flush()  # the Task WAL never gets ahead of the log's commit
        self.board.move(task_id, to_status, summary)

    def board_node(self, conv: Conversation) -> None:
        """Append the task board, as the log says it is now, to the Brain's conversation."""
        conv.append("user", [TextBlock(text=render_board(self.todos))], node_type="task_board")

    def _write(self) -> None:
        if self.task_name:  # flow 2: the plan is also a project file
            text = render_plan(self.todos, self.rec.run_id)
            write_plan_file(self.env.project_dir, self.env.session_id, self.task_name, text)
