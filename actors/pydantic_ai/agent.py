"""A durable Pydantic AI agent: each run is a clew main run whose loop is the framework's.

:class:`DurableAgent` wraps an ``Agent`` (as Pydantic AI's Temporal, DBOS and Prefect
wrappers do: a wrapped model, wrapped toolsets). ``run``/``run_sync``/``run_stream``
inside a clew session record the run as a main run of a kind of its own (``run_started``
phase :data:`PHASE`): its inputs, every model request and reply with usage
(:mod:`actors.pydantic_ai.model`), every tool call (:mod:`actors.pydantic_ai.toolset`),
the user's prompt and the final output as nodes of the session's tree, and
``run_ended`` with the output as JSON. They return what the wrapped agent returns.

Resume and replay re-execute the agent *from the start* with the recorder serving the
recording: given the same replies and tool results the framework takes the same steps, so
a resume asks nothing it already asked (no model call is paid twice, no finished tool
runs again) and goes on live where the recording ends; a replay goes nowhere live and
reports where today's agent (a changed prompt, tool or instructions) leaves the
recording. The application hands the agent back: ``session.resume(agent=durable)``,
``rt.replay(sid, agent=durable)`` (the :class:`~actors.orchestration.brain.RunKind`
protocol: :meth:`DurableAgent.execute`).

Not recorded (the application passes the same again on a resume): ``deps`` (give them
to the wrapper), ``model_settings``, ``usage_limits``. Each run starts a conversation of
its own (``message_history`` is not part of the recording yet). A resume or a replay of a
streamed run re-executes it with ``Agent.run`` (the same requests, recorded alike).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import msgspec
from pydantic_ai import Agent
from pydantic_ai.agent import AgentRunResult
from pydantic_ai.models import Model, infer_model
from pydantic_ai.result import StreamedRunResult

from actors.errors import DurableRunFailed, NeedsResume, RunCancelled, RunParked, SessionWaiting
from actors.models.tools import InDoubtPolicy, ToolRegistry
from actors.orchestration.approvals import PendingApproval
from actors.orchestration.brain import RunRequest
from actors.orchestration.loop import Conversation
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.worker import cancelled_run_end
from actors.pydantic_ai.messages import jsonable
from actors.pydantic_ai.model import RecordedModel
from actors.pydantic_ai.toolset import RecordedToolset, ToolPolicy
from actors.recording.bridge import Bridge
from actors.recording.inputs import FLOW, RunInputs
from actors.recording.recorder import RunRecorder
from actors.recording.stops import interruption, is_replay_stop
from actors.runtime.start import check_prompt, owned_run
from actors.runtime.status import OPEN_RUN_STATUSES
from actors.runtime.upkeep import refuse_if_archived
from eventlog.blocks import TextBlock
from eventlog.errors import ClewError
from eventlog.events import AgentCreated, AgentStatusChanged, RunEnded, RunStarted
from eventlog.ids import brain_agent_id, is_main_run, main_run_id

if TYPE_CHECKING:
    from actors.orchestration.env import SessionEnv
    from actors.runtime.session import Session
    from actors.tasks.manager import TaskManagerProxy

#: The ``run_started`` phase of a Pydantic AI run (a Brain's run records ``orchestrate``).
PHASE: Final = "pydantic-ai"


@dataclass
class _Drive:
    """What one execution of a run produced."""

    outcome: RunOutcome
    result: AgentRunResult[Any] | None = None
    error: BaseException | None = None
    conv: Conversation | None = field(default=None, repr=False)


@dataclass
class _Handoff:
    """A streamed run's stream, handed from the run's task to the caller, and back."""

    ready: asyncio.Future[StreamedRunResult[Any, Any]]
    #: Set once the caller left the stream's block: the run may end.
    done: asyncio.Event = field(default_factory=asyncio.Event)


class DurableAgent:
    """A Pydantic AI agent whose runs are durable clew main runs (see the module docstring).

    Args:
        agent: the agent; its model must be set (a ``Model`` or a model name).
        tools: the crash behaviour of tools by name (:class:`ToolPolicy`); a tool not
            named here reads it from its ``metadata={"clew": {...}}``, else it is not
            idempotent and follows ``in_doubt_policy``.
        in_doubt_policy: what a resume does with a non-idempotent call left in doubt
            (``fail``: the model is told; ``skip``; ``retry``: run it again under the same
            ``idempotency_key``); None: the session's ``RunSettings.in_doubt_policy``.
        deps: the ``deps`` of every run (a resume's too) unless a run passes its own.
    """

    #: The runs this kind executes (:class:`~actors.orchestration.brain.RunKind`).
    phase: Final = PHASE

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        tools: Mapping[str, ToolPolicy] | None = None,
        in_doubt_policy: InDoubtPolicy | None = None,
        deps: Any = None,
    ) -> None:
        if agent.model is None:
            raise ClewError("a durable agent needs its model set on the Agent")
        self.wrapped = agent
        self.model: Model = infer_model(agent.model)
        self.name = agent.name or "agent"
        self._policies = dict(tools or {})
        self._in_doubt = in_doubt_policy
        self._deps = deps

    # --- live runs -------------------------------------------------------------------------

    async def run(
        self, user_prompt: str, *, session: Session, **kwargs: Any
    ) -> AgentRunResult[Any]:
        """Run the agent as a new main run of ``session``; return the agent's result.

        ``kwargs`` go to ``Agent.run``. Raises what the agent raises (the failure is
        recorded first).

        Raises:
            NeedsResume: the session has an interrupted run.
            DurableRunFailed: the run was interrupted by its environment.
        """
        drive = await self._live(user_prompt, session, kwargs)
        return self._result(drive)

    def run_sync(self, user_prompt: str, *, session: Session, **kwargs: Any) -> AgentRunResult[Any]:
        """:meth:`run` from synchronous code."""
        return asyncio.run(self.run(user_prompt, session=session, **kwargs))

    @asynccontextmanager
    async def run_stream(
        self, user_prompt: str, *, session: Session, **kwargs: Any
    ) -> AsyncIterator[StreamedRunResult[Any, Any]]:
        """Stream a new main run of ``session``: ``Agent.run_stream``'s result, recorded.

        Each model reply is one recorded call: it streams to the caller once complete (a
        resume or a replay streams the recorded one). The run ends when the block is left.

        Raises:
            DurableRunFailed: the run did not complete (interrupted, waiting).
        """
        handoff = _Handoff(ready=asyncio.get_running_loop().create_future())
        task = asyncio.ensure_future(self._live(user_prompt, session, kwargs, handoff))
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

    async def _live(
        self,
        prompt: str,
        session: Session,
        kwargs: dict[str, Any],
        handoff: _Handoff | None = None,
    ) -> _Drive:
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
                models={"default": [self.model.model_name]},
                settings=engine.settings,
                flow=FLOW,
            )
            request = RunRequest(
                run_id=main_run_id(sid, n), parent_node_id=row.active_node_id, inputs=inputs
            )
            return engine.env(sid, {}, ToolRegistry(), engine.settings), request

        prepared = owned_run(engine, sid, build)
        try:
            drive = await self._drive(prepared.env, prepared.request, kwargs, handoff)
            if drive.outcome.status != "interrupted":
                engine.writer.flush()
        finally:
            engine.release(sid)
            engine.release_run(sid)
        return drive

    def _result(self, drive: _Drive) -> AgentRunResult[Any]:
        _check(drive)
        assert drive.result is not None
        return drive.result

    # --- the RunKind protocol: resume and replay -----------------------------------------

    def execute(self, env: SessionEnv, tasks: TaskManagerProxy, request: RunRequest) -> RunOutcome:
        """Re-execute recorded run ``request`` in ``env`` (a resume's or a replay's); return
        how it ended. Runs its own event loop (on a thread of its own when this thread
        runs one already: ``rt.resume`` called from an ``async`` application)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._drive(env, request, {})).outcome
        with ThreadPoolExecutor(1, thread_name_prefix="clew-pydantic-ai") as pool:
            return pool.submit(asyncio.run, self._drive(env, request, {})).result().outcome

    # --- one execution ---------------------------------------------------------------------

    async def _drive(
        self,
        env: SessionEnv,
        request: RunRequest,
        kwargs: dict[str, Any],
        handoff: _Handoff | None = None,
    ) -> _Drive:
        agent_id = brain_agent_id(env.session_id)
        rec = env.recorder(agent_id, request.run_id)
        bridge = Bridge(rec, asyncio.get_running_loop(), self.name)
        drive = _Drive(outcome=_outcome(env, request, "interrupted"))
        try:
            try:
                with rec.commits.committing():
                    drive.conv = await bridge.recorded(lambda r: self._start(r, request))
                    output, drive.result = await self._agent_run(
                        env, bridge, request, kwargs, handoff
                    )
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

    async def _agent_run(
        self,
        env: SessionEnv,
        bridge: Bridge,
        request: RunRequest,
        kwargs: dict[str, Any],
        handoff: _Handoff | None,
    ) -> tuple[Any, AgentRunResult[Any] | None]:
        """Run the agent (streamed, with ``handoff``); return its output and result."""
        kwargs = dict(kwargs)
        if self._deps is not None:
            kwargs.setdefault("deps", self._deps)
        prompt = request.inputs.prompt
        with self._overrides(env, bridge):
            if handoff is None:
                result = await self.wrapped.run(prompt, **kwargs)
                return result.output, result
            async with self.wrapped.run_stream(prompt, **kwargs) as streamed:
                handoff.ready.set_result(streamed)
                await handoff.done.wait()
                return await streamed.get_output(), None

    @contextmanager
    def _overrides(self, env: SessionEnv, bridge: Bridge) -> Iterator[None]:
        in_doubt = self._in_doubt or env.settings.in_doubt_policy
        required = env.settings.approval_required
        toolsets = [
            RecordedToolset(ts, bridge, self._policies, in_doubt, required)
            for ts in self.wrapped.toolsets
        ]
        model = RecordedModel(self.model, bridge)
        with (
            self.wrapped.override(model=model, toolsets=toolsets, tools=[]),
            self.wrapped.parallel_tool_call_execution_mode("sequential"),
        ):
            yield

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
            rec.emit(AgentCreated(agent_id=rec.agent_id, agent_type="orchestrator",
                                  role=self.name, purpose=PHASE))  # fmt: skip
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
        return RunOutcome(session_id=rec.session_id, run_id=rec.run_id, status="completed",
                          answer=text, active_node_id=node, output=value)  # fmt: skip

    def _cancelled(self, rec: RunRecorder, drive: _Drive, e: RunCancelled) -> RunOutcome:
        tip = drive.conv.tip if drive.conv is not None else None
        rec.emit(AgentStatusChanged(agent_id=rec.agent_id, status="idle"))
        rec.emit(cancelled_run_end(rec.run_id, e, tip, rec.usage))
        return RunOutcome(session_id=rec.session_id, run_id=rec.run_id, status="cancelled",
                          error=e.reason, active_node_id=tip)  # fmt: skip

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
    return RunOutcome(session_id=rec.session_id, run_id=rec.run_id, status="failed",
                      error=f"{error_type}: {e}", active_node_id=tip)  # fmt: skip


def _outcome(env: SessionEnv, request: RunRequest, status: str, **kw: Any) -> RunOutcome:
    return RunOutcome(session_id=env.session_id, run_id=request.run_id, status=status, **kw)


def _leaf(e: Exception) -> Exception:
    """Return the first exception of an exception group (a task group's), else ``e``."""
    while isinstance(e, ExceptionGroup) and e.exceptions:
        first = e.exceptions[0]
        if not isinstance(first, Exception):
            break
        e = first
    return e


__all__ = ["PHASE", "DurableAgent", "DurableRunFailed"]


def _failure(outcome: RunOutcome) -> str:
    """Say why a durable run did not complete: its error, or what it waits for."""
    what = outcome.error or ", ".join(f"{p.tool_name} ({p.tool_call_id})" for p in outcome.pending)
    return f"run {outcome.run_id} {outcome.status}: {what}"
