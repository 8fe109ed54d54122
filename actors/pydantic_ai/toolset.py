"""The recorded toolset: every tool call of a Pydantic AI run goes through clew's tool seam.

:class:`RecordedToolset` wraps each of the agent's toolsets (its function tools, an MCP
server's, any other: Pydantic AI's ``WrapperToolset``). A call records
``tool_call_started`` — committed before the tool runs — then its outcome
(``tool_call_finished`` holding the result as JSON, or ``tool_failed``). A resume or a
replay hands back the recorded result; a call a crash left *in doubt* (started, no
outcome) runs again if the tool is idempotent, else its in-doubt policy decides
(:class:`ToolPolicy`; docs/replay-and-recovery.md).

What the framework gets back is the recorded form (the result as JSON), live as on a
replay, so both ask the model the same. A tool that raises ``ModelRetry`` is a recorded
``tool_failed`` (error type ``ModelRetry``) raised again as ``ModelRetry``; an in-doubt
call not run again is told to the model the same way; any other exception ends the run,
as it does in Pydantic AI, as :class:`ToolCallFailed`.

A tool reaches its call's clew context (``idempotency_key``, ``attempt``) with
:func:`tool_context` (:mod:`actors.models.tool_policy`, shared with the Agents SDK's
integration, as :class:`ToolPolicy` is).

A tool that requires approval (``requires_approval=True``, or named in the session's
``RunSettings.approval_required``) waits for a person the clew way instead of ending the
run with deferred tool requests: ``approval_requested`` is recorded before its
``tool_call_started`` and the run parks (``run_waiting``); ``clew approve``/``deny`` (or
``Session.decide``) from any process records the decision, and ``session.resume(agent=…)``
re-executes the run to the wait and goes on — the tool runs (with edited arguments, for
an edit), or the model is told the denial.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

import msgspec
from pydantic_ai import WrapperToolset
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from actors.errors import ToolCallFailed
from actors.models.tool_policy import ToolPolicy, set_tool_context, tool_context
from actors.models.tools import InDoubtPolicy, ToolContext
from actors.orchestration.approvals import apply, pending_of
from actors.pydantic_ai.messages import jsonable
from actors.recording.bridge import Bridge
from actors.recording.recorder import RunRecorder
from eventlog.blocks import JsonBlock, TextBlock, ToolCallBlock
from eventlog.events import (
    ApprovalDecided,
    ApprovalRequested,
    RunWaiting,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)

#: The error types a call's outcome is told to the model with (``ModelRetry``), not raised.
_RETRY: Final = frozenset({"ModelRetry", "InDoubt", "ApprovalDenied"})


class RecordedToolset(WrapperToolset[Any]):
    """A toolset whose every call is recorded (or served from the recording)."""

    def __init__(
        self,
        wrapped: AbstractToolset[Any],
        bridge: Bridge,
        policies: Mapping[str, ToolPolicy],
        default_in_doubt: InDoubtPolicy,
        approval_required: list[str] | None = None,
    ) -> None:
        super().__init__(wrapped)
        self._bridge = bridge
        self._policies = dict(policies)
        self._default_in_doubt: InDoubtPolicy = default_in_doubt
        self._approval_required = list(approval_required or [])
        #: The tools that wait for a person's approval (their kind was ``unapproved``).
        self._gated: set[str] = set()

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        # A tool that requires approval is called through this toolset, which makes it
        # wait the clew way (:meth:`_gate`), instead of being deferred by the framework.
        tools = await self.wrapped.get_tools(ctx)
        out: dict[str, ToolsetTool[Any]] = {}
        for name, tool in tools.items():
            required = name in self._approval_required or "*" in self._approval_required
            if tool.tool_def.kind == "unapproved" or (
                required and tool.tool_def.kind == "function"
            ):
                self._gated.add(name)
                as_function = dataclasses.replace(tool.tool_def, kind="function")
                out[name] = dataclasses.replace(tool, tool_def=as_function)
            else:
                out[name] = tool
        return out

    def visit_and_replace(self, visitor: Any) -> AbstractToolset[Any]:
        # Never rebuilt around another toolset: the wrapper is made per run.
        return self

    def policy(self, name: str, tool: ToolsetTool[Any]) -> ToolPolicy:
        """Return the policy of tool ``name``: given to the wrapper, else the tool's
        ``metadata={"clew": {...}}``, else not idempotent with the run's in-doubt policy."""
        given = self._policies.get(name)
        if given is not None:
            return given
        meta = (tool.tool_def.metadata or {}).get("clew")
        if isinstance(meta, dict):
            return msgspec.convert(meta, ToolPolicy)
        return ToolPolicy()

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        policy = self.policy(name, tool)
        call_id = ctx.tool_call_id or name
        started = ToolCallStarted(
            tool_call_id=call_id,
            tool_name=name,
            arguments=jsonable(tool_args),
            idempotent=policy.idempotent,
        )
        bridge = self._bridge

        async def run(context: ToolContext) -> Any:
            set_tool_context(context)  # this task's own copy of the context
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)

        def live(rec: RunRecorder) -> ToolCallFinished | ToolFailed:
            context = ToolContext(
                tool_call_id=call_id,
                session_id=rec.session_id,
                run_id=rec.run_id,
                agent_id=rec.agent_id,
                role=bridge.role,
                attempt=rec.tool_attempt,
                cancel=rec.cancel,
            )
            try:
                value = bridge.on_loop(run(context))
            except ModelRetry as e:
                return ToolFailed(tool_call_id=call_id, tool_name=name,
                                  error_type="ModelRetry", message=e.message)  # fmt: skip
            except Exception as e:  # an outcome of the tool: recorded, then raised again
                message = str(e) or repr(e)
                return ToolFailed(tool_call_id=call_id, tool_name=name,
                                  error_type=type(e).__name__, message=message)  # fmt: skip
            return ToolCallFinished(tool_call_id=call_id, tool_name=name,
                                    content=[JsonBlock(data=jsonable(value))])  # fmt: skip

        def step(rec: RunRecorder) -> ToolCallFinished | ToolFailed:
            rec.checkpoint("tool")
            in_doubt = policy.in_doubt or self._default_in_doubt
            call = ToolCallBlock(id=call_id, name=name, arguments=started.arguments)
            gated = self._gate(rec, call)
            if isinstance(gated, ToolFailed):
                return rec.tool_call(started, lambda: gated, in_doubt)
            asked = msgspec.structs.replace(started, arguments=dict(gated.arguments))
            if gated.arguments != started.arguments:
                tool_args.clear()
                tool_args.update(gated.arguments)
            return rec.tool_call(asked, lambda: live(rec), in_doubt)

        outcome = await bridge.recorded(step)
        if isinstance(outcome, ToolFailed):
            if outcome.error_type in _RETRY:
                raise ModelRetry(outcome.message)
            raise ToolCallFailed(name, outcome.error_type, outcome.message)
        return result_of(outcome)

    def _gate(self, rec: RunRecorder, call: ToolCallBlock) -> ToolCallBlock | ToolFailed:
        """Return the call to run (edited, maybe), or a denial's ``tool_failed``.

        Whether the call waits is the tool's live answer; re-executing, the recording's
        (its ``approval_requested`` is next, or not).

        Raises:
            RunParked: the call waits for a person (``run_waiting`` is recorded).
        """
        if rec.replaying:
            nxt = rec.peek()
            recorded = nxt.event if nxt is not None else None
            if not isinstance(recorded, ApprovalRequested) or recorded.tool_call_id != call.id:
                return call
            reason = recorded.reason
        elif call.name in self._gated:
            reason = f"tool {call.name!r} needs approval"
        else:
            return call
        request = ApprovalRequested(tool_call_id=call.id, tool_name=call.name,
                                    arguments=dict(call.arguments), agent_id=rec.agent_id,
                                    role=self._bridge.role, reason=reason)  # fmt: skip
        rec.emit(request)
        pending = [pending_of(rec.session_id, rec.run_id, request)]
        rec.wait_point(RunWaiting(run_id=rec.run_id, reason="approval", pending=[call.id]), pending)
        decided = rec.take_recorded(ApprovalDecided, lambda e: e.tool_call_id == call.id)
        rec.go_on(decided is not None, pending)
        assert decided is not None
        return apply(call, decided, "a person")


def result_of(outcome: ToolCallFinished) -> Any:
    """Return the value a recorded tool outcome hands the framework."""
    if len(outcome.content) == 1:
        block = outcome.content[0]
        if isinstance(block, JsonBlock):
            return block.data
        if isinstance(block, TextBlock):
            return block.text
    return [b.data if isinstance(b, JsonBlock) else msgspec.to_builtins(b) for b in outcome.content]


__all__ = ["RecordedToolset", "ToolPolicy", "result_of", "tool_context"]
