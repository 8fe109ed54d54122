"""Issue 32, item 21: ``ClewSaver`` on a damaged thread raises a typed error naming the
thread, the seq or checkpoint and what is wrong, and a changed payload byte is caught
when the thread is read (the hash chain is followed, as ``clew verify`` does)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

pytest.importorskip("langgraph")

from _cli_helpers import Where, invoke
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from actors.errors import CheckpointDamaged
from actors.langgraph import ClewSaver
from eventlog.chain import EVENT_COLUMNS, GENESIS, link
from eventlog.errors import IntegrityError

CONFIG: Any = {"configurable": {"thread_id": "chat"}}


def _graph(saver: ClewSaver) -> Any:
    def chat(state: MessagesState) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=f"reply {n}", id=f"ai-{n}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    return builder.compile(checkpointer=saver)


def _thread(home: Path) -> str:
    with ClewSaver.from_home(home) as saver:
        graph = _graph(saver)
        for i in range(3):
            graph.invoke({"messages": [HumanMessage(content=f"q{i}", id=f"h{i}")]}, CONFIG)
    return ClewSaver.session_id("chat")


def _read(home: Path) -> list[str]:
    """The thread's last messages as a fresh saver reads them (nothing cached)."""
    with ClewSaver.from_home(home) as saver:
        return [m.content for m in _graph(saver).get_state(CONFIG).values["messages"]]


def _saved(home: Path, sid: str) -> list[tuple[int, dict[str, Any]]]:
    """Every ``checkpoint_saved`` row of the thread: (seq, payload)."""
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        rows = conn.execute(
            f"SELECT seq, payload_json FROM events_{sid}"
            " WHERE event_type = 'checkpoint_saved' ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    return [(seq, json.loads(payload)) for seq, payload in rows]


def _messages_blob(payload: dict[str, Any]) -> dict[str, Any] | None:
    return next((b for b in payload["channels"] if b["channel"] == "messages"), None)


def _tamper(home: Path, sid: str, sql: str, params: tuple[Any, ...], *, rechain: bool) -> None:
    """Run ``sql`` on the thread's events; with ``rechain``, compute every hash and the
    chain head again (damage the chain cannot see: a tool that rewrote the file)."""
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        conn.execute(sql, params)
        if rechain:
            digest = GENESIS
            rows = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events_{sid} ORDER BY seq")
            for row in rows.fetchall():
                digest = link(digest, row)
                conn.execute(f"UPDATE events_{sid} SET hash = ? WHERE seq = ?", (digest, row[1]))
            conn.execute("UPDATE sessions SET chain_head = ? WHERE session_id = ?", (digest, sid))
    finally:
        conn.close()


def _edit_blob(
    home: Path, sid: str, seq: int, change: Callable[[bytes], bytes], *, rechain: bool
) -> None:
    ((_, payload),) = [(s, p) for s, p in _saved(home, sid) if s == seq]
    blob = _messages_blob(payload)
    assert blob is not None
    blob["data"] = base64.b64encode(change(base64.b64decode(blob["data"]))).decode()
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    _tamper(
        home,
        sid,
        f"UPDATE events_{sid} SET payload_json = ? WHERE seq = ?",
        (text, seq),
        rechain=rechain,
    )


def test_item21_a_changed_payload_byte_is_caught_when_the_saver_reads_the_thread(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    sid = _thread(home)
    assert ["q0", "reply 1", "q1", "reply 3", "q2", "reply 5"] == _read(home)
    seq = next(
        s
        for s, p in _saved(home, sid)
        if (b := _messages_blob(p)) and b"reply 1" in base64.b64decode(b["data"])
    )
    _edit_blob(home, sid, seq, lambda data: data.replace(b"reply 1", b"reply 9"), rechain=False)

    with pytest.raises(CheckpointDamaged) as caught:
        _read(home)
    assert isinstance(caught.value, IntegrityError)  # the store-corruption family
    assert f"LangGraph thread 'chat': session {sid}: the hash chain breaks at seq {seq}" in str(
        caught.value
    )
    verify = invoke(Where(home, tmp_path), "verify", sid)  # which flags the same row
    assert 1 == verify.code and f"seq {seq}" in verify.out + verify.err


def test_item21_a_deleted_checkpoint_row_raises_naming_the_thread_and_seq(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    sid = _thread(home)
    seq = _saved(home, sid)[1][0]
    _tamper(home, sid, f"DELETE FROM events_{sid} WHERE seq = ?", (seq,), rechain=False)
    with pytest.raises(CheckpointDamaged, match=rf"thread 'chat'.*seq {seq + 1}"):
        _read(home)


def test_item21_an_increment_whose_base_is_gone_names_the_checkpoint_channel_and_seq(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    sid = _thread(home)
    saved = _saved(home, sid)
    # A row whose messages value a later row's increment extends, removed with the chain
    # made good again: only the fold can tell.
    versions = {(b := _messages_blob(p)) and b["version"]: s for s, p in saved}
    extends = [b["extends"] for _, p in saved if (b := _messages_blob(p)) and b["extends"]]
    gone = versions[extends[0]]
    _tamper(home, sid, f"DELETE FROM events_{sid} WHERE seq = ?", (gone,), rechain=True)
    _, last = _saved(home, sid)[-1]
    with pytest.raises(CheckpointDamaged) as caught:
        _read(home)
    said = str(caught.value)
    assert f"checkpoint {last['checkpoint_id']}: LangGraph thread 'chat' (session {sid})" in said
    assert "channel 'messages'" in said and "no event of the thread stores" in said
    assert "stored at seq " in said


def test_item21_a_damaged_increment_names_the_checkpoint_channel_and_seq(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    sid = _thread(home)
    seq, last = next(
        (s, p) for s, p in reversed(_saved(home, sid)) if (_messages_blob(p) or {}).get("extends")
    )
    _edit_blob(home, sid, seq, lambda _: b"\xc1 not an array", rechain=True)
    with pytest.raises(CheckpointDamaged) as caught:
        _read(home)
    said = str(caught.value)
    assert f"checkpoint {last['checkpoint_id']}" in said
    assert f"channel 'messages' at version {_messages_blob(last)['version']}" in said  # type: ignore[index]
    assert f"stored at seq {seq}, is damaged: it cannot be rebuilt" in said
