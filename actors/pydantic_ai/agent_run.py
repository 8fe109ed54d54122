"""A durable Pydantic AI run driven node by node: what ``DurableAgent.iter`` yields.

:class:`DurableAgentRun` stands for Pydantic AI's ``AgentRun`` in the common uses —
``async for node in run``, ``await run.next(node)``, ``run.next_node``, ``run.result``
(an ``AgentRunResult`` once the run has ended), ``run.usage``, ``run.ctx``,
``run.all_messages()`` — but each node runs in the durable run's own task, not the
caller's: the caller asks for the next node, the run's task runs it inside the recording
(the wrapped model and toolsets, the bridge to the recorder) and hands it back
(:class:`~actors.recording.framework_run.Steps`). So the model requests and tool calls of
a run driven this way are recorded exactly as ``DurableAgent.run`` records them. Reading
anything else of the run (``run_id``, ``metadata``, …) reads the ``AgentRun``'s own.
Streaming a node (``node.stream(run.ctx)``) would run it in the caller's task: not
supported.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic_ai import AgentRun
from pydantic_ai.agent import AgentRunResult

from actors.recording.framework_run import Steps

if TYPE_CHECKING:
    from pydantic_ai._agent_graph import AgentNode  # the nodes' base, not exported
    from pydantic_ai.result import FinalResult
    from pydantic_graph import End, GraphRunContext

    #: A node of the run: one to run, or its end.
    Node: TypeAlias = AgentNode[Any, Any] | End[FinalResult[Any]]


class DurableAgentRun:
    """Pydantic AI's ``AgentRun`` of a durable run, each node run in the run's own task."""

    def __init__(self, run: AgentRun[Any, Any], steps: Steps) -> None:
        self._run = run
        self._steps = steps

    def __aiter__(self) -> DurableAgentRun:
        return self

    async def __anext__(self) -> Node:
        """Run the node yielded last (none before the first); return the next one.

        Raises:
            StopAsyncIteration: the run has ended (its ``End`` was yielded).
        """
        return await self._steps.ask(self._run.__anext__)

    async def next(self, node: AgentNode[Any, Any]) -> Node:
        """Run ``node``; return the node after it (an ``End`` once the run has ended)."""
        return await self._steps.ask(partial(self._run.next, node))

    @property
    def next_node(self) -> Node:
        """The node the run goes on with."""
        return self._run.next_node

    @property
    def result(self) -> AgentRunResult[Any] | None:
        """The run's result once it has ended, else None."""
        return self._run.result

    @property
    def ctx(self) -> GraphRunContext[Any, Any]:
        """The run's graph context (its state: the messages so far, the usage)."""
        return self._run.ctx

    def __getattr__(self, name: str) -> Any:
        """Read anything else of the ``AgentRun`` (``usage``, ``all_messages``, …)."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._run, name)

    def __repr__(self) -> str:
        return f"DurableAgentRun({self._run!r})"


__all__ = ["DurableAgentRun"]
