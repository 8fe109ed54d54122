"""Context windows of common models, in tokens: what a provider adapter declares.

A model's ``context_window`` attribute is what clew budgets against
(docs/context.md). The provider adapters look their model up here unless given one;
``ScriptedModel`` takes it as an argument or a script key. A model without the
attribute has no known window: nothing is compacted ahead of time, but a provider's
context-length error still triggers one compaction and one retry.
"""

from __future__ import annotations

from typing import Any, Final

#: Prefixes of model names with their windows; the longest matching prefix wins.
KNOWN_WINDOWS: Final[dict[str, int]] = {
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-3": 200_000,
    "claude-3-5": 200_000,
    "claude-3-7": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
}


def known_window(model: str) -> int | None:
    """Return the context window of the provider model ``model`` (no ``provider:``), if known."""
    best: str | None = None
    for prefix in KNOWN_WINDOWS:
        if model.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return KNOWN_WINDOWS[best] if best is not None else None


def window_of(model: Any) -> int | None:
    """Return a model's declared ``context_window`` (a positive int), else None."""
    window = getattr(model, "context_window", None)
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        return None
    return window
