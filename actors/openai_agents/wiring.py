"""The agent graph of one durable run: each agent a copy whose model and tools are recorded.

The SDK resolves a turn's model, tools and handoffs from the agent it is running, so one
run's recording seams go *into* its agents: :class:`Wiring` copies the starting agent and
every agent its handoffs reach (once each: a graph may loop) as a :class:`RecordedAgent`
whose model is a :class:`~actors.openai_agents.model.RecordedModel` (under the agent's name
as the role), whose function tools — its own, its MCP servers', agents as tools — are
recorded (:func:`~actors.openai_agents.tools.recorded_tool`) and whose guardrails' verdicts
are recorded (:mod:`actors.openai_agents.guardrails`) and whose handoffs lead to the copies.
A handoff is recorded as the call the model made
(``tool_call_started``/``tool_call_finished`` of ``transfer_to_…``, the target agent's name
as its result); from there the run's model calls carry the new agent's name as their role.
The SDK's results and hooks see the application's own agents (each copy is tagged with its
original as the SDK's "public agent")."""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from agents import Agent, RunConfig
from agents._public_agent import set_public_agent
from agents.handoffs import Handoff, handoff
from agents.models.interface import Model
from agents.run_context import RunContextWrapper
from agents.tool import FunctionTool, Tool

from actors.openai_agents.guardrails import recorded_input_guardrail, recorded_output_guardrail
from actors.openai_agents.model import RecordedModel
from actors.openai_agents.tools import Seam, recorded_tool
from eventlog.blocks import JsonBlock
from eventlog.events import ToolCallFinished, ToolCallStarted, ToolFailed


@dataclasses.dataclass
class RecordedAgent(Agent[Any]):
    """An agent of a durable run: its tools, MCP tools included, recorded each turn."""

    #: The run's wiring (set by :class:`Wiring`; None on an agent copied outside it).
    clew_wiring: Any = dataclasses.field(default=None, repr=False, compare=False)

    async def get_all_tools(self, run_context: RunContextWrapper[Any]) -> list[Tool]:
        tools = await super().get_all_tools(run_context)
        wiring: Wiring | None = self.clew_wiring
        return tools if wiring is None else [wiring.tool(t, self.name) for t in tools]


def model_name(agent: Agent[Any], config: RunConfig, model: Model) -> str:
    """Return the name of the model ``agent`` runs on, as ``clew calls`` shows it."""
    for named in (config.model, agent.model):
        if isinstance(named, str):
            return named
    return str(getattr(model, "model", None) or type(model).__name__)


class Wiring:
    """The recorded copies of one run's agents (see the module docstring)."""

    def __init__(self, seam: Seam, config: RunConfig) -> None:
        self.seam = seam
        self.config = config
        #: The run's own config for the SDK: no model (each copy has its recorded one),
        #: its run-level guardrails recorded.
        self.sdk_config = dataclasses.replace(
            config,
            model=None,
            input_guardrails=[
                recorded_input_guardrail(g, seam, "run") for g in config.input_guardrails or []
            ],
            output_guardrails=[
                recorded_output_guardrail(g, seam, "run") for g in config.output_guardrails or []
            ],
        )
        self._agents: dict[int, RecordedAgent] = {}
        self._tools: dict[tuple[int, str], FunctionTool] = {}
        #: The copies by agent name: a replayed handoff's target.
        self.by_name: dict[str, RecordedAgent] = {}

    def agent(self, agent: Agent[Any]) -> RecordedAgent:
        """Return the recorded copy of ``agent`` (made once per run)."""
        if isinstance(agent, RecordedAgent) and agent.clew_wiring is self:
            return agent
        made = self._agents.get(id(agent))
        if made is not None:
            return made
        inner = self._model(agent)
        recorded = RecordedModel(
            inner, self.seam.bridge, agent.name, model_name(agent, self.config, inner)
        )
        fields = {f.name: getattr(agent, f.name) for f in dataclasses.fields(Agent) if f.init}
        guards = {
            "input_guardrails": [
                recorded_input_guardrail(g, self.seam, agent.name) for g in agent.input_guardrails
            ],
            "output_guardrails": [
                recorded_output_guardrail(g, self.seam, agent.name) for g in agent.output_guardrails
            ],
        }
        copy = RecordedAgent(
            **{**fields, **guards, "model": recorded, "handoffs": []}, clew_wiring=self
        )
        set_public_agent(copy, agent)
        self._agents[id(agent)] = copy
        self.by_name.setdefault(agent.name, copy)
        copy.handoffs = [self._handoff(h, agent.name) for h in agent.handoffs]
        return copy

    def _model(self, agent: Agent[Any]) -> Model:
        """Return the model the SDK would run ``agent`` on (its ``get_model`` rule)."""
        config = self.config
        if isinstance(config.model, Model):
            return config.model
        if isinstance(config.model, str):
            return config.model_provider.get_model(config.model)
        if isinstance(agent.model, Model):
            return agent.model
        return config.model_provider.get_model(agent.model)

    def tool(self, tool: Tool, role: str) -> Tool:
        """Return ``tool`` recorded (a function tool; any other kind runs as it is)."""
        if not isinstance(tool, FunctionTool):
            return tool
        key = (id(tool), role)
        made = self._tools.get(key)
        if made is None:
            made = self._tools[key] = recorded_tool(tool, self.seam, role)
        return made

    def _handoff(self, item: Agent[Any] | Handoff[Any, Any], role: str) -> Handoff[Any, Any]:
        """Return a handoff to the copy of its target, its call recorded."""
        if isinstance(item, Agent):
            target = self.agent(item)
            made: Handoff[Any, Any] = handoff(target)
        else:
            made = item
            ref = item._agent_ref() if item._agent_ref is not None else None  # noqa: SLF001
            if isinstance(ref, Agent):
                self.agent(ref)  # its copy is the target the wrapped handoff returns
        invoke = made.on_invoke_handoff
        seam = self.seam

        async def on_invoke_handoff(ctx: RunContextWrapper[Any], arguments: str) -> Agent[Any]:
            chosen: list[Agent[Any]] = []

            async def run() -> str:
                agent = await invoke(ctx, arguments)
                chosen.append(self.agent(agent))
                return str(agent.name)

            started = ToolCallStarted(
                tool_call_id=seam.next_id("handoff"),
                tool_name=made.tool_name,
                idempotent=True,
                arguments={"to": made.agent_name},
            )
            outcome = await seam.call(started, run, role=role)
            if chosen:
                return chosen[0]
            return self.by_name[_target_name(outcome, made.agent_name)]

        made = dataclasses.replace(made, on_invoke_handoff=on_invoke_handoff)
        made._agent_ref = (  # noqa: SLF001 - the SDK reads the target through it
            weakref.ref(self.by_name[made.agent_name]) if made.agent_name in self.by_name else None
        )
        return made


def _target_name(outcome: ToolCallFinished | ToolFailed, default: str) -> str:
    """Return the agent a recorded handoff went to."""
    if isinstance(outcome, ToolCallFinished) and outcome.content:
        block = outcome.content[0]
        if isinstance(block, JsonBlock) and isinstance(block.data, str):
            return block.data
    return default
