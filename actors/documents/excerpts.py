"""One line of text for what a session holds: an id relative to its session, a clipped
line, a node's content blocks in one line.

Both front ends show these (``clew show``, ``clew tail``, the inspector's tree), so the
wording is one: ids are shown relative to the session (``brain:r1:n2`` for
``sess_…:brain:r1:n2``) to keep lines short.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

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
#: The characters of a tool call id a row shows (git shows 7 of a commit's 40): 12 of an
#: OpenAI id's 24 random ones leave about 10^21 values, so two calls of one session sharing
#: them is not a case a person meets; a prefix that does is refused as ambiguous.
SHORT_CALL: Final = 12
#: An id at most this long after its tag is shown whole (cutting it saves nothing, and the
#: scripted model's ``call_<10 hex>_<n>`` differ only in their last characters).
_WHOLE_CALL: Final = 16
#: A provider's tag before a tool call id's own characters: ``call_``, ``toolu_``.
_CALL_TAG = re.compile(r"[A-Za-z]+_")


def short(sid: str, ident: str | None) -> str:
    """Return ``ident`` without the session prefix (``-`` for None)."""
    if ident is None:
        return "-"
    return relative(sid, ident)


def untagged_call_id(call_id: str) -> str:
    """Return ``call_id`` without its provider's tag: ``a400ce979e_0`` for
    ``call_a400ce979e_0`` (the id itself when it has no tag)."""
    tag = _CALL_TAG.match(call_id)
    return call_id[tag.end() :] if tag and tag.end() < len(call_id) else call_id


def short_call_id(call_id: str) -> str:
    """Return the short form of a tool call id that the human rows of ``clew timeline`` and
    ``clew tail`` show, as git shows a commit's first 7 characters: the id without its
    provider's tag (the same ``call_`` on every row says nothing), cut to
    :data:`SHORT_CALL` characters when longer than 16. ``clew approve`` and ``clew rerun
    --tool-result`` take it (:func:`actors.cli.ids.pick`)."""
    own = untagged_call_id(call_id)
    return own if len(own) <= _WHOLE_CALL else own[:SHORT_CALL]


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
