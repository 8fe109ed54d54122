"""Durable OpenAI Agents SDK runs (the ``openai-agents`` extra): :class:`DurableRunner`.

``from actors.openai_agents import DurableRunner`` imports the SDK; importing ``actors``
does not. Modules: ``runner`` (a run of an agent as a clew main run), ``wiring`` (the
run's agents copied with recorded models, tools and handoffs), ``model`` (every model call
through the recorder), ``tools`` (every function tool call through clew's tool seam;
``needs_approval`` as durable approvals), ``guardrails`` (guardrail verdicts recorded),
``memory`` (:class:`ClewSession`, the SDK's ``Session`` protocol on clew's store),
``messages`` (the SDK's items in clew's terms). :class:`ToolPolicy` and
:func:`tool_context` are shared with ``actors.pydantic_ai``
(:mod:`actors.models.tool_policy`), as is what does not depend on the framework (how the
run starts and ends, a recorded model call, a tool's approval gate:
:mod:`actors.recording.framework_run`). See docs/openai-agents.md.
"""

from __future__ import annotations

from actors.errors import DurableRunFailed, ToolCallFailed
from actors.models.tool_policy import ToolPolicy, tool_context
from actors.openai_agents.memory import ClewSession
from actors.openai_agents.runner import PHASE, DurableRunner

__all__ = [
    "PHASE",
    "ClewSession",
    "DurableRunFailed",
    "DurableRunner",
    "ToolCallFailed",
    "ToolPolicy",
    "tool_context",
]
