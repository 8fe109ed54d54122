"""One tool call of an agent: allow-list, validation, the live run on a helper thread.

Every call goes through the run's recorder (``tool_call_started`` committed before the
tool runs, its outcome after); whatever goes wrong is a recorded ``tool_failed`` and the
model gets an error result — the run goes on.
"""

from __future__ import annotations

import pydantic

from actors.models.storable import safe_text
from actors.models.tools import (
    Tool,
    ToolContext,
    ToolRegistry,
    error_type_of,
    in_doubt_of,
    invoke,
    output_blocks,
    timeout_of,
)
from actors.orchestration.approvals import gate
from actors.orchestration.env import SessionEnv
from actors.orchestration.hooks import before_tool, observe
from actors.recording.recorder import RunRecorder
from eventlog.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.events import ToolCallFinished, ToolCallStarted, ToolFailed


def run_tool(
    env: SessionEnv, rec: RunRecorder, tools: ToolRegistry, call: ToolCallBlock, role: str = ""
) -> ToolResultBlock:
    """Run one tool call through the recorder; always return a tool_result block.

    ``tools`` is the calling role's allow-list: a call to a tool of the run outside it
    is refused (a recorded ``tool_failed``); the tool never runs. A call that needs
    approval waits for a person first (:mod:`actors.orchestration.approvals`).

    Raises:
        RunParked: the call waits for a person's decision.
    """
    t = tools.get(call.name)
    policy = in_doubt_of(t) or env.settings.in_doubt_policy
    rec.checkpoint("tool")
    refused = _not_allowed(env, t, call, role)
    asked = call
    if refused is None and t is not None:
        ctx = _context(env, rec, call, role)
        hooked = before_tool(rec, env.hooks, call, ctx)
        gated = gate(env, rec, t, hooked, ctx) if isinstance(hooked, ToolCallBlock) else hooked
        if isinstance(gated, ToolFailed):
            refused = gated
        else:
            asked = gated
    started = ToolCallStarted(
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=dict(asked.arguments),
        idempotent=bool(t and t.idempotent),
    )
    if refused is not None:
        denied = refused
        outcome = rec.tool_call(started, lambda: denied, policy)
    else:
        # The context is built when the tool runs: a resume's re-run has attempt 2.
        timeout = env.settings.tool_timeout_s
        outcome = rec.tool_call(
            started, lambda: _execute(t, asked, _context(env, rec, call, role), timeout), policy
        )
    result = result_block(call, outcome)
    observe(rec, env.hooks, "after_tool", call, result)
    return result


def result_block(call: ToolCallBlock, outcome: ToolCallFinished | ToolFailed) -> ToolResultBlock:
    """Return the tool_result block the model gets for a call's recorded outcome."""
    if isinstance(outcome, ToolFailed):
        return ToolResultBlock(
            tool_call_id=call.id,
            name=call.name,
            is_error=True,
            content=[TextBlock(text=f"{outcome.error_type}: {outcome.message}")],
        )
    parts = [b for b in outcome.content if not isinstance(b, ToolCallBlock | ToolResultBlock)]
    return ToolResultBlock(
        tool_call_id=call.id,
        name=call.name,
        content=parts,
        is_error=outcome.is_error,
    )


def _not_allowed(
    env: SessionEnv, t: Tool | None, call: ToolCallBlock, role: str
) -> ToolFailed | None:
    """Refuse a call to a tool of the run that is not on the calling role's allow-list."""
    if t is not None or env.tools.get(call.name) is None:
        return None
    return ToolFailed(
        tool_call_id=call.id,
        tool_name=call.name,
        error_type="ToolNotAllowed",
        message=f"role {role!r} may not call tool {call.name!r}",
    )


def _context(env: SessionEnv, rec: RunRecorder, call: ToolCallBlock, role: str) -> ToolContext:
    return ToolContext(
        tool_call_id=call.id,
        session_id=env.session_id,
        run_id=rec.run_id,
        agent_id=rec.agent_id,
        role=role,
        attempt=rec.tool_attempt,
        cancel=rec.cancel,
    )


def _execute(
    t: Tool | None, call: ToolCallBlock, ctx: ToolContext, timeout: float | None
) -> ToolCallFinished | ToolFailed:
    """Validate the arguments and run the tool live; every failure is a ``ToolFailed``."""

    def failed(error_type: str, message: str) -> ToolFailed:
        return ToolFailed(
            tool_call_id=call.id,
            tool_name=call.name,
            error_type=safe_text(error_type),
            message=safe_text(message),
        )

    if t is None:
        return failed("UnknownTool", f"no tool named {call.name!r}")
    try:
        args = t.args_model.model_validate(call.arguments)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(arguments)"
        return failed("ValidationError", f"invalid arguments at {loc}: {first['msg']}")
    try:
        output = invoke(t, args, ctx, timeout=timeout_of(t, timeout))
    except Exception as e:
        return failed(error_type_of(e), str(e) or repr(e))
    return ToolCallFinished(
        tool_call_id=call.id, tool_name=call.name, content=output_blocks(output)
    )
