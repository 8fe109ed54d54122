"""A durable Agents SDK run: each run is a clew main run whose loop is the SDK's ``Runner``.

:class:`DurableRunner` runs an ``Agent`` with ``Runner.run``/``run_streamed`` inside a clew
session and records the run as a main run of a kind of its own (``run_started`` phase
:data:`PHASE`): its inputs, every model call with its usage
(:mod:`actors.openai_agents.model`), every function tool call, handoff, guardrail verdict
and ``needs_approval`` wait (:mod:`actors.openai_agents.tools`,
:mod:`actors.openai_agents.wiring`, :mod:`actors.openai_agents.guardrails`), the memory
operations of an SDK ``Session`` (:mod:`actors.openai_agents.memory`), the user's input and
the final output as nodes of the session's tree, and ``run_ended`` with the output as JSON.
``run`` returns the SDK's ``RunResult``.

Resume and replay re-execute the run *from the start* with the recorder serving the
recording: given the same replies and tool results the SDK takes the same steps, so a
resume asks nothing it already asked (no model call is paid twice, no finished tool runs
again) and goes on live where the recording ends; a replay goes nowhere live and reports
where today's agent (a changed prompt, tool or instructions) leaves the recording. The
application hands the runner back: ``session.resume(agent=runner)``,
``rt.replay(sid, agent=runner)`` (the :class:`~actors.orchestration.brain.RunKind`
protocol: :meth:`DurableRunner.execute`).

Not recorded (the application passes the same again on a resume: give them to the
runner): the ``context``, the ``RunConfig``, ``max_turns``, the memory. The input is one
prompt (a string). A resume or a replay of a streamed run re-executes it with
``Runner.run`` (the same calls, recorded alike).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import msgspec
from agents import Agent, RunConfig, Runner
from agents.exceptions import AgentsException
from agents.memory import Session as SdkSession
from agents.result import RunResult, RunResultStreaming

from actors.errors import DurableRunFailed, NeedsResume, RunCancelled, RunParked, SessionWaiting
from actors.models.tool_policy import ToolPolicy
from actors.models.tools import InDoubtPolicy, ToolRegistry
from actors.openai_agents.memory import RecordedMemory
from actors.openai_agents.messages import jsonable
from actors.openai_agents.tools import Seam
from actors.openai_agents.wiring import Wiring
from actors.orchestration.approvals import PendingApproval
from actors.orchestration.brain import RunRequest
from actors.orchestration.loop import Conversation
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.worker import cancelled_run_end
from actors.recording.bridge import Bridge
from actors.recording.inputs import FLOW, RunInputs
from actors.recording.recorder import RunRecorder
from actors.recording.stops import interruption, is_replay_stop
from actors.runtime.start import check_prompt, owned_run
from actors.runtime.status import OPEN_RUN_STATUSES
from actors.runtime.upkeep import refuse_if_archived
from eventlog.blocks import TextBlock
from eventlog.events import AgentCreated, AgentStatusChanged, RunEnded, RunStarted
from eventlog.ids import brain_agent_id, is_main_run, main_run_id

if TYPE_CHECKING:
    from actors.orchestration.env import SessionEnv
    from actors.runtime.session import Session
    from actors.tasks.manager import TaskManagerProxy

#: The ``run_started`` phase of an Agents SDK run (a Brain's run records ``orchestrate``).
PHASE: Final = "openai-agents"
#: The SDK's own default of ``max_turns``.
_MAX_TURNS: Final = 10


@dataclass
class _Drive:
    """What one execution of a run produced."""

    outcome: RunOutcome
    result: RunResult | None = None
    error: BaseException | None = None
    conv: Conversation | None = field(default=None, repr=False)


@dataclass
class _Handoff:
    """A streamed run's result, handed from the run's task to the caller, and back."""

    ready: asyncio.Future[RunResultStreaming]
    #: Set once the caller left the stream's block: the run may end.
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class _Live:
    """What a live run was given besides its input."""

    memory: SdkSession | None = None
    handoff: _Handoff | None = None


class DurableRunner:
    """Runs of an Agents SDK agent as durable clew main runs (see the module docstring).

    Args:
        agent: the starting agent.
        tools: the crash behaviour of function tools by name (:class:`ToolPolicy`); a tool
            not named here is not idempotent and follows ``in_doubt_policy``.
        in_doubt_policy: what a resume does with a non-idempotent call left in doubt
            (``fail``: the model is told; ``skip``; ``retry``: run it again under the same
            ``idempotency_key``); None: the session's ``RunSettings.in_doubt_policy``.
        run_config: the SDK's ``RunConfig`` of every run (its ``model`` and
            ``model_provider`` resolve the agents' models, as the SDK does).
        context: the SDK ``context`` of every run (a resume's too).
        memory: the SDK ``Session`` of every run unless a run passes its own
            (:class:`~actors.openai_agents.memory.ClewSession` keeps it in clew's store).
        max_turns: the SDK's ``max_turns``.
    """

    #: The runs this kind executes (:class:`~actors.orchestration.brain.RunKind`).
    phase: Final = PHASE

    def __init__(
        self,
        agent: Agent[Any],
        *,
        tools: Mapping[str, ToolPolicy] | None = None,
        in_doubt_policy: InDoubtPolicy | None = None,
        run_config: RunConfig | None = None,
        context: Any = None,
        memory: SdkSession | None = None,
        max_turns: int = _MAX_TURNS,
    ) -> None:
        self.agent = agent
        self.name = agent.name
        self._policies = dict(tools or {})
        self._in_doubt = in_doubt_policy
        self._config = run_config or RunConfig()
        self._context = context
        self._memory = memory
        self._max_turns = max_turns

    # --- live runs -------------------------------------------------------------------------

    async def run(
        self, input: str, *, session: Session, memory: SdkSession | None = None
    ) -> RunResult:
        """Run the agent as a new main run of ``session``; return the SDK's result.

        ``memory``: the SDK ``Session`` of this run (else the runner's). Raises what the
        run raises (the failure is recorded first).

        Raises:
            NeedsResume: the session has an interrupted run.
            DurableRunFailed: the run was interrupted by its environment, or waits for a
                person (``outcome.pending``).
        """
        drive = await self._live(input, session, _Live(memory=memory))
        _check(drive)
        assert drive.result is not None
        return drive.result

    def run_sync(
        self, input: str, *, session: Session, memory: SdkSession | None = None
    ) -> RunResult:
        """:meth:`run` from synchronous code."""
        return asyncio.run(self.run(input, session=session, memory=memory))

    @asynccontextmanager
    async def run_streamed(
        self, input: str, *, session: Session, memory: SdkSession | None = None
    ) -> AsyncIterator[RunResultStreaming]:
        """Stream a new main run of ``session``: ``Runner.run_streamed``'s result, recorded.

        Each model reply is one recorded call: its events stream to the caller as they
        come. The run ends when the block is left.

        Raises:
            DurableRunFailed: the run did not complete (interrupted, waiting).
        """
        handoff = _Handoff(ready=asyncio.get_running_loop().create_future())
        task = asyncio.ensure_future(self._live(input, session, _Live(memory, handoff)))
        await asyncio.wait([handoff.ready, task], return_when=asyncio.FIRST_COMPLETED)
        if not handoff.ready.done():  # the run ended before its stream opened
            drive = await task
            _check(drive)
            raise DurableRunFailed(_failure(drive.outcome), drive.outcome)
        try:
            yield handoff.ready.result()
        finally:
            handoff.done.set()
            drive = await task
        _check(drive)

    async def _live(self, prompt: str, session: Session, given: _Live) -> _Drive:
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
                models={"default": [self._model_label()]},
                settings=engine.settings,
                flow=FLOW,
            )
            request = RunRequest(
                run_id=main_run_id(sid, n), parent_node_id=row.active_node_id, inputs=inputs
            )
            return engine.env(sid, {}, ToolRegistry(), engine.settings), request

        prepared = owned_run(engine, sid, build)
        try:
            drive = await self._drive(prepared.env, prepared.request, given)
            if drive.outcome.status != "interrupted":
                engine.writer.flush()
        finally:
            engine.release(sid)
            engine.release_run(sid)
        return drive

    def _model_label(self) -> str:
        model = self._config.model or self.agent.model
        return model if isinstance(model, str) else type(model).__name__ if model else "default"

    # --- the RunKind protocol: resume and replay -----------------------------------------

    def execute(self, env: SessionEnv, tasks: TaskManagerProxy, request: RunRequest) -> RunOutcome:
        """Re-execute recorded run ``request`` in ``env`` (a resume's or a replay's); return
        how it ended. Runs its own event loop (on a thread of its own when this thread
        runs one already: ``rt.resume`` called from an ``async`` application)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._drive(env, request, _Live())).outcome
        with ThreadPoolExecutor(1, thread_name_prefix="clew-openai-agents") as pool:
            return pool.submit(asyncio.run, self._drive(env, request, _Live())).result().outcome

    # --- one execution ---------------------------------------------------------------------

    async def _drive(self, env: SessionEnv, request: RunRequest, given: _Live) -> _Drive:
        rec = env.recorder(brain_agent_id(env.session_id), request.run_id)
        bridge = Bridge(rec, asyncio.get_running_loop(), self.name)
        drive = _Drive(outcome=_outcome(env, request, "interrupted"))
        try:
            try:
                with rec.commits.committing():
                    drive.conv = await bridge.recorded(lambda r: self._start(r, request))
                    output, drive.result = await self._sdk_run(env, bridge, request, given)
                    drive.outcome = await bridge.recorded(lambda r: self._end(r, drive, output))
            except RunCancelled as stop:
                drive.outcome = await bridge.recorded(partial(self._cancelled, drive=drive, e=stop))
            except RunParked as parked:
                drive.outcome = _parked(rec, drive, parked)
        except Exception as e:  # every way a run ends is decided here
            await self._stopped(env, bridge, request, drive, _leaf(e))
        finally:
            if env.replay_log is not None:
                env.replay_log.count(request.run_id, rec.compared)
        return drive

    async def _sdk_run(
        self, env: SessionEnv, bridge: Bridge, request: RunRequest, given: _Live
    ) -> tuple[Any, RunResult | None]:
        """Run the agent with the SDK's ``Runner``; return its output and result."""
        in_doubt = self._in_doubt or env.settings.in_doubt_policy
        seam = Seam(bridge, self._policies, in_doubt, env.settings.approval_required)
        wiring = Wiring(seam, self._config)
        agent = wiring.agent(self.agent)
        config = wiring.sdk_config
        memory = given.memory or self._memory
        recorded = RecordedMemory(memory, seam) if memory is not None else None
        prompt = request.inputs.prompt
        kwargs: dict[str, Any] = {
            "context": self._context,
            "max_turns": self._max_turns,
            "run_config": config,
            "session": recorded,
        }
        try:
            if given.handoff is None:
                result = await Runner.run(agent, prompt, **kwargs)
                return result.final_output, result
            streamed = Runner.run_streamed(agent, prompt, **kwargs)
            given.handoff.ready.set_result(streamed)
            await given.handoff.done.wait()
            async for _ in streamed.stream_events():  # the caller may have left early
                pass
            return streamed.final_output, None
        except Exception as e:  # the SDK wraps what a tool raised: clew's own goes up as it is
            leaf = _leaf(e)
            if leaf is not e and isinstance(leaf, RunParked | RunCancelled):
                raise leaf from None
            raise

    # --- the run's own events -------------------------------------------------------------

    def _start(self, rec: RunRecorder, request: RunRequest) -> Conversation:
        inputs = request.inputs
        metadata = {**inputs.to_metadata(), "framework": {"name": PHASE, "agent": self.name}}
        rec.emit(
            RunStarted(
                run_id=request.run_id,
                agent_id=rec.agent_id,
                phase=PHASE,
                start_node_id=request.parent_node_id,
                rng_seed=rec.rng.getrandbits(63),
                attempt=request.attempt,
                metadata=metadata,
            )
        )
        if inputs.create_agent:
            rec.emit(
                AgentCreated(
                    agent_id=rec.agent_id, agent_type="orchestrator", role=self.name, purpose=PHASE
                )
            )
        rec.emit(AgentStatusChanged(agent_id=rec.agent_id, status="running"))
        rec.flush()  # from here the run is resumable
        conv = Conversation(rec, parent_id=request.parent_node_id, activate=True)
        conv.append("user", [TextBlock(text=inputs.prompt)])
        return conv

    def _end(self, rec: RunRecorder, drive: _Drive, value: Any) -> RunOutcome:
        output = jsonable(value)
        text = output if isinstance(output, str) else msgspec.json.encode(output).decode()
        assert drive.conv is not None
        node = drive.conv.append("assistant", [TextBlock(text=text)])
        rec.emit(AgentStatusChanged(agent_id=rec.agent_id, status="idle"))
        rec.emit(
            RunEnded(
                run_id=rec.run_id,
                status="completed",
                end_reason="completed",
                end_node_id=node,
                turn_count=rec.call_index,
                usage=rec.usage,
                outcome={"status": "completed", "summary": text, "output": output},
            )
        )
        return RunOutcome(
            session_id=rec.session_id,
            run_id=rec.run_id,
            status="completed",
            answer=text,
            active_node_id=node,
            output=value,
        )

    def _cancelled(self, rec: RunRecorder, drive: _Drive, e: RunCancelled) -> RunOutcome:
        tip = drive.conv.tip if drive.conv is not None else None
        rec.emit(AgentStatusChanged(agent_id=rec.agent_id, status="idle"))
        rec.emit(cancelled_run_end(rec.run_id, e, tip, rec.usage))
        return RunOutcome(
            session_id=rec.session_id,
            run_id=rec.run_id,
            status="cancelled",
            error=e.reason,
            active_node_id=tip,
        )

    async def _stopped(
        self, env: SessionEnv, bridge: Bridge, request: RunRequest, drive: _Drive, e: Exception
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


def _check(drive: _Drive) -> None:
    """Raise what the run raised, or :class:`DurableRunFailed` if it did not complete."""
    if drive.error is not None:
        raise drive.error
    if drive.outcome.status != "completed":
        raise DurableRunFailed(_failure(drive.outcome), drive.outcome)


def _parked(rec: RunRecorder, drive: _Drive, e: RunParked) -> RunOutcome:
    """The run waits for a person (its ``run_waiting`` is recorded): it stays open."""
    return RunOutcome(
        session_id=rec.session_id,
        run_id=rec.run_id,
        status="waiting",
        pending=[p for p in e.pending if isinstance(p, PendingApproval)],
        active_node_id=drive.conv.tip if drive.conv is not None else None,
    )


def _failed(rec: RunRecorder, drive: _Drive, e: Exception) -> RunOutcome:
    tip = drive.conv.tip if drive.conv is not None else None
    error_type = getattr(e, "error_type", None) or type(e).__name__
    rec.emit(AgentStatusChanged(agent_id=rec.agent_id, status="failed"))
    rec.emit(
        RunEnded(
            run_id=rec.run_id,
            status="failed",
            end_reason="failed",
            end_node_id=tip,
            usage=rec.usage,
            error={"type": error_type, "message": str(e)},
        )
    )
    return RunOutcome(
        session_id=rec.session_id,
        run_id=rec.run_id,
        status="failed",
        error=f"{error_type}: {e}",
        active_node_id=tip,
    )


def _outcome(env: SessionEnv, request: RunRequest, status: str, **kw: Any) -> RunOutcome:
    return RunOutcome(session_id=env.session_id, run_id=request.run_id, status=status, **kw)


def _leaf(e: Exception) -> Exception:
    """Return what ``e`` wraps: the first exception of an exception group, the cause the
    SDK wrapped (``UserError("Error running tool …") from e``), else ``e``."""
    while True:
        if (
            isinstance(e, ExceptionGroup)
            and e.exceptions
            and isinstance(e.exceptions[0], Exception)
        ):
            e = e.exceptions[0]
        elif isinstance(e, AgentsException) and isinstance(e.__cause__, Exception):
            e = e.__cause__
        else:
            return e


def _failure(outcome: RunOutcome) -> str:
    """Say why a durable run did not complete: its error, or what it waits for."""
    what = outcome.error or ", ".join(f"{p.tool_name} ({p.tool_call_id})" for p in outcome.pending)
    return f"run {outcome.run_id} {outcome.status}: {what}"
