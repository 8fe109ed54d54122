"""A LangGraph thread saved by ``ClewSaver`` is a clew session like any other: the CLI
reads it, verify checks it, and deleting the thread removes it for good."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import apsw
import pytest

pytest.importorskip("langgraph")

from _cli_helpers import Where, invoke
from _lg_graph import QUESTION, build_graph
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command

from actors.langgraph import ClewSaver
from actors.runtime.runtime import Runtime


def _saved_thread(home: Path, thread: str = "t1") -> str:
    with ClewSaver.from_home(home) as saver:
        graph = build_graph(saver)
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"messages": [QUESTION]}, config)
        graph.invoke(Command(resume="approve"), config)
        return ClewSaver.session_id(thread)


def test_the_cli_lists_shows_exports_and_verifies_a_saved_thread(tmp_path: Path) -> None:
    sid = _saved_thread(tmp_path / "home")
    where = Where(tmp_path / "home", tmp_path)

    sessions = invoke(where, "sessions")
    show = invoke(where, "show", sid)
    timeline = invoke(where, "timeline", sid)
    export = invoke(where, "export", sid)
    verify = invoke(where, "verify", sid)

    assert (0, 0, 0, 0, 0) == (sessions.code, show.code, timeline.code, export.code, verify.code)
    assert sid in sessions.out
    assert f"{sid} · 0 nodes · 0 runs" in show.out
    exported = [json.loads(line) for line in export.out.splitlines()]
    types = [e["event_type"] for e in exported]
    assert "session_created" == types[0]
    assert {"checkpoint_saved", "checkpoint_writes"} == set(types[1:])
    assert {"t1"} == {e["payload"]["thread_id"] for e in exported[1:]}
    assert "t1" == exported[0]["payload"]["metadata"]["langgraph_thread_id"]
    assert len(exported) == timeline.out.count("checkpoint_") + 1
    assert "step 1 loop: messages +1" in timeline.out  # the increment, not the whole list
    assert f"{sid}: ok ({len(exported)} events)" in verify.out


def test_delete_thread_removes_its_session_tables_and_rows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sid = _saved_thread(home, "gone")
    kept = _saved_thread(home, "kept")
    with ClewSaver.from_home(home) as saver:
        saver.delete_thread("gone")
        assert saver.get_tuple({"configurable": {"thread_id": "gone"}}) is None
        assert saver.get_tuple({"configurable": {"thread_id": "kept"}}) is not None
    with Runtime(home, read_only=True) as rt:
        assert not rt.store.session_exists(sid)
        assert rt.store.session_exists(kept)
        assert [kept] == [row.session_id for row in rt.store.list_sessions()]
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert not {f"events_{sid}", f"nodes_{sid}"} & tables
    assert {f"events_{kept}", f"nodes_{kept}"} <= tables
    verify = invoke(Where(home, tmp_path), "verify", "--all")
    assert 0 == verify.code, verify.err


#: What LangGraph's serde can encode (msgpack: integers within 64 bits).
values = st.lists(
    st.one_of(st.integers(-(2**63), 2**64 - 1), st.booleans(), st.text(max_size=6), st.none()),
    max_size=6,
)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["extend", "new", "messages"]), values), max_size=6))
def test_any_sequence_of_channel_values_round_trips_through_the_saver(
    steps: list[tuple[str, list[Any]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp, ClewSaver.from_home(tmp) as saver:
        config: dict[str, Any] = {"configurable": {"thread_id": "p", "checkpoint_ns": ""}}
        current: list[Any] = []
        expected: list[tuple[dict[str, Any], list[Any]]] = []
        version: str | None = None
        for i, (how, items) in enumerate(steps):
            if how == "extend":
                current = current + items
            elif how == "new":
                current = list(items)
            else:
                current = (
                    current
                    + [HumanMessage(content=str(x), id=f"m{i}{j}") for j, x in enumerate(items)]
                    + [AIMessage(content="ok", id=f"a{i}")]
                )
            version = saver.get_next_version(version, None)
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"messages": list(current)}
            checkpoint["channel_versions"] = {"messages": version}
            config = saver.put(config, checkpoint, {"step": i}, {"messages": version})
            expected.append((config, list(current)))
        with ClewSaver.from_home(tmp) as fresh:
            for stored_config, value in expected:
                tup = fresh.get_tuple(stored_config)
                assert tup is not None
                got = tup.checkpoint["channel_values"]["messages"]
                assert fresh.serde.dumps_typed(value) == fresh.serde.dumps_typed(got)


def _chat_graph(saver: ClewSaver) -> Any:
    def chat(state: MessagesState) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=f"reply {n}", id=f"ai-{n}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    return builder.compile(checkpointer=saver)


def test_a_fork_from_an_older_checkpoint_keeps_both_branches_exact(tmp_path: Path) -> None:
    config = {"configurable": {"thread_id": "fork"}}
    with ClewSaver.from_home(tmp_path / "home") as saver:
        graph = _chat_graph(saver)
        for i in range(3):
            graph.invoke({"messages": [HumanMessage(content=f"q{i}", id=f"h{i}")]}, config)
        main = graph.get_state(config)
        after_first = next(
            s for s in graph.get_state_history(config) if len(s.values["messages"]) == 2
        )
        forked = graph.invoke(
            {"messages": [HumanMessage(content="x", id="hx")]}, after_first.config
        )
    assert ["h0", "ai-1", "hx", "ai-3"] == [m.id for m in forked["messages"]]

    with ClewSaver.from_home(tmp_path / "home") as fresh:  # nothing cached: rebuilt from the log
        graph = _chat_graph(fresh)
        again = graph.get_state(main.config)
        latest = graph.get_state(config)
    assert [m.id for m in main.values["messages"]] == [m.id for m in again.values["messages"]]
    assert ["h0", "ai-1", "h1", "ai-3", "h2", "ai-5"] == [m.id for m in again.values["messages"]]
    assert ["h0", "ai-1", "hx", "ai-3"] == [m.id for m in latest.values["messages"]]


def test_a_saver_on_an_open_runtime_leaves_it_open_and_lists_only_threads(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        plain = rt.new_session().id
        saver = ClewSaver(rt)
        graph = _chat_graph(saver)
        config = {"configurable": {"thread_id": "async"}}
        out = asyncio.run(
            graph.ainvoke({"messages": [HumanMessage(content="hi", id="h0")]}, config)
        )
        saver.close()  # not the saver's runtime: it stays open

        assert ["h0", "ai-1"] == [m.id for m in out["messages"]]
        listed = list(saver.list(None))
        assert {"async"} == {t.config["configurable"]["thread_id"] for t in listed}
        assert rt.store.session_exists(plain)
        assert rt.store.session_exists(ClewSaver.session_id("async"))
