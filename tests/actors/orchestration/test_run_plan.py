"""A main run's plan as a project file and its Task WAL named after the task (seed 004).

Issue 22, item 9: the WAL is ``<task_name>.wal.jsonl`` (the router's name, sanitised and
unique; the run id in the WAL's header), the name is recorded in ``todo_planned``, and
the plan is also a derived Markdown file under ``.clew/plans/``.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.runtime.runtime import Runtime
from actors.tasks.plan_file import plan_path, write_plan_file
from eventlog.events import TodoPlanned
from eventlog.taskwal import list_wal_names, wal_path

PROMPT = "Fix the login bug, then tell me what you changed."


def test_the_task_wal_is_named_after_the_routers_task_name_with_the_run_in_its_header(
    rt: Runtime,
) -> None:
    s = run_session(rt, PROMPT, scripted(route(task_name="Fix: Login bug!")))

    [planned] = s.of(TodoPlanned)
    assert "fix-login-bug" == planned.task_name
    assert ["fix-login-bug"] == rt.wal_names(s.sid)
    project = rt.session_dir(s.sid)
    first = json.loads(wal_path(project, s.sid, "fix-login-bug").read_text().splitlines()[0])
    assert {"event_type": "wal_started", "run_id": s.brain_run, "task_name": "fix-login-bug"} == (
        first["event"]
    )


def test_without_a_task_name_the_requests_first_words_name_the_plan(rt: Runtime) -> None:
    s = run_session(rt, PROMPT, scripted(route()))

    assert ["fix-the-login-bug-then-tell-me-what-you-changed"] == rt.wal_names(s.sid)


def test_a_task_name_taken_in_the_session_gets_a_number_and_each_run_keeps_its_own(
    rt: Runtime,
) -> None:
    model = scripted(
        route([worker("w1", "coder", "Fix it")], task_name="fix-bug"),
        rule("coder", {"text": "done"}),
    )
    session = rt.new_session()
    session.run(PROMPT, model=model)
    session.run("Again, please.", model=model)

    assert ["fix-bug", "fix-bug-2"] == rt.wal_names(session.id)
    assert ["fix-bug", "fix-bug-2"] == list_wal_names(rt.session_dir(session.id), session.id)
    verified = rt.verify(session.id)
    assert ([], 2) == (verified.sessions[0].problems, len(verified.sessions[0].wals))
    assert rt.replay(session.id).identical


def test_the_plan_is_a_markdown_file_rewritten_as_the_todos_move(rt: Runtime) -> None:
    s = run_session(
        rt,
        PROMPT,
        scripted(
            route([worker("w1", "coder", "Find the bug")], review=True, task_name="fix-bug"),
            rule("coder", {"text": "found"}),
            rule("reviewer", {"json": {"summary": "ok", "verdict": "approved"}}),
        ),
    )

    text = plan_path(rt.session_dir(s.sid), s.sid, "fix-bug").read_text()
    assert text.startswith(f"# Plan: fix-bug\n\nGoal: {PROMPT}\n")
    assert "- [x] **w1** — Find the bug (coder) · completed" in text
    assert "- [x] **primary** — Answer the request (lead) · completed · after w1" in text
    assert "- [x] **review** — Review the answer (reviewer) · completed · after primary" in text


def test_a_deleted_plan_file_is_written_again_by_a_replay_never_read(
    rt: Runtime, tmp_path: Path
) -> None:
    s = run_session(rt, PROMPT, scripted(route(task_name="fix-bug")))
    path = plan_path(rt.session_dir(s.sid), s.sid, "fix-bug")
    path.write_text("edited by hand")  # never read back: the log is the truth

    assert rt.replay(s.sid).identical
    assert rt.verify(s.sid).ok
    assert "edited by hand" == path.read_text()  # a replay writes into its scratch dir only


def test_a_plan_file_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    (project / ".clew").mkdir(parents=True)
    (project / ".clew" / "plans").symlink_to(outside)

    assert None is write_plan_file(project, "sess_x", "plan", "text")
    assert [] == list(outside.iterdir())


@pytest.mark.parametrize("name", ["../evil", "a/b", ""])
def test_a_plan_file_name_must_be_a_safe_name(tmp_path: Path, name: str) -> None:
    assert None is write_plan_file(tmp_path, "sess_x", name, "text")
