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

An agent's MCP servers' tool lists are recorded, and a server the application has not
connected is connected when a step goes live and cleaned up after the run
(:func:`~actors.openai_agents.tools.recorded_servers`): a resume or a replay runs on an
event loop of its own, where a server connected on the application's loop cannot serve,
and a replay never starts one.

The input is a prompt (a string) or a list of input items (``result.to_input_list()`` of an
earlier run, with a new user message: a conversation going on without an SDK ``Session``).
A list is recorded whole as the run's ``RunInputs.history`` (inputs version 7;
:func:`~actors.openai_agents.messages.run_input`), and every execution — live, resumed,
replayed — gives the SDK the recorded items, so each asks the model what
``Runner.run(agent, items)`` asks; the text of its last user message is the run's prompt
(its user node). A string records inputs version 6, as before.

Not recorded (the application passes the same again on a resume: give them to the
runner): the ``context``, the ``RunConfig``, ``max_turns``, the memory. A resume or a
replay of a streamed run re-executes it with ``Runner.run`` (the same calls, recorded
alike).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from agents import Agent, RunConfig, Runner
from agents.exceptions import AgentsException
from agents.items import TResponseInputItem
from agents.memory import Session as SdkSession
from agents.result import RunResult, RunResultStreaming

from actors.errors import RunCancelled, RunParked
from actors.models.tool_policy import ToolPolicy
from actors.models.tools import InDoubtPolicy
from actors.openai_agents.memory import RecordedMemory
from actors.openai_agents.messages import jsonable, run_input
from actors.openai_agents.tools import Seam, recorded_servers
from actors.openai_agents.wiring import Wiring
from actors.recording.framework_run import (
    Drive,
    Framework,
    Handoff,
    execute,
    first_exception,
    live_run,
    result,
    streamed,
)

if TYPE_CHECKING:
    from actors.orchestration.brain import RunRequest
    from actors.orchestration.env import SessionEnv
    from actors.orchestration.main_run import RunOutcome
    from actors.recording.bridge import Bridge
    from actors.runtime.session import Session
    from actors.tasks.manager import TaskManagerProxy

#: The ``run_started`` phase of an Agents SDK run (a Brain's run records ``orchestrate``).
PHASE: Final = "openai-agents"
#: What a run is given: a prompt, or a list of input items.
Input = str | list[TResponseInputItem]
#: The SDK's own default of ``max_turns``.
_MAX_TURNS: Final = 10


@dataclass
class _Live:
    """What a live run was given besides its input."""

    memory: SdkSession | None = None
    handoff: Handoff[RunResultStreaming] | None = None


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

    @property
    def _framework(self) -> Framework:
        return Framework(PHASE, self.name, jsonable, _leaf)

    # --- live runs -------------------------------------------------------------------------

    async def run(
        self, input: Input, *, session: Session, memory: SdkSession | None = None
    ) -> RunResult:
        """Run the agent as a new main run of ``session``; return the SDK's result.

        ``input``: a prompt, or a list of input items (recorded with the run: see the
        module docstring). ``memory``: the SDK ``Session`` of this run (else the
        runner's); with a list, the SDK runs on the memory's items followed by the
        list's, and adds the list's to it, as ``Runner.run`` does. Raises what the run
        raises (the failure is recorded first).

        Raises:
            NeedsResume: the session has an interrupted run.
            DurableRunFailed: the run was interrupted by its environment, or waits for a
                person (``outcome.pending``).
            UsageError: an input list that cannot be recorded, or holds no user message
                with text (nothing is written).
        """
        return result(await self._live(input, session, _Live(memory=memory)))

    def run_sync(
        self, input: Input, *, session: Session, memory: SdkSession | None = None
    ) -> RunResult:
        """:meth:`run` from synchronous code."""
        return asyncio.run(self.run(input, session=session, memory=memory))

    @asynccontextmanager
    async def run_streamed(
        self, input: Input, *, session: Session, memory: SdkSession | None = None
    ) -> AsyncIterator[RunResultStreaming]:
        """Stream a new main run of ``session``: ``Runner.run_streamed``'s result, recorded.

        Each model reply is one recorded call: its events stream to the caller as they
        come. The run ends when the block is left.

        Raises:
            DurableRunFailed: the run did not complete (interrupted, waiting).
            UsageError: an input list that cannot be recorded (as :meth:`run`).
        """
        live = partial(self._streamed, input, session, memory)
        async with streamed(live) as stream:
            yield stream

    async def _streamed(
        self,
        input: Input,
        session: Session,
        memory: SdkSession | None,
        handoff: Handoff[RunResultStreaming],
    ) -> Drive[RunResult]:
        return await self._live(input, session, _Live(memory, handoff))

    async def _live(self, input: Input, session: Session, given: _Live) -> Drive[RunResult]:
        prompt, items = run_input(input)
        loop = partial(self._sdk_run, given=given)
        model = self._model_label()
        return await live_run(self._framework, session, prompt, model, loop, items)

    def _model_label(self) -> str:
        model = self._config.model or self.agent.model
        return model if isinstance(model, str) else type(model).__name__ if model else "default"

    # --- the RunKind protocol: resume and replay -----------------------------------------

    def execute(self, env: SessionEnv, tasks: TaskManagerProxy, request: RunRequest) -> RunOutcome:
        """Re-execute recorded run ``request`` in ``env`` (a resume's or a replay's); return
        how it ended (:func:`actors.recording.framework_run.execute`)."""
        return execute(self._framework, env, request, partial(self._sdk_run, given=_Live()))

    # --- one execution ---------------------------------------------------------------------

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
        history = request.inputs.history  # the recorded input items (a copy: the SDK's own)
        prompt = request.inputs.prompt if history is None else copy.deepcopy(history)
        kwargs: dict[str, Any] = {
            "context": self._context,
            "max_turns": self._max_turns,
            "run_config": config,
            "session": recorded,
        }
        try:
            servers = [s for a in wiring.by_name.values() for s in a.mcp_servers]
            async with recorded_servers(servers, bridge):
                if given.handoff is None:
                    done = await Runner.run(agent, prompt, **kwargs)
                    return done.final_output, done
                stream = Runner.run_streamed(agent, prompt, **kwargs)
                given.handoff.ready.set_result(stream)
                await given.handoff.done.wait()
                async for _ in stream.stream_events():  # the caller may have left early
                    pass
                return stream.final_output, None
        except Exception as e:  # the SDK wraps what a tool raised: clew's own goes up as it is
            leaf = _leaf(e)
            if leaf is not e and isinstance(leaf, RunParked | RunCancelled):
                raise leaf from None
            raise


def _leaf(e: Exception) -> Exception:
    """Return what ``e`` wraps: the first exception of an exception group, the cause the
    SDK wrapped (``UserError("Error running tool …") from e``), else ``e``."""
    while True:
        e = first_exception(e)
        if not (isinstance(e, AgentsException) and isinstance(e.__cause__, Exception)):
            return e
        e = e.__cause__
