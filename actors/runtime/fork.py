"""Fork a session at a node: a new session that starts from the parent's history.

A fork is recorded like everything else, in the fork's own log: its ``session_created``
names the parent (``parent_session_id``) and, in its metadata, the node it was forked
from (``fork_from_node_id``) and an optional title; then one ``node_appended`` per node
of the parent's path root → NODE, the last one activating NODE.

The copies are small rows that keep the parent's node ids and point at the parent's
content: a node's large blocks are already ``artifact_ref``s to content-addressed files
(nothing large is copied), and its id still names the session and run that made it
(``session_of(node_id)`` is the parent), so a reader can follow any copied node back to
the events that produced it (``clew diff`` does). The fork's own runs number from
``brain:r1`` under the fork's id, so they never collide with a copied id. Only the path
is copied — the parent's other branches and its workers' nodes stay in the parent.
"""

from __future__ import annotations

from typing import Any

from actors.errors import Unencodable, UsageError
from actors.models.storable import check_storable
from actors.runtime.engine import Engine
from eventlog.errors import ClewError, quoted
from eventlog.events import Node, NodeAppended, SessionCreated
from eventlog.ids import brain_agent_id, validate_session_id
from eventlog.records import AppendRequest, NodeRow
from projections.errors import UnknownNode

#: Fresh session ids to try before giving up (as ``Runtime.new_session``).
_SESSION_ID_TRIES = 20
#: The metadata keys a fork adds to its parent's (``session_created.metadata``).
FORK_NODE_KEY = "fork_from_node_id"
TITLE_KEY = "title"
RERUN_KEY = "rerun"
#: The parent's metadata keys a fork does not inherit (they describe the parent).
_NOT_INHERITED = (FORK_NODE_KEY, TITLE_KEY, RERUN_KEY)


def fork_path(engine: Engine, session_id: str, at: str | None) -> list[NodeRow]:
    """Return the parent's path root → ``at`` (``[]`` for ``at`` None).

    Raises:
        UnknownNode: ``at`` is not a node of the session.
    """
    if at is None:
        return []
    if engine.store.read_node(session_id, at) is None:
        raise UnknownNode(f"session {session_id} has no node {quoted(at)}")
    return engine.store.read_active_path(session_id, at)


def fork_session(
    engine: Engine,
    session_id: str,
    at: str | None,
    *,
    title: str | None = None,
    extra: dict[str, Any] | None = None,
) -> str:
    """Create a fork of ``session_id`` whose history is the parent's path root → ``at``
    (``at`` None: an empty history); return the fork's id.

    ``extra`` goes into the fork's metadata too (a rerun records what it changed there).

    Raises:
        InvalidSessionId, UnknownSession: bad or unknown parent.
        UnknownNode: ``at`` is not a node of the parent.
        UsageError: the title cannot be stored.
        ReadOnlyStore: the runtime is read-only.
    """
    sid = validate_session_id(session_id)
    row = engine.store.read_session(sid)
    engine.refuse_if_read_only(f"forking session {sid}")
    path = fork_path(engine, sid, at)
    meta = {k: v for k, v in row.metadata.items() if k not in _NOT_INHERITED}
    meta[FORK_NODE_KEY] = at
    if title is not None:
        meta[TITLE_KEY] = title
    meta.update(extra or {})
    try:
        check_storable(meta, "the fork's metadata")
    except Unencodable as e:
        raise UsageError(str(e)) from None
    now = engine.clock.now()
    fork = _fresh_id(engine, now)
    created = SessionCreated(
        session_id=fork,
        cwd=row.cwd,
        root_agent_id=brain_agent_id(fork),
        parent_session_id=sid,
        metadata=meta,
    )
    requests = [AppendRequest(session_id=fork, event=created, created_at=now)]
    for i, node in enumerate(path):
        copy = NodeAppended(node=_node_of(node), activate=i == len(path) - 1)
        requests.append(AppendRequest(session_id=fork, event=copy, created_at=now))
    # Submitted together: the writer usually commits them in one batch (group commit). A
    # crash between two batches leaves a fork whose active node is not yet ``at``.
    futures = [engine.writer.submit(r) for r in requests]
    for f in futures:
        f.get(timeout=120)
    return fork


def _fresh_id(engine: Engine, now: str) -> str:
    for _ in range(_SESSION_ID_TRIES):
        sid = engine.ids.new_session_id(now)
        if not engine.store.session_exists(sid):
            return sid
    raise ClewError("could not allocate a fresh session id")  # pragma: no cover


def _node_of(row: NodeRow) -> Node:
    """Return the node a stored row holds (the same id, parent, content and metadata)."""
    return Node(
        node_id=row.node_id,
        parent_id=row.parent_id,
        agent_id=row.agent_id,
        run_id=row.run_id,
        role=row.role,  # type: ignore[arg-type]
        node_type=row.node_type,  # type: ignore[arg-type]
        content=row.content,
        metadata=row.metadata,
        token_count=row.token_count,
    )
