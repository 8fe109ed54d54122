"""A durable Pydantic AI agent: each run is a clew main run whose loop is the framework's.

:class:`DurableAgent` wraps an ``Agent`` (as Pydantic AI's Temporal, DBOS and Prefect
wrappers do: a wrapped model, wrapped toolsets). ``run``, ``run_sync``, ``run_stream``
and ``iter`` inside a clew session record the run as a main run of a kind of its own
(``run_started`` phase :data:`PHASE`): its inputs (a ``message_history`` among them),
every model request and reply with usage (:mod:`actors.pydantic_ai.model`), every tool
call (:mod:`actors.pydantic_ai.toolset`), the user's prompt and the final output as nodes
of the session's tree, and ``run_ended`` with the output as JSON. They return what the
wrapped agent returns.

Resume and replay re-execute the agent *from the start* with the recorder serving the
recording: given the same replies and tool results the framework takes the same steps, so
a resume asks nothing it already asked (no model call is paid twice, no finished tool
runs again) and goes on live where the recording ends; a replay goes nowhere live and
reports where today's agent (a changed prompt, tool or instructions) leaves the
recording. The application hands the agent back: ``session.resume(agent=durable)``,
``rt.replay(sid, agent=durable)`` (the :class:`~actors.orchestration.brain.RunKind`
protocol: :meth:`DurableAgent.execute`).

Not recorded (the application passes the same again on a resume): ``deps`` (give them
to the wrapper), ``model_settings``, ``usage_limits``. A run's ``message_history`` is
recorded in its inputs (Pydantic AI's JSON of the messages) and every execution of the
run, the live one included, hands the framework that recorded conversation. ``iter``
runs each node in the run's own task (:mod:`actors.pydantic_ai.agent_run`). A resume or a
replay of a streamed or an iterated run re-executes it with ``Agent.run`` (the same
requests, recorded alike).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from pydantic_ai import Agent
from pydantic_ai.agent import AgentRun, AgentRunResult
from pydantic_ai.models import Model, infer_model
from pydantic_ai.result import StreamedRunResult

from actors.errors import DurableRunFailed
from actors.models.tools import InDoubtPolicy
from actors.pydantic_ai.agent_run import DurableAgentRun
from actors.pydantic_ai.messages import history_json, history_of, jsonable
from actors.pydantic_ai.model import RecordedModel
from actors.pydantic_ai.toolset import RecordedToolset, ToolPolicy
from actors.recording.framework_run import (
    Drive,
    Framework,
    Handoff,
    Steps,
    execute,
    live_run,
    result,
    streamed,
)
from eventlog.errors import ClewError

if TYPE_CHECKING:
    from actors.orchestration.brain import RunRequest
    from actors.orchestration.env import SessionEnv
    from actors.orchestration.main_run import RunOutcome
    from actors.recording.bridge import Bridge
    from actors.runtime.session import Session
    from actors.tasks.manager import TaskManagerProxy

#: The ``run_started`` phase of a Pydantic AI run (a Brain's run records ``orchestrate``).
PHASE: Final = "pydantic-ai"


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

    @property
    def _framework(self) -> Framework:
        return Framework(PHASE, self.name, jsonable)

    # --- live runs -------------------------------------------------------------------------

    async def run(
        self, user_prompt: str, *, session: Session, **kwargs: Any
    ) -> AgentRunResult[Any]:
        """Run the agent as a new main run of ``session``; return the agent's result.

        ``kwargs`` go to ``Agent.run``; a ``message_history`` is recorded with the run.
        Raises what the agent raises (the failure is recorded first).

        Raises:
            NeedsResume: the session has an interrupted run.
            DurableRunFailed: the run was interrupted by its environment.
            UsageError: a ``message_history`` that cannot be recorded (nothing is written).
        """
        return result(await self._live(user_prompt, session, kwargs))

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
            UsageError: a ``message_history`` that cannot be recorded (nothing is written).
        """
        live = partial(self._live, user_prompt, session, kwargs)
        async with streamed(live) as stream:
            yield stream

    @asynccontextmanager
    async def iter(
        self, user_prompt: str, *, session: Session, **kwargs: Any
    ) -> AsyncIterator[DurableAgentRun]:
        """Drive a new main run of ``session`` node by node, as ``Agent.iter`` does.

        ``async with desk.iter(prompt, session=…) as run: async for node in run: …``; the
        nodes run in the run's own task (:class:`DurableAgentRun`), so they are recorded
        as :meth:`run` records them. Leaving the block before the ``End`` lets the run go
        on to its end, as leaving :meth:`run_stream` early does (the run is recorded whole:
        a resume or a replay re-executes it with ``Agent.run``). A node that fails raises
        what :meth:`run` raises, once the failure is recorded.

        Raises:
            DurableRunFailed: the run did not complete (interrupted, waiting).
            UsageError: a ``message_history`` that cannot be recorded (nothing is written).
        """
        live = partial(self._live, user_prompt, session, kwargs, stepped=True)
        async with streamed(live) as run:
            yield run

    async def _live(
        self,
        prompt: str,
        session: Session,
        kwargs: dict[str, Any],
        handoff: Handoff[Any] | None = None,
        *,
        stepped: bool = False,
    ) -> Drive[AgentRunResult[Any]]:
        kwargs = dict(kwargs)
        history = history_json(kwargs.pop("message_history", None))
        loop = partial(self._agent_run, kwargs=kwargs, handoff=handoff, stepped=stepped)
        model = self.model.model_name
        return await live_run(self._framework, session, prompt, model, loop, history)

    # --- the RunKind protocol: resume and replay -----------------------------------------

    def execute(self, env: SessionEnv, tasks: TaskManagerProxy, request: RunRequest) -> RunOutcome:
        """Re-execute recorded run ``request`` in ``env`` (a resume's or a replay's); return
        how it ended (:func:`actors.recording.framework_run.execute`)."""
        return execute(self._framework, env, request, partial(self._agent_run, kwargs={}))

    # --- one execution ---------------------------------------------------------------------

    async def _agent_run(
        self,
        env: SessionEnv,
        bridge: Bridge,
        request: RunRequest,
        kwargs: dict[str, Any],
        handoff: Handoff[Any] | None = None,
        *,
        stepped: bool = False,
    ) -> tuple[Any, AgentRunResult[Any] | None]:
        """Run the agent (streamed with ``handoff``; node by node if ``stepped`` too);
        return its output and result."""
        kwargs = dict(kwargs)
        if self._deps is not None:
            kwargs.setdefault("deps", self._deps)
        if request.inputs.history is not None:
            kwargs["message_history"] = history_of(request.inputs.history)
        prompt = request.inputs.prompt
        with self._overrides(env, bridge):
            if handoff is None:
                done = await self.wrapped.run(prompt, **kwargs)
                return done.output, done
            if stepped:
                return await self._stepped(prompt, kwargs, handoff)
            async with self.wrapped.run_stream(prompt, **kwargs) as stream:
                handoff.ready.set_result(stream)
                await handoff.done.wait()
                return await stream.get_output(), None

    async def _stepped(
        self, prompt: str, kwargs: dict[str, Any], handoff: Handoff[DurableAgentRun]
    ) -> tuple[Any, AgentRunResult[Any]]:
        """Run ``Agent.iter``'s nodes as the caller asks for them, then to the end."""
        steps = Steps()
        run: AgentRun[Any, Any]
        async with self.wrapped.iter(prompt, **kwargs) as run:
            handoff.ready.set_result(DurableAgentRun(run, steps))
            await steps.serve(handoff.done)
            if run.result is None:  # the caller left the block early: the run goes on
                async for _ in run:
                    pass
        done = run.result
        assert done is not None
        return done.output, done

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


__all__ = ["PHASE", "DurableAgent", "DurableAgentRun", "DurableRunFailed"]
