"""Decoding the materialised rows, shared by every backend.

Each backend selects the columns of a table in the order below (SQLite's ``SELECT *``
holds them in that order; PostgreSQL names them) and turns a row into its record here,
so both stores read the same records from the same columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from eventlog.blocks import ContentBlock
from eventlog.codec import decode_event
from eventlog.errors import IntegrityError
from eventlog.events import NodeAppended
from eventlog.records import AgentRow, ArtifactRow, NodeRow, RunRow, SessionRow
from eventlog.seed_enums import api_end_reason, api_run_status

SESSION_COLUMNS = (
    "session_id, cwd, root_agent_id, active_node_id, parent_session_id, status,"
    " metadata_json, created_at, updated_at"
)

_blocks_decoder = msgspec.json.Decoder(list[ContentBlock])
_dict_decoder = msgspec.json.Decoder(dict[str, Any])


def loads(text: str | None) -> Any:
    """Decode a JSON object column (None stays None)."""
    return None if text is None else _dict_decoder.decode(text)


def session_row(row: Sequence[Any]) -> SessionRow:
    """Return the record of a ``sessions`` row selected as :data:`SESSION_COLUMNS`."""
    return SessionRow(
        session_id=row[0],
        cwd=row[1],
        root_agent_id=row[2],
        active_node_id=row[3],
        parent_session_id=row[4],
        status=row[5],
        metadata=loads(row[6]) or {},
        created_at=row[7],
        updated_at=row[8],
    )


#: A node row as both stores select it, whatever the layout of the row: the seed's columns
#: (the row holds the content), then ``event_seq`` and the ``payload_json`` of that event
#: (NULL, NULL for such a row). Only a row written at SQLite schema version 4 / PostgreSQL
#: schema version 3 and not migrated since (a read-only store on an older file) refers
#: to its event (``event_seq`` set) and leaves run_id, content_json, metadata_json and
#: token_count NULL: they come from the event's node.
NODE_COLUMNS = (
    "node_id, node_seq, parent_id, agent_id, run_id, role, node_type, content_json,"
    " metadata_json, token_count, created_at, event_seq, payload_json"
)


def node_row(row: Sequence[Any]) -> NodeRow:
    """Return the record of a node row selected as :data:`NODE_COLUMNS`.

    Raises:
        IntegrityError: the row refers to an event that is not its node's
            ``node_appended`` (or to none).
    """
    if row[11] is not None:
        return _node_by_reference(row)
    return NodeRow(
        node_id=row[0],
        node_seq=row[1],
        parent_id=row[2],
        agent_id=row[3],
        run_id=row[4],
        role=row[5],
        node_type=row[6],
        content=_blocks_decoder.decode(row[7]),
        metadata=loads(row[8]) or {},
        token_count=row[9],
        created_at=row[10],
    )


def _node_by_reference(row: Sequence[Any]) -> NodeRow:
    """The record of a node row whose content is in its ``node_appended`` event.

    The tree's shape (parent, agent, role, type) is read from the row, the rest from the
    event, so a row changed by hand still differs from the rebuild (``clew verify``).
    """
    node_id, seq, payload = row[0], row[11], row[12]
    event = None if payload is None else decode_event(payload)
    if not isinstance(event, NodeAppended) or event.node.node_id != node_id:
        raise IntegrityError(
            f"node {node_id} refers to event seq {seq}, which is not its node_appended:"
            " the database was changed outside clew"
        )
    node = event.node
    return NodeRow(
        node_id=node_id,
        node_seq=row[1],
        parent_id=row[2],
        agent_id=row[3],
        run_id=node.run_id,
        role=row[5],
        node_type=row[6],
        content=node.content,
        metadata=node.metadata,
        token_count=node.token_count,
        created_at=row[10],
    )


def agent_row(r: Sequence[Any]) -> AgentRow:
    """Return the record of an ``agents`` row, in its table's column order."""
    return AgentRow(
        agent_id=r[0],
        session_id=r[1],
        parent_agent_id=r[2],
        agent_type=r[3],
        created_by_run_id=r[4],
        fork_from_node_id=r[5],
        status=r[6],
        result=loads(r[7]),
        metadata=loads(r[8]) or {},
        created_at=r[9],
        updated_at=r[10],
    )


def run_row(r: Sequence[Any]) -> RunRow:
    """Return the record of a ``runs`` row, in its table's column order: the seed's 13
    columns, then ``status_detail`` (absent from a file older than schema version 5).

    The status and end reason are the API's (:mod:`eventlog.seed_enums`): a parked run,
    stored ``pending``, reads ``waiting``.
    """
    detail = r[13] if len(r) > 13 else None
    return RunRow(
        run_id=r[0],
        session_id=r[1],
        agent_id=r[2],
        status=api_run_status(r[3], detail),
        start_node_id=r[4],
        end_node_id=r[5],
        end_reason=api_end_reason(r[3], r[6]),
        turn_count=r[7],
        usage=loads(r[8]),
        error=loads(r[9]),
        metadata=loads(r[10]) or {},
        created_at=r[11],
        updated_at=r[12],
    )


def run_with_usage(run: RunRow, usage_json: str | None) -> RunRow:
    """Return ``run`` with the usage ``usage_json`` holds (a read of a run not ended on
    a file older than the usage so far: what the migration gives it)."""
    return msgspec.structs.replace(run, usage=loads(usage_json))


def artifact_row(r: Sequence[Any]) -> ArtifactRow:
    """Return the record of an ``artifacts`` row, in its table's column order."""
    return ArtifactRow(
        artifact_id=r[0],
        session_id=r[1],
        agent_id=r[2],
        run_id=r[3],
        node_id=r[4],
        tool_call_id=r[5],
        path=r[6],
        filename=r[7],
        mime_type=r[8],
        size_bytes=r[9],
        summary=r[10],
        metadata=loads(r[11]) or {},
        created_at=r[12],
    )
