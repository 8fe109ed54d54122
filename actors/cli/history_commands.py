"""``clew fork``, ``rerun`` and ``diff``: debug an agent by changing its history.

``fork`` copies a session's path up to a node into a new session; ``rerun`` forks at the
start of a run and re-executes it with one thing changed (a role's model, a tool result,
a role's instructions, the prompt), serving every unchanged model call from the
recording; ``diff`` aligns two histories and shows where they part. Bad input (an
unknown session, run, node, role or tool call, a file that cannot be read) is one
``error:`` line, exit 2, before anything is written. ``diff`` exits 0 when the two
histories are identical and 1 when they differ, like diff(1).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from actors.cli import ids
from actors.cli.app import app
from actors.cli.options import (
    BaseUrl,
    Home,
    Json,
    Project,
    SessionArg,
    open_session,
    session_from,
    where_from,
)
from actors.cli.output import clipped, exit_with, print_json, print_result
from actors.cli.recipes import build_model, models_for_resume, team_from_file
from actors.cli.usage_command import load_prices
from actors.errors import UsageError
from actors.models.protocol import Model
from actors.models.tools import Tool
from actors.runtime.branching import RerunReport
from actors.runtime.runtime import Runtime
from eventlog.errors import Refused, quoted
from eventlog.records import SessionRow
from eventlog.regular_files import MIB
from projections.errors import UnknownNode
from projections.history_diff import HistoryDiff, Side, Step, diff_sides, side_of

#: The largest file ``--tool-result`` / ``--instructions`` / ``--prompt`` reads.
MAX_FILE = 4 * MIB

Pairs = Annotated[list[str] | None, typer.Option(show_default=False)]


def _pairs(option: str, values: list[str] | None) -> dict[str, str]:
    """Return ``KEY=VALUE`` options as a dict.

    Raises:
        UsageError: a value without ``=`` or with an empty side.
    """
    out: dict[str, str] = {}
    for value in values or []:
        key, sep, rest = value.partition("=")
        if not sep or not key or not rest:
            raise UsageError(f"{option} wants KEY=VALUE, not {quoted(value)}")
        out[key] = rest
    return out


def _read(what: str, path: str) -> str:
    """Return a text file's content.

    Raises:
        UsageError: the file cannot be read, is too large, or is not UTF-8.
    """
    try:
        with Path(path).open("rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as e:
        raise UsageError(f"cannot read {what} {clipped(path)}: {e.strerror or e}") from None
    if len(data) > MAX_FILE:
        raise UsageError(f"{what} {clipped(path)} is larger than {MAX_FILE // MIB} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{what} {clipped(path)} is not UTF-8 text") from None


def _tool_result(path: str) -> Any:
    """A ``.json`` file is the result's JSON; any other file its text."""
    text = _read("the tool result file", path)
    if not path.endswith(".json"):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"the tool result file {clipped(path)} is not JSON: {e}") from None


@app.command()
def fork(
    session: SessionArg,
    at: Annotated[
        str | None,
        typer.Option("--at", metavar="NODE", help="the node to fork at (default: the active)"),
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="the fork's title")] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Create a session whose history is SESSION's path up to a node (its active one)."""
    with session_from(home, project, session) as (rt, row):
        sid = row.session_id
        node = ids.resolve_node(rt.store, sid, at) if at is not None else row.active_node_id
        if node is not None and rt.store.read_node(sid, node) is None:
            raise UnknownNode(f"session {sid} has no node {quoted(node)}")
        forked = rt.fork(sid, at=node, title=title)
    doc = {"session_id": forked.id, "parent_session_id": sid, "fork_from_node_id": node}
    text = f"session {forked.id}: forked from {sid} at {node or 'its root'}"
    print_result(doc, text, as_json=as_json)


RerunTeam = Annotated[
    str | None,
    typer.Option(
        "--team", metavar="FILE", help="the run's team file: a typed team's output models"
    ),
]


@app.command()
def rerun(
    session: SessionArg,
    run: Annotated[
        str | None, typer.Option("--run", metavar="RUN", help="the run (default: the last)")
    ] = None,
    with_models: Annotated[
        list[str] | None,
        typer.Option("--with", metavar="ROLE=SPEC", help="another model for a role"),
    ] = None,
    tool_results: Annotated[
        list[str] | None,
        typer.Option("--tool-result", metavar="CALL_ID=FILE", help="a tool call's new result"),
    ] = None,
    instructions: Annotated[
        list[str] | None,
        typer.Option("--instructions", metavar="ROLE=FILE", help="a role's new instructions"),
    ] = None,
    prompt: Annotated[
        str | None, typer.Option("--prompt", metavar="FILE", help="the run's new prompt")
    ] = None,
    base_url: BaseUrl = None,
    title: Annotated[str | None, typer.Option("--title", help="the fork's title")] = None,
    team_file: RerunTeam = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Fork at the start of a run and re-execute it with one thing changed."""
    where = where_from(home, project)
    specs = _pairs("--with", with_models)
    edits = {k: _tool_result(v) for k, v in _pairs("--tool-result", tool_results).items()}
    texts = {
        k: _read("the instructions file", v)
        for k, v in _pairs("--instructions", instructions).items()
    }
    new_prompt = _read("the prompt file", prompt) if prompt is not None else None
    models = {role: build_model(s, env=os.environ, base_url=base_url) for role, s in specs.items()}
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        run_id = ids.resolve_run(rt.store, sid, run) if run is not None else None
        edits = {ids.resolve_call(rt.store, sid, call): out for call, out in edits.items()}
        chain, tools = _recipe(rt, row, base_url)
        team = team_from_file(team_file, tools or [], base_url) if team_file else None
        report = rt.rerun(
            sid,
            run=run_id,
            models=models,
            tool_results=edits,
            instructions=texts,
            prompt=new_prompt,
            model=chain,
            tools=tools,
            title=title,
            team=team,
        )
    _print_rerun(report, as_json)
    exit_with(0 if report.outcome.status in ("completed", "needs_clarification", "waiting") else 1)


def _recipe(rt: Runtime, row: SessionRow, base_url: str | None) -> tuple[Any, list[Tool] | None]:
    """Return the models and tools the CLI made the session with (None when it did not:
    the recorded model specs are built again, the tools' recorded results served)."""
    try:
        chain: list[Model]
        chain, tools = models_for_resume(
            row,
            env=os.environ,
            project_dir=rt.session_dir(row.session_id),
            slow_ms=None,
            override=[],
            base_url=base_url,
        )
    except Refused:  # no recipe, or one that cannot be built here: the recorded specs
        return None, None
    return chain, tools or None


def _print_rerun(report: RerunReport, as_json: bool) -> None:
    if as_json:
        print_json(msgspec.to_builtins(report, enc_hook=str))
        return
    saved = report.saved_usage
    print(
        f"session {report.session_id}: rerun of {report.run_id}"
        f" — {report.served_calls} model calls served from the recording"
        f" ({saved.input_tokens + saved.output_tokens:,} tokens not paid again),"
        f" {report.live_calls} asked live; {report.outcome.status}"
    )
    print(report.outcome.answer or report.outcome.error or report.outcome.question or "")


@app.command()
def diff(
    session: SessionArg,
    other: Annotated[str, typer.Argument(metavar="SESSION_B|NODE_A")],
    node_b: Annotated[str | None, typer.Argument(metavar="[NODE_B]")] = None,
    prices: Annotated[
        str | None,
        typer.Option("--prices", metavar="FILE", help="a price list (TOML) to show the cost"),
    ] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Align two histories (two sessions, or two nodes of one) and show where they part.

    Exit 0: identical; 1: they differ; 2: bad input."""
    where = msgspec.structs.replace(where_from(home, project), read_only=True)
    path = prices or os.environ.get("CLEW_PRICES") or None
    table = load_prices(path)[1] if path else {}
    with open_session(where, session) as (rt, row):
        a, b = _sides(rt, row, other, node_b, table)
    result = diff_sides(a, b)
    if as_json:
        print_json(result.to_json())
    else:
        for line in diff_lines(result):
            print(line)
    exit_with(0 if result.identical else 1)


def _sides(
    rt: Runtime, row: SessionRow, other: str, node_b: str | None, table: Any
) -> tuple[Side, Side]:
    sid = row.session_id
    if node_b is None:
        row_b = rt.store.read_session(ids.resolve_session(rt.store, other))
        return (
            side_of(rt.store, sid, row.active_node_id, table),
            side_of(rt.store, row_b.session_id, row_b.active_node_id, table),
        )
    ends = [ids.resolve_node(rt.store, sid, n) for n in (other, node_b)]
    for n in ends:
        if rt.store.read_node(sid, n) is None:
            raise UnknownNode(f"session {sid} has no node {quoted(n)}")
    return side_of(rt.store, sid, ends[0], table), side_of(rt.store, sid, ends[1], table)


def _step_line(step: Step | None) -> str:
    if step is None:
        return "(nothing)"
    text = " ".join(step.text.split())
    return f"{step.kind} {step.what}: {text[:160]}{'…' if len(text) > 160 else ''}"


def diff_lines(d: HistoryDiff) -> list[str]:
    """Return ``clew diff``'s text: the two sides, where they part, the differing steps,
    the outcomes, tokens and cost side by side."""
    a, b = d.a, d.b
    lines = [
        f"A {a.session_id} up to {a.end_node_id or '(root)'}",
        f"B {b.session_id} up to {b.end_node_id or '(root)'}",
    ]
    if d.identical:
        lines.append(f"identical: {d.common_nodes} nodes, {d.common_steps} steps")
    else:
        lines.append(_parting(d))
        for label, side in (("A", a), ("B", b)):
            for step in side.nodes[d.common_nodes :]:
                lines.append(f"  {label}  {_step_line(step)}")
        for x, y in d.differing:
            lines.append(f"  A  {_step_line(x)}")
            lines.append(f"  B  {_step_line(y)}")
        if d.alike_after:
            lines.append(f"  ({d.alike_after} later steps alike on both sides)")
    lines.append(f"outcome  A: {_outcome(a)}  |  B: {_outcome(b)}")
    lines.append(f"tokens   A: {_tokens(a)}  |  B: {_tokens(b)}")
    return lines


def _parting(d: HistoryDiff) -> str:
    """Say where the two histories part: at a node, or (same nodes) at a step."""
    common = f"common: {d.common_nodes} nodes, {d.common_steps} steps"
    if len(d.a.nodes) == len(d.b.nodes) == d.common_nodes:
        return f"{common}; the nodes are alike, the steps part after step {d.common_steps}"
    after_a, after_b = d.parted_after
    where = after_a or "(root)"
    if after_a != after_b:
        where += f" | {after_b or '(root)'}"
    return f"{common}; they part after node {where}"


def _outcome(side: Side) -> str:
    outcomes = [s.text for s in side.steps if s.kind == "outcome"]
    return outcomes[-1] if outcomes else "(no run)"


def _tokens(side: Side) -> str:
    t = side.usage.totals
    cost = "" if side.usage.cost is None else f", cost {side.usage.cost:.4f}"
    partial = " (partial)" if side.usage.partial else ""
    return f"{t.calls} calls, {t.input_tokens:,} in / {t.output_tokens:,} out{cost}{partial}"
