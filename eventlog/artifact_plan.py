"""Decide, purely, which blocks of an event become artifacts (no I/O here).

The writer applies the plan (writes the files, then the events); a replay applies the
same plan to know what the writer would have stored. The rule (docs/context.md):

- a top-level JSON block of a node whose encoding is over the threshold (since 0.1.0);
- a text or JSON block of a tool's result over the threshold — in a
  ``tool_call_finished`` and inside a node's ``tool_result`` blocks (since 0.2.0).

Each is stored once, content-addressed (``<session_id>/<sha256>.<ext>``), and replaced by
an ``artifact_ref`` whose summary carries its size and a bounded preview; its
``artifact_created`` (with the ``tool_call_id`` of a tool's result) precedes the event.
A user's prompt and a model's reply stay inline: their size has bounds of its own.

:func:`stored_forms` lists what an event may have been stored as, today's form first:
a session recorded before tool results became artifacts must still replay.
"""

from __future__ import annotations

import hashlib

import msgspec

from eventlog.blocks import ArtifactRefBlock, ContentBlock, JsonBlock, TextBlock, ToolResultBlock
from eventlog.codec import encode
from eventlog.events import ArtifactCreated, Event, NodeAppended, ToolCallFinished
from eventlog.ids import artifact_id_for

#: Characters of a large text or JSON result shown in its reference (about 256 tokens).
PREVIEW_CHARS = 1024
TEXT_MIME = "text/plain; charset=utf-8"
JSON_MIME = "application/json"

Planned = list[tuple[ArtifactCreated, bytes]]


def _artifact(
    session_id: str,
    data: bytes,
    *,
    ext: str,
    mime: str,
    summary: str,
    node_id: str | None,
    tool_call_id: str | None,
) -> ArtifactCreated:
    sha = hashlib.sha256(data).hexdigest()
    return ArtifactCreated(
        artifact_id=artifact_id_for(session_id, sha),
        path=f"{session_id}/{sha}.{ext}",
        filename=f"{sha}.{ext}",
        mime_type=mime,
        size_bytes=len(data),
        sha256=sha,
        summary=summary,
        node_id=node_id,
        tool_call_id=tool_call_id,
    )


def _preview(text: str) -> str:
    if len(text) <= PREVIEW_CHARS:
        return text
    return text[:PREVIEW_CHARS] + "…"


def _result_part(
    session_id: str,
    block: ContentBlock,
    threshold: int,
    *,
    tool: str,
    node_id: str | None,
    tool_call_id: str,
    out: Planned,
) -> ContentBlock:
    """Return ``block`` of a tool's result, or its reference when it is over ``threshold``."""
    if isinstance(block, TextBlock):
        if len(block.text) * 4 <= threshold:  # cheap bound: a char is at most 4 bytes
            return block
        data = block.text.encode("utf-8")
        if len(data) <= threshold:
            return block
        ext, mime, kind, shown = "txt", TEXT_MIME, "text", block.text
    elif isinstance(block, JsonBlock):
        data = encode(block.data)
        if len(data) <= threshold:
            return block
        ext, mime, kind, shown = "json", JSON_MIME, "JSON", data.decode("utf-8")
    else:
        return block
    what = f"{kind} result of {tool}" if tool else f"{kind} result"
    lead = block.summary + "; " if isinstance(block, JsonBlock) and block.summary else ""
    summary = (
        f"{lead}{what}, {len(data):,} bytes, stored as an artifact (read_artifact pages"
        f" through it by offset). It starts: {_preview(shown)}"
    )
    created = _artifact(
        session_id,
        data,
        ext=ext,
        mime=mime,
        summary=summary,
        node_id=node_id,
        tool_call_id=tool_call_id,
    )
    out.append((created, data))
    return ArtifactRefBlock(artifact_id=created.artifact_id, summary=summary, mime_type=mime)


def _node_json(
    session_id: str, block: JsonBlock, threshold: int, node_id: str, out: Planned
) -> ContentBlock:
    """A top-level JSON block of a node: the 0.1.0 rule, unchanged."""
    data = encode(block.data)
    if len(data) <= threshold:
        return block
    summary = block.summary or f"JSON document, {len(data)} bytes"
    created = _artifact(
        session_id,
        data,
        ext="json",
        mime=JSON_MIME,
        summary=summary,
        node_id=node_id,
        tool_call_id=None,
    )
    out.append((created, data))
    return ArtifactRefBlock(artifact_id=created.artifact_id, summary=summary)


def _node_block(
    session_id: str, block: ContentBlock, threshold: int, node_id: str, out: Planned, results: bool
) -> ContentBlock:
    """Return one top-level block of a node as the writer stores it."""
    if isinstance(block, JsonBlock):
        return _node_json(session_id, block, threshold, node_id, out)
    if not (isinstance(block, ToolResultBlock) and results):
        return block
    parts = [
        _result_part(
            session_id,
            part,
            threshold,
            tool=block.name,
            node_id=node_id,
            tool_call_id=block.tool_call_id,
            out=out,
        )
        for part in block.content
    ]
    if all(p is q for p, q in zip(parts, block.content, strict=True)):
        return block
    return msgspec.structs.replace(block, content=parts)


def plan_artifacts(
    session_id: str, event: Event, threshold: int, *, results: bool = True
) -> tuple[Event, Planned]:
    """Return ``event`` with its oversize blocks replaced by refs, and the artifacts to write.

    Only a ``node_appended`` or a ``tool_call_finished`` can change; ``results=False``
    applies the 0.1.0 rule alone (top-level JSON blocks of a node).
    """
    out: Planned = []
    if isinstance(event, NodeAppended):
        node = event.node
        content = [
            _node_block(session_id, b, threshold, node.node_id, out, results) for b in node.content
        ]
        if not out:
            return event, []
        return msgspec.structs.replace(
            event, node=msgspec.structs.replace(node, content=content)
        ), out
    if isinstance(event, ToolCallFinished) and results:
        blocks = [
            _result_part(
                session_id,
                b,
                threshold,
                tool=event.tool_name,
                node_id=None,
                tool_call_id=event.tool_call_id,
                out=out,
            )
            for b in event.content
        ]
        if not out:
            return event, []
        return msgspec.structs.replace(event, content=blocks), out
    return event, []


def stored_forms(session_id: str, event: Event, threshold: int) -> list[list[Event]]:
    """Return the event sequences ``event`` may have been stored as, today's first.

    Each sequence is the artifact_created events followed by the event itself. A replay
    compares the recording with the first form that matches it.
    """
    planned, artifacts = plan_artifacts(session_id, event, threshold)
    forms: list[list[Event]] = [[*(a for a, _ in artifacts), planned]]
    old, old_artifacts = plan_artifacts(session_id, event, threshold, results=False)
    legacy: list[Event] = [*(a for a, _ in old_artifacts), old]
    if legacy != forms[0]:
        forms.append(legacy)
    return forms
