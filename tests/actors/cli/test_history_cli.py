"""``clew fork``, ``rerun`` and ``diff`` on a recorded demo session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import structlog
from _cli_helpers import Where, copy_where, invoke, script_model, total_rows

from eventlog.events import ToolCallStarted
from eventlog.sqlite import SQLiteStore


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    """One finished demo session (two workers), recorded once for the module."""
    base = tmp_path_factory.mktemp("history")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    result = invoke(where, "demo", "--workers", "2", "--json")
    structlog.reset_defaults()
    assert 0 == result.code, result.err
    return where, result.json()["session_id"]


@pytest.fixture
def demo(recorded: tuple[Where, str], tmp_path: Path) -> tuple[Where, str]:
    where, sid = recorded
    return copy_where(where, tmp_path), sid


def first_tool_call(where: Where, sid: str, tool: str) -> str:
    store = SQLiteStore(where.home / "sessions.sqlite", read_only=True)
    try:
        return next(
            e.event.tool_call_id
            for e in store.iter_events(sid)
            if isinstance(e.event, ToolCallStarted) and e.event.tool_name == tool
        )
    finally:
        store.close()


def test_rerun_with_no_change_diffs_identical_and_an_edit_shows_exactly_its_tool(
    demo: tuple[Where, str], tmp_path: Path
) -> None:
    where, sid = demo

    same = invoke(where, "rerun", sid, "--json")

    assert 0 == same.code, same.err
    report = same.json()
    assert (0, "completed") == (report["live_calls"], report["outcome"]["status"])
    assert 0 < report["served_calls"]
    diff = invoke(where, "diff", sid, report["session_id"])
    assert 0 == diff.code, diff.out + diff.err
    assert "identical" in diff.out

    call = first_tool_call(where, sid, "lookup")
    edited = tmp_path / "result.json"
    edited.write_text(json.dumps({"facts": ["an edited fact"]}))
    changed = invoke(where, "rerun", sid, "--tool-result", f"{call}={edited}", "--json")
    assert 0 == changed.code, changed.err
    fork = changed.json()["session_id"]
    assert [call] == changed.json()["edited_tool_calls"]

    text = invoke(where, "diff", sid, fork)
    as_json = invoke(where, "diff", sid, fork, "--json")

    assert (1, 1) == (text.code, as_json.code)
    assert "an edited fact" in text.out
    doc = as_json.json()
    assert doc["identical"] is False
    [[a, b]] = doc["differing"]
    assert ("tool", "lookup", call) == (a["kind"], a["what"], a["ref"])
    assert "an edited fact" in b["text"]
    assert doc["a"]["usage"]["totals"] == doc["b"]["usage"]["totals"]


def test_fork_at_a_relative_node_id_and_diff_two_nodes_of_one_session(
    demo: tuple[Where, str],
) -> None:
    where, sid = demo

    forked = invoke(where, "fork", sid, "--at", "brain:r1:n2", "--title", "from the plan", "--json")

    assert 0 == forked.code, forked.err
    doc = forked.json()
    assert (sid, f"{sid}:brain:r1:n2") == (doc["parent_session_id"], doc["fork_from_node_id"])
    shown = invoke(where, "sessions", "--json")
    assert doc["session_id"] in shown.out
    assert 0 == invoke(where, "verify", doc["session_id"]).code

    # a copied node, named relative to the parent it came from
    again = invoke(where, "fork", doc["session_id"], "--at", "brain:r1:n1", "--json")
    assert 0 == again.code, again.err
    assert f"{sid}:brain:r1:n1" == again.json()["fork_from_node_id"]

    nodes = invoke(where, "diff", sid, "brain:r1:n2", "brain:r1:n6", "--json")
    assert 1 == nodes.code
    result = nodes.json()
    assert 2 == result["common_nodes"]
    assert [] == result["a"]["nodes_after"]
    # flow 2: the board before and after the workers, their results, the answer
    assert ["user/task_board", "user/task_board", "user/child_result", "assistant/message"] == [
        n["what"] for n in result["b"]["nodes_after"]
    ]
    # the fork's history is the parent's up to that node, and has none of its work
    against = invoke(where, "diff", doc["session_id"], sid, "--json")
    assert 1 == against.code
    assert (2, 0) == (against.json()["common_nodes"], against.json()["common_steps"])
    assert [] == against.json()["a"]["runs"]


def test_rerun_with_another_model_for_one_role_serves_the_rest(
    demo: tuple[Where, str], tmp_path: Path
) -> None:
    where, sid = demo
    spec = script_model(
        tmp_path / "analyst.json", {"role": "analyst", "replies": [{"text": "I disagree."}]}
    )

    result = invoke(where, "rerun", sid, "--with", f"analyst={spec}", "--json")

    assert 0 == result.code, result.err
    report = result.json()
    assert {"analyst": [spec]} == report["changes"]["models"]
    # the router and the researcher are served; the analyst, then the primary and the
    # reviewer (whose requests now hold its new result) are asked live
    assert (3, 3) == (report["served_calls"], report["live_calls"])
    diff = invoke(where, "diff", sid, report["session_id"])
    assert 1 == diff.code
    assert "worker w2: completed: I disagree." in diff.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fork", "sess_nope"], "unknown session"),
        (["fork", "{sid}", "--at", "brain:r9:n9"], "no node"),
        (["rerun", "{sid}", "--run", "brain:r7"], "no run"),
        (["rerun", "{sid}", "--with", "nobody={script}"], "no role 'nobody'"),
        (["rerun", "{sid}", "--with", "lead"], "KEY=VALUE"),
        (["rerun", "{sid}", "--tool-result", "call_nope={script}"], "no tool call"),
        (["rerun", "{sid}", "--prompt", "{missing}"], "cannot read the prompt file"),
        (["rerun", "{sid}", "--instructions", "lead={missing}"], "cannot read"),
        (["diff", "{sid}", "sess_nope"], "unknown session"),
        (["diff", "{sid}", "brain:r1:n1", "brain:r9:n9"], "no node"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    demo: tuple[Where, str], tmp_path: Path, args: list[str], message: str
) -> None:
    where, sid = demo
    script = script_model(tmp_path / "s.json", {"replies": [{"text": "hi"}]}).split(":", 1)[1]
    values = {"sid": sid, "script": script, "missing": str(tmp_path / "missing.txt")}
    argv = [a.format(**values) for a in args]
    if argv[0] == "rerun" and "--with" in argv and "=" in argv[-1]:
        argv[-1] = argv[-1].replace("=", "=scripted:", 1)
    rows = total_rows(where.home)

    result = invoke(where, *argv)

    assert 2 == result.code, result.out + result.err
    [line] = result.err_lines()
    assert message in line, line
    assert rows == total_rows(where.home)
