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
from functools import partial
from typing import Any, Protocol

from actors.errors import CallCancelled, CallTimedOut, OutputInvalid, RunCancelled
from actors.models.calls import call_off_thread
from actors.models.overflow import is_context_overflow
from actors.models.protocol import (
    STREAM_INTERRUPTED,
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    StreamingModel,
    TextDelta,
)
from actors.models.storable import check_storable, safe_text
from actors.models.tools import (
    ToolRegistry,
)
from actors.orchestration.env import SessionEnv
from actors.orchestration.hooks import observe
from actors.orchestration.output import OutputSpec, feedback, verdict_metadata
from actors.orchestration.tool_call import run_tool
from actors.recording.recorder import RunRecorder
from actors.replay.requests import content_hash, requested_event
from eventlog.blocks import ContentBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.errors import ModelError
from eventlog.events import (
    ContentKind,
    ContentStored,
    EndReason,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    Node,
    NodeAppended,
    NodeRole,
    NodeType,
    TokenUsage,
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
        #: What :func:`~actors.orchestration.artifact_tool.context_artifact_ids` scanned:
        #: (the list, how many of its messages, the last of them, the ids found).
        self.artifact_scan: tuple[list[Message], int, Message | None, frozenset[str]] | None = None

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
        assert isinstance(stored, NodeAppended)
        self.tip = node.node_id
        msg_role = role if role in ("user", "assistant", "tool", "system") else "user"
        self.messages.append(Message(role=msg_role, content=list(stored.node.content)))
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


# long: the candidates, their retry and their records read as one loop; split, they scatter
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
    tip: str | None = None,
) -> tuple[list[ContentBlock], str, Usage]:
    """Call the model chain for ``role``; every candidate is recorded; return the reply.

    ``on_too_long``: after a context-length error of the chain, it compacts and returns
    the new messages; the call is made once more, as a new call (docs/context.md).
    ``tip``: the node whose path's context ``messages`` are (a conversation's call): a
    run of flow 3+ then records them by reference (docs/storage.md).

    From flow 4 a candidate whose reply stopped with ``error`` (a provider's content
    filter) is a failed one too: its reply and usage are recorded, the next one is asked.

    Raises:
        ModelError: every candidate failed (each one recorded as ``model_failed``).
    """
    rec.call_index += 1
    index = rec.call_index
    chain = env.chain(role)
    specs = tools.specs() if tools is not None else []
    last: ModelError | None = None
    attempt = 0
    rec.checkpoint()
    _before_model(env, rec, ModelRequest(model=chain[0].name, messages=list(messages), role=role))
    for i, model in enumerate(chain):
        request = ModelRequest(
            model=model.name,
            messages=list(messages),
            system=system,
            tools=specs,
            role=role,
            phase=phase,
            **_sampling(settings),
        )
        for retry in (False, True):
            attempt += 1
            requested = _requested(env, rec, request, call_index=index, attempt=attempt, tip=tip)
            try:
                responded = rec.model_call(
                    requested, _live_call(env, rec, model, request, requested), request
                )
            except ModelError as e:
                last = e
                # A stream cut after it started: the same model once more, as a new attempt.
                again = not retry and e.error_type == STREAM_INTERRUPTED
                rec.emit(_failed(requested, e, will_fallback=again or i < len(chain) - 1))
                if again:
                    continue
                break
            rec.emit(_usage(responded, role=role, phase=phase, task_id=task_id))
            # From flow 4 a reply stopped with "error" (a content filter: usage billed and
            # recorded above) goes to the next candidate; the last one's stands.
            if env.flow >= 4 and responded.stop_reason == "error" and i < len(chain) - 1:
                break
            return responded.content, responded.stop_reason, responded.usage
    assert last is not None
    if on_too_long is None or not is_context_overflow(last):
        raise last
    # After a compaction the messages are by value: their tip is the caller's to know.
    return call_model(env, rec, role=role, phase=phase, messages=on_too_long(), system=system,
                      tools=tools, task_id=task_id, settings=settings)  # fmt: skip


def _usage(responded: ModelResponded, *, role: str, phase: str, task_id: str | None) -> TokenUsage:
    """Return the ``token_usage`` event of a model's reply."""
    return TokenUsage(
        model=responded.model,
        role=role,
        phase=phase,
        task_id=task_id,
        call_index=responded.call_index,
        usage=responded.usage,
    )


def _before_model(env: SessionEnv, rec: RunRecorder, request: ModelRequest) -> None:
    """Tell the application's ``before_model`` hook (live; its error is recorded)."""
    if env.hooks is not None or rec.replaying:
        observe(rec, env.hooks, "before_model", request)


def _requested(
    env: SessionEnv,
    rec: RunRecorder,
    request: ModelRequest,
    *,
    call_index: int,
    attempt: int,
    tip: str | None,
) -> ModelRequested:
    """Return the ``model_requested`` event of ``request``: by reference in a run of flow
    3+ (its texts stored once in the session), else by value as older clews recorded it."""

    def store(kind: ContentKind, text: str) -> str:
        ref = content_hash(text)
        if env.contents.claim(ref, rec.run_id):
            stored = ContentStored(content_hash=ref, kind=kind, text=text)
            rec.store_content(stored, partial(env.contents.committed, ref))
        return ref

    return requested_event(request, call_index=call_index, attempt=attempt,
                           request_digest=rec.request_hash(request), tip=tip,
                           store=store if env.flow >= 3 else None)  # fmt: skip


def _sampling(settings: ModelSettings | None) -> dict[str, Any]:
    """Return the request fields a role's settings set (none: the request's defaults)."""
    out: dict[str, Any] = {}
    if settings is not None and settings.max_tokens is not None:
        out["max_tokens"] = settings.max_tokens
    if settings is not None and settings.temperature is not None:
        out["temperature"] = settings.temperature
    return out


def _live_call(
    env: SessionEnv,
    rec: RunRecorder,
    model: Model,
    request: ModelRequest,
    requested: ModelRequested,
) -> Callable[[], tuple[list[ContentBlock], str, Usage]]:
    """Return the call the recorder makes when the model must really be asked.

    The model runs on a helper thread (:func:`call_off_thread`), so the run stops
    waiting for it when its scope is cancelled (``run_cancelling`` during ``model``) or
    its ``model_timeout_s`` passes (a failed candidate, error type ``ModelTimeout``).
    """
    timeout = env.settings.model_timeout_s

    def live() -> tuple[list[ContentBlock], str, Usage]:
        on_delta = env.on_delta
        try:
            response = call_off_thread(
                lambda: _ask(model, request, on_delta, rec, requested),
                name=f"model-{rec.agent_id}",
                timeout=timeout,
                cancel=rec.cancel,
            )
            # A reply the log cannot hold (a lone surrogate…) is a failed candidate, not
            # a store failure: recorded as model_failed, so a replay reproduces it.
            check_storable((response.content, response.stop_reason), "the model's reply")
        except CallCancelled:
            rec.stop_here("model")
        except CallTimedOut:
            raise ModelError(
                f"the model did not answer within {timeout:g} s", error_type="ModelTimeout"
            ) from None
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


def _ask(
    model: Model,
    request: ModelRequest,
    on_delta: Callable[[TextDelta], None] | None,
    rec: RunRecorder,
    requested: ModelRequested,
) -> ModelResponse:
    """Ask ``model`` (on the helper thread): streamed when someone watches and it can.

    Raises:
        ModelError: the model answered something that is not a ``ModelResponse``
            (``BadModelReply``: a failed candidate, so the chain may fall back).
    """
    if on_delta is None or not isinstance(model, StreamingModel):
        return _checked_reply(model, model.complete(request))
    response: ModelResponse | None = None
    for item in model.stream(request):
        if isinstance(item, ModelResponse):
            response = item
        elif rec.cancel.cancelled:
            break  # nobody waits for the rest
        else:
            on_delta(
                TextDelta(
                    agent_id=rec.agent_id,
                    run_id=rec.run_id,
                    call_index=requested.call_index,
                    attempt=requested.attempt,
                    text=item,
                    role=request.role,
                    phase=request.phase,
                )
            )
    if response is None:
        raise ModelError("the stream ended without a response", error_type=STREAM_INTERRUPTED)
    return response


def _checked_reply(model: Model, reply: object) -> ModelResponse:
    """Return ``reply`` if it is a ``ModelResponse``; else say what the model returned."""
    if isinstance(reply, ModelResponse):
        return reply
    raise ModelError(
        f"model {safe_text(str(model.name))!r}: complete() returned a {type(reply).__name__}, "
        "not a ModelResponse(content=[TextBlock(text=…)], …) (docs/runtime.md)",
        error_type="BadModelReply",
    )


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
            tip=conv.tip,
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
        conv.append("tool", _run_calls(env, conv, agent, calls))
    return LoopResult(content, agent.max_turns, usage, "max_turns", conv.tip)


def _run_calls(
    env: SessionEnv, conv: Conversation, agent: AgentSpec, calls: list[ToolCallBlock]
) -> list[ContentBlock]:
    """Run the reply's tool calls in order; return their results.

    Cancelled among them, the calls not run get a "cancelled" error result and the tool
    node is appended before the run stops: every tool call on the conversation's path
    keeps its result, so the next run's context is one a provider accepts.
    """
    results: list[ContentBlock] = []
    try:
        for call in calls:
            results.append(_run_call(env, conv.rec, agent, call))
        conv.rec.checkpoint("tool")
    except RunCancelled as e:
        results += [_not_run(call, e.reason) for call in calls[len(results) :]]
        conv.append("tool", results)
        raise
    return results


def _not_run(call: ToolCallBlock, reason: str) -> ToolResultBlock:
    return ToolResultBlock(
        tool_call_id=call.id,
        name=call.name,
        is_error=True,
        content=[TextBlock(text=f"not run: the run was cancelled ({reason})")],
    )


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
        # A built-in tool (the Brain's dispatch) records its own events and hands work to
        # other actors: what the run emitted so far is committed first.
        rec.flush()
        return builtin(call)
    return run_tool(env, rec, agent.tools, call, agent.role)
