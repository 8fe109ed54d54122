"""Re-drive after a provider outage: 30 sessions fail while a model answers 503; once it
recovers, the dry run predicts per session which calls are asked again, and the re-drive
asks exactly those (served the rest), runs no non-idempotent tool twice, and every
session then completes, verifies and replays identically."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pydantic
import pytest

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.protocol import Model, ModelRequest, ModelResponse
from actors.models.tools import Tool, ToolContext, ToolOutput, spec_of
from actors.runtime.redrive import (
    RETRY,
    RedriveApp,
    plan_session,
    read_redrives,
    redrive,
)
from actors.runtime.runtime import Runtime
from actors.runtime.status import SessionFilter, select_sessions
from eventlog.codec import encode
from eventlog.errors import ModelError
from projections.costs import Price

SESSIONS = 30
ATTEMPT = re.compile(rb":brain:r[0-9]+")


class Provider:
    """A model behind a provider that can be down (answering 503), counting requests."""

    def __init__(self, inner: Model) -> None:
        self.name = inner.name
        self._inner = inner
        self.down: bool = False
        #: During the outage, only requests of these roles fail (None: every request).
        self.failing_roles: set[str] | None = None
        self.sent: Counter[bytes] = Counter()
        self.counting: Counter[str] = Counter()
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest) -> ModelResponse:
        # The same call of a later attempt names its own run (brain:r2 for brain:r1).
        key = ATTEMPT.sub(b":brain:r", encode(request))
        with self._lock:
            seen = self.sent[key] > 0
            self.sent[key] += 1
            self.counting["again" if seen else "new"] += 1
        if self.down and (self.failing_roles is None or request.role in self.failing_roles):
            raise ModelError("503 Service Unavailable", status=503, error_type="HTTP503")
        return self._inner.complete(request)


class Ledgered:
    """A tool that writes each run of it to a ledger (what a side effect leaves)."""

    def __init__(self, inner: Tool, ledger: list[tuple[str, str]]) -> None:
        self.name = inner.name
        self.description = inner.description
        self.args_model: type[pydantic.BaseModel] = inner.args_model
        self.idempotent = inner.idempotent
        self.spec = spec_of(inner)
        self._inner = inner
        self._ledger = ledger

    def call(self, args: pydantic.BaseModel, ctx: ToolContext | None = None) -> ToolOutput:
        self._ledger.append((self.name, ctx.tool_call_id if ctx else ""))
        out: Any = self._inner.call(args, ctx)  # type: ignore[call-arg]
        return out  # type: ignore[no-any-return]


@pytest.fixture
def outage(tmp_path: Path) -> tuple[Runtime, Provider, list[tuple[str, str]], list[str]]:
    project = tmp_path / "proj"
    project.mkdir()
    rt = Runtime(tmp_path / "home", project)
    provider = Provider(demo_model(2))
    ledger: list[tuple[str, str]] = []
    tools: list[Tool] = [Ledgered(t, ledger) for t in demo_tools(project)]
    provider.down = True
    sids: list[str] = []
    for i in range(SESSIONS):
        # A third fail at once, a third after the router answered (its reply is then
        # served), a third at the primary, after the workers ran their tools.
        provider.failing_roles = [None, {"researcher", "analyst", "lead"}, {"lead"}][i % 3]
        session = rt.new_session()
        assert "failed" == session.run(DEMO_PROMPT, model=provider, tools=tools).status
        sids.append(session.id)
    rt.tools = tools  # type: ignore[attr-defined]
    return rt, provider, ledger, sids


def test_the_dry_run_predicts_the_calls_asked_again_and_the_redrive_completes_them(
    outage: tuple[Runtime, Provider, list[tuple[str, str]], list[str]],
) -> None:
    rt, provider, ledger, sids = outage
    tools: list[Tool] = rt.tools  # type: ignore[attr-defined]
    chosen = select_sessions(rt, SessionFilter(status="failed", error=r"ModelError: 503"))
    assert sids == [s.session_id for s in chosen]
    assert [] == select_sessions(rt, SessionFilter(error="Timeout"))
    prices = {"scripted:demo": Price(input=3.0, output=15.0)}

    plans = [plan_session(rt, s.session_id, prices) for s in chosen]

    assert {RETRY} == {p.action for p in plans}
    predicted = sum(c.as_recorded for p in plans for c in p.paid_again)
    # The routers and the workers are asked again as they were; the leads are not: asked
    # after a failed worker, or naming the new attempt's task board.
    assert 2 * SESSIONS // 3 == predicted
    assert 2 * SESSIONS // 3 == sum(not c.as_recorded for p in plans for c in p.paid_again)
    # The last third's workers saved notes: those side effects are not run again.
    late = plans[2::3]
    assert all(["save_note"] <= [t.tool_name for t in p.tools_not_again] for p in late)
    assert all("lookup" in [t.tool_name for t in p.tools_again] for p in late)
    assert any(name == "save_note" for name, _ in ledger)
    assert all(c.why == "failed" for p in plans for c in p.paid_again)
    assert 0 < sum(p.served_calls for p in plans)  # the routers' answers of half of them
    assert all(p.in_doubt == [] for p in plans)
    routed = [p for p in plans if p.served_calls]
    assert all(c.est_tokens and c.est_cost for p in routed for c in p.paid_again)

    provider.down = False
    provider.counting.clear()
    ledger_before = list(ledger)
    report = redrive(rt, plans, RedriveApp(model=provider, tools=tools), concurrency=4)

    # What the provider was asked again is what the dry run said.
    assert predicted == provider.counting["again"]
    assert {"completed": SESSIONS, "failed again": 0, "needs a person": 0, "skipped": 0} == (
        report.counts()
    )
    assert sum(p.served_calls for p in plans) == sum(r.served_calls for r in report.sessions)
    # No side effect ran twice: each non-idempotent call id ran once, over both attempts.
    effects = Counter(call for name, call in ledger if name == "save_note")
    assert [] == [call for call, n in effects.items() if n > 1]
    assert ledger_before == ledger[: len(ledger_before)]
    for sid in sids:
        session = rt.session(sid)
        assert "completed" == session.info().status
        assert session.verify().ok
        assert session.replay(tools=tools).identical
    [saved] = read_redrives(rt.home)
    assert report == saved
    assert sids == [r.session_id for r in saved.sessions]
    rt.close()


def test_a_session_not_failed_is_skipped_and_reported(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    with Runtime(tmp_path / "home", project) as rt:
        session = rt.new_session()
        session.run(DEMO_PROMPT, model=demo_model(2), tools=demo_tools(project))
        plan = plan_session(rt, session.id)
        assert ("skipped", "its last run is completed") == (plan.action, plan.reason)
        report = redrive(rt, [plan], RedriveApp(model=demo_model(2)))
        assert 1 == report.counts()["skipped"]


def _killed_before_tool(tmp_path: Path, k: int) -> tuple[Path, Path, str]:
    from _processes import run_crash_demo  # noqa: PLC0415

    home, project = tmp_path / "home", tmp_path / "proj"
    killed = run_crash_demo(home, project, "run", "2", env={"CLEW_FAULT_KILL_BEFORE_TOOL": str(k)})
    assert -9 == killed.returncode, killed.stderr[-2000:]
    return home, project, killed.stdout.split()[0]


def test_an_interrupted_session_is_resumed_and_its_idempotent_call_in_flight_runs_again(
    tmp_path: Path,
) -> None:
    home, project, sid = _killed_before_tool(tmp_path, 1)  # the first lookup, started
    with Runtime(home, project) as rt:
        [info] = select_sessions(rt, SessionFilter(status="interrupted"))
        plan = plan_session(rt, info.session_id)
        assert ("resume", []) == (plan.action, plan.in_doubt)
        assert ["lookup"] == [t.tool_name for t in plan.tools_again]
        assert "the end of" in plan.continue_from
        tools = demo_tools(project)
        report = redrive(rt, [plan], RedriveApp(model=demo_model(2), tools=tools))
        assert 1 == report.counts()["completed"]
        assert rt.session(sid).verify().ok


def test_a_side_effect_in_doubt_needs_a_person_and_is_not_redriven(tmp_path: Path) -> None:
    home, project, sid = _killed_before_tool(tmp_path, 2)  # the first save_note, started
    with Runtime(home, project) as rt:
        plan = plan_session(rt, sid)
        assert ("needs a person", ["save_note"]) == (
            plan.action,
            [t.tool_name for t in plan.in_doubt],
        )
        report = redrive(rt, [plan], RedriveApp(model=demo_model(2), tools=demo_tools(project)))
        assert [("needs a person", plan.reason)] == [(r.outcome, r.detail) for r in report.sessions]
        assert sid in rt.session(sid).interrupted_runs()[0]
