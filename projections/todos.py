"""A main run's todo list as its log tells it, and the two texts derived from it.

:class:`RunTodos` folds one main run's ``todo_planned`` / ``todo_updated`` events (the log's
side of the plan; the Task WAL is the other). Two renderings are derived from it, never
read back:

- :func:`render_board` — the compact task board a ``task_board`` node records in the
  Brain's conversation;
- :func:`render_plan` — the plan as Markdown, the file the Brain keeps under the
  project's ``.clew/plans/`` (seed 004: the plan is a project Markdown file).

A task's status is the last one the log gave it; ``pending`` until then.
"""

from __future__ import annotations

from collections.abc import Iterable

from eventlog.events import Event, Todo, TodoPlanned, TodoUpdated
from eventlog.records import StoredEvent

#: How long a title, note or goal may be on one line of a rendering.
_LINE_TEXT = 120


def _clip(text: str, n: int = _LINE_TEXT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class RunTodos:
    """The todos of one main run with their current status (mutable, owned by its folder)."""

    __slots__ = ("goal", "notes", "status", "task_name", "todos")

    def __init__(self) -> None:
        self.todos: list[Todo] = []
        self.status: dict[str, str] = {}
        self.notes: dict[str, str] = {}
        self.task_name = ""
        self.goal = ""

    def apply_event(self, event: Event) -> None:
        """Fold one event; a ``todo_planned`` starts the list again, other types are ignored."""
        match event:
            case TodoPlanned(todos=todos, context=context, task_name=name):
                self.todos = list(todos)
                self.status = {t.id: "pending" for t in todos}
                self.notes = {}
                self.task_name = name
                self.goal = context.goal if context is not None else ""
            case TodoUpdated(todo_id=todo_id, status=status, note=note):
                if todo_id in self.status:
                    self.status[todo_id] = status
                    self.notes[todo_id] = note
            case _:
                pass

    def apply(self, stored: StoredEvent) -> None:
        """Fold one stored event."""
        self.apply_event(stored.event)

    @classmethod
    def rebuild(cls, events: Iterable[StoredEvent]) -> RunTodos:
        """Fold a main run's events (in ``run_seq`` order)."""
        todos = cls()
        for e in events:
            todos.apply(e)
        return todos

    def counts(self) -> str:
        """Return ``"2 completed, 1 running"``: how many tasks are in each status."""
        tally: dict[str, int] = {}
        for t in self.todos:
            s = self.status[t.id]
            tally[s] = tally.get(s, 0) + 1
        return ", ".join(f"{n} {s}" for s, n in tally.items())


def _waits(t: Todo) -> str:
    waits = [*t.deps, *t.after]
    return f" after {', '.join(waits)}" if waits else ""


def render_board(todos: RunTodos) -> str:
    """Return the compact task board: one line per task, in plan order."""
    if not todos.todos:
        return "Task board: no tasks."
    name = f" ({todos.task_name})" if todos.task_name else ""
    lines = [f"Task board{name}: {len(todos.todos)} tasks — {todos.counts()}"]
    for t in todos.todos:
        line = f"[{todos.status[t.id]}] {t.id}: {_clip(t.title)} (@{t.owner_role}){_waits(t)}"
        note = todos.notes.get(t.id)
        if note:
            line += f" — {_clip(note)}"
        lines.append(line)
    return "\n".join(lines)


def render_plan(todos: RunTodos, run_id: str) -> str:
    """Return the plan as Markdown: a checklist of the tasks with owner, status and waits."""
    title = todos.task_name or run_id
    out = [f"# Plan: {title}", ""]
    if todos.goal:
        out += [f"Goal: {_clip(todos.goal, 400)}", ""]
    out += [
        f"Run `{run_id}` — {todos.counts() or 'no tasks'}.",
        "",
        "<!-- Derived from the session's events (todo_planned / todo_updated) and"
        " rewritten as they happen: editing it changes nothing. -->",
        "",
    ]
    for t in todos.todos:
        status = todos.status[t.id]
        box = "x" if status == "completed" else " "
        line = f"- [{box}] **{t.id}** — {_clip(t.title)} ({t.owner_role}) · {status}"
        waits = [*t.deps, *t.after]
        if waits:
            line += f" · after {', '.join(waits)}"
        note = todos.notes.get(t.id)
        if note:
            line += f" · {_clip(note)}"
        out.append(line)
    return "\n".join(out) + "\n"
