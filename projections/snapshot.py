"""The compact snapshot of a session that an ``@@<session_id>`` reference inlines.

A snapshot is never a transcript: the first prompt, the final summary, the workers'
summaries and the errors — each field clipped to 6 KiB and the whole text to 24 KiB,
in bytes of UTF-8, never splitting a character (seed 000).

- first prompt: the text of the first ``user``/``message`` node;
- final summary: ``outcome["summary"]`` of the last ``run_ended`` of the session's root
  agent that has one, else the text of the root agent's last assistant message node;
- worker summaries: one line per ``worker_result_received`` (task id, status, summary);
- errors: ``worker_failed``, a ``run_ended`` with an ``error``, a ``model_failed`` with
  no fallback left, ``tool_failed`` and ``plan_rejected`` — one line each.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from eventlog.blocks import text_of
from eventlog.events import (
    ModelFailed,
    NodeAppended,
    PlanRejected,
    RunEnded,
    RunStarted,
    SessionCreated,
    ToolFailed,
    WorkerFailed,
    WorkerResultReceived,
)
from eventlog.records import StoredEvent

SNAPSHOT_MAX_BYTES: Final = 24 * 1024
FIELD_MAX_BYTES: Final = 6 * 1024
CLIP_MARK: Final = " …[clipped]"


def clip_utf8(text: str, limit: int, mark: str = CLIP_MARK) -> str:
    """Return ``text`` if its UTF-8 encoding fits ``limit`` bytes, else a clipped prefix.

    The clipped form ends with ``mark`` and is at most ``limit`` bytes long; the cut
    never splits a multi-byte character.
    """
    data = text.encode()
    if len(data) <= limit:
        return text
    mark_bytes = mark.encode()
    if len(mark_bytes) > limit:
        mark, mark_bytes = "", b""
    cut = limit - len(mark_bytes)
    # data[cut] is the first byte left out; a continuation byte (10xxxxxx) there means
    # the character straddles the cut, so step back to that character's first byte.
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut].decode() + mark


class SessionSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The four fields of a snapshot, unclipped."""

    session_id: str
    first_prompt: str = ""
    final_summary: str = ""
    worker_summaries: list[str] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)


# One flat match over the event types reads better than the same rules split apart.
def session_snapshot(  # noqa: C901, PLR0912
    events: Iterable[StoredEvent], session_id: str = ""
) -> SessionSnapshot:
    """Fold a session's events into its :class:`SessionSnapshot`."""
    root_agent = None
    first_prompt: str | None = None
    outcome_summary: str | None = None
    last_reply = ""
    run_agent: dict[str, str] = {}
    workers: list[str] = []
    errors: list[str] = []
    for stored in events:
        e = stored.event
        match e:
            case SessionCreated():
                session_id = e.session_id
                root_agent = e.root_agent_id
            case NodeAppended(node=node):
                if first_prompt is None and node.role == "user" and node.node_type == "message":
                    first_prompt = text_of(node.content)
                if (
                    node.role == "assistant"
                    and node.node_type == "message"
                    and (root_agent is None or node.agent_id == root_agent)
                ):
                    last_reply = text_of(node.content) or last_reply
            case RunStarted():
                run_agent[e.run_id] = e.agent_id
            case RunEnded():
                summary = e.outcome.get("summary")
                agent = run_agent.get(e.run_id, stored.agent_id)
                if isinstance(summary, str) and (root_agent is None or agent == root_agent):
                    outcome_summary = summary
                if e.error is not None:
                    message = e.error.get("message", e.error)
                    errors.append(f"run {e.run_id} {e.status} ({e.end_reason}): {message}")
            case WorkerResultReceived(result=r):
                line = f"{r.task_id} [{r.status}]: {r.summary}"
                workers.append(line + (f" (error: {r.error})" if r.error else ""))
            case WorkerFailed():
                errors.append(f"worker {e.task_id} failed: {e.error_type}: {e.message}")
            case ModelFailed() if not e.will_fallback:
                errors.append(f"model {e.model} failed: {e.error_type}: {e.message}")
            case ToolFailed():
                errors.append(f"tool {e.tool_name} failed: {e.error_type}: {e.message}")
            case PlanRejected():
                errors.append(f"plan rejected: {e.error} (fallback: {e.fallback})")
            case _:
                pass
    return SessionSnapshot(
        session_id=session_id,
        first_prompt=first_prompt or "",
        final_summary=outcome_summary if outcome_summary is not None else last_reply,
        worker_summaries=workers,
        errors=errors,
    )


def format_snapshot(
    snapshot: SessionSnapshot,
    *,
    max_bytes: int = SNAPSHOT_MAX_BYTES,
    field_max_bytes: int = FIELD_MAX_BYTES,
) -> str:
    """Render ``snapshot`` as text: each field ≤ ``field_max_bytes``, all ≤ ``max_bytes``."""
    fields = (
        ("First prompt", snapshot.first_prompt),
        ("Final summary", snapshot.final_summary),
        ("Worker summaries", "\n".join(f"- {w}" for w in snapshot.worker_summaries)),
        ("Errors", "\n".join(f"- {e}" for e in snapshot.errors)),
    )
    parts = [f"Session {snapshot.session_id} (snapshot, not a transcript)"]
    for title, value in fields:
        parts.append(f"## {title}\n{clip_utf8(value, field_max_bytes) if value else '(none)'}")
    return clip_utf8("\n\n".join(parts), max_bytes)
