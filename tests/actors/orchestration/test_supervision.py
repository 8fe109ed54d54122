"""Supervision: tool errors stay tool errors, a failing worker is a failed result, close stops all.

Every test is a real run on a real SQLite file; ``run_session`` also proves each
session replays identically and verifies.
"""

from __future__ import annotations

from pathlib import Path

import pydantic
import pykka
import pytest
from _runtime_helpers import route, rule, run_session, scripted, worker

import actors.orchestration.worker
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.protocol import ModelRequest, ModelResponse
from actors.models.tools import FunctionTool, tool
from actors.runtime.runtime import Runtime
from eventlog.blocks import ToolResultBlock
from eventlog.events import (
    AgentStatusChanged,
    ModelFailed,
    NodeAppended,
    RunEnded,
    ToolCallStarted,
    ToolFailed,
    WorkerFailed,
)
from eventlog.packets import HandoffPacket, WorkerResult

PROMPT = "Add up the numbers and report."


class AddArgs(pydantic.BaseModel):
    a: int
    b: int


def adder(calls: list[AddArgs]) -> FunctionTool:
    def add(args: AddArgs) -> str:
        """Add two integers."""
        calls.append(args)
        return str(args.a + args.b)

    return FunctionTool("add", add, AddArgs)


def tool_errors(s_reply: dict[str, object]) -> dict[str, object]:
    return rule("calc", {"tool_calls": [s_reply]}, {"text": "reported the error"})


# --- 11: tool errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error_type", "message"),
    [
        (
            {"name": "add", "arguments": {"a": "two", "b": 2}},
            "ValidationError",
            "invalid arguments at a: Input should be a valid integer",
        ),
        (
            {"name": "add", "arguments": {"a": 1}},
            "ValidationError",
            "invalid arguments at b: Field required",
        ),
        ({"name": "subtract", "arguments": {}}, "UnknownTool", "no tool named 'subtract'"),
    ],
    ids=["wrong-type", "missing-field", "unknown-tool"],
)
def test_a_bad_tool_call_is_an_error_tool_result_and_the_run_completes(
    rt: Runtime, call: dict[str, object], error_type: str, message: str
) -> None:
    calls: list[AddArgs] = []
    model = scripted(route([worker("w1", "calc", "Add")]), tool_errors(call))

    s = run_session(rt, PROMPT, model, tools=[adder(calls)])

    run_id = s.worker_run("w1")
    assert [] == calls  # validated before the call: the function never ran
    (failed,) = s.of(ToolFailed, run_id)
    assert (error_type, message) == (failed.error_type, failed.message[: len(message)])
    (started,) = s.stored(ToolCallStarted, run_id)
    assert started.seq < s.stored(ToolFailed, run_id)[0].seq
    tool_nodes = [n.node for n in s.of(NodeAppended, run_id) if n.node.role == "tool"]
    (block,) = tool_nodes[0].content
    assert isinstance(block, ToolResultBlock)
    assert (True, failed.tool_call_id) == (block.is_error, block.tool_call_id)
    assert ["completed"] == [e.status for e in s.of(RunEnded, run_id)]
    assert ("completed", ["completed"]) == (
        s.outcome.status,
        [r.status for r in s.outcome.worker_results],
    )


class NoArgs(pydantic.BaseModel):
    pass


@tool(NoArgs)
def explode(args: NoArgs) -> str:
    raise RuntimeError("the disk is on fire")


def test_a_tool_that_raises_is_only_a_tool_error(rt: Runtime) -> None:
    model = scripted(route([worker("w1", "calc", "Add")]), tool_errors({"name": "explode"}))

    s = run_session(rt, PROMPT, model, tools=[explode])

    (failed,) = s.of(ToolFailed)
    assert ("RuntimeError", "the disk is on fire") == (failed.error_type, failed.message)
    assert ["completed"] == [r.status for r in s.outcome.worker_results]


# --- 12: a failing worker ---------------------------------------------------------------


def test_a_worker_whose_model_chain_fails_is_a_failed_result_and_the_brain_completes(
    rt: Runtime,
) -> None:
    failing = scripted({"replies": [{"error": "provider down", "status": 503}]}, name="m-down")
    model = {
        "router": scripted(route([worker("w1", "doomed", "Try"), worker("w2", "fine", "Do")])),
        "doomed": failing,
        "default": scripted(rule("fine", {"text": "done"})),
    }

    s = run_session(rt, PROMPT, model)

    run_id = s.worker_run("w1")
    assert "completed" == s.outcome.status
    assert "The final answer." == s.outcome.answer
    w1, w2 = s.outcome.worker_results
    assert ("failed", "ModelError: provider down") == (w1.status, w1.error)
    assert "completed" == w2.status
    (worker_failed,) = s.of(WorkerFailed, run_id)
    assert (s.ctx("w1"), "ModelError") == (worker_failed.task_id, worker_failed.error_type)
    (ended,) = s.of(RunEnded, run_id)
    assert ("failed", "failed") == (ended.status, ended.end_reason)
    assert "failed" == s.of(AgentStatusChanged, run_id)[-1].status
    primary_input = s.model_inputs(s.brain_run)[-1]
    assert f"{s.ctx('w1')} [doomed] failed\\n  goal: " in primary_input
    assert "summary: worker failed: ModelError: provider down" in primary_input


class RaisingModel:
    """A model client with a bug: it raises something other than ``ModelError``."""

    name = "buggy-client"

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise KeyError("choices")


def test_a_model_client_raising_an_unexpected_exception_fails_only_that_worker(
    rt: Runtime,
) -> None:
    model = {
        "router": scripted(route([worker("w1", "doomed", "Try")])),
        "doomed": RaisingModel(),
        "default": scripted(),
    }

    s = run_session(rt, PROMPT, model)

    run_id = s.worker_run("w1")
    (result,) = s.outcome.worker_results
    assert ("completed", "failed") == (s.outcome.status, result.status)
    (failed,) = s.of(ModelFailed, run_id)
    assert ("buggy-client", "KeyError", False) == (
        failed.model,
        failed.error_type,
        failed.will_fallback,
    )
    assert ["failed"] == [e.status for e in s.of(RunEnded, run_id)]


def test_a_worker_actor_crash_becomes_a_failed_result_and_an_ended_run(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent loop catches everything a model or tool can raise, so provoke a crash in
    # the worker's own code: building its prompt.
    def broken_prompt(request: str, handoff: HandoffPacket, prior: list[WorkerResult]) -> str:
        raise RuntimeError("prompt builder bug")

    monkeypatch.setattr(actors.orchestration.worker, "worker_prompt", broken_prompt)
    model = scripted(
        route([worker("w1", "doomed", "Try"), worker("w2", "next", "Then", deps=["w1"])])
    )

    s = run_session(rt, PROMPT, model)

    run_id = s.worker_run("w1")
    assert "completed" == s.outcome.status
    assert ["failed", "blocked"] == [r.status for r in s.outcome.worker_results]
    assert "prompt builder bug" in (s.outcome.worker_results[0].error or "")
    (worker_failed,) = s.of(WorkerFailed, run_id)
    assert "RuntimeError" == worker_failed.error_type
    assert ["failed"] == [e.status for e in s.of(RunEnded, run_id)]
    assert {"failed"} == {r.status for r in rt.store.read_runs(s.sid) if r.run_id == run_id}
    assert [] == rt.interrupted_runs(s.sid)


# --- closing --------------------------------------------------------------------------------


def test_close_stops_every_actor_the_runtime_started(tmp_path: Path) -> None:
    assert [] == pykka.ActorRegistry.get_all()
    rt = Runtime(tmp_path / "home", tmp_path / "project")
    for workers in (1, 3, 6):
        s = rt.new_session()
        assert (
            "completed"
            == s.run(
                DEMO_PROMPT, model=demo_model(workers), tools=demo_tools(tmp_path / "project")
            ).status
        )
        assert rt.replay(s.id).identical
    assert [] != pykka.ActorRegistry.get_all()  # the writer and the task managers

    rt.close()

    assert [] == pykka.ActorRegistry.get_all()
