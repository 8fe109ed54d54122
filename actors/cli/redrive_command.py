"""``clew redrive FILTER… [--dry-run]``: continue the sessions an incident stopped, with a
plan first (:mod:`actors.runtime.redrive`)."""

from __future__ import annotations

import os
from typing import Annotated

import msgspec
import typer

from actors.cli.app import app
from actors.cli.options import BaseUrl, Home, Json, Project, TeamOption, open_runtime, where_from
from actors.cli.output import exit_with, print_json
from actors.cli.run_commands import check_recordable, going_on_with
from actors.cli.session_filter import Error, Role, Since, Status, UsedModel, session_filter
from actors.cli.usage_command import load_prices
from actors.runtime.redrive import RedriveApp, RedrivePlan, plan_session, redrive
from actors.runtime.runtime import Runtime
from actors.runtime.status import select_sessions


def plan_lines(plan: RedrivePlan, currency: str) -> list[str]:
    """The dry run's text for one session."""
    lines = [f"{plan.session_id}: {plan.action}" + (f" ({plan.reason})" if plan.reason else "")]
    if plan.failure:
        lines.append(f"  failed with {plan.failure}")
    if plan.continue_from and plan.action in ("retry", "resume"):
        lines.append(f"  continues from {plan.continue_from}")
    lines.append(f"  served from the recording: {plan.served_calls} model calls"
                 f" ({plan.served_tokens} tokens not paid again)")  # fmt: skip
    for c in plan.paid_again:
        est = f"~{c.est_tokens} tokens" if c.est_tokens is not None else "tokens unknown"
        if c.est_cost is not None:
            est += f", ~{c.est_cost:.4f} {currency}"
        shaped = "" if c.as_recorded else ", built after a failure: may change"
        lines.append(f"  paid again: {c.role} call {c.call_index} of {c.run_id}"
                     f" ({c.model}, {c.why}{shaped}; {est})")  # fmt: skip
    for t in plan.tools_again:
        lines.append(f"  runs again (idempotent): {t.tool_name} {t.tool_call_id}")
    for t in plan.tools_not_again:
        lines.append(f"  does not run again: {t.tool_name} {t.tool_call_id} (its result is served)")
    for t in plan.in_doubt:
        lines.append(f"  in doubt, needs a decision: {t.tool_name} {t.tool_call_id}")
    return lines


@app.command("redrive")
def redrive_command(  # long: one option per filter and per knob, then plan, run, report
    status: Status = None,
    error: Error = None,
    model: UsedModel = None,
    role: Role = None,
    since: Since = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan; run nothing")] = False,
    with_model: Annotated[
        str | None, typer.Option("--with-model", metavar="SPEC", help="continue with this model")
    ] = None,
    base_url: BaseUrl = None,
    team_file: TeamOption = None,
    prices: Annotated[
        str | None, typer.Option("--prices", metavar="FILE", help="a price list (TOML)")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="at once")] = 4,
    from_divergence: Annotated[
        bool, typer.Option("--from-divergence", help="resume past a divergence")
    ] = False,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Re-drive the sessions the filters select (failed: retried with the answers it got
    served; interrupted: resumed). --dry-run prints per session what would be paid again
    and which side effects would not run again. Exit 1 if a session failed again."""
    where = where_from(home, project)
    check_recordable(where, ("a --with-model spec", with_model), ("--base-url", base_url))
    path = prices or os.environ.get("CLEW_PRICES") or None
    currency, table = load_prices(path) if path else ("USD", {})
    with open_runtime(where) as rt:
        chosen = select_sessions(rt, session_filter(status, error, model, role, since))
        plans = [plan_session(rt, info.session_id, table) for info in chosen]
        if dry_run:
            _print_plans(plans, currency, as_json=as_json)
            return

        def code(sid: str) -> RedriveApp:
            return _app(rt, sid, with_model, base_url, team_file)

        report = redrive(rt, plans, code, concurrency=concurrency,
                         from_divergence=from_divergence)  # fmt: skip
    if as_json:
        print_json({**msgspec.to_builtins(report), "counts": report.counts()})
    else:
        for r in report.sessions:
            print(f"{r.session_id}: {r.outcome}" + (f" ({r.detail})" if r.detail else ""))
        print(report.summary())
    exit_with(1 if report.counts()["failed again"] else 0)


def _app(
    rt: Runtime, sid: str, model: str | None, base_url: str | None, team_file: str | None
) -> RedriveApp:
    row = rt.store.read_session(sid)
    models, tools, team = going_on_with(
        rt, row, model=model, base_url=base_url, team_file=team_file
    )
    return RedriveApp(model=models, tools=tools, team=team)


def _print_plans(plans: list[RedrivePlan], currency: str, *, as_json: bool) -> None:
    if as_json:
        print_json({"currency": currency, "sessions": [msgspec.to_builtins(p) for p in plans]})
        return
    for plan in plans:
        print("\n".join(plan_lines(plan, currency)))
    paid = sum(len(p.paid_again) for p in plans)
    costs = [c for p in plans if (c := p.est_cost()) is not None]
    cost = f", ~{sum(costs):.4f} {currency}" if costs else ""
    print(f"{len(plans)} sessions: {sum(p.action in ('retry', 'resume') for p in plans)} to"
          f" re-drive, {paid} model calls paid again{cost}")  # fmt: skip
