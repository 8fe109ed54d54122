"""Decide, purely, which JSON blocks of a node become artifacts (no I/O here).

The writer applies the plan (writes the files, then the events); a replay
applies the same plan to know what the writer would have stored.
"""

from __future__ import annotations

import hashlib

import msgspec

from eventlog.blocks import ArtifactRefBlock, ContentBlock, JsonBlock
from eventlog.codec import encode
from eventlog.events import ArtifactCreated, NodeAppended
from eventlog.ids import artifact_id_for


def plan_artifacts(
    session_id: str, event: NodeAppended, threshold: int
) -> tuple[NodeAppended, list[tuple[ArtifactCreated, bytes]]]:
    """Return ``event`` with oversize JSON blocks replaced by refs, and the artifacts to write.

    A JSON block whose encoding is longer than ``threshold`` bytes is replaced by an
    ``artifact_ref`` carrying its summary; its bytes go to a content-addressed file
    ``<session_id>/<sha256>.json`` under the artifact root.
    """
    content: list[ContentBlock] = []
    artifacts: list[tuple[ArtifactCreated, bytes]] = []
    for block in event.node.content:
        if isinstance(block, JsonBlock):
            data = encode(block.data)
            if len(data) > threshold:
                sha = hashlib.sha256(data).hexdigest()
                artifact_id = artifact_id_for(session_id, sha)
                summary = block.summary or f"JSON document, {len(data)} bytes"
                created = ArtifactCreated(
                    artifact_id=artifact_id,
                    path=f"{session_id}/{sha}.json",
                    filename=f"{sha}.json",
                    mime_type="application/json",
                    size_bytes=len(data),
                    sha256=sha,
                    summary=summary,
                    node_id=event.node.node_id,
                )
                artifacts.append((created, data))
                content.append(ArtifactRefBlock(artifact_id=artifact_id, summary=summary))
                continue
        content.append(block)
    if not artifacts:
        return event, []
    node = msgspec.structs.replace(event.node, content=content)
    return msgspec.structs.replace(event, node=node), artifacts
