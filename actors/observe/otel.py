"""OpenTelemetry spans of clew's runs, folded from the events as they commit.

:class:`RunSpans` is a commit listener (``Writer.subscribe``): it turns each session's
committed events into spans on the tracer it is given::

    clew.run                       a main run, run_started → run_ended: a trace's root
    └ invoke_agent brain           the Brain's own agent run (the same run)
      ├ chat <model>               model_requested → model_responded / model_failed
      └ invoke_agent <role>        a worker's run, under the agent run that created it
        ├ chat <model>             (one span per attempt)
        └ execute_tool <name>      tool_call_started → tool_call_finished / tool_failed

Every start and end time is the ``created_at`` recorded on the event that opened or
closed the span: the trace shows when the log says things happened, not when the
listener saw them. Attributes follow the OpenTelemetry GenAI semantic conventions
(``gen_ai.operation.name`` = ``chat`` / ``execute_tool`` / ``invoke_agent``,
``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``,
``gen_ai.tool.name`` / ``gen_ai.tool.call.id``, ``gen_ai.agent.name`` / ``id``), plus
``clew.session_id``, ``clew.run_id``, ``clew.seq`` (the event that opened the span) and
``clew.end_seq`` (the one that closed it). A failure — a failed model attempt, a tool
failure or error result, a failed or aborted run — sets the span's status to ERROR;
success leaves it unset, as the OpenTelemetry specification asks of instrumentation.

Two things a log holds that a run seen from its start does not:

- **a run whose events stop without** ``run_ended`` (an environment failure interrupted
  it; the process died): its spans stay open until :meth:`RunSpans.close` — the runtime
  closing — ends them at the last event recorded in the run or in a run under it, with
  ``clew.interrupted`` and an ERROR status;
- **events of a run started by another process** (a resume goes on where the log
  stops): its spans open at the first event seen, with ``clew.resumed``.

The listener runs on the writer's thread, before the run learns of the commit: a few
dict operations per event, and each ended span handed to the app's span processor (a
``BatchSpanProcessor`` queues it; a ``SimpleSpanProcessor`` exports it on this thread,
which suits an in-memory exporter, not a network one).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.util.types import AttributeValue

from eventlog.events import (
    AgentCreated,
    InDoubtResolved,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    RunEnded,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)
from eventlog.ids import brain_agent_id, is_main_run, main_run_of, session_of
from eventlog.records import StoredEvent
from eventlog.writer import Writer

#: The instrumentation scope of every span clew emits.
TRACER_NAME = "clew"
#: The role the Brain records in its ``agent_created`` (only the first main run has one).
BRAIN_ROLE = "brain"
#: Run statuses that are failures (``cancelled`` is a decision, not an error).
FAILED_RUN_STATUSES = ("failed", "aborted")

Attributes = dict[str, AttributeValue]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MICROSECOND = _dt.timedelta(microseconds=1)
#: On the spans of a run that started in another process: this one saw only its end.
_RESUMED: Attributes = {"clew.resumed": True}
_INTERRUPTED = Status(
    StatusCode.ERROR, "interrupted: the run did not end while this runtime was open"
)


def time_ns(created_at: str) -> int:
    """Return a recorded ``created_at`` (ISO-8601; naive means UTC) in ns since the epoch."""
    t = _dt.datetime.fromisoformat(created_at)
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    # Integer arithmetic: a float timestamp loses the microseconds of a 2026 date.
    return (t - _EPOCH) // _MICROSECOND * 1000


def provider_is_set() -> bool:
    """True when the app set a global tracer provider (in code or through the environment)."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def tracer_for(tracing: bool | TracerProvider | None) -> Tracer | None:
    """Return the tracer of a runtime opened with ``tracing``, or None when it is off.

    None follows the app: on when it set a tracer provider. True uses the global provider
    whatever it is (spans reach one the app sets later). A provider is used as it is.
    """
    if tracing is False or (tracing is None and not provider_is_set()):
        return None
    if isinstance(tracing, TracerProvider):
        return tracing.get_tracer(TRACER_NAME)
    return trace.get_tracer(TRACER_NAME)


def trace_commits(writer: Writer, tracer: Tracer) -> Callable[[], None]:
    """Emit spans of every run ``writer`` commits; return the function that stops it.

    Stopping unsubscribes and ends the spans still open as interrupted: call it after the
    writer's last commit.
    """
    spans = RunSpans(tracer)
    unsubscribe = writer.subscribe(spans.on_commit)

    def stop() -> None:
        unsubscribe()
        spans.close()

    return stop


@dataclass(slots=True)
class _OpenRun:
    """The open spans of one agent run."""

    session_id: str
    run_id: str
    agent: Span
    #: The agent span as a parent: of the run's calls, and of the runs it creates.
    context: Context
    #: The ``clew.run`` span of a main run (the trace's root); None for a worker's run.
    root: Span | None
    #: The agent run this one runs under (a worker's creator); None for a main run.
    parent: _OpenRun | None
    #: The last event seen of this run or a run under it: where an interrupted run ends.
    last_ns: int
    calls: dict[tuple[int, int], Span] = field(default_factory=dict)
    tools: dict[str, Span] = field(default_factory=dict)


class RunSpans:
    """Commit listener folding committed events into spans (see the module docstring).

    Called on the writer's thread only; :meth:`close` after the writer stopped.
    """

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer
        #: Open agent runs by run id, in the order they started.
        self._runs: dict[str, _OpenRun] = {}
        #: Workers created whose run has not started yet (agent_created comes first).
        self._created: dict[str, AgentCreated] = {}

    def on_commit(self, batch: list[StoredEvent]) -> None:
        """Fold one committed batch (``Writer.subscribe`` listener)."""
        for stored in batch:
            if stored.run_id is not None:  # session events (created, archived…) have no span
                self._fold(stored, stored.run_id)

    def close(self) -> None:
        """End every span still open as interrupted, at the last event recorded in its run
        or a run under it."""
        for run_id in reversed(list(self._runs)):  # a worker before the run that made it
            run = self._runs.pop(run_id)
            self._finish(run, run.last_ns, {"clew.run.status": "interrupted"}, _INTERRUPTED)
        self._created.clear()

    # --- folding -----------------------------------------------------------------------

    def _fold(self, stored: StoredEvent, run_id: str) -> None:
        at = time_ns(stored.created_at)
        match stored.event:
            case RunStarted() as started:
                self._open(stored, run_id, started.agent_id, {"clew.phase": started.phase})
            case AgentCreated() as created:
                if run_id not in self._runs:  # a worker's: its run starts next
                    self._created[created.agent_id] = created
                    _seen(self._runs.get(created.created_by_run_id or ""), at)
            case event:
                run = self._runs.get(run_id) or self._open(
                    stored, run_id, stored.agent_id or "", _RESUMED
                )
                _seen(run, at)
                match event:
                    case RunEnded():
                        self._ended(run, stored, event, at)
                    case ModelRequested():
                        self._requested(run, stored, event, at)
                    case ModelResponded() | ModelFailed():
                        self._answered(run, stored, event, at)
                    case ToolCallStarted() | InDoubtResolved():
                        self._tool_started(run, stored, event, at)
                    case ToolCallFinished() | ToolFailed():
                        self._tool_ended(run, stored, event, at)

    def _open(self, stored: StoredEvent, run_id: str, agent_id: str, extra: Attributes) -> _OpenRun:
        """Start the spans of an agent run: a main run's root and agent span, or a worker's."""
        sid = session_of(run_id)
        at = time_ns(stored.created_at)
        ids: Attributes = {"clew.session_id": sid, "clew.run_id": run_id, "clew.seq": stored.seq}
        root: Span | None = None
        up: _OpenRun | None = None
        if is_main_run(sid, agent_id):
            root = self._tracer.start_span(
                "clew.run", Context(), attributes={**ids, **extra}, start_time=at
            )
            parent, role = trace.set_span_in_context(root), BRAIN_ROLE
        else:
            created = self._created.pop(agent_id, None)
            up = self._parent_of(stored, agent_id, created)
            parent = up.context if up is not None else Context()  # else: a trace of its own
            role = created.role if created else ""
        attributes: Attributes = {
            **ids,
            **extra,
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": agent_id,
            "clew.agent_id": agent_id,
        }
        if role:
            attributes["gen_ai.agent.name"] = role
        name = f"invoke_agent {role}" if role else "invoke_agent"
        agent = self._tracer.start_span(name, parent, attributes=attributes, start_time=at)
        run = _OpenRun(sid, run_id, agent, trace.set_span_in_context(agent), root, up, at)
        _seen(up, at)
        self._runs[run_id] = run
        return run

    def _parent_of(
        self, stored: StoredEvent, agent_id: str, created: AgentCreated | None
    ) -> _OpenRun | None:
        """The open run a worker's run goes under: the run that created it — opened now
        when it is a main run that started in another process."""
        main = main_run_of(agent_id)
        creator = (created.created_by_run_id if created else None) or main
        if creator is None:
            return None
        run = self._runs.get(creator)
        if run is None and creator == main:  # a resume's worker writes before its Brain
            run = self._open(stored, main, brain_agent_id(session_of(main)), _RESUMED)
        return run

    def _ended(self, run: _OpenRun, stored: StoredEvent, ended: RunEnded, at: int) -> None:
        del self._runs[run.run_id]
        attributes: Attributes = {
            "clew.run.status": ended.status,
            "clew.run.end_reason": ended.end_reason,
            "clew.run.turn_count": ended.turn_count,
            "clew.end_seq": stored.seq,
        }
        status = None
        if ended.status in FAILED_RUN_STATUSES:
            error = ended.error or {}
            attributes["error.type"] = str(error.get("type") or ended.end_reason)
            status = Status(StatusCode.ERROR, str(error.get("message") or ended.end_reason))
        self._finish(run, at, attributes, status)

    def _finish(
        self, run: _OpenRun, at: int, attributes: Attributes, status: Status | None
    ) -> None:
        """End a run's spans: calls and tools left open (interrupted), the agent, the root."""
        for span in [*run.calls.values(), *run.tools.values()]:
            _end(span, at, {"clew.interrupted": True}, _INTERRUPTED)
        run.calls.clear()
        run.tools.clear()
        if status is _INTERRUPTED:
            attributes = {**attributes, "clew.interrupted": True}
        _end(run.agent, at, attributes, status)
        if run.root is not None:
            _end(run.root, at, attributes, status)

    # --- model calls and tool calls -----------------------------------------------------

    def _child(
        self, run: _OpenRun, name: str, stored: StoredEvent, at: int, attributes: Attributes
    ) -> Span:
        """Start a span under the run's agent span."""
        ids: Attributes = {
            "clew.session_id": run.session_id,
            "clew.run_id": run.run_id,
            "clew.seq": stored.seq,
        }
        # A model call leaves the process: a CLIENT span, as the GenAI conventions ask.
        kind = (
            SpanKind.CLIENT if attributes["gen_ai.operation.name"] == "chat" else SpanKind.INTERNAL
        )
        return self._tracer.start_span(
            name, run.context, kind, attributes={**ids, **attributes}, start_time=at
        )

    def _requested(self, run: _OpenRun, stored: StoredEvent, req: ModelRequested, at: int) -> None:
        attributes: Attributes = {
            **_chat(req.model, req.call_index, req.attempt),
            "clew.role": req.role,
            "clew.phase": req.phase,
        }
        run.calls[(req.call_index, req.attempt)] = self._child(
            run, f"chat {req.model}", stored, at, attributes
        )

    def _answered(
        self, run: _OpenRun, stored: StoredEvent, answer: ModelResponded | ModelFailed, at: int
    ) -> None:
        span = run.calls.pop((answer.call_index, answer.attempt), None)
        if span is None:  # requested before a resume, by the process that died
            attributes = {**_chat(answer.model, answer.call_index, answer.attempt)}
            attributes["clew.resumed"] = True
            span = self._child(run, f"chat {answer.model}", stored, at, attributes)
        status = None
        match answer:
            case ModelResponded(usage=usage):
                attributes = {
                    "gen_ai.response.model": answer.model,
                    "gen_ai.response.finish_reasons": (answer.stop_reason,),
                    "gen_ai.usage.input_tokens": usage.input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                    "clew.usage.cache_read_tokens": usage.cache_read_tokens,
                    "clew.usage.cache_write_tokens": usage.cache_write_tokens,
                }
            case ModelFailed():
                attributes = {
                    "error.type": answer.error_type,
                    "clew.will_fallback": answer.will_fallback,
                }
                status = Status(StatusCode.ERROR, answer.message)
        _end(span, at, {**attributes, "clew.end_seq": stored.seq}, status)

    def _tool_started(
        self, run: _OpenRun, stored: StoredEvent, ev: ToolCallStarted | InDoubtResolved, at: int
    ) -> None:
        attributes = _tool(ev.tool_name, ev.tool_call_id)
        if isinstance(ev, ToolCallStarted):
            attributes["clew.tool.idempotent"] = ev.idempotent
        else:  # a resume settles a call that started before a crash
            attributes["clew.in_doubt.decision"] = ev.decision
            if (span := run.tools.get(ev.tool_call_id)) is not None:
                span.set_attributes(attributes)
                return
            attributes["clew.resumed"] = True
        run.tools[ev.tool_call_id] = self._child(
            run, f"execute_tool {ev.tool_name}", stored, at, attributes
        )

    def _tool_ended(
        self, run: _OpenRun, stored: StoredEvent, ev: ToolCallFinished | ToolFailed, at: int
    ) -> None:
        span = run.tools.pop(ev.tool_call_id, None)
        if span is None:  # started before a resume, by the process that died
            attributes = {**_tool(ev.tool_name, ev.tool_call_id), "clew.resumed": True}
            span = self._child(run, f"execute_tool {ev.tool_name}", stored, at, attributes)
        attributes = {"clew.end_seq": stored.seq}
        status = None
        match ev:
            case ToolFailed():
                attributes["error.type"] = ev.error_type
                status = Status(StatusCode.ERROR, ev.message)
            case ToolCallFinished(is_error=True):
                attributes["error.type"] = "tool_error"
                status = Status(StatusCode.ERROR, "the tool returned an error result")
        _end(span, at, attributes, status)


def _chat(model: str, call_index: int, attempt: int) -> Attributes:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "clew.call_index": call_index,
        "clew.attempt": attempt,
    }


def _seen(run: _OpenRun | None, at: int) -> None:
    """Note an event of ``run`` recorded at ``at``: the runs above it last at least as long."""
    while run is not None and run.last_ns < at:
        run.last_ns = at
        run = run.parent


def _tool(name: str, call_id: str) -> Attributes:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
    }


def _end(span: Span, at: int, attributes: Attributes, status: Status | None) -> None:
    span.set_attributes(attributes)
    if status is not None:
        span.set_status(status)
    span.end(end_time=at)
