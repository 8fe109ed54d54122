"""Application hooks and guardrails: called live only, their verdicts recorded.

A :class:`Hooks` subclass (or an instance with some methods overridden) is given to the
runtime (``Runtime.hooks = …``). Observers (``on_run_start``, ``before_model``,
``after_tool``, ``on_run_end``) see the run and change nothing. ``before_tool`` returns
``None``/``Allow()``, ``Deny(reason)`` or ``Edit(arguments=…)``; the guardrails return a
reason to refuse the prompt (``input_guardrail``: the run ends ``refused``) or to reject
the primary's answer (``output_guardrail``: it goes into the fix loop).

Every verdict that changes the run — and every exception a hook raises, which is
contained — is a recorded ``hook_decided``. Re-executing (replay, the replayed part of a
resume), no hook is called: the recorded verdicts are used.
"""

from __future__ import annotations

from typing import Any

import msgspec
import structlog

from actors.models.protocol import ModelRequest
from actors.models.storable import safe_text
from actors.models.tools import ToolContext
from actors.orchestration.approvals import Deny, Edit, apply
from actors.recording.recorder import RunRecorder
from eventlog.blocks import ToolCallBlock, ToolResultBlock
from eventlog.events import ApprovalDecided, HookDecided, ToolFailed

log = structlog.get_logger("clew.hooks")


class Allow(msgspec.Struct, frozen=True, kw_only=True, tag="allow"):
    """Let the tool call run as asked."""


#: What ``before_tool`` may return (None means allow).
ToolVerdict = Allow | Deny | Edit | None


class Hooks:
    """Override the hooks you need; every default does nothing."""

    def on_run_start(self, session_id: str, run_id: str, prompt: str) -> None:
        """A main run starts (live)."""

    def before_model(self, request: ModelRequest) -> None:
        """A model is about to be asked (live)."""

    def before_tool(self, call: ToolCallBlock, ctx: ToolContext) -> ToolVerdict:
        """A tool call is about to run: allow (None), ``Deny(reason)`` or ``Edit(...)``."""
        return None

    def after_tool(self, call: ToolCallBlock, result: ToolResultBlock) -> None:
        """A tool call has its result (live)."""

    def on_run_end(self, session_id: str, run_id: str, status: str) -> None:
        """A main run ended (live)."""

    def input_guardrail(self, prompt: str) -> str | None:
        """Return a reason to refuse the prompt (the run ends ``refused``), or None."""
        return None

    def output_guardrail(self, answer: str) -> str | None:
        """Return a reason to reject the primary's answer (it is fixed), or None."""
        return None


def observe(rec: RunRecorder, hooks: Hooks | None, name: str, *args: Any) -> None:
    """Call an observer hook live; an exception is contained and recorded."""
    if hooks is None or rec.replaying:
        _recorded(rec, name, None)
        return
    rec.flush()  # application code runs: what the run emitted so far is committed first
    try:
        getattr(hooks, name)(*args)
    except Exception as e:
        rec.emit(HookDecided(hook=name, decision="error", reason=_why(e)))


def before_tool(
    rec: RunRecorder, hooks: Hooks | None, call: ToolCallBlock, ctx: ToolContext
) -> ToolCallBlock | ToolFailed:
    """Return the call a ``before_tool`` verdict lets run, or the ``tool_failed`` of a deny."""
    if hooks is None or rec.replaying:
        event = _recorded(rec, "before_tool", call.id)
    else:
        rec.flush()  # application code runs: what the run emitted so far is committed first
        event = _verdict(hooks, call, ctx)
        if event is not None:
            rec.emit(event)
    if event is None or event.decision in ("allow", "error"):
        return call
    decided = ApprovalDecided(
        tool_call_id=call.id,
        decision=event.decision,  # type: ignore[arg-type]
        reason=event.reason,
        arguments=event.arguments,
    )
    return apply(call, decided, "the before_tool hook")


def guardrail(rec: RunRecorder, hooks: Hooks | None, name: str, text: str) -> str | None:
    """Run a guardrail live (or take its recorded verdict); return the rejection reason."""
    if hooks is None or rec.replaying:
        event = _recorded(rec, name, None)
        return event.reason if event is not None and event.decision == "deny" else None
    rec.flush()  # application code runs: what the run emitted so far is committed first
    try:
        reason = getattr(hooks, name)(text)
    except Exception as e:
        rec.emit(HookDecided(hook=name, decision="error", reason=_why(e)))
        return None
    if not reason:
        return None
    rec.emit(HookDecided(hook=name, decision="deny", reason=safe_text(str(reason))))
    return safe_text(str(reason))


def _verdict(hooks: Hooks, call: ToolCallBlock, ctx: ToolContext) -> HookDecided | None:
    try:
        verdict = hooks.before_tool(call, ctx)
    except Exception as e:
        return HookDecided(
            hook="before_tool", decision="error", reason=_why(e), tool_call_id=call.id
        )
    match verdict:
        case Deny(reason=reason):
            return HookDecided(
                hook="before_tool", decision="deny", reason=safe_text(reason), tool_call_id=call.id
            )
        case Edit(arguments=arguments):
            return HookDecided(
                hook="before_tool", decision="edit", tool_call_id=call.id, arguments=dict(arguments)
            )
        case None | Allow():
            return None
    return HookDecided(
        hook="before_tool",
        decision="error",
        reason=safe_text(f"before_tool returned {verdict!r}, not a verdict"),
        tool_call_id=call.id,
    )


def _recorded(rec: RunRecorder, name: str, call_id: str | None) -> HookDecided | None:
    """Replaying: take the hook's recorded verdict here, if there is one."""
    return rec.take_recorded(HookDecided, lambda e: e.hook == name and e.tool_call_id == call_id)


def _why(e: Exception) -> str:
    log.warning("hook_failed", error=str(e), error_type=type(e).__name__)
    return safe_text(f"{type(e).__name__}: {e}")
