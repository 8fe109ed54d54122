"""The primary's built-in ``dispatch`` tool: agents as tools, mid-run.

In a team with a catalogue the primary may call ``dispatch(role, goal)``: the Brain's
pool runs one worker of that role to completion (a handoff, the worker's own run, its
result — recorded like any worker, task ids ``dispatch-1``, ``dispatch-2`` …) and the
``WorkerResult`` is the tool's result. At most ``RunSettings.max_dispatches`` per main
run; a call past that, to an unknown role or with bad arguments is a ``tool_failed``.

It does not go through the recorder's tool seam: the tool's work *is* recorded events
(``handoff_sent``, the worker's run, ``worker_result_received``), so a replay or a
resume re-executes it against the recording like the rest of the Brain's run — never
"in doubt", never run twice.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pydantic

from actors.models.protocol import ToolSpec
from actors.orchestration.pool import WorkerPool
from actors.orchestration.roster import DISPATCH, Roster
from actors.orchestration.tool_call import result_block
from eventlog.blocks import JsonBlock, ToolCallBlock, ToolResultBlock
from eventlog.errors import ClewError
from eventlog.events import ToolCallFinished, ToolCallStarted, ToolFailed
from eventlog.ids import dispatch_task_id


class DispatchArgs(pydantic.BaseModel):
    """The arguments of a ``dispatch`` call."""

    model_config = pydantic.ConfigDict(extra="forbid")
    role: str
    goal: str = pydantic.Field(min_length=1)


class DispatchTool:
    """What the primary is told about ``dispatch``; its calls go to a :class:`Dispatcher`."""

    name = DISPATCH
    idempotent = True
    args_model: type[pydantic.BaseModel] = DispatchArgs

    def __init__(self, roster: Roster) -> None:
        roles = roster.dispatchable()
        about = "; ".join(
            f"{r}" + (f" — {roster.roles[r].description}" if roster.roles[r].description else "")
            for r in roles
        )
        self.description = (
            "Run a worker of one role to completion on a goal; returns its result"
            f" (summary, status, risks). Roles: {about}."
        )
        self.spec = ToolSpec(
            name=DISPATCH,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {
                    "role": {"type": "string", "enum": roles},
                    "goal": {"type": "string", "description": "the worker's self-contained task"},
                },
                "required": ["role", "goal"],
                "additionalProperties": False,
            },
        )

    def call(self, args: Any) -> Any:
        raise ClewError("dispatch is handled by the Brain, never called directly")


class Dispatcher:
    """Handles the primary's ``dispatch`` calls of one main run (on the Brain's thread)."""

    def __init__(self, pool: WorkerPool, roster: Roster, limit: int) -> None:
        self.pool = pool
        self.roster = roster
        self.limit = limit
        self.count = 0

    def __call__(self, call: ToolCallBlock) -> ToolResultBlock:
        """Record the call, run the worker (or refuse), record and return its outcome."""
        rec = self.pool.rec
        rec.emit(
            ToolCallStarted(
                tool_call_id=call.id,
                tool_name=DISPATCH,
                arguments=dict(call.arguments),
                idempotent=True,
            )
        )
        outcome = self._run(call)
        rec.emit(outcome)
        return result_block(call, outcome)

    def _run(self, call: ToolCallBlock) -> ToolCallFinished | ToolFailed:
        def failed(error_type: str, message: str) -> ToolFailed:
            return ToolFailed(
                tool_call_id=call.id, tool_name=DISPATCH, error_type=error_type, message=message
            )

        try:
            args = DispatchArgs.model_validate(call.arguments)
        except pydantic.ValidationError as e:
            first = e.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(arguments)"
            return failed("ValidationError", f"invalid arguments at {loc}: {first['msg']}")
        roles = self.roster.dispatchable()
        if args.role not in roles:
            return failed("UnknownRole", f"no role {args.role!r} to dispatch; roles: {roles}")
        if self.count >= self.limit:
            return failed("DispatchLimit", f"at most {self.limit} dispatches per run")
        self.count += 1
        result = self.pool.run_one(
            dispatch_task_id(self.count), args.role, args.goal, [], purpose="dispatch"
        )
        return ToolCallFinished(
            tool_call_id=call.id,
            tool_name=DISPATCH,
            content=[JsonBlock(data=msgspec.to_builtins(result))],
            is_error=result.status != "completed",
        )
