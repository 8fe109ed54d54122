"""One line of text for what a session holds: an id relative to its session, a clipped
line, a node's content blocks in one line.

Both front ends show these (``clew show``, ``clew tail``, the inspector's tree), so the
wording is one: ids are shown relative to the session (``brain:r1:n2`` for
``sess_…:brain:r1:n2``) to keep lines short.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    JsonBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.ids import relative

#: The longest excerpt of a node's content.
EXCERPT = 72


def short(sid: str, ident: str | None) -> str:
    """Return ``ident`` without the session prefix (``-`` for None)."""
    if ident is None:
        return "-"
    return relative(sid, ident)


def clip(text: str, n: int = EXCERPT) -> str:
    """Return ``text`` on one line, at most ``n`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def excerpt(content: Sequence[ContentBlock]) -> str:
    """Return a one-line summary of a node's content blocks."""
    parts: list[str] = []
    for b in content:
        match b:
            case TextBlock(text=text):
                parts.append(text)
            case JsonBlock(data=data, summary=summary):
                parts.append(summary or json.dumps(data, ensure_ascii=False, default=str))
            case ToolCallBlock(name=name, arguments=arguments):
                parts.append(f"→ {name}({json.dumps(arguments, ensure_ascii=False)})")
            case ToolResultBlock(name=name, content=inner, is_error=is_error):
                mark = "✗" if is_error else "←"
                parts.append(f"{mark} {name}: {excerpt(list(inner))}")
            case ArtifactRefBlock(artifact_id=aid, summary=summary):
                parts.append(f"[artifact {aid}] {summary}")
    return clip(" ".join(parts))
