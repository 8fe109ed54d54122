"""Durable Pydantic AI agents (the ``pydantic-ai`` extra): :class:`DurableAgent`.

``from actors.pydantic_ai import DurableAgent`` imports Pydantic AI; importing ``actors``
does not. Modules: ``agent`` (the wrapper: a run of the agent as a clew main run),
``agent_run`` (what ``DurableAgent.iter`` yields: the run node by node),
``model`` (every model request through the recorder), ``toolset`` (every tool call
through clew's tool seam; :func:`tool_context`, :class:`ToolPolicy`), ``messages`` (the
framework's messages in clew's terms); what does not depend on the framework (how the
run starts and ends, a recorded model call, a tool's approval gate) is
:mod:`actors.recording.framework_run`, shared with ``actors.openai_agents``, and the
bridge from the framework's event loop to the recorder is :mod:`actors.recording.bridge`.
See docs/pydantic-ai.md.
"""

from __future__ import annotations

from actors.errors import DurableRunFailed, ToolCallFailed
from actors.pydantic_ai.agent import PHASE, DurableAgent
from actors.pydantic_ai.agent_run import DurableAgentRun
from actors.pydantic_ai.toolset import ToolPolicy, tool_context

__all__ = [
    "PHASE",
    "DurableAgent",
    "DurableAgentRun",
    "DurableRunFailed",
    "ToolCallFailed",
    "ToolPolicy",
    "tool_context",
]
