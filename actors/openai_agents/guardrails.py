"""Guardrail verdicts as recorded steps of an Agents SDK run.

A guardrail is application code the SDK asks about a run's input or output (it may call
a model of its own). :func:`recorded_input_guardrail` / :func:`recorded_output_guardrail`
wrap one so its verdict — ``tripwire_triggered`` and its ``output_info`` as JSON — is
recorded as a call named ``guardrail.<name>`` (``tool_call_started`` /
``tool_call_finished``): a resume or a replay hands the recorded verdict back without
asking the guardrail again, live as on a replay the SDK gets the recorded form. A
triggered tripwire ends the run as the SDK ends it (``InputGuardrailTripwireTriggered``,
``OutputGuardrailTripwireTriggered``), recorded as a failed run.

An input guardrail runs *before* the agent's first model call (``run_in_parallel``
off), not beside it: two steps at once would be recorded in whichever order they
finished, and a replay would not meet them in the same order.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

from agents.guardrail import GuardrailFunctionOutput, InputGuardrail, OutputGuardrail
from agents.run_context import RunContextWrapper

from actors.openai_agents.messages import jsonable
from actors.openai_agents.tools import Seam
from eventlog.blocks import JsonBlock
from eventlog.events import ToolCallFinished, ToolCallStarted, ToolFailed

G = TypeVar("G", InputGuardrail[Any], OutputGuardrail[Any])


async def _verdict(seam: Seam, name: str, role: str, ask: Any) -> GuardrailFunctionOutput:
    """Record one guardrail's verdict (``ask()`` live); return it as the SDK's output."""

    async def run() -> dict[str, Any]:
        out = ask()
        out = await out if inspect.isawaitable(out) else out
        return {
            "tripwire_triggered": bool(out.tripwire_triggered),
            "output_info": jsonable(out.output_info),
        }

    started = ToolCallStarted(
        tool_call_id=seam.next_id("guardrail"), tool_name=f"guardrail.{name}", idempotent=True
    )
    outcome = await seam.call(started, run, role=role)
    return _output_of(outcome)


def _output_of(outcome: ToolCallFinished | ToolFailed) -> GuardrailFunctionOutput:
    """Return the verdict a recorded outcome holds (a guardrail that raised: raised again)."""
    if isinstance(outcome, ToolFailed):
        raise RuntimeError(f"guardrail failed: {outcome.error_type}: {outcome.message}")
    block = outcome.content[0] if outcome.content else None
    data = block.data if isinstance(block, JsonBlock) and isinstance(block.data, dict) else {}
    return GuardrailFunctionOutput(
        output_info=data.get("output_info"), tripwire_triggered=bool(data.get("tripwire_triggered"))
    )


def recorded_input_guardrail(
    guardrail: InputGuardrail[Any], seam: Seam, role: str
) -> InputGuardrail[Any]:
    """Return ``guardrail`` with its verdict recorded, run before the first model call."""
    return _recorded(guardrail, seam, role, run_in_parallel=False)


def recorded_output_guardrail(
    guardrail: OutputGuardrail[Any], seam: Seam, role: str
) -> OutputGuardrail[Any]:
    """Return ``guardrail`` with its verdict recorded."""
    return _recorded(guardrail, seam, role)


def _recorded(guardrail: G, seam: Seam, role: str, **changes: Any) -> G:
    """Return ``guardrail`` asking :func:`_verdict` (and with ``changes``)."""
    function = guardrail.guardrail_function
    name = guardrail.get_name()

    async def recorded(ctx: RunContextWrapper[Any], agent: Any, given: Any) -> Any:
        return await _verdict(seam, name, role, lambda: function(ctx, agent, given))

    return dataclasses.replace(guardrail, guardrail_function=recorded, name=name, **changes)
