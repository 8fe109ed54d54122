"""LangGraph + langgraph-checkpoint-sqlite side: the sync ``SqliteSaver``.

The harness owns the sqlite3 connection, so it sets ``synchronous=FULL`` itself (the saver
sets WAL in ``setup``).
"""

from __future__ import annotations

import sqlite3
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from _common import Point, Unavailable, disk_bytes, reply_text, settle, turn_at, user_text

NAME = "LangGraph"

try:
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
except ImportError as e:  # pragma: no cover - the optional extra is not installed
    raise Unavailable(f"langgraph: {e}") from e


def open_saver(path: Path, synchronous: str = "FULL") -> SqliteSaver:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    conn.execute(f"PRAGMA synchronous={synchronous}")
    return saver


class LgSteps:
    """Case 1: one durable step = one ``SqliteSaver.put`` of a checkpoint holding one message."""

    def __init__(self, folder: Path) -> None:
        self.saver = open_saver(folder / "lg.sqlite")
        self.config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}

    def step(self, i: int) -> None:
        cp = empty_checkpoint()
        cp["channel_values"] = {"messages": [{"role": "user", "content": user_text(i)}]}
        cp["channel_versions"] = {"messages": i + 1}
        self.config = self.saver.put(self.config, cp, {"step": i}, {"messages": i + 1})

    def close(self) -> None:
        self.saver.conn.close()


def chat_graph(saver: SqliteSaver) -> Any:
    """A one-node chat graph: the model node answers the i-th user message with reply i."""

    def model(state: MessagesState) -> dict[str, Any]:
        i = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        return {"messages": [AIMessage(content=reply_text(i))]}

    g = StateGraph(MessagesState)
    g.add_node("model", model)
    g.add_edge(START, "model")
    g.add_edge("model", END)
    return g.compile(checkpointer=saver)


def conversation(folder: Path, checkpoints: tuple[int, ...]) -> list[Point]:
    """Case 2: ``graph.invoke`` per turn (user message in, reply out), one thread."""
    saver = open_saver(folder / "lg.sqlite")
    graph = chat_graph(saver)
    config: Any = {"configurable": {"thread_id": "chat"}}
    out: list[Point] = []
    turns: list[float] = []
    cpu: list[float] = []
    elapsed = 0.0
    for t in range(max(checkpoints) // 2):
        t0 = time.perf_counter()
        c0 = time.process_time()
        graph.invoke({"messages": [HumanMessage(content=user_text(t))]}, config)
        turns.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        elapsed += turns[-1]
        if 2 * (t + 1) in checkpoints:
            settle(folder)
            out.append((2 * (t + 1), elapsed, disk_bytes(folder), turn_at(turns), turn_at(cpu)))
    saver.conn.close()
    return out


def write_events(folder: Path, n: int, payload: str) -> str:
    """Case 3 setup: ``n`` checkpoints of one message each (``synchronous=OFF`` to set up)."""
    saver = open_saver(folder / "lg.sqlite", "OFF")
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for i in range(n):
        cp = empty_checkpoint()
        cp["id"] = str(uuid.UUID(int=i + 1, version=1))  # ids must sort in write order
        cp["channel_values"] = {"messages": [{"role": "user", "content": payload}]}
        config = saver.put(config, cp, {"step": i}, {})
    saver.conn.close()
    return "t"


def reader(folder: Path, _handle: Any) -> tuple[Any, Any]:
    """Case 3: (read, close): ``read`` reads back and deserialises every checkpoint of the
    thread, on a saver opened once."""
    saver = open_saver(folder / "lg.sqlite")
    config: Any = {"configurable": {"thread_id": "t"}}
    return (lambda: sum(1 for _ in saver.list(config))), saver.conn.close


def agent_graph(saver: SqliteSaver, tool_turns: int) -> Any:
    """Case 4: model node → tool node loop; the model asks for the tool ``tool_turns`` times."""

    @tool
    def echo(text: str) -> str:
        """Return the text."""
        return text

    def model(state: MessagesState) -> dict[str, Any]:
        turn = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        if turn < tool_turns:
            call = {"name": "echo", "args": {"text": "x" * 200}, "id": f"c{turn}"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content="done")]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else END

    g = StateGraph(MessagesState)
    g.add_node("model", model)
    g.add_node("tools", ToolNode([echo]))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", route, ["tools", END])
    g.add_edge("tools", "model")
    return g.compile(checkpointer=saver)


def agent_run(folder: Path, tool_turns: int) -> float:
    """Case 4: one invoke whose model calls the tool ``tool_turns`` times; seconds."""
    saver = open_saver(folder / "lg.sqlite")
    graph = agent_graph(saver, tool_turns)
    config: Any = {"configurable": {"thread_id": "a"}, "recursion_limit": 4 * tool_turns + 10}
    t0 = time.perf_counter()
    graph.invoke({"messages": [HumanMessage(content="go")]}, config)
    seconds = time.perf_counter() - t0
    saver.conn.close()
    return seconds


READY_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[2])
import _langgraph
saver = _langgraph.open_saver(__import__("pathlib").Path(sys.argv[1]))
graph = _langgraph.chat_graph(saver)
state = graph.get_state({"configurable": {"thread_id": "chat"}})
print("ready", len(state.values["messages"]))
"""


def ready_argv(folder: Path) -> list[str]:
    """Case 5: start, open the saver, compile the graph, load the thread's last state."""
    here = str(Path(__file__).parent)
    return [sys.executable, "-c", READY_SCRIPT, str(folder / "lg.sqlite"), here]
