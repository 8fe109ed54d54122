"""Property: whatever a scripted plan does, its session replays identically and verifies.

Hypothesis draws plans — 1–5 workers, random acyclic dependencies, workers whose model
fails, tool calls with bad arguments or raising tools, a review that requests changes —
runs them live on a real SQLite file, then re-executes the recording.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.models.scripted import ScriptedModel
from actors.models.tools import FunctionTool
from actors.recording.inputs import RunSettings
from actors.runtime.runtime import Runtime
from eventlog.clock import ManualClock
from projections.verify import verify


class EchoArgs(pydantic.BaseModel):
    text: str


def _echo(args: EchoArgs) -> str:
    return args.text.upper()


def _boom(args: EchoArgs) -> str:
    raise RuntimeError(f"boom: {args.text}")


TOOLS = [
    FunctionTool("echo", _echo, EchoArgs, idempotent=True),
    FunctionTool("boom", _boom, EchoArgs),
]

WORKER_REPLIES = {
    "plain": [{"text": "done, plainly"}],
    "json": [{"json": {"summary": "done as JSON", "risks": ["r"], "taskId": "forged"}}],
    "tool": [
        {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]},
        {"json": {"summary": "echoed"}},
    ],
    "bad_args": [
        {"tool_calls": [{"name": "echo", "arguments": {"nope": 1}}]},
        {"text": "recovered from a bad call"},
    ],
    "raising_tool": [
        {"tool_calls": [{"name": "boom", "arguments": {"text": "x"}}]},
        {"text": "the tool failed, carrying on"},
    ],
    "unknown_tool": [
        {"tool_calls": [{"name": "nope", "arguments": {}}]},
        {"text": "no such tool"},
    ],
    "model_fails": [{"error": "provider down", "status": 503}],
    "reports_failure": [{"json": {"summary": "could not do it", "status": "failed"}}],
}


@st.composite
def plans(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    n = draw(st.integers(min_value=1, max_value=5))
    workers = []
    rules: list[dict[str, Any]] = []
    for i in range(n):
        deps = (
            draw(st.lists(st.sampled_from([f"w{j}" for j in range(i)]), unique=True, max_size=2))
            if i
            else []
        )
        behaviour = draw(st.sampled_from(sorted(WORKER_REPLIES)))
        workers.append({"id": f"w{i}", "role": f"role{i}", "goal": f"goal {i}", "deps": deps})
        rules.append({"role": f"role{i}", "replies": WORKER_REPLIES[behaviour]})
    review = draw(st.booleans())
    verdict = draw(st.sampled_from(["approved", "changes_requested"]))
    rules.insert(
        0,
        {
            "role": "router",
            "phase": "route",
            "replies": [{"json": {"primary_role": "lead", "workers": workers, "review": review}}],
        },
    )
    rules.append(
        {
            "role": "lead",
            "replies": [{"text": "answer one"}, {"text": "answer two"}, {"text": "answer three"}],
        }
    )
    rules.append(
        {"role": "reviewer", "replies": [{"json": {"summary": "reviewed", "verdict": verdict}}]}
    )
    limit = draw(st.integers(min_value=1, max_value=3))
    return {"rules": rules}, limit


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_any_scripted_session_replays_identically_and_verifies(
    plan: tuple[dict[str, Any], int],
) -> None:
    script, limit = plan
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "proj"
        with Runtime(
            home,
            project,
            clock=ManualClock(),
            settings=RunSettings(max_workers=limit, max_fix_iterations=1),
        ) as rt:
            session = rt.new_session()
            outcome = session.run("do the thing", model=ScriptedModel(script), tools=TOOLS)
            assert outcome.status in ("completed", "failed")
            report = rt.replay(session.id)
            assert report.identical, report.summary()
            check = verify(rt.store, session.id)
            assert check.ok, check.lines()
