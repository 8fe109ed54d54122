from pathlib import Path

from eventlog.blocks import TextBlock
from eventlog.events import Node, NodeAppended, SessionCreated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.writer import Writer


def test_a_node_appended_through_the_writer_is_on_the_active_path(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    writer = Writer(store)
    sid = "sess_1"
    writer.append(
        AppendRequest(
            session_id=sid,
            event=SessionCreated(session_id=sid, cwd="/", root_agent_id="a"),
            created_at="t0",
        )
    )
    node = Node(node_id="n1", parent_id=None, agent_id="a", role="user",
                content=[TextBlock(text="hi")])
    writer.append(AppendRequest(session_id=sid, event=NodeAppended(node=node, activate=True),
                                created_at="t1"))
    writer.stop()
    assert ["n1"] == [n.node_id for n in SQLiteStore(tmp_path / "s.sqlite").read_active_path(sid)]
