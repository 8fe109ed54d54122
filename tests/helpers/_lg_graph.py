"""A real LangGraph graph for the ClewSaver tests: a scripted agent, a tool node, and an
``interrupt()`` that asks a person to approve each tool call.

Run as a script (``python _lg_graph.py HOME THREAD GATE``) it is the child the
SIGKILL test kills: it asks "weather in Paris?", gets the approval interrupt, approves,
and the tool then writes ``GATE`` and blocks until the process is killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from actors.langgraph import ClewSaver

#: While this file does not exist the tool writes it and blocks (the child gets killed).
_GATE: list[Path] = []


@tool
def weather(city: str) -> str:
    """Return the weather of ``city``."""
    if _GATE and not _GATE[0].exists():
        _GATE[0].write_text("in the tool\n")
        while True:  # the parent SIGKILLs us here
            time.sleep(1)
    return f"It is sunny in {city}."


def agent(state: MessagesState) -> dict[str, Any]:
    """A scripted model: ask for the weather tool once, then answer with its result."""
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=f"Answer: {last.content}", id="ai-final")]}
    call = {"name": "weather", "args": {"city": "Paris"}, "id": "call-1", "type": "tool_call"}
    return {"messages": [AIMessage(content="", tool_calls=[call], id="ai-call")]}


def approval(state: MessagesState) -> Command[Any]:
    """Ask a person to approve the tool call; a denial ends the run."""
    decision = interrupt({"approve": state["messages"][-1].tool_calls[0]})
    if decision == "approve":
        return Command(goto="tools")
    return Command(goto=END, update={"messages": [AIMessage(content="Denied.", id="ai-deny")]})


def route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "approval" if isinstance(last, AIMessage) and last.tool_calls else END


def build_graph(checkpointer: BaseCheckpointSaver[Any], gate: Path | None = None) -> Any:
    """Compile the graph on ``checkpointer``; with ``gate``, the tool blocks once."""
    _GATE[:] = [gate] if gate is not None else []
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("approval", approval, destinations=("tools", END))
    builder.add_node("tools", ToolNode([weather]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["approval", END])
    builder.add_edge("tools", "agent")
    graph: CompiledStateGraph[Any, Any, Any, Any] = builder.compile(checkpointer=checkpointer)
    return graph


QUESTION = HumanMessage(content="weather in Paris?", id="human-1")


def main(home: str, thread: str, gate: str) -> None:
    saver = ClewSaver.from_home(home)
    graph = build_graph(saver, Path(gate))
    config = {"configurable": {"thread_id": thread}}
    first = graph.invoke({"messages": [QUESTION]}, config)
    assert "__interrupt__" in first, first
    graph.invoke(Command(resume="approve"), config)  # blocks in the tool: killed there
    raise AssertionError("the tool should have blocked")


if __name__ == "__main__":
    main(*sys.argv[1:4])
