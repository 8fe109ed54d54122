"""Token estimates: how many tokens a text, a block, a message or a request holds.

A pure function of the text, offline, with no data file and no dependency: clew records
a node's ``token_count`` in its event, so the estimate must never change under a
replay — a tokenizer that downloads its vocabulary (tiktoken does) or changes between
releases could not promise that. The provider's own figure wins wherever there is one
(an assistant node counts its reply's ``output_tokens``).

The rule imitates a byte-pair tokenizer's pre-split: a run of ASCII letters is one token
per 8 letters (rounded up; a space before a word is free), a run of digits one per 3
digits, a run of spaces one per 16, a run of line breaks one per 2, a run of other ASCII
signs one per 3, and non-ASCII text one per 3 UTF-8 bytes (a CJK character is one). The
constants were fitted to cl100k_base to overestimate a little (a budget had better be
met early than late). A JSON block counts as
its compact JSON text. Its error against cl100k_base, measured over the docs, the code
and the recorded sessions, is in ``docs/context.md`` (``benchmarks/bench_tokens.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

import msgspec

from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    JsonBlock,
    Message,
    ResultPart,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

#: Texts longer than this are estimated from their length alone (4 bytes a token):
#: a scan of megabytes would cost more than the estimate is worth.
SCAN_LIMIT: Final = 1 << 20
#: What a message costs beyond its content (its role, the separators of the wire format).
MESSAGE_OVERHEAD: Final = 4
#: What a tool spec costs beyond its name, description and schema text.
TOOL_OVERHEAD: Final = 8
#: What a block that is not text costs beyond its text (a call id, a name, a marker).
BLOCK_OVERHEAD: Final = 3

_PIECE = re.compile(r"[A-Za-z]+|[0-9]+| +|\n+|[!-/:-@\[-`{-~]+|[^\x00-\x7f]+|[\x00-\x1f\x7f]")
_encode = msgspec.json.Encoder().encode


def _piece_tokens(piece: str) -> int:
    first = piece[0]
    if not first.isascii():
        return (len(piece.encode("utf-8")) + 2) // 3
    if first.isalpha():
        per = 8
    elif first.isdigit():
        per = 3
    elif first == " ":
        per = 16
    elif first == "\n":
        per = 2
    elif first < " " or first == "\x7f":
        per = 1
    else:
        per = 3
    return (len(piece) + per - 1) // per


def count_text(text: str) -> int:
    """Return the estimated token count of ``text``."""
    if not text:
        return 0
    if len(text) > SCAN_LIMIT:
        return (len(text) + 3) // 4
    total = 0
    previous_space = False
    for piece in _PIECE.findall(text):
        if piece == " ":
            # A single space belongs to the word after it (" the" is one token).
            previous_space = True
            continue
        total += _piece_tokens(piece)
        previous_space = False
    return total + (1 if previous_space else 0)


def count_block(block: ContentBlock | ResultPart) -> int:
    """Return the estimated token count of one content block."""
    match block:
        case TextBlock(text=text):
            return count_text(text)
        case JsonBlock(data=data):
            return count_text(_encode(data).decode())
        case ArtifactRefBlock(artifact_id=aid, summary=summary):
            return BLOCK_OVERHEAD + count_text(aid) + count_text(summary)
        case ToolCallBlock(id=call_id, name=name, arguments=arguments):
            args = _encode(arguments).decode()
            return BLOCK_OVERHEAD + count_text(call_id) + count_text(name) + count_text(args)
        case ToolResultBlock(tool_call_id=call_id, content=content):
            return BLOCK_OVERHEAD + count_text(call_id) + count_blocks(content)
    raise AssertionError(f"unknown block {block!r}")  # pragma: no cover


def count_blocks(blocks: Iterable[ContentBlock | ResultPart]) -> int:
    """Return the estimated token count of ``blocks``."""
    return sum(count_block(b) for b in blocks)


def count_message(message: Message) -> int:
    """Return the estimated token count of one message, its overhead included."""
    return MESSAGE_OVERHEAD + count_blocks(message.content)


def count_messages(messages: Sequence[Message]) -> int:
    """Return the estimated token count of ``messages``."""
    return sum(count_message(m) for m in messages)


def count_tool(name: str, description: str, parameters: object) -> int:
    """Return the estimated token count of one tool spec as a model is told it."""
    schema = _encode(parameters).decode()
    return TOOL_OVERHEAD + count_text(name) + count_text(description) + count_text(schema)
