"""The agent loop: one model/tool cycle, shared by the Brain and the workers.

Ask the model (through the fallback chain), append the assistant node, run the
tool calls it asked for (each through the recorder), append the tool node, repeat
until the model stops asking for tools or ``max_turns`` is reached. An agent sees
and may call only its role's tools; a role with typed output must end with a reply
that validates (one retry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pydantic

from actors.errors import OutputInvalid
from actors.models.overflow import is_context_overflow
from actors.models.protocol import Model, ModelRequest, ModelSettings, request_hash
from actors.models.storable import check_storable, safe_text
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
from actors.orchestration.env import SessionEnv
from actors.orchestration.output import OutputSpec, feedback, verdict_metadata
from actors.replay.recorder import RunRecorder
from eventlog.blocks import ContentBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.errors import ModelError
from eventlog.events import (
    EndReason,
    ModelFailed,
    ModelRequested,
    Node,
    NodeAppended,
    NodeRole,
    NodeType,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Usage,
)


class ContextHooks(Protocol):
    """What keeps a conversation within its context (``compaction.ContextGuard``).

    A run recorded before clew managed context has none: its nodes carry no token count
    and nothing is compacted, so it replays as it was recorded.
    """

    def node_tokens(self, content: list[ContentBlock], reported: int) -> int:
        """Return a new node's ``token_count``: ``reported`` when > 0, else an estimate."""
        ...

    def before_call(self, conv: Conversation, agent: AgentSpec) -> AgentSpec:
        """Compact ``conv`` if its next request would exceed the budget; return the agent
        as it calls (with ``read_artifact`` once its context holds an artifact)."""
        ...

    def on_overflow(self, conv: Conversation, agent: AgentSpec) -> list[Message]:
        """Compact ``conv`` after a context-length error; return its new messages."""
        ...


class Conversation:
    """One agent's branch inside a run: appends nodes and keeps the model messages."""

    def __init__(
        self,
        rec: RunRecorder,
        *,
        parent_id: str | None,
        history: list[Message] | None = None,
        activate: bool,
        context: ContextHooks | None = None,
    ) -> None:
        self.rec = rec
        self.tip = parent_id
        self.messages: list[Message] = list(history or [])
        self.activate = activate
        self.context = context

    def append(
        self,
        role: NodeRole,
        content: list[ContentBlock],
        node_type: NodeType = "message",
        metadata: dict[str, Any] | None = None,
        reported: int = 0,
    ) -> str:
        """Append a node after the tip; return its id.

        ``reported``: the provider's token count of ``content`` (a reply's output tokens).
        """
        tokens = self.context.node_tokens(content, reported) if self.context else None
        node = Node(
            node_id=self.rec.next_id("n"),
            parent_id=self.tip,
            agent_id=self.rec.agent_id,
            run_id=self.rec.run_id,
            role=role,
            node_type=node_type,
            content=content,
            metadata=metadata or {},
            token_count=tokens,
        )
        stored = self.rec.emit(NodeAppended(node=node, activate=self.activate))
        assert isinstance(stored.event, NodeAppended)
        self.tip = node.node_id
        msg_role = role if role in ("user", "assistant", "tool", "system") else "user"
        self.messages.append(Message(role=msg_role, content=list(stored.event.node.content)))
        return node.node_id


#: A built-in tool handled by the Brain itself (``dispatch``): it records its own events.
Builtin = Callable[[ToolCallBlock], ToolResultBlock]


@dataclass(frozen=True)
class AgentSpec:
    """Who runs an agent loop: role and phase, what it is told, may call and must return."""

    role: str
    phase: str
    system: str
    #: The tools the model sees and may call: the role's allow-list.
    tools: ToolRegistry
    task_id: str | None
    max_turns: int
    settings: ModelSettings = field(default_factory=ModelSettings)
    output: OutputSpec | None = None
    #: Tools handled by the Brain, by name; shown through ``tools`` like any other.
    builtins: Mapping[str, Builtin] = field(default_factory=dict)


@dataclass
class LoopResult:
    """How an agent loop ended."""

    content: list[ContentBlock]
    turns: int
    usage: Usage
    end_reason: EndReason
    final_node_id: str | None


def add_usage(a: Usage, b: Usage) -> Usage:
    """Return the sum of two usages."""
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
    )


def call_model(
    env: SessionEnv,
    rec: RunRecorder,
    *,
    role: str,
    phase: str,
    messages: list[Message],
    system: str = "",
    tools: ToolRegistry | None = None,
    task_id: str | None = None,
    settings: ModelSettings | None = None,
    on_too_long: Callable[[], list[Message]] | None = None,
) -> tuple[list[ContentBlock], str, Usage]:
    """Call the model chain for ``role``; every candidate is recorded; return the reply.

    ``on_too_long``: after a context-length error of the chain, it compacts and returns
    the new messages; the call is made once more, as a new call (docs/context.md).

    Raises:
        ModelError: every candidate failed (each one recorded as ``model_failed``).
    """
    rec.call_index += 1
    index = rec.call_index
    chain = env.chain(role)
    specs = tools.specs() if tools is not None else []
    sampling = _sampling(settings)
    last: ModelError | None = None
    for i, model in enumerate(chain):
        request = ModelRequest(
            model=model.name,
            messages=list(messages),
            system=system,
            tools=specs,
            role=role,
            phase=phase,
            **sampling,
        )
        requested = _requested(request, call_index=index, attempt=i + 1)
        try:
            responded = rec.model_call(requested, _live_call(model, request))
        except ModelError as e:
            last = e
            rec.emit(_failed(requested, e, will_fallback=i < len(chain) - 1))
            continue
        rec.emit(
            TokenUsage(
                model=model.name,
                role=role,
                phase=phase,
                task_id=task_id,
                call_index=index,
                usage=responded.usage,
            )
        )
        return responded.content, responded.stop_reason, responded.usage
    assert last is not None
    if on_too_long is None or not is_context_overflow(last):
        raise last
    return call_model(env, rec, role=role, phase=phase, messages=on_too_long(), system=system,
                      tools=tools, task_id=task_id, settings=settings)  # fmt: skip


def _requested(request: ModelRequest, *, call_index: int, attempt: int) -> ModelRequested:
    """Return the ``model_requested`` event of ``request``."""
    return ModelRequested(
        call_index=call_index,
        attempt=attempt,
        model=request.model,
        role=request.role,
        phase=request.phase,
        request_hash=request_hash(request),
        messages=request.messages,
        tools=[s.name for s in request.tools],
        system=request.system,
    )


def _sampling(settings: ModelSettings | None) -> dict[str, Any]:
    """Return the request fields a role's settings set (none: the request's defaults)."""
    out: dict[str, Any] = {}
    if settings is not None and settings.max_tokens is not None:
        out["max_tokens"] = settings.max_tokens
    if settings is not None and settings.temperature is not None:
        out["temperature"] = settings.temperature
    return out


def _live_call(
    model: Model, request: ModelRequest
) -> Callable[[], tuple[list[ContentBlock], str, Usage]]:
    """Return the call the recorder makes when the model must really be asked."""

    def live() -> tuple[list[ContentBlock], str, Usage]:
        try:
            response = model.complete(request)
            # A reply the log cannot hold (a lone surrogate…) is a failed candidate, not
            # a store failure: recorded as model_failed, so a replay reproduces it.
            check_storable((response.content, response.stop_reason), "the model's reply")
        except ModelError:
            raise
        except BaseException as e:
            # A client bug (KeyError on a provider body…) is a failed candidate too:
            # recorded as model_failed, so the chain falls back and a replay reproduces it.
            # Any BaseException: one escaping a worker actor would stop every actor.
            name = safe_text(type(e).__name__)
            raise ModelError(f"{name}: {safe_text(str(e))}", error_type=name) from e
        return response.content, response.stop_reason, response.usage

    return live


def _failed(requested: ModelRequested, e: ModelError, *, will_fallback: bool) -> ModelFailed:
    return ModelFailed(
        call_index=requested.call_index,
        attempt=requested.attempt,
        model=requested.model,
        error_type=safe_text(e.error_type),
        message=safe_text(str(e)),
        status=e.status,
        will_fallback=will_fallback,
    )


def run_tool(
    env: SessionEnv, rec: RunRecorder, tools: ToolRegistry, call: ToolCallBlock, role: str = ""
) -> ToolResultBlock:
    """Run one tool call through the recorder; always return a tool_result block.

    ``tools`` is the calling role's allow-list: a call to a tool of the run outside it
    is refused (a recorded ``tool_failed``); the tool never runs.
    """
    t = tools.get(call.name)
    started = ToolCallStarted(
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=dict(call.arguments),
        idempotent=bool(t and t.idempotent),
    )
    policy = in_doubt_of(t) or env.settings.in_doubt_policy
    refused = _not_allowed(env, t, call, role)
    if refused is not None:
        outcome = rec.tool_call(started, lambda: refused, policy)
    else:
        # The context is built when the tool runs: a resume's re-run has attempt 2.
        timeout = env.settings.tool_timeout_s
        outcome = rec.tool_call(
            started, lambda: _execute(t, call, _context(env, rec, call, role), timeout), policy
        )
    return result_block(call, outcome)


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


def agent_loop(env: SessionEnv, conv: Conversation, agent: AgentSpec) -> LoopResult:
    """Run the model/tool cycle on ``conv`` until the model stops calling tools.

    Raises:
        OutputInvalid: the agent's role has typed output and its reply did not validate,
            even after it was given the error once.
    """
    usage = Usage()
    content: list[ContentBlock] = []
    retried = False
    hooks = conv.context
    for turn in range(1, agent.max_turns + 1):
        if hooks is not None:
            agent = hooks.before_call(conv, agent)
        content, stop_reason, u = call_model(
            env,
            conv.rec,
            role=agent.role,
            phase=agent.phase,
            messages=conv.messages,
            system=agent.system,
            tools=agent.tools if len(agent.tools) else None,
            task_id=agent.task_id,
            settings=agent.settings,
            on_too_long=_overflow(hooks, conv, agent),
        )
        usage = add_usage(usage, u)
        calls = [b for b in content if isinstance(b, ToolCallBlock)]
        error = None
        if not calls and agent.output is not None:
            error = agent.output.check(content, conv.rec)
            conv.append(
                "assistant", content, metadata=verdict_metadata(error), reported=u.output_tokens
            )
        else:
            conv.append("assistant", content, reported=u.output_tokens)
        if not calls and error is not None:
            if retried or turn == agent.max_turns:
                raise OutputInvalid(f"role {agent.role!r}: {error}")
            retried = True
            conv.append("user", [TextBlock(text=feedback(error))], node_type="system_note")
            continue
        if not calls:
            reason: EndReason = (
                "max_output_tokens_recovery" if stop_reason == "max_tokens" else "completed"
            )
            return LoopResult(content, turn, usage, reason, conv.tip)
        results: list[ContentBlock] = [_run_call(env, conv.rec, agent, c) for c in calls]
        conv.append("tool", results)
    return LoopResult(content, agent.max_turns, usage, "max_turns", conv.tip)


def _overflow(
    hooks: ContextHooks | None, conv: Conversation, agent: AgentSpec
) -> Callable[[], list[Message]] | None:
    """Return the context-length error hook of a call (None: the run has no context hooks)."""
    if hooks is None:
        return None
    return lambda: hooks.on_overflow(conv, agent)


def _run_call(
    env: SessionEnv, rec: RunRecorder, agent: AgentSpec, call: ToolCallBlock
) -> ToolResultBlock:
    builtin = agent.builtins.get(call.name)
    if builtin is not None:
        return builtin(call)
    return run_tool(env, rec, agent.tools, call, agent.role)
