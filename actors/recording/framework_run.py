"""A main run whose loop is a framework's: how it starts, records its model calls and tool
gates, and ends.

A framework integration (:mod:`actors.pydantic_ai`, :mod:`actors.openai_agents`) runs
the framework's own ``async`` agent loop as a clew main run of a kind of its own (its
``run_started`` phase is :attr:`Framework.phase`). What does not depend on the framework
lives here, once:

- a live run (:func:`live_run`): a new main run of a session — refused while a run is
  open or waits for a person — with its :class:`~actors.recording.inputs.RunInputs`, the
  session owned for it and let go after; a streamed run hands its stream to the caller
  and back (:func:`streamed`), a run its caller drives step by step runs each step in the
  run's own task (:class:`Steps`); a resume or a replay re-executes the run on an event
  loop of its own (:func:`execute`);
- one execution (:func:`run_once`): ``run_started`` and the user's message, the
  framework's loop, and every way the run ends — completed (the output as JSON),
  cancelled, parked waiting for a person, failed, interrupted, or stopped by a replay;
- a recorded model call (:func:`model_call`), and a recorded tool call behind its
  approval gate (:func:`tool_call`), with the value a recorded outcome hands back
  (:func:`result_of`).

The framework's own part is what these are given: its loop (run on a
:class:`~actors.recording.bridge.Bridge`), how its values become JSON, what wraps its
exceptions. Nothing here imports a framework.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar

import msgspec

from actors.errors import (
    DurableRunFailed,
    NeedsResume,
    RunCancelled,
    RunParked,
    SessionWaiting,
    UsageError,
)
from actors.models.tool_policy import set_tool_context
from actors.models.tools import InDoubtPolicy, ToolContext, ToolRegistry
from actors.orchestration.approvals import PendingApproval, apply, pending_of
from actors.orchestration.brain import RunRequest
from actors.orchestration.loop import Conversation
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.worker import cancelled_run_end
from actors.recording.bridge import Bridge
from actors.recording.inputs import FLOW, RunInputs
from actors.recording.stops import interruption, is_replay_stop
from actors.replay.requests import requested_event
from actors.runtime.start import check_prompt, owned_run
from actors.runtime.status import OPEN_RUN_STATUSES
from actors.runtime.upkeep import refuse_if_archived
from eventlog.blocks import JsonBlock, TextBlock, ToolCallBlock
from eventlog.events import (
    AgentCreated,
    AgentStatusChanged,
    ApprovalDecided,
    ApprovalRequested,
    ModelResponded,
    RunEnded,
    RunStarted,
    RunWaiting,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)
from eventlog.ids import brain_agent_id, is_main_run, main_run_id

if TYPE_CHECKING:
    from actors.models.protocol import ModelRequest
    from actors.orchestration.env import SessionEnv
    from actors.recording.recorder import RunRecorder
    from actors.runtime.session import Session
    from eventlog.blocks import ContentBlock
    from eventlog.events import Usage

R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")

#: The oldest inputs version a framework's run records: the version current when
#: framework runs came (a run given a conversation to go on from records 7).
INPUTS_SINCE: Final = 6


def first_exception(e: Exception) -> Exception:
    """Return the first exception of an exception group (a task group's), else ``e``."""
    while isinstance(e, ExceptionGroup) and e.exceptions:
        first = e.exceptions[0]
        if not isinstance(first, Exception):
            break
        e = first
    return e


@dataclass(frozen=True)
class Framework:
    """What one framework's runs record as, and how its values read."""

    #: The ``run_started`` phase of its runs (a Brain's run records ``orchestrate``).
    phase: str
    #: The agent's name: the role its calls are recorded under.
    name: str
    #: Return a value of the framework as JSON data.
    jsonable: Callable[[Any], Any]
    #: Return what an exception the framework raised wraps (clew's own, a tool's).
    leaf: Callable[[Exception], Exception] = first_exception


@dataclass
class Drive(Generic[R]):
    """What one execution of a run produced (``result``: the framework's own)."""

    outcome: RunOutcome
    result: R | None = None
    error: BaseException | None = None
    conv: Conversation | None = field(default=None, repr=False)


@dataclass
class Handoff(Generic[S]):
    """A streamed run's stream (or a stepped run's :class:`Steps`' face), handed from the
    run's task to the caller, and back."""

    ready: asyncio.Future[S]
    #: Set once the caller left the stream's block: the run may end.
    done: asyncio.Event = field(default_factory=asyncio.Event)


#: The framework's loop of one execution: run it on the bridge; return (output, result).
Loop = Callable[["SessionEnv", Bridge, RunRequest], Coroutine[Any, Any, tuple[Any, R | None]]]


# --- live runs -------------------------------------------------------------------------


async def live_run(
    fw: Framework,
    session: Session,
    prompt: str,
    model: str,
    loop: Loop[R],
    history: Any = None,
) -> Drive[R]:
    """Run ``loop`` as a new main run of ``session`` (``model``: the name its inputs
    record; ``history``: the conversation it goes on from, as the framework's JSON).

    Raises:
        NeedsResume: the session has an interrupted run.
        SessionWaiting: the session waits for a person.
    """
    engine = session._engine  # noqa: SLF001 - a main run of the session's own engine
    sid = session.id
    engine.refuse_if_read_only("running a session")
    check_prompt(prompt)

    def build() -> tuple[SessionEnv, RunRequest]:
        row = engine.store.read_session(sid)
        refuse_if_archived(row, "a new run")
        runs = engine.store.read_run_statuses(sid)
        if any(status in OPEN_RUN_STATUSES for _, _, status in runs):
            raise NeedsResume(f"session {sid} has an interrupted run; resume it first")
        if any(status == "waiting" for _, _, status in runs):
            raise SessionWaiting(f"session {sid} is waiting for a person")
        n = sum(1 for _, agent_id, _ in runs if is_main_run(sid, agent_id)) + 1
        inputs = RunInputs(
            prompt=prompt,
            raw_prompt=prompt,
            create_agent=n == 1,
            models={"default": [model]},
            settings=engine.settings,
            flow=FLOW,
            history=history,
        ).in_oldest_version(INPUTS_SINCE)
        request = RunRequest(
            run_id=main_run_id(sid, n), parent_node_id=row.active_node_id, inputs=inputs
        )
        return engine.env(sid, {}, ToolRegistry(), engine.settings), request

    prepared = owned_run(engine, sid, build)
    try:
        drive = await run_once(fw, prepared.env, prepared.request, loop)
        if drive.outcome.status != "interrupted":
            engine.writer.flush()
    finally:
        engine.release(sid)
        engine.release_run(sid)
    return drive


@asynccontextmanager
async def streamed(
    live: Callable[[Handoff[S]], Coroutine[Any, Any, Drive[Any]]],
) -> AsyncIterator[S]:
    """Run ``live(handoff)`` as a task; yield the stream (or the stepped run) it hands
    over. The run ends when the block is left.

    Raises:
        DurableRunFailed: the run did not complete (interrupted, waiting).
    """
    handoff: Handoff[S] = Handoff(ready=asyncio.get_running_loop().create_future())
    task = asyncio.ensure_future(live(handoff))
    either: list[asyncio.Future[Any]] = [handoff.ready, task]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if not handoff.ready.done():  # the run ended before its stream opened
        drive = await task
        check(drive)
        raise DurableRunFailed(failure(drive.outcome), drive.outcome)
    try:
        yield handoff.ready.result()
    finally:
        handoff.done.set()
        drive = await task
    check(drive)


#: One step of a run its caller drives (Pydantic AI's: run the next node).
Step = Callable[[], Awaitable[T]]


class Steps:
    """The steps of a run its caller drives: each step is asked from the caller's task
    and run in the run's own (inside the recording's seams: its overrides, its bridge),
    and what it returns is handed back.

    Made in the run's task, handed to the caller (a :class:`Handoff`); the run's task
    :meth:`serves <serve>` the steps until the caller leaves the block.
    """

    def __init__(self) -> None:
        run = asyncio.current_task()
        assert run is not None, "made in the run's task"
        self._run = run
        #: Each step asked, with the future its value is handed back in.
        self._asked: asyncio.Queue[tuple[Step[Any], asyncio.Future[Any]]] = asyncio.Queue()

    async def ask(self, step: Step[T]) -> T:
        """(The caller's task.) Run ``step`` in the run's task; return what it returned.

        Raises:
            StopAsyncIteration: as the step did (the run's nodes are over).
            UsageError: the run has ended (its block was left): no step is run.
            Exception: the run ended at the step: what the run raises (:func:`check`).
        """
        answer: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._asked.put_nowait((step, answer))
        await asyncio.wait([answer, self._run], return_when=asyncio.FIRST_COMPLETED)
        if answer.done():
            return answer.result()
        drive: Drive[Any] = self._run.result()  # the run ended: at the step, or before it
        check(drive)
        raise UsageError(f"run {drive.outcome.run_id} has ended: step it inside its block")

    async def serve(self, done: asyncio.Event) -> None:
        """(The run's task.) Run the steps asked until ``done`` (the caller left the
        block); a step's exception ends the run."""
        while not done.is_set():
            asked = asyncio.ensure_future(self._asked.get())
            left = asyncio.ensure_future(done.wait())
            await asyncio.wait([asked, left], return_when=asyncio.FIRST_COMPLETED)
            left.cancel()
            if not asked.done():
                asked.cancel()
                return
            step, answer = asked.result()
            try:
                value = await step()
            except StopAsyncIteration as end:
                answer.set_exception(StopAsyncIteration(*end.args))
            else:
                answer.set_result(value)


def result(drive: Drive[R]) -> R:
    """Return the framework's result of a completed run (else raise as :func:`check`)."""
    check(drive)
    assert drive.result is not None
    return drive.result


def check(drive: Drive[Any]) -> None:
    """Raise what the run raised, or :class:`DurableRunFailed` if it did not complete."""
    if drive.error is not None:
        raise drive.error
    if drive.outcome.status != "completed":
        raise DurableRunFailed(failure(drive.outcome), drive.outcome)


def failure(outcome: RunOutcome) -> str:
    """Say why a durable run did not complete: its error, or what it waits for."""
    what = outcome.error or ", ".join(f"{p.tool_name} ({p.tool_call_id})" for p in outcome.pending)
    return f"run {outcome.run_id} {outcome.status}: {what}"


# --- resume and replay -----------------------------------------------------------------


def execute(fw: Framework, env: SessionEnv, request: RunRequest, loop: Loop[Any]) -> RunOutcome:
    """Re-execute recorded run ``request`` in ``env`` (a resume's or a replay's); return
    how it ended. Runs its own event loop (on a thread of its own when this thread runs
    one already: ``rt.resume`` called from an ``async`` application)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_once(fw, env, request, loop)).outcome
    with ThreadPoolExecutor(1, thread_name_prefix=f"clew-{fw.phase}") as pool:
        return pool.submit(asyncio.run, run_once(fw, env, request, loop)).result().outcome


# --- one execution ---------------------------------------------------------------------


async def run_once(fw: Framework, env: SessionEnv, request: RunRequest, loop: Loop[R]) -> Drive[R]:
    """Execute run ``request`` once (live, or re-executing its recording); every way it
    ends is decided here."""
    rec = env.recorder(brain_agent_id(env.session_id), request.run_id)
    bridge = Bridge(rec, asyncio.get_running_loop(), fw.name)
    drive: Drive[R] = Drive(outcome=_outcome(env, request, "interrupted"))
    try:
        try:
            with rec.commits.committing():
                drive.conv = await bridge.recorded(lambda r: _start(fw, r, request))
                output, drive.result = await loop(env, bridge, request)
                drive.outcome = await bridge.recorded(lambda r: _end(fw, r, drive, output))
        except RunCancelled as stop:
            drive.outcome = await bridge.recorded(partial(_cancelled, drive=drive, e=stop))
        except RunParked as parked:
            drive.outcome = _parked(rec, drive, parked)
    except Exception as e:  # every way a run ends is decided here
        await _stopped(env, bridge, request, drive, fw.leaf(e))
    finally:
        if env.replay_log is not None:
            env.replay_log.count(request.run_id, rec.compared)
    return drive


def _start(fw: Framework, rec: RunRecorder, request: RunRequest) -> Conversation:
    inputs = request.inputs
    metadata = {**inputs.to_metadata(), "framework": {"name": fw.phase, "agent": fw.name}}
    rec.emit(
        RunStarted(
            run_id=request.run_id,
            agent_id=rec.agent_id,
            phase=fw.phase,
            start_node_id=request.parent_node_id,
            rng_seed=rec.rng.getrandbits(63),
            attempt=request.attempt,
            metadata=metadata,
        )
    )
    if inputs.create_agent:
        rec.emit(AgentCreated(agent_id=rec.agent_id, agent_type="orchestrator",
                              role=fw.name, purpose=fw.phase))  # fmt: skip
    rec.emit(AgentStatusChanged(agent_id=rec.agent_id, status="running"))
    rec.flush()  # from here the run is resumable
    conv = Conversation(rec, parent_id=request.parent_node_id, activate=True)
    conv.append("user", [TextBlock(text=inputs.prompt)])
    return conv


def _end(fw: Framework, rec: RunRecorder, drive: Drive[Any], value: Any) -> RunOutcome:
    output = fw.jsonable(value)
    text = output if isinstance(output, str) else msgspec.json.encode(output).decode()
    assert drive.conv is not None
    node = drive.conv.append("assistant", [TextBlock(text=text)])
    outcome = {"status": "completed", "summary": text, "output": output}
    _ended(rec, "completed", node, turn_count=rec.call_index, outcome=outcome)
    return RunOutcome(session_id=rec.session_id, run_id=rec.run_id, status="completed",
                      answer=text, active_node_id=node, output=value)  # fmt: skip


def _cancelled(rec: RunRecorder, drive: Drive[Any], e: RunCancelled) -> RunOutcome:
    tip = drive.conv.tip if drive.conv is not None else None
    rec.emit(AgentStatusChanged(agent_id=rec.agent_id, status="idle"))
    rec.emit(cancelled_run_end(rec.run_id, e, tip, rec.usage))
    return RunOutcome(session_id=rec.session_id, run_id=rec.run_id, status="cancelled",
                      error=e.reason, active_node_id=tip)  # fmt: skip


def _parked(rec: RunRecorder, drive: Drive[Any], e: RunParked) -> RunOutcome:
    """The run waits for a person (its ``run_waiting`` is recorded): it stays open."""
    return RunOutcome(
        session_id=rec.session_id,
        run_id=rec.run_id,
        status="waiting",
        pending=[p for p in e.pending if isinstance(p, PendingApproval)],
        active_node_id=drive.conv.tip if drive.conv is not None else None,
    )


def _failed(rec: RunRecorder, drive: Drive[Any], e: Exception) -> RunOutcome:
    tip = drive.conv.tip if drive.conv is not None else None
    error_type = getattr(e, "error_type", None) or type(e).__name__
    _ended(rec, "failed", tip, error={"type": error_type, "message": str(e)})
    return RunOutcome(session_id=rec.session_id, run_id=rec.run_id, status="failed",
                      error=f"{error_type}: {e}", active_node_id=tip)  # fmt: skip


def _ended(
    rec: RunRecorder, status: Literal["completed", "failed"], tip: str | None, **fields: Any
) -> None:
    """Record the agent's status and ``run_ended`` of a run that ``status`` at ``tip``."""
    agent_status: Literal["idle", "failed"] = "idle" if status == "completed" else "failed"
    rec.emit(AgentStatusChanged(agent_id=rec.agent_id, status=agent_status))
    rec.emit(RunEnded(run_id=rec.run_id, status=status, end_reason=status, end_node_id=tip,
                      usage=rec.usage, **fields))  # fmt: skip


async def _stopped(
    env: SessionEnv, bridge: Bridge, request: RunRequest, drive: Drive[Any], e: Exception
) -> None:
    """Decide how a run that raised ends: a replay's stop, an interruption, a failure."""
    if is_replay_stop(e):
        if env.replay_log is not None:
            env.replay_log.stopped(request.run_id, e)
        status = "diverged" if type(e).__name__ == "Divergence" else "interrupted"
        drive.outcome = _outcome(env, request, status, error=str(e))
        return
    stop = interruption(e)
    if stop is None:
        try:
            drive.outcome = await bridge.recorded(lambda r: _failed(r, drive, e))
            drive.error = e
            return
        except Exception as again:  # the environment failed while recording it
            stop = interruption(again)
            if stop is None:
                raise
    drive.outcome = _outcome(env, request, "interrupted", error=str(stop))


def _outcome(env: SessionEnv, request: RunRequest, status: str, **kw: Any) -> RunOutcome:
    return RunOutcome(session_id=env.session_id, run_id=request.run_id, status=status, **kw)


# --- a model call ----------------------------------------------------------------------


def model_call(
    rec: RunRecorder,
    request: ModelRequest,
    role: str,
    live: Callable[[], tuple[list[ContentBlock], str, Usage]],
) -> ModelResponded:
    """Record one model call of ``role`` (``live()`` asks the model); return its reply.

    ``model_requested`` is durable before the model is asked; the reply is recorded as
    ``model_responded`` and ``token_usage``; re-executing, the recorded reply comes back.
    """
    rec.call_index += 1
    requested = requested_event(
        request,
        call_index=rec.call_index,
        attempt=1,
        request_digest=rec.request_hash(request),
    )
    rec.checkpoint()
    responded = rec.model_call(requested, live, request)
    rec.emit(
        TokenUsage(
            model=responded.model,
            role=role,
            phase="agent",
            call_index=responded.call_index,
            usage=responded.usage,
        )
    )
    return responded


# --- a tool call -----------------------------------------------------------------------


def _error_of(e: Exception) -> tuple[str, str]:
    return type(e).__name__, str(e) or repr(e)


@dataclass(frozen=True)
class ToolCall:
    """One tool call a framework asks for, and how to run it live."""

    started: ToolCallStarted
    #: Run the tool (a coroutine on the run's loop, its clew context set).
    run: Callable[[], Awaitable[Any]]
    #: The calling agent's name.
    role: str
    in_doubt: InDoubtPolicy
    #: The call waits for a person's approval first (live; re-executing: the recording's).
    gated: bool
    #: Return the tool's value as JSON data.
    jsonable: Callable[[Any], Any]
    #: Handed the arguments a person's edit gave the call.
    edit: Callable[[dict[str, Any]], None] | None = None
    #: The ``tool_failed`` error type and message of what the tool raised.
    error_of: Callable[[Exception], tuple[str, str]] = _error_of


async def tool_call(bridge: Bridge, call: ToolCall) -> ToolCallFinished | ToolFailed:
    """Record ``call`` behind its approval gate (:func:`gate`); return its outcome.

    ``tool_call_started`` is committed before the tool runs; re-executing, the recorded
    outcome comes back, and a call left in doubt follows ``call.in_doubt``.
    """
    started = call.started

    async def in_context(context: ToolContext) -> Any:
        set_tool_context(context)  # this task's own copy of the context
        return await call.run()

    def live(rec: RunRecorder) -> ToolCallFinished | ToolFailed:
        call_id, name = started.tool_call_id, started.tool_name
        context = ToolContext(
            tool_call_id=call_id,
            session_id=rec.session_id,
            run_id=rec.run_id,
            agent_id=rec.agent_id,
            role=call.role,
            attempt=rec.tool_attempt,
            cancel=rec.cancel,
        )
        try:
            value = bridge.on_loop(in_context(context))
        except Exception as e:  # an outcome of the tool: recorded, then raised again
            error_type, message = call.error_of(e)
            return ToolFailed(tool_call_id=call_id, tool_name=name,
                              error_type=error_type, message=message)  # fmt: skip
        return ToolCallFinished(tool_call_id=call_id, tool_name=name,
                                content=[JsonBlock(data=call.jsonable(value))])  # fmt: skip

    def step(rec: RunRecorder) -> ToolCallFinished | ToolFailed:
        rec.checkpoint("tool")
        block = ToolCallBlock(
            id=started.tool_call_id, name=started.tool_name, arguments=started.arguments
        )
        decided = gate(rec, block, call.role, call.gated)
        if isinstance(decided, ToolFailed):
            return rec.tool_call(started, lambda: decided, call.in_doubt)
        if decided.arguments != started.arguments and call.edit is not None:
            call.edit(dict(decided.arguments))
        asked = msgspec.structs.replace(started, arguments=dict(decided.arguments))
        return rec.tool_call(asked, lambda: live(rec), call.in_doubt)

    return await bridge.recorded(step)


def gate(
    rec: RunRecorder, call: ToolCallBlock, role: str, gated: bool
) -> ToolCallBlock | ToolFailed:
    """Return the call to run (edited, maybe), or a denial's ``tool_failed``.

    Whether the call waits is the tool's live answer (``gated``); re-executing, the
    recording's (its ``approval_requested`` is next, or not).

    Raises:
        RunParked: the call waits for a person (``run_waiting`` is recorded).
    """
    if rec.replaying:
        nxt = rec.peek()
        recorded = nxt.event if nxt is not None else None
        if not isinstance(recorded, ApprovalRequested) or recorded.tool_call_id != call.id:
            return call
        reason = recorded.reason
    elif gated:
        reason = f"tool {call.name!r} needs approval"
    else:
        return call
    request = ApprovalRequested(tool_call_id=call.id, tool_name=call.name,
                                arguments=dict(call.arguments), agent_id=rec.agent_id,
                                role=role, reason=reason)  # fmt: skip
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
