"""Moving a session's active node (``Runtime.switch_node``, ``clew switch-node``)."""

from __future__ import annotations

from actors.runtime.archive import refuse_if_archived
from actors.runtime.engine import Engine
from eventlog.events import ActiveNodeSwitched
from eventlog.ids import validate_session_id
from eventlog.records import AppendRequest
from projections.tree import NodeTree, check_branch_target


def switch_node(engine: Engine, session_id: str, node_id: str) -> str | None:
    """Move the session's active node to ``node_id``; return the previous one.

    See :meth:`actors.runtime.runtime.Runtime.switch_node` for the rule and the errors.
    """
    sid = validate_session_id(session_id)
    engine.refuse_if_read_only(f"switching the active node of {sid}")
    row = engine.store.read_session(sid)
    refuse_if_archived(row, "switching its active node")
    engine.lock(sid)
    try:
        tree = NodeTree.from_rows(engine.store.read_nodes(sid), row.active_node_id)
        check_branch_target(tree, node_id, row.root_agent_id)
        engine.writer.append(
            AppendRequest(
                session_id=sid,
                event=ActiveNodeSwitched(from_node_id=row.active_node_id, to_node_id=node_id),
                created_at=engine.clock.now(),
            )
        )
    finally:
        engine.unlock(sid)
    return row.active_node_id
