"""Encoding the materialised rows' values from events, shared by every backend.

The inverse of :mod:`eventlog.row_decoding`: what a ``nodes`` row's content columns and a
``runs`` row's status, end reason and usage hold for an event, so both materialisers and
both schema migrations (which fill rows from the events) write the same values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eventlog.codec import decode_event, encode
from eventlog.errors import IntegrityError
from eventlog.events import Node, NodeAppended, RunEnded, TokenUsage, Usage
from eventlog.seed_enums import stored_end_reason, stored_run_status

#: A node's content columns: ``run_id, content_json, metadata_json, token_count``.
NodeContent = tuple[str | None, str, str | None, int | None]


def json_or_none(value: Any) -> str | None:
    """Return ``value`` as JSON text for a ``*_json`` column (None stays NULL)."""
    return None if value is None else encode(value).decode()


def node_content(node: Node) -> NodeContent:
    """Return ``(run_id, content_json, metadata_json, token_count)`` of ``node``'s row."""
    return node.run_id, encode(node.content).decode(), json_or_none(node.metadata), node.token_count


def node_content_of_event(node_id: str, payload: str | bytes | None) -> NodeContent:
    """Return the content columns of ``node_id``'s row from its ``node_appended`` payload.

    Raises:
        IntegrityError: ``payload`` is not the ``node_appended`` of ``node_id``.
    """
    event = None if payload is None else decode_event(payload)
    if not isinstance(event, NodeAppended) or event.node.node_id != node_id:
        raise IntegrityError(
            f"node {node_id} refers to an event that is not its node_appended:"
            " the database was changed outside clew"
        )
    return node_content(event.node)


def run_end_values(event: RunEnded) -> tuple[str, str | None, str | None]:
    """Return the ``(status, status_detail, end_reason)`` a ``runs`` row stores for it."""
    status, detail = stored_run_status(event.status)
    return status, detail, stored_end_reason(event.end_reason)


def usage_of(payloads: Iterable[str | bytes]) -> str | None:
    """Return the ``usage_json`` of a run not ended: the sum of its ``token_usage``
    payloads (every model call, the router's included); NULL before its first call."""
    total = None
    for payload in payloads:
        event = decode_event(payload)
        if isinstance(event, TokenUsage):
            total = (total or Usage()).plus(event.usage)
    return json_or_none(total)
