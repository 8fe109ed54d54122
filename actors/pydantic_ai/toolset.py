"""The recorded toolset: every tool call of a Pydantic AI run goes through clew's tool seam.

:class:`RecordedToolset` wraps each of the agent's toolsets (its function tools, an MCP
server's, any other: Pydantic AI's ``WrapperToolset``). A call records
``tool_call_started`` — committed before the tool runs — then its outcome
(``tool_call_finished`` holding the result as JSON, or ``tool_failed``). A resume or a
replay hands back the recorded result; a call a crash left *in doubt* (started, no
outcome) runs again if the tool is idempotent, else its in-doubt policy decides
(:class:`ToolPolicy`; docs/replay-and-recovery.md).

An MCP toolset (Pydantic AI's ``MCPToolset``) is recorded as the durable-execution
wrappers record it: listing its tools is a recorded call too (:data:`LIST_TOOLS`, its
result the tool definitions), and it is entered — its server started or reached — only
when a listing or a call goes live. So a resume or a replay rebuilds its tools from the
recording (``get_tool_for_tool_def``), and a replay never starts the server. A tool not
named in the wrapper's policies and without ``metadata={"clew": {...}}`` is idempotent
iff its definition carries MCP annotations (an MCP toolset's tools do) ``readOnlyHint``
or ``idempotentHint``, as :mod:`actors.mcp` reads a server's tools.

What the framework gets back is the recorded form (the result as JSON), live as on a
replay, so both ask the model the same. A tool that raises ``ModelRetry`` (an MCP
toolset's error, by default) is a recorded ``tool_failed`` (error type ``ModelRetry``)
raised again as ``ModelRetry``, and ``ToolFailed`` (an MCP toolset's with
``tool_error_behavior="failed"``) as ``ToolFailed``; an in-doubt call not run again is
told to the model as ``ModelRetry``; any other exception ends the run, as it does in
Pydantic AI, as :class:`ToolCallFailed`.

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
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Self

import msgspec
from pydantic import TypeAdapter
from pydantic_ai import WrapperToolset
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.exceptions import ToolFailed as PaiToolFailed
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from actors.errors import ToolCallFailed
from actors.models.tool_policy import ToolPolicy, tool_context
from actors.models.tools import InDoubtPolicy
from actors.pydantic_ai.messages import jsonable
from actors.recording.framework_run import ToolCall, result_of, tool_call
from eventlog.events import ToolCallStarted, ToolFailed

if TYPE_CHECKING:
    from actors.recording.bridge import Bridge

#: The error types a call's outcome is told to the model with (``ModelRetry``), not raised.
_RETRY: Final = frozenset({"ModelRetry", "InDoubt", "ApprovalDenied"})
#: The error type of a terminal failure told to the model (Pydantic AI's ``ToolFailed``).
_FAILED: Final = "ToolFailed"
#: The name an MCP toolset's recorded tool list is called under.
LIST_TOOLS: Final = "mcp.list_tools"
_DEFINITIONS: Final = TypeAdapter(list[ToolDefinition])


def is_mcp_toolset(toolset: AbstractToolset[Any]) -> bool:
    """True iff ``toolset`` is Pydantic AI's ``MCPToolset`` whose tool list is all it tells
    the model (not ``include_instructions``: the server's instructions come with its
    connection)."""
    mcp = sys.modules.get("pydantic_ai.mcp")  # an MCPToolset was made: it is imported
    if mcp is None or not isinstance(toolset, mcp.MCPToolset):
        return False
    return not toolset.include_instructions


def mcp_idempotent(annotations: Any) -> bool:
    """True iff MCP tool ``annotations`` (as an MCP toolset's tool definition carries them:
    a dict, wire spelling) say ``readOnlyHint`` or ``idempotentHint``."""
    if not isinstance(annotations, Mapping):
        return False
    return annotations.get("readOnlyHint") is True or annotations.get("idempotentHint") is True


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
        #: An MCP toolset: its tool lists are recorded calls, its server connected only
        #: when a step goes live (:meth:`_connect`).
        self._remote = is_mcp_toolset(wrapped)
        self._connected = False
        self._listings = 0

    async def __aenter__(self) -> Self:
        if not self._remote:
            await self.wrapped.__aenter__()
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if self._remote and not self._connected:
            return None
        self._connected = False
        done: bool | None = await self.wrapped.__aexit__(*args)
        return done

    async def _connect(self) -> None:
        """Enter an MCP toolset (start or reach its server) once a step needs it live."""
        if self._remote and not self._connected:
            await self.wrapped.__aenter__()
            self._connected = True

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        # A tool that requires approval is called through this toolset, which makes it
        # wait the clew way (:meth:`_gate`), instead of being deferred by the framework.
        tools = await (self._listed(ctx) if self._remote else self.wrapped.get_tools(ctx))
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

    async def _listed(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """An MCP toolset's tools, listed as a recorded call (:data:`LIST_TOOLS`): a resume
        or a replay rebuilds them from the recorded definitions, without the server."""
        self._listings += 1
        key = self.wrapped.id or "mcp"
        started = ToolCallStarted(
            tool_call_id=f"{key}:tools:{self._listings}",
            tool_name=LIST_TOOLS,
            arguments={"toolset": key},
            idempotent=True,
        )

        async def run() -> Any:
            await self._connect()
            tools = await self.wrapped.get_tools(ctx)
            return _DEFINITIONS.dump_python([t.tool_def for t in tools.values()], mode="json")

        call = ToolCall(started, run, role=self._bridge.role, in_doubt="retry", gated=False,
                        jsonable=jsonable)  # fmt: skip
        outcome = await tool_call(self._bridge, call)
        if isinstance(outcome, ToolFailed):
            raise ToolCallFailed(LIST_TOOLS, outcome.error_type, outcome.message)
        definitions = _DEFINITIONS.validate_python(result_of(outcome))
        return {d.name: await self.wrapped.get_tool_for_tool_def(d, ctx) for d in definitions}

    def policy(self, name: str, tool: ToolsetTool[Any]) -> ToolPolicy:
        """Return the policy of tool ``name``: given to the wrapper, else the tool's
        ``metadata={"clew": {...}}``, else idempotent iff its MCP annotations say so
        (:func:`mcp_idempotent`), with the run's in-doubt policy."""
        given = self._policies.get(name)
        if given is not None:
            return given
        metadata = tool.tool_def.metadata or {}
        meta = metadata.get("clew")
        if isinstance(meta, dict):
            return msgspec.convert(meta, ToolPolicy)
        return ToolPolicy(idempotent=mcp_idempotent(metadata.get("annotations")))

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

        async def run() -> Any:
            await self._connect()
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)

        def edit(arguments: dict[str, Any]) -> None:
            tool_args.clear()
            tool_args.update(arguments)

        call = ToolCall(
            started,
            run,
            role=self._bridge.role,
            in_doubt=policy.in_doubt or self._default_in_doubt,
            gated=name in self._gated,
            jsonable=jsonable,
            edit=edit,
            error_of=_error_of,
        )
        outcome = await tool_call(self._bridge, call)
        if isinstance(outcome, ToolFailed):
            if outcome.error_type == _FAILED:
                raise PaiToolFailed(outcome.message)
            if outcome.error_type in _RETRY:
                raise ModelRetry(outcome.message)
            raise ToolCallFailed(name, outcome.error_type, outcome.message)
        return result_of(outcome)


def _error_of(e: Exception) -> tuple[str, str]:
    """The ``tool_failed`` of what a tool raised: ``ModelRetry`` and ``ToolFailed`` are
    told to the model."""
    if isinstance(e, ModelRetry):
        return "ModelRetry", e.message
    if isinstance(e, PaiToolFailed):
        return _FAILED, e.message
    return type(e).__name__, str(e) or repr(e)


__all__ = ["RecordedToolset", "ToolPolicy", "result_of", "tool_context"]
