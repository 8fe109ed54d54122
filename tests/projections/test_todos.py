"""A main run's todos folded from its log, and the board and plan texts derived from them."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from _events import stored_event as stored

from eventlog.events import Todo, TodoPlanned, TodoUpdated
from eventlog.packets import BrainTaskContext
from projections.todos import RunTodos, render_board, render_plan

PLAN = TodoPlanned(
    todos=[
        Todo(id="w1", title="Find facts", owner_role="researcher"),
        Todo(id="w2", title="Weigh them", owner_role="analyst", deps=["w1"]),
        Todo(id="primary", title="Answer the request", owner_role="lead", after=["w1", "w2"]),
    ],
    context=BrainTaskContext(id="r1", goal="Compare three apps."),
    task_name="compare-apps",
)


def folded() -> RunTodos:
    return RunTodos.rebuild(
        [
            stored(1, PLAN),
            stored(2, TodoUpdated(todo_id="w1", status="completed")),
            stored(3, TodoUpdated(todo_id="w2", status="failed", note="no data")),
            stored(4, TodoUpdated(todo_id="ghost", status="running")),
        ]
    )


def test_the_fold_keeps_each_todos_last_status_and_ignores_unknown_ids() -> None:
    todos = folded()

    assert {"w1": "completed", "w2": "failed", "primary": "pending"} == todos.status
    assert ("compare-apps", "Compare three apps.") == (todos.task_name, todos.goal)


def test_a_new_plan_starts_the_list_again() -> None:
    todos = folded()
    todos.apply_event(TodoPlanned(todos=[Todo(id="x", title="X", owner_role="r")]))

    assert ({"x": "pending"}, "") == (todos.status, todos.task_name)


def test_the_board_shows_every_task_with_status_owner_waits_and_note() -> None:
    assert [
        "Task board (compare-apps): 3 tasks — 1 completed, 1 failed, 1 pending",
        "[completed] w1: Find facts (@researcher)",
        "[failed] w2: Weigh them (@analyst) after w1 — no data",
        "[pending] primary: Answer the request (@lead) after w1, w2",
    ] == render_board(folded()).splitlines()


def test_the_plan_file_is_a_markdown_checklist_of_the_tasks() -> None:
    text = render_plan(folded(), "sess_x:brain:r1")

    assert text.startswith("# Plan: compare-apps\n\nGoal: Compare three apps.\n")
    assert "- [x] **w1** — Find facts (researcher) · completed" in text
    assert "- [ ] **w2** — Weigh them (analyst) · failed · after w1 · no data" in text
    assert "Run `sess_x:brain:r1` — 1 completed, 1 failed, 1 pending." in text


def test_an_empty_list_renders_without_tasks() -> None:
    assert "Task board: no tasks." == render_board(RunTodos())
    assert "# Plan: r9" in render_plan(RunTodos(), "r9")
