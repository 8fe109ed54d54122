"""A framework tool's crash behaviour, and the clew context of the call running now.

A framework integration (``actors.pydantic_ai``, ``actors.openai_agents``) runs tools the
framework calls, with the framework's own signatures: clew cannot hand them a
:class:`~actors.models.tools.ToolContext` parameter. It sets the call's context here
(:func:`set_tool_context`, in the task that runs the tool) and the tool reads it with
:func:`tool_context` (its ``idempotency_key``, ``attempt``). :class:`ToolPolicy` says how
a tool behaves after a crash: whether it may simply run again, else the in-doubt policy.
"""

from __future__ import annotations

import contextvars

import msgspec

from actors.models.tools import InDoubtPolicy, ToolContext

_CONTEXT: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar(
    "clew_framework_tool_context", default=None
)


class ToolPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How a tool behaves after a crash: whether it may simply run again, else what a
    resume does with a call left in doubt (None: the run's ``in_doubt_policy``)."""

    idempotent: bool = False
    in_doubt: InDoubtPolicy | None = None


def set_tool_context(context: ToolContext) -> None:
    """Make ``context`` the context of the tool call this task runs (its own copy)."""
    _CONTEXT.set(context)


def tool_context() -> ToolContext:
    """Return the clew context of the tool call running now (its ``idempotency_key``).

    Raises:
        RuntimeError: not called from a tool of a durable run.
    """
    ctx = _CONTEXT.get()
    if ctx is None:
        raise RuntimeError("tool_context() is only available inside a tool of a durable run")
    return ctx
