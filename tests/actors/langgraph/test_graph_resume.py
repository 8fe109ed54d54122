"""A real graph (a tool node, an ``interrupt()`` for approval) on ``ClewSaver``: killed
with SIGKILL in the middle of its tool call, it resumes from the clew-backed checkpoint
in another process and ends with the expected state."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from _lg_graph import QUESTION, build_graph
from _processes import child_env
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from actors.langgraph import ClewSaver

CHILD = Path(__file__).resolve().parents[2] / "helpers" / "_lg_graph.py"


def _run_until_gate(home: Path, thread: str, gate: Path) -> None:
    """Start the child, wait until it is inside the tool, SIGKILL it."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(home), thread, str(gate)],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not gate.exists():
            if child.poll() is not None:
                _, err = child.communicate()
                raise AssertionError(f"the child ended before the tool: {err}")
            assert time.monotonic() < deadline, "the child never reached the tool"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
        if child.stdout:
            child.stdout.close()
        if child.stderr:
            child.stderr.close()
    assert -signal.SIGKILL == child.returncode


def test_a_graph_killed_in_its_tool_call_resumes_from_the_clew_checkpoint(
    tmp_path: Path,
) -> None:
    home, gate, thread = tmp_path / "home", tmp_path / "gate", "weather-thread"
    _run_until_gate(home, thread, gate)

    with ClewSaver.from_home(home) as saver:
        graph = build_graph(saver)
        config = {"configurable": {"thread_id": thread}}
        before = graph.get_state(config)
        # The approval is recorded; the tool call it approved never finished.
        assert ("tools",) == before.next
        assert ["human-1", "ai-call"] == [m.id for m in before.values["messages"]]

        final = graph.invoke(None, config)

    messages = final["messages"]
    assert [QUESTION.content, "", "It is sunny in Paris.", "Answer: It is sunny in Paris."] == [
        m.content for m in messages
    ]
    assert isinstance(messages[2], ToolMessage)
    assert "call-1" == messages[2].tool_call_id
    assert isinstance(messages[3], AIMessage)


def test_a_denied_tool_call_ends_the_run_without_calling_the_tool(tmp_path: Path) -> None:
    with ClewSaver.from_home(tmp_path / "home") as saver:
        graph = build_graph(saver)
        config = {"configurable": {"thread_id": "deny"}}
        first = graph.invoke({"messages": [QUESTION]}, config)
        assert "call-1" == first["__interrupt__"][0].value["approve"]["id"]

        final = graph.invoke(Command(resume="deny"), config)

    assert ["human-1", "ai-call", "ai-deny"] == [m.id for m in final["messages"]]
