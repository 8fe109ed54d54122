"""The run recorder: the one seam every effect of a run passes through.

A run's code never writes an event, reads the clock, calls a model or runs a
tool directly: it asks its :class:`RunRecorder`. The recorder works in one of
three modes and switches from the first to the second by itself:

``replaying``
    The run has recorded events left. Each event the code emits is compared with
    the next recorded one (payload equality; ``seq`` and ``event_id`` are not
    compared); timestamps come from the recording; model replies and tool
    results come from the recording — no model is called, no tool runs.
``live``
    Past the end of the recording (or with none): events go to the writer in group
    commits (:mod:`actors.recording.commits`), flushed before every side effect; the
    clock and the seams are real.
``replay-only`` (``live_allowed=False``)
    Reaching the end of an *interrupted* recording stops the run with
    :class:`EndOfRecording` instead of going live — ``Runtime.replay`` never
    touches the recorded session.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import msgspec

from actors.errors import Divergence, EndOfRecording, RunCancelled, RunParked
from actors.models.calls import CancelScope
from actors.models.protocol import ModelRequest, RequestHasher
from actors.models.tools import InDoubtPolicy
from actors.recording.commits import CommitBuffer
from actors.recording.outcomes import (
    event_divergence,
    in_doubt_outcome,
    in_doubt_resolved,
    type_divergence,
)
from actors.replay.cuts import follow_cuts, node_counter, past_divergence
from actors.replay.live_tools import check_live_tool
from actors.replay.options import ReplayOptions
from eventlog.artifact_plan import stored_forms
from eventlog.blocks import ContentBlock
from eventlog.clock import Clock
from eventlog.errors import ModelError
from eventlog.events import (
    ArtifactCreated,
    CancelPhase,
    ContentStored,
    Event,
    InDoubtResolved,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    NodeAppended,
    RunCancelling,
    RunEnded,
    RunResumed,
    RunWaiting,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Usage,
    event_type_of,
)
from eventlog.ids import seed_for
from eventlog.records import AppendRequest, StoredEvent
from eventlog.writer import Writer

E = TypeVar("E")


class RunRecorder:
    """Records (or re-checks) the events of one run; see the module docstring."""

    def __init__(
        self,
        *,
        session_id: str,
        agent_id: str,
        run_id: str,
        writer: Writer | None,
        clock: Clock,
        recorded: list[StoredEvent] | None = None,
        live_allowed: bool = True,
        artifact_threshold: int = 16 * 1024,
        before_tool: Callable[[], None] | None = None,
        abort: threading.Event | None = None,
        cancel: CancelScope | None = None,
        options: ReplayOptions | None = None,
        group_commits: bool = True,
        shared_hash: Callable[[ModelRequest], str] | None = None,
    ) -> None:
        self.session_id = session_id
        self.agent_id = agent_id
        self.run_id = run_id
        self._writer = writer
        self._clock = clock
        # A resume past a divergence abandoned part of the recording: follow the rest.
        self._recorded, self._cuts = follow_cuts(recorded or [])
        self._options = options or ReplayOptions()
        #: The request of the model call being recorded (to describe a changed one).
        self._request: ModelRequest | None = None
        self._cursor = 0
        self._live_allowed = live_allowed
        self._artifact_threshold = artifact_threshold
        self._before_tool = before_tool
        self._abort = abort
        #: The cancellation this run obeys (a worker's is a child of its main run's).
        self.cancel = cancel or CancelScope()
        self._counters: dict[str, int] = {}
        self._hashers: dict[str, RequestHasher] = {}
        #: ``request_hash`` kept across the session's runs (``SessionMemo``), if given.
        self._shared_hash = shared_hash
        #: Texts to store once the run is live (:meth:`store_content`).
        self._texts: list[tuple[ContentStored, Callable[[], None] | None]] = []
        self.rng = random.Random(seed_for(run_id))
        self.compared = 0
        self.call_index = 0
        #: 1 while a tool call runs for the first time, 2 when a resume runs it again.
        self.tool_attempt = 1
        #: The sum of the run's ``token_usage`` events so far (recorded or replayed): what
        #: its ``run_ended`` reports, so the runs table and the usage projection agree.
        self.usage = Usage()
        #: Live events not committed yet (``group_commits=False``: one commit per event).
        self.commits = CommitBuffer(writer, session_id, grouped=group_commits)

    # --- state ---------------------------------------------------------------------------

    @property
    def replaying(self) -> bool:
        """True while recorded events of this run remain to be matched."""
        return self._cursor < len(self._recorded)

    @property
    def recording_complete(self) -> bool:
        """True when the recording ends with ``run_ended``.

        Every run writes ``run_ended`` as its very last event (the agent's final status
        change comes before it), so a recording ending anywhere else was cut by a crash.
        """
        return bool(self._recorded) and isinstance(self._recorded[-1].event, RunEnded)

    def peek(self) -> StoredEvent | None:
        """Return the next recorded event, if any."""
        return self._recorded[self._cursor] if self.replaying else None

    def next_recorded(self, kind: type[E]) -> E | None:
        """Return the next recorded event of type ``kind`` still to be matched, if any."""
        for stored in self._recorded[self._cursor :]:
            if isinstance(stored.event, kind):
                return stored.event
        return None

    def next_id(self, kind: str) -> str:
        """Return the next derived id of ``kind`` in this run: ``<run_id>:<kind><n>``."""
        if kind == "n" and self._cuts:
            self._counters[kind] = node_counter(
                self._cuts, self._cursor, self._counters.get(kind, 0)
            )
        n = self._counters.get(kind, 0) + 1
        self._counters[kind] = n
        return f"{self.run_id}:{kind}{n}"

    def flush(self) -> None:
        """Commit the live events not committed yet: see :meth:`CommitBuffer.flush`."""
        self.commits.flush()

    # --- cancellation --------------------------------------------------------------------

    def checkpoint(self, during: CancelPhase = "") -> None:
        """Stop here if the run was cancelled: a point where stopping loses nothing.

        Live: when the run's scope is cancelled, record ``run_cancelling`` and raise
        :class:`RunCancelled`. Replaying: stop where the recording says the run
        stopped (its ``run_cancelling`` is next), whatever the scope says.

        Raises:
            RunCancelled: the run stops here.
        """
        if self.replaying:
            self._stop_if_recorded_here()
        elif self._live_allowed:
            self.cancel.live()  # past the recording: a deferred cancel stops it here
            if self.cancel.cancelled:
                self.stop_here(during)

    def stop_here(self, during: CancelPhase = "") -> NoReturn:
        """Record that the run stops here because its scope was cancelled; raise.

        Raises:
            RunCancelled: always.
        """
        scope = self.cancel
        event = RunCancelling(
            reason=scope.reason,
            source=scope.source,  # type: ignore[arg-type]
            during=during,
            scope="worker" if scope.kind == "worker" and not scope.inherited else "run",
        )
        self.emit(event)
        raise _cancelled(event)

    def _stop_if_recorded_here(self) -> None:
        """Replaying: if the recording's next event is ``run_cancelling``, match it and
        raise :class:`RunCancelled` (the recorded run stopped at this point)."""
        rec = self.peek()
        if rec is not None and isinstance(rec.event, RunCancelling):
            self._cursor += 1
            self.compared += 1
            raise _cancelled(rec.event)

    # --- waits for a person ------------------------------------------------------------

    def take_recorded(self, kind: type[E], match: Callable[[E], bool]) -> E | None:
        """Replaying: consume and return the next recorded event if it is a ``kind`` that
        ``match``es — a fact another process wrote into this run (a person's decision) —
        else None. Live: None."""
        rec = self.peek()
        if rec is not None and isinstance(rec.event, kind) and match(rec.event):
            self._cursor += 1
            self.compared += 1
            return rec.event
        return None

    def wait_point(self, waiting: RunWaiting, pending: list[Any]) -> None:
        """A point where the run may park for a person.

        Replaying a recorded ``run_waiting`` here: consume it and return (the caller then
        looks for the decision). Live: record ``waiting`` and raise :class:`RunParked`.

        Raises:
            RunParked: the run parks here (live).
            EndOfRecording: a replay-only run whose recording ends before the wait.
        """
        if self.take_recorded(RunWaiting, lambda _: True) is not None:
            return
        if not self.replaying and not self._live_allowed:
            raise EndOfRecording(f"run {self.run_id}: recording ends before its wait")
        self.emit(waiting)
        raise RunParked(waiting.reason, pending, waiting.question)

    def go_on(self, decided: bool, pending: list[Any], question: str = "") -> None:
        """After a recorded wait: record ``run_resumed`` when it was decided, else park
        again without recording anything (the run is still waiting).

        Raises:
            RunParked: nothing was decided (a replay of a waiting session ends here).
        """
        if not decided:
            self.flush()
            raise RunParked("still waiting", pending, question)
        self.emit(RunResumed(run_id=self.run_id))

    # --- events --------------------------------------------------------------------------

    def emit(self, event: Event) -> Event:
        """Record ``event`` for this run and return its stored form (an oversize block
        replaced by its artifact ref, as the writer stores it).

        Replaying: compared with the recording (raises :class:`Divergence`). Live:
        buffered for the next group commit (:meth:`flush`).
        """
        if isinstance(event, TokenUsage):
            stored = self._match(event) if self.replaying else self._append(event)
            self.usage = self.usage.plus(event.usage)
            return stored
        if self.replaying:
            return self._match(event)
        return self._append(event)

    def _append(self, event: Event) -> Event:
        """Append ``event`` live (after the recording); return its stored form."""
        if not self._live_allowed:
            if self.recording_complete:
                raise type_divergence(self.run_id, None, "(end of run)", event_type_of(event))
            raise EndOfRecording(f"run {self.run_id}: end of the interrupted recording")
        if self._abort is not None and self._abort.is_set():
            # Another run of this resume diverged: write nothing more, anywhere.
            raise EndOfRecording(f"run {self.run_id}: resume stopped by a divergence")
        self.cancel.live()  # the first live event: a deferred cancel takes effect
        if self._texts:
            self._store_texts()
        return self.commits.append(
            AppendRequest(
                session_id=self.session_id,
                event=event,
                created_at=self._clock.now(),
                agent_id=self.agent_id,
                run_id=self.run_id,
            )
        )

    def _match(self, event: Event) -> Event:
        expected_events: list[Event] = [event]
        if isinstance(event, NodeAppended | ToolCallFinished):
            # The writer turns oversize blocks into artifact refs; compare with that form.
            expected_events = self._stored_form(event)
        last: StoredEvent | None = None
        if not isinstance(event, RunCancelling):
            # The recorded run stopped here (a cancel noticed between two of our steps,
            # or recorded for a run a crash had interrupted): stop here too.
            self._stop_if_recorded_here()
        for ev in expected_events:
            rec = self.peek()
            if rec is None:
                raise type_divergence(self.run_id, None, "(end of recording)", event_type_of(ev))
            if rec.event != ev:
                d = event_divergence(self.run_id, rec, ev, self._request, self._options)
                if last is None and self._options.from_divergence and self._live_allowed:
                    self._go_past(d, event)
                    return self.emit(event)
                raise d
            self._cursor += 1
            self.compared += 1
            last = rec
        assert last is not None
        return last.event

    def _go_past(self, d: Divergence, event: Event) -> None:
        """Resuming past a divergence: record where, abandon the rest, go on live."""
        marker = past_divergence(
            self.run_id,
            self._recorded,
            self._cursor,
            d,
            event_type_of(event),
            self._counters.get("n", 0),
        )
        self._recorded = self._recorded[: self._cursor]
        self._counters["n"] = marker.next_node
        self.emit(marker)

    def _stored_form(self, event: Event) -> list[Event]:
        """Return the form the recording holds ``event`` in (today's, or an older clew's)."""
        forms = stored_forms(self.session_id, event, self._artifact_threshold)
        end = self._cursor + max(len(f) for f in forms)
        ahead = [e.event for e in self._recorded[self._cursor : end]]
        for form in forms:
            if ahead[: len(form)] == form:
                return form
        return forms[0]

    def _skip_artifacts_of(self, tool_call_id: str) -> None:
        """Step over the recorded ``artifact_created`` of a tool's result (they precede it)."""
        while self.replaying:
            ev = self._recorded[self._cursor].event
            if not (isinstance(ev, ArtifactCreated) and ev.tool_call_id == tool_call_id):
                return
            self._cursor += 1
            self.compared += 1

    # --- stored texts --------------------------------------------------------------------

    def store_content(
        self, event: ContentStored, on_commit: Callable[[], None] | None = None
    ) -> None:
        """Put a text requests refer to into the session's log (live only), in the group
        commit of the request that refers to it; ``on_commit`` is called once that commit
        is durable.

        A session-level event, never compared. Replaying, it waits for the run to go live
        (a resume past a divergence): a request the recording holds has its text there.
        """
        if not self._live_allowed or self._writer is None:
            return
        self._texts.append((event, on_commit))
        if not self.replaying:
            self._store_texts()

    def _store_texts(self) -> None:
        for event, on_commit in self._texts:
            at = self._clock.now()
            self.commits.append(
                AppendRequest(session_id=self.session_id, event=event, created_at=at), on_commit
            )
        self._texts.clear()

    # --- model calls ---------------------------------------------------------------------

    def request_hash(self, request: ModelRequest) -> str:
        """Return ``request_hash(request)``, computed incrementally per role: a role's
        conversation grows by a few messages a call (:class:`RequestHasher`); with a
        ``shared_hash`` (a main run's session memo), across the session's runs too."""
        if self._shared_hash is not None:
            return self._shared_hash(request)
        hasher = self._hashers.get(request.role)
        if hasher is None:
            hasher = self._hashers[request.role] = RequestHasher()
        return hasher.hash(request)

    def model_call(
        self,
        requested: ModelRequested,
        call: Callable[[], tuple[list[ContentBlock], str, Any]],
        request: ModelRequest | None = None,
    ) -> ModelResponded:
        """Record a model call; return the response (recorded, or from ``call()`` live).

        ``call`` returns ``(content, stop_reason, usage)`` or raises ``ModelError``.
        A recorded ``model_failed`` is raised again as ``ModelError`` so fallback
        logic re-executes identically. ``request``: the request itself, so a changed
        one is described by what changed in it (its text), not only its hash.
        """
        request_recorded = self.replaying
        self._request = request
        self.emit(requested)
        attempt = requested.attempt
        while self.replaying:
            rec = self.peek()
            assert rec is not None
            ev = rec.event
            if isinstance(ev, ModelResponded) and ev.call_index == requested.call_index:
                self._cursor += 1
                self.compared += 1
                return ev
            if isinstance(ev, ModelFailed) and ev.call_index == requested.call_index:
                # Not consumed here: the caller emits its model_failed, which then
                # matches this recorded one.
                raise ModelError(ev.message, status=ev.status, error_type=ev.error_type)
            if isinstance(ev, RunCancelling):
                self._stop_if_recorded_here()
            if isinstance(ev, ModelRequested) and ev.call_index == requested.call_index:
                # The recording re-sent this call after a crash: do the same.
                attempt = ev.attempt
                self.emit(msgspec.structs.replace(requested, attempt=attempt))
                continue
            raise type_divergence(self.run_id, rec.run_seq, rec.event_type, "model_responded")
        if request_recorded:
            # The recording ends with this request unanswered (a crash): send it again,
            # visibly, as the next attempt.
            if not self._live_allowed:
                raise EndOfRecording(f"run {self.run_id}: recording ends inside a model call")
            self.checkpoint("model")  # a cancelled run never asks again
            attempt += 1
            self.emit(msgspec.structs.replace(requested, attempt=attempt))
        self.flush()  # the request is durable before the model is asked
        content, stop_reason, usage = call()
        responded = ModelResponded(
            call_index=requested.call_index,
            attempt=attempt,
            model=requested.model,
            content=content,
            stop_reason=stop_reason,
            usage=usage,
        )
        self.emit(responded)
        return responded

    # --- tool calls ----------------------------------------------------------------------

    def tool_call(
        self,
        started: ToolCallStarted,
        run: Callable[[], ToolCallFinished | ToolFailed],
        in_doubt_policy: InDoubtPolicy = "fail",
    ) -> ToolCallFinished | ToolFailed:
        """Record a tool call; return its outcome (recorded, or from ``run()`` live).

        ``tool_call_started`` is committed before ``run()`` is called. A start with
        no outcome in the recording is *in doubt*: an idempotent tool runs again;
        otherwise ``in_doubt_policy`` decides and an ``in_doubt_resolved`` records it.
        """
        start_recorded = self.replaying
        self.emit(started)
        self._skip_artifacts_of(started.tool_call_id)
        if self.replaying:
            rec = self.peek()
            assert rec is not None
            ev = rec.event
            if (
                isinstance(ev, ToolCallFinished | ToolFailed)
                and ev.tool_call_id == started.tool_call_id
            ):
                self._cursor += 1
                self.compared += 1
                if self._options.live_tools:
                    check_live_tool(self._options, run_id=self.run_id, session_id=self.session_id,
                                    started=started, recorded=rec, run=run,
                                    threshold=self._artifact_threshold)  # fmt: skip
                return ev
            if isinstance(ev, InDoubtResolved) and ev.tool_call_id == started.tool_call_id:
                return self._resolve_in_doubt(started, run, ev.decision)
            self._stop_if_recorded_here()
            raise type_divergence(self.run_id, rec.run_seq, rec.event_type, "tool_call_finished")
        if not start_recorded:
            return self._run_tool(run)
        # The recording ends with this start and no outcome: the call is in doubt.
        if not self._live_allowed:
            raise EndOfRecording(f"run {self.run_id}: recording ends inside a tool call")
        self.checkpoint("tool")  # a cancelled run leaves a call in doubt as it is
        decision: InDoubtPolicy = "retry" if started.idempotent else in_doubt_policy
        return self._resolve_in_doubt(started, run, decision)

    def _run_tool(
        self, run: Callable[[], ToolCallFinished | ToolFailed], attempt: int = 1
    ) -> ToolCallFinished | ToolFailed:
        self.flush()  # tool_call_started is durable before the tool runs: never weaken this
        if self._before_tool is not None:
            self._before_tool()
        self.tool_attempt = attempt
        stored = self.emit(run())
        # The stored form: a large result is an artifact ref from here on (docs/context.md).
        assert isinstance(stored, ToolCallFinished | ToolFailed)
        return stored

    def _resolve_in_doubt(
        self,
        started: ToolCallStarted,
        run: Callable[[], ToolCallFinished | ToolFailed],
        decision: InDoubtPolicy,
    ) -> ToolCallFinished | ToolFailed:
        self.emit(in_doubt_resolved(started, decision))
        if decision == "retry":
            if self.replaying:
                return self._recorded_outcome(started)
            return self._run_tool(run, attempt=2)
        outcome = in_doubt_outcome(started, decision)
        self.emit(outcome)
        return outcome

    def _recorded_outcome(self, started: ToolCallStarted) -> ToolCallFinished | ToolFailed:
        self._skip_artifacts_of(started.tool_call_id)
        rec = self.peek()
        if rec is not None and isinstance(rec.event, ToolCallFinished | ToolFailed):
            self._cursor += 1
            self.compared += 1
            return rec.event
        if rec is None and not self._live_allowed:
            raise EndOfRecording(f"run {self.run_id}: recording ends inside a tool re-run")
        raise Divergence(
            self.run_id,
            rec.run_seq if rec else None,
            rec.event_type if rec else None,
            "tool_call_finished",
            [],
        )


def _cancelled(event: RunCancelling) -> RunCancelled:
    return RunCancelled(event.reason, source=event.source, during=event.during, scope=event.scope)
