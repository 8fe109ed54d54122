"""The built-in ``read_artifact`` tool: page through a large result by offset.

A tool result over the store's threshold reaches the model as a reference with a
bounded preview (docs/context.md). Once an agent's context holds such a reference, the
agent is offered ``read_artifact(artifact_id, offset, length)``: a page of at most
:data:`MAX_PAGE` bytes of the artifact, read from the file without loading the rest. It
may read only the artifacts referenced in its own context (a worker cannot read what
another worker was given), and it goes through the recorder like any tool: a replay
returns the recorded page.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

import pydantic

from actors.models.tools import ToolRegistry
from actors.orchestration.env import SessionEnv
from actors.orchestration.loop import AgentSpec, Conversation
from eventlog.records import ArtifactRow
from eventlog.store import EventStore
from projections.context import artifact_ids

READ_ARTIFACT: Final = "read_artifact"
#: The largest page one call returns, in bytes (about 4k tokens).
MAX_PAGE: Final = 16 * 1024


class ReadArtifactArgs(pydantic.BaseModel):
    """The arguments of a ``read_artifact`` call."""

    model_config = pydantic.ConfigDict(extra="forbid")
    artifact_id: str = pydantic.Field(description="the id in the reference (art_…)")
    offset: int = pydantic.Field(default=0, ge=0, description="the first byte to read")
    length: int = pydantic.Field(
        default=MAX_PAGE, ge=1, le=MAX_PAGE, description="bytes to read, at most 16384"
    )


class ReadArtifactTool:
    """Read a page of an artifact referenced in the calling agent's context."""

    name = READ_ARTIFACT
    description = (
        "Read part of a large result stored as an artifact (a reference [artifact art_…]"
        " in your context): the bytes from `offset`, at most `length` (16384). The reply"
        " says where the page ends and the next offset."
    )
    args_model: type[pydantic.BaseModel] = ReadArtifactArgs
    idempotent = True

    def __init__(self, env: SessionEnv, allowed: frozenset[str]) -> None:
        self._env = env
        self.allowed = allowed

    def call(self, args: pydantic.BaseModel) -> str:
        assert isinstance(args, ReadArtifactArgs)
        if args.artifact_id not in self.allowed:
            raise ValueError(f"no artifact {args.artifact_id!r} is referenced in your context")
        env = self._env
        row = _find(env.store, env.session_id, args.artifact_id)
        if row is None:
            raise ValueError(f"artifact {args.artifact_id!r} is not in this session")
        size = row.size_bytes or 0
        if args.offset >= size:
            return f"artifact {row.artifact_id}: {size} bytes; offset {args.offset} is past its end"
        data = env.store.artifacts.read_range(row.path, args.offset, args.length)
        text, used = _utf8_page(data, at_end=args.offset + len(data) >= size)
        end = args.offset + used
        more = f"; the next page starts at offset {end}" if end < size else "; that is the end"
        return f"artifact {row.artifact_id}: bytes {args.offset}–{end} of {size}{more}\n{text}"


def _find(store: EventStore, session_id: str | None, artifact_id: str) -> ArtifactRow | None:
    """Return the artifact's row: the session's, else a fork's parent's (a fork shares
    the content of the history it was copied from, never a copy of it)."""
    seen: set[str] = set()
    while session_id is not None and session_id not in seen:
        seen.add(session_id)
        for r in store.read_artifacts(session_id):
            if r.artifact_id == artifact_id:
                return r
        session_id = store.read_session(session_id).parent_session_id
    return None


def _utf8_page(data: bytes, *, at_end: bool) -> tuple[str, int]:
    """Decode a page, leaving out a character cut at its end; return (text, bytes used)."""
    used = len(data)
    if not at_end:
        # Back off over a multi-byte character the page boundary cut in two.
        for back in range(1, min(4, len(data)) + 1):
            byte = data[-back]
            if byte < 0x80:
                break
            if byte >= 0xC0:  # the lead byte of the cut character
                need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
                if need > back:
                    used = len(data) - back
                break
    return data[:used].decode("utf-8", errors="replace"), used


def context_artifact_ids(conv: Conversation) -> frozenset[str]:
    """:func:`artifact_ids` of ``conv.messages``, scanning only the messages appended since
    the last call (a conversation's list only grows, or is replaced by compaction: then
    it is scanned whole)."""
    messages = conv.messages
    seen = conv.artifact_scan
    if seen is not None:
        listed, count, last, found = seen
        if (
            listed is messages
            and len(messages) >= count
            and (count == 0 or messages[count - 1] is last)
        ):
            if len(messages) > count:
                found = found | artifact_ids(messages[count:])
                conv.artifact_scan = (messages, len(messages), messages[-1], found)
            return found
    found = artifact_ids(messages)
    conv.artifact_scan = (messages, len(messages), messages[-1] if messages else None, found)
    return found


def with_artifact_reader(env: SessionEnv, conv: Conversation, agent: AgentSpec) -> AgentSpec:
    """Return ``agent`` with ``read_artifact`` among its tools once its context holds an
    artifact reference (unchanged otherwise, or when a tool of that name exists)."""
    allowed = context_artifact_ids(conv)
    if not allowed:
        return agent
    known = agent.tools.get(READ_ARTIFACT)
    if isinstance(known, ReadArtifactTool):
        known.allowed = allowed  # the same agent, a turn later: what its context holds now
        return agent
    if known is not None:
        return agent  # a tool of the run's own has the name
    tools = ToolRegistry(
        [*(t for t, _ in agent.tools.with_specs()), ReadArtifactTool(env, allowed)]
    )
    return replace(agent, tools=tools)
