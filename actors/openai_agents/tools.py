"""The recorded tools: every function tool call of an Agents SDK run goes through clew's
tool seam, and a ``needs_approval`` tool waits for a person the clew way.

:func:`recorded_tool` wraps one ``FunctionTool`` of an agent (a decorated function, an
MCP server's tool as the SDK exposes it, an agent as a tool). A call records
``tool_call_started`` — committed before the tool runs — then its outcome
(``tool_call_finished`` holding the result as JSON, or ``tool_failed``). A resume or a
replay hands back the recorded result; a call a crash left *in doubt* (started, no
outcome) runs again if the tool is idempotent, else its in-doubt policy decides
(:class:`~actors.models.tool_policy.ToolPolicy`; docs/replay-and-recovery.md). Calls of
one run are recorded one at a time, in the order the model asked for them (the SDK
starts a turn's calls as tasks in that order; a lock of the run serialises them).

What the SDK gets back is the recorded form (the result as JSON), live as on a replay, so
both ask the model the same. A tool's own exception is told to the model by the SDK's
``failure_error_function`` as usual (a recorded result); a tool without one that raises
ends the run as :class:`~actors.errors.ToolCallFailed`. An in-doubt call not run again, or
a denied one, is told to the model as the call's output.

A tool with ``needs_approval`` (True, or a policy the SDK would ask), or named in the
session's ``RunSettings.approval_required``, does not interrupt the run with the SDK's
``RunState``: ``approval_requested`` is recorded before its ``tool_call_started`` and the
run parks (``run_waiting``); ``clew approve``/``deny`` (or ``Session.decide``) from any
process records the decision, and a resume re-executes the run to the wait and goes on.

A tool not named in the runner's policies is not idempotent, unless it is an MCP
server's tool annotated ``readOnlyHint`` or ``idempotentHint`` (:func:`policy_of`).

An agent's MCP servers are recorded as Pydantic AI's durable-execution wrappers record
theirs (:func:`recorded_servers`): listing a server's tools (the SDK asks each turn) is a
recorded call too (:data:`LIST_TOOLS`, its result the MCP tool definitions), and a server
the application has not connected is connected only when a listing or a call goes live
(in a task of its own, which also cleans it up after the run). So a resume or a replay
gets the tools from the recording, and a replay never starts the server.

A tool reaches its call's clew context (``idempotency_key``, ``attempt``) with
:func:`~actors.models.tool_policy.tool_context`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final

from agents.tool import FunctionTool
from agents.tool_context import ToolContext as SdkToolContext

from actors.errors import ToolCallFailed
from actors.models.tool_policy import ToolPolicy
from actors.models.tools import InDoubtPolicy
from actors.openai_agents.messages import jsonable
from actors.recording.framework_run import ToolCall, result_of, tool_call
from eventlog.events import ToolCallFinished, ToolCallStarted, ToolFailed

if TYPE_CHECKING:
    from actors.recording.bridge import Bridge

#: The error types of an outcome told to the model as the call's output, not raised.
_TOLD: Final = frozenset({"InDoubt", "ApprovalDenied"})
#: The name an MCP server's recorded tool list is called under (as in ``actors.pydantic_ai``).
LIST_TOOLS: Final = "mcp.list_tools"


class Seam:
    """One run's tool seam: the bridge, the tool policies, the lock that serialises calls."""

    def __init__(
        self,
        bridge: Bridge,
        policies: Mapping[str, ToolPolicy],
        in_doubt: InDoubtPolicy,
        approval_required: list[str],
    ) -> None:
        self.bridge = bridge
        self.policies = dict(policies)
        self.in_doubt: InDoubtPolicy = in_doubt
        self.approval_required = list(approval_required)
        self.lock = asyncio.Lock()
        self._n = 0

    def next_id(self, kind: str) -> str:
        """Return the next call id of a step with no id of its own (a handoff, a memory
        operation): the same on every execution of the run."""
        self._n += 1
        return f"{kind}-{self._n}"

    async def call(
        self,
        started: ToolCallStarted,
        run: Callable[[], Awaitable[Any]],
        in_doubt: InDoubtPolicy | None = None,
        role: str = "",
        gated: bool = False,
        edit: Callable[[dict[str, Any]], None] | None = None,
    ) -> ToolCallFinished | ToolFailed:
        """Record one call (``run()`` live, on the run's loop); return its outcome.

        ``gated``: the call waits for a person's approval first; ``edit`` is handed the
        arguments a person's edit gave it.
        """
        call = ToolCall(
            started,
            run,
            role=role,
            in_doubt=in_doubt or self.in_doubt,
            gated=gated,
            jsonable=jsonable,
            edit=edit,
        )
        async with self.lock:
            return await tool_call(self.bridge, call)


def policy_of(seam: Seam, tool: FunctionTool) -> ToolPolicy:
    """Return the policy of ``tool``: given to the runner by name, else idempotent iff it is
    an MCP server's tool annotated ``readOnlyHint`` or ``idempotentHint`` (as
    :mod:`actors.mcp` reads a server's tools), with the run's in-doubt policy."""
    given = seam.policies.get(tool.name)
    if given is not None:
        return given
    return ToolPolicy(idempotent=_mcp_idempotent(tool.mcp_annotations))


def _mcp_idempotent(notes: Any) -> bool:
    """True iff MCP ``ToolAnnotations`` (either SDK generation's spelling) say the tool is
    read-only or idempotent."""
    if notes is None:
        return False
    # mcp 2.x spells them in snake case (fastmcp, once imported, makes the camel alias warn)
    v2 = hasattr(notes, "read_only_hint")
    read_only = getattr(notes, "read_only_hint" if v2 else "readOnlyHint", None)
    idempotent = getattr(notes, "idempotent_hint" if v2 else "idempotentHint", None)
    return read_only is True or idempotent is True


def recorded_tool(tool: FunctionTool, seam: Seam, role: str) -> FunctionTool:
    """Return ``tool`` with every call recorded through ``seam`` (see the module docstring)."""
    policy = policy_of(seam, tool)
    invoke = tool.on_invoke_tool
    needs = tool.needs_approval
    required = tool.name in seam.approval_required or "*" in seam.approval_required

    async def on_invoke_tool(ctx: SdkToolContext[Any], arguments: str) -> Any:
        try:
            parsed = json.loads(arguments) if arguments else {}
        except ValueError:
            parsed = {"_raw": arguments}
        args = parsed if isinstance(parsed, dict) else {"_value": parsed}
        gated = required or needs is True
        if callable(needs) and not seam.bridge.rec.replaying:
            verdict = needs(ctx, args, ctx.tool_call_id)
            gated = gated or bool(await verdict if inspect.isawaitable(verdict) else verdict)
        started = ToolCallStarted(
            tool_call_id=ctx.tool_call_id,
            tool_name=tool.name,
            arguments=jsonable(args),
            idempotent=policy.idempotent,
        )
        sent = {"arguments": arguments}

        async def run() -> Any:
            return await invoke(ctx, sent["arguments"])

        def edit(new: dict[str, Any]) -> None:
            sent["arguments"] = json.dumps(new)

        outcome = await seam.call(started, run, policy.in_doubt, role, gated, edit)
        if isinstance(outcome, ToolFailed):
            if outcome.error_type in _TOLD:
                return outcome.message
            raise ToolCallFailed(tool.name, outcome.error_type, outcome.message)
        return result_of(outcome)

    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool, needs_approval=False)


# --- MCP servers -----------------------------------------------------------------------


class _Connection:
    """One MCP server's connection for a run, opened on first need by a task of its own
    (the SDK's servers must be entered and left by the same task)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Connect the server unless it is connected (by the application, or already)."""
        if self._ready is None:
            if getattr(self.server, "session", True) is not None:
                return  # connected, or not a server with a session to connect
            loop = asyncio.get_running_loop()
            self._ready = loop.create_future()
            self._task = loop.create_task(self._hold(self._ready))
        await asyncio.shield(self._ready)

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        try:
            async with self.server:
                ready.set_result(None)
                await self._stop.wait()
        except Exception as e:
            if ready.done():
                raise
            ready.set_exception(e)
        finally:
            if not ready.done():  # cancelled while connecting
                ready.set_exception(ConnectionError("the MCP server did not connect"))

    async def close(self) -> None:
        """Clean the server up if this run connected it."""
        if self._task is not None:
            self._stop.set()
            await asyncio.gather(self._task, return_exceptions=True)


@asynccontextmanager
async def recorded_servers(servers: Sequence[Any], bridge: Bridge) -> AsyncIterator[None]:
    """For the block, record each of ``servers``' tool lists and connect it on first live
    need (see the module docstring); then clean up what was connected."""
    from mcp.types import Tool as McpTool  # noqa: PLC0415 - the SDK's own dependency

    connections: list[_Connection] = []
    saved: list[tuple[Any, dict[str, Any]]] = []

    def patch(server: Any) -> None:
        conn = _Connection(server)
        connections.append(conn)
        own = {k: vars(server)[k] for k in ("list_tools", "call_tool") if k in vars(server)}
        saved.append((server, own))
        list_tools, call_tool = server.list_tools, server.call_tool
        name = str(getattr(server, "name", "mcp"))
        listings = [0]

        async def listed(run_context: Any = None, agent: Any = None) -> list[Any]:
            listings[0] += 1
            started = ToolCallStarted(tool_call_id=f"{name}:tools:{listings[0]}",
                                      tool_name=LIST_TOOLS, arguments={"server": name},
                                      idempotent=True)  # fmt: skip

            async def run() -> Any:
                await conn.open()
                tools = await list_tools(run_context, agent)
                return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]

            role = str(getattr(agent, "name", ""))
            call = ToolCall(started, run, role=role, in_doubt="retry", gated=False,
                            jsonable=jsonable)  # fmt: skip
            outcome = await tool_call(bridge, call)
            if isinstance(outcome, ToolFailed):
                raise ToolCallFailed(LIST_TOOLS, outcome.error_type, outcome.message)
            return [McpTool.model_validate(t) for t in result_of(outcome)]

        async def called(*args: Any, **kwargs: Any) -> Any:
            await conn.open()
            return await call_tool(*args, **kwargs)

        server.list_tools, server.call_tool = listed, called

    try:
        for server in {id(s): s for s in servers}.values():
            patch(server)
        yield
    finally:
        for server, own in saved:
            for key in ("list_tools", "call_tool"):
                vars(server).pop(key, None)
            vars(server).update(own)
        for conn in connections:
            await conn.close()
