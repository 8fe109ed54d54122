"""``clew calls`` and ``clew call``: what each model call of a session was sent and answered.

``clew calls SESSION`` lists the calls, one line each; ``clew call SESSION [CALL]`` shows
one whole (default: the last) — the system prompt, every message with its blocks, the tool
specs by name (``--tools``: in full), the reply, usage, cost and latency — rebuilt from the
recording (:mod:`actors.replay.calls`), paged on a terminal. ``--json`` prints the document,
``--as openai|anthropic`` the request as that provider's request body (ready for ``curl``),
``--diff`` what changed since the same agent's previous call.

CALL is a call's number in ``clew calls`` (``3``), ``last``, ``AGENT:N`` (the N-th call of
an agent, from 1: ``brain:r1/w1:2``; the agent as ``clew timeline --agent`` takes it, or
its role when one agent has it), or its id (its ``model_requested``'s,
``brain:r1/w1:r1#6``) or a unique prefix of that.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import IO, Annotated, Any

import typer

from actors.cli import ids
from actors.cli.app import app
from actors.cli.options import Home, Json, Project, SessionArg, open_session, where_from
from actors.cli.output import print_json
from actors.cli.pager import paged
from actors.documents.calls import (
    WIRE_FORMATS,
    call_doc,
    calls_doc,
    previous_call,
    wire_body,
)
from actors.errors import UsageError
from actors.replay.calls import CallLog, RecordedCall
from eventlog.errors import quoted
from eventlog.ids import relative
from projections.costs import Price

Prices = Annotated[
    str | None,
    typer.Option(
        "--prices",
        metavar="FILE",
        help="a price list (TOML; default $CLEW_PRICES) to show the cost",
        show_default=False,
    ),
]
NoPager = Annotated[bool, typer.Option("--no-pager", help="never page the output")]


def _prices(path: str | None) -> tuple[str, dict[str, Price]]:
    chosen = path or os.environ.get("CLEW_PRICES") or None
    if not chosen:
        return "USD", {}
    from actors.cli.usage_command import load_prices  # noqa: PLC0415 - pydantic: only for a price list

    return load_prices(chosen)


def resolve_call(sid: str, typed: str, calls: list[RecordedCall]) -> RecordedCall:
    """Return the call ``typed`` names (see the module docstring).

    Raises:
        UsageError: no call matches (``AmbiguousId``: several do).
    """
    if not calls:
        raise UsageError(f"session {sid} has no model call")
    if typed == ids.LAST:
        return calls[-1]
    if typed.isdigit():
        if 1 <= int(typed) <= len(calls):
            return calls[int(typed) - 1]
        raise UsageError(f"session {sid} has {len(calls)} model calls; no call {typed}")
    agent, _, nth = typed.rpartition(":")
    if agent and nth.isdigit() and "#" not in typed:
        return _nth_of_agent(sid, agent, int(nth), calls)
    by_id = {c.requested.event_id: c for c in calls}
    found = ids.pick("call", typed, list(by_id), session_id=sid)
    if found is None:
        raise UsageError(f"session {sid} has no model call {quoted(typed)}")
    return by_id[found]


def _nth_of_agent(sid: str, agent: str, n: int, calls: list[RecordedCall]) -> RecordedCall:
    agents = list(dict.fromkeys(c.requested.agent_id or "" for c in calls))
    found = ids.pick("agent", agent, agents, session_id=sid)
    if found is None:
        by_role = {c.requested.agent_id for c in calls if c.event.role == agent}
        if len(by_role) > 1:
            shown = ", ".join(sorted(relative(sid, a or "") for a in by_role))
            raise UsageError(f"role {quoted(agent)} is several agents' ({shown}); name one")
        found = next(iter(by_role), None)
    if found is None:
        raise UsageError(f"session {sid} has no agent {quoted(agent)} that called a model")
    mine = [c for c in calls if c.requested.agent_id == found]
    if not 1 <= n <= len(mine):
        raise UsageError(f"{relative(sid, found)} made {len(mine)} model calls; no call {n}")
    return mine[n - 1]


@app.command()
def calls(
    session: SessionArg,
    run_id: Annotated[
        str | None,
        typer.Option("--run", metavar="RUN", help="only this run and its workers' runs"),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", metavar="AGENT", help="only this agent's calls")
    ] = None,
    role: Annotated[
        str | None, typer.Option("--role", metavar="ROLE", help="only this role's calls")
    ] = None,
    prices: Prices = None,
    no_pager: NoPager = False,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """List the session's model calls: who asked, the model, tokens, latency, cost."""
    where = where_from(home, project)
    currency, table = _prices(prices)
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        run = ids.resolve_run(rt.store, sid, run_id) if run_id is not None else None
        who = ids.resolve_agent(rt.store, sid, agent) if agent is not None else None
        log = CallLog(rt.store, sid)
        picked = [
            log.call(c)
            for c in log.recorded(run)
            if (who is None or c.requested.agent_id == who)
            and (role is None or c.event.role == role)
        ]
        doc = calls_doc(sid, picked, currency, table)
    if as_json:
        print_json(doc)
        return
    with paged(not no_pager) as out:
        _print_calls(out, doc)


def _print_calls(out: IO[str], doc: dict[str, Any]) -> None:
    rows = doc["calls"]
    priced = doc["currency"] is not None
    cells: list[tuple[str, ...]] = [
        (
            str(r["index"]),
            r["id"],
            f"{r['agent'] or '-'} [{r['role'] or '-'}]",
            r["model"],
            f"{r['input_tokens']}→{r['output_tokens']}",
            _ms(r["latency_ms"]),
            "-" if r["cost"] is None else f"{r['cost']:.4f}",
            r["stop_reason"] + (" (served)" if r["served"] else ""),
        )
        for r in rows
    ]
    head: tuple[str, ...] = (
        "#",
        "id",
        "agent [role]",
        "model",
        "tokens",
        "latency",
        "cost",
        "stop",
    )
    if not priced:
        head, cells = head[:6] + head[7:], [c[:6] + c[7:] for c in cells]
    widths = [max(len(x) for x in col) for col in zip(head, *cells, strict=False)]
    right = {0, 4, 5, 6} if priced else {0, 4, 5}

    def line(values: tuple[str, ...]) -> str:
        parts = [
            v.rjust(w) if i in right else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(parts).rstrip() + "\n"

    out.write(line(head))
    out.writelines(line(c) for c in cells)
    money = f" · {doc['currency']}" if priced else ""
    out.write(f"{len(rows)} model calls{money}\n")


def _ms(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


@app.command()
def call(
    session: SessionArg,
    which: Annotated[
        str,
        typer.Argument(
            metavar="[CALL]", help="N (see clew calls), last (the default), AGENT:N, an id prefix"
        ),
    ] = ids.LAST,
    tools: Annotated[bool, typer.Option("--tools", help="print the tool specs in full")] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="what changed since the agent's previous call")
    ] = False,
    wire: Annotated[
        str | None,
        typer.Option("--as", metavar="PROVIDER", help="the request as openai|anthropic sends it"),
    ] = None,
    prices: Prices = None,
    no_pager: NoPager = False,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Show one model call whole: the request as sent, the reply, usage, cost, latency."""
    if wire is not None and wire not in WIRE_FORMATS:
        raise UsageError(f"--as takes {' or '.join(WIRE_FORMATS)}, not {quoted(wire)}")
    where = where_from(home, project)
    currency, table = _prices(prices)
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        log = CallLog(rt.store, sid)
        recorded = log.recorded()
        rec = resolve_call(sid, which, recorded)
        one = log.call(rec)
        if wire is not None:
            print_json(wire_body(one, wire))
            return
        previous = previous_call(log, recorded, rec)
        doc = call_doc(rt, sid, one, previous, currency=currency, prices=table)
    if as_json:
        print_json(doc)
        return
    with paged(not no_pager) as out:
        out.writelines(_diff_lines(doc) if diff else _call_lines(doc, tools=tools))


def _call_lines(doc: dict[str, Any], *, tools: bool) -> Iterator[str]:
    """The call view: its header, the request, the reply."""
    cost = "" if doc["cost"] is None else f" · cost {doc['cost']:.4f} {doc['currency']}"
    served = " · served from the recording" if doc["served"] else ""
    exact = "exact" if doc["hash_matches"] else "NOT exact: the recording lacks part of it"
    yield f"call {doc['index']} {doc['id']} · {doc['agent']} [{doc['role']}] · {doc['phase']}\n"
    yield f"model {doc['model']} · call_index {doc['call_index']} attempt {doc['attempt']}\n"
    yield (
        f"{doc['input_tokens']}→{doc['output_tokens']} tokens · {_ms(doc['latency_ms'])}"
        f" · {doc['stop_reason']}{cost}{served}\n"
    )
    yield f"request recorded by {doc['recorded_as']}, rebuilt {exact} ({doc['request_hash']})\n"
    req = doc["request"]
    settings = ", ".join(f"{k} {v}" for k, v in req["settings"].items() if v is not None)
    yield f"settings: {settings}\n"
    yield "\n── system ──\n"
    yield (req["system"] or "(none)") + "\n"
    yield f"\n── tools ({len(req['tools'])}) ──\n"
    if tools:
        for t in req["tools"]:
            yield f"{t['name']}: {t['description']}\n"
            yield _indent(json.dumps(t["parameters"], indent=2, ensure_ascii=False)) + "\n"
    else:
        yield (", ".join(t["name"] for t in req["tools"]) or "(none)") + "\n"
    yield f"\n── messages ({len(req['messages'])}) ──\n"
    for i, m in enumerate(req["messages"], 1):
        yield from _message(i, m, doc["artifacts"])
    yield "\n── response ──\n"
    if doc["error"] is not None:
        e = doc["error"]
        yield f"failed: {e['error_type']}: {e['message']}\n"
    elif doc["response"] is None:
        yield "(no answer recorded)\n"
    else:
        yield from _blocks(doc["response"]["content"], doc["artifacts"])


def _diff_lines(doc: dict[str, Any]) -> Iterator[str]:
    """What changed since the agent's previous call."""
    d = doc["diff"]
    yield f"call {doc['index']} {doc['id']} · {doc['agent']} [{doc['role']}]\n"
    if d is None:
        yield "the agent's first call: every message is new\n"
        for i, m in enumerate(doc["request"]["messages"], 1):
            yield from _message(i, m, doc["artifacts"])
        return
    yield (
        f"since call {d['previous']} ({d['kept']} messages kept, {d['dropped']} dropped,"
        f" {len(d['added'])} added)\n"
    )
    if d["system_changed"]:
        yield "\n── system prompt changed ──\n"
        yield from (line + "\n" for line in d["system_diff"])
    if d["tools_changed"]:
        yield "\n── the tool specs changed ──\n"
    for i, m in enumerate(d["added"], d["kept"] + 1):
        yield from _message(i, m, doc["artifacts"], mark="+ ")


def _message(i: int, m: dict[str, Any], artifacts: dict[str, Any], mark: str = "") -> Iterator[str]:
    yield f"\n{mark}[{i}] {m['role']}\n"
    yield from _blocks(m["content"], artifacts)


def _blocks(
    blocks: list[dict[str, Any]], artifacts: dict[str, Any], at: str = "  "
) -> Iterator[str]:
    for b in blocks:
        kind = b.get("type")
        if kind == "text":
            yield _indent(b["text"], at) + "\n"
        elif kind == "tool_call":
            args = json.dumps(b["arguments"], ensure_ascii=False)
            yield f"{at}→ tool call {b['name']} ({b['id']}) {args}\n"
        elif kind == "tool_result":
            bad = " error" if b.get("is_error") else ""
            yield f"{at}← tool result{bad} {b.get('name', '')} ({b['tool_call_id']})\n"
            yield from _blocks(b["content"], artifacts, at + "  ")
        elif kind == "artifact_ref":
            a = artifacts.get(b["artifact_id"])
            size = f", {a['size']} bytes" if a and a["size"] is not None else ""
            ref = f"{b['artifact_id']} {b['mime_type']}{size}"
            yield f"{at}[artifact {ref}] {b.get('summary', '')}\n"
            if a:
                yield _indent(a["preview"], at + "| ") + "\n"
        elif kind == "json":
            yield _indent(json.dumps(b["data"], indent=2, ensure_ascii=False), at) + "\n"
        else:
            yield _indent(json.dumps(b, ensure_ascii=False), at) + "\n"


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])
