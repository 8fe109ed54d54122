"""Recognise a provider's "the prompt is too long" error, whatever the provider.

A model call that fails this way is not helped by the next model of the chain being
asked the same thing: the runtime compacts the conversation and asks once more
(docs/context.md). The error reaches the runtime as a ``ModelError`` whose message holds
the provider's text (``HTTP 400: …``), so the check reads that text — the same way live
and when a recorded ``model_failed`` is raised again in a replay.
"""

from __future__ import annotations

import re
from typing import Final

from eventlog.errors import ModelError

#: What providers say. OpenAI: ``code: context_length_exceeded``, "This model's maximum
#: context length is 128000 tokens. However, your messages resulted in …"; Anthropic:
#: "prompt is too long: 208310 tokens > 200000 maximum"; vLLM and llama.cpp servers
#: echo OpenAI's wording or say the request "exceeds the context window/size".
_PATTERNS: Final = re.compile(
    r"context_length_exceeded"
    r"|maximum context length"
    r"|prompt is too long"
    r"|exceeds? (the |your )?(model's )?context (window|length|size)"
    r"|context window (exceeded|is full)"
    r"|too many (input )?tokens",
    re.IGNORECASE,
)


def is_context_overflow(error: ModelError) -> bool:
    """Return True when ``error`` says the request did not fit the model's context."""
    if error.error_type == "context_length_exceeded":
        return True
    return _PATTERNS.search(str(error)) is not None
