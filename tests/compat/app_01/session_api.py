"""A small application written from clew 0.1.0's docs/runtime.md ("Embedding") only.

Two main runs in one session (a routed plan with two workers, a fallback chain, two
tools, a review; then a clarification), the session list, a node switch, a replay and a
verify — every name as 0.1 documented it. Prints one JSON document of what it saw.

Usage: ``python session_api.py HOME PROJECT``. Do not modernise this file: it is the
0.1 contract (docs/compatibility.md).
"""

import json
import sys
from pathlib import Path

import pydantic

from actors import FunctionTool, RunSettings, Runtime, ScriptedModel, tool
from projections.verify import verify


class LookupArgs(pydantic.BaseModel):
    topic: str


class NoteArgs(pydantic.BaseModel):
    text: str


@tool(LookupArgs, idempotent=True)
def lookup(args: LookupArgs) -> str:
    """Look a topic up."""
    return f"three facts about {args.topic}"


notes: list[str] = []


def save_note(args: NoteArgs) -> dict[str, str]:
    notes.append(args.text)
    return {"saved": args.text}


save = FunctionTool("save_note", save_note, NoteArgs, description="Save a note.", idempotent=False)

plan = {
    "primary_role": "lead",
    "workers": [
        {"id": "w1", "role": "researcher", "goal": "Find facts", "deps": []},
        {"id": "w2", "role": "analyst", "goal": "Weigh them", "deps": ["w1"]},
    ],
    "review": True,
}
ask_back = {
    "primary_role": "lead",
    "workers": [],
    "clarification": {
        "required": True,
        "question": "Which city?",
        "reason": "no city given",
        "missing_fields": ["city"],
        "options": ["Lisbon", "Porto"],
    },
}
cheap = ScriptedModel(
    {
        "rules": [
            {"role": "router", "contains": "tomorrow", "replies": [{"json": ask_back}]},
            {"role": "router", "phase": "route", "replies": [{"json": plan}]},
        ]
    },
    name="cheap",
)
flaky = ScriptedModel(
    {"rules": [{"replies": [{"error": "rate limited", "status": 429}]}]}, name="flaky"
)
backup = ScriptedModel(
    {
        "rules": [
            {
                "role": "researcher",
                "replies": [
                    {"tool_calls": [{"name": "lookup", "arguments": {"topic": "tides"}}]},
                    {"json": {"summary": "Three facts.", "risks": []}},
                ],
            },
            {
                "role": "analyst",
                "replies": [
                    {"tool_calls": [{"name": "save_note", "arguments": {"text": "weighed"}}]},
                    {"text": "They hold."},
                ],
            },
            {
                "role": "reviewer",
                "replies": [{"json": {"summary": "Fine.", "verdict": "approved"}}],
            },
            {"role": "lead", "replies": [{"text": "The tides are predictable."}]},
        ]
    },
    name="backup",
)
model = {"router": cheap, "default": [flaky, backup]}  # a list is a fallback chain

home, project = Path(sys.argv[1]), Path(sys.argv[2])
seen: dict[str, object] = {}
with Runtime(home, project_dir=project) as rt:  # or Runtime.from_env()
    session = rt.new_session()
    outcome = session.run(
        "Tell me about the tides",
        model=model,
        tools=[lookup, save],
        settings=RunSettings(max_workers=3, max_turns=8, max_fix_iterations=2),
    )
    seen["outcome"] = {
        "session_id": outcome.session_id == session.id,
        "run_id": outcome.run_id,
        "status": outcome.status,
        "answer": outcome.answer,
        "question": outcome.question,
        "worker_results": [[r.task_id, r.status, r.summary] for r in outcome.worker_results],
        "error": outcome.error,
        "active_node_id": outcome.active_node_id is not None,
    }
    seen["notes"] = notes
    first_active = outcome.active_node_id

    # Calling run again continues the conversation from its active node.
    again = session.run("And tomorrow?", model=model, tools=[lookup, save])
    seen["second"] = {"status": again.status, "question": again.question, "run_id": again.run_id}

    info = session.info()
    seen["info"] = {
        "session_id": info.session_id == session.id,
        "status": info.status,
        "created_at": bool(info.created_at),
        "updated_at": bool(info.updated_at),
        "interrupted": info.interrupted,
        "runs": info.runs,
        "events": info.events,
        "active_node_id": info.active_node_id == again.active_node_id,
    }
    seen["sessions"] = [s.session_id == session.id for s in rt.sessions()]
    seen["same_session"] = rt.session(session.id).id == session.id

    # rt.store reads events, nodes, runs and agents.
    seen["store"] = {
        "events": len(rt.store.read_events(session.id)),
        "nodes": len(rt.store.read_nodes(session.id)),
        "runs": len(rt.store.read_runs(session.id)),
        "agents": sorted(a.agent_id.split(":", 1)[1] for a in rt.store.read_agents(session.id)),
        "row_status": rt.store.read_session(session.id).status,
    }

    before = rt.switch_node(session.id, first_active)  # nothing is deleted
    seen["switch"] = {
        "returned_previous": before == again.active_node_id,
        "now_active": session.info().active_node_id == first_active,
    }

    report = rt.replay(session.id)  # offline, no keys, no side effects
    seen["replay"] = {
        "identical": report.identical,
        "summary": report.summary(),
        "runs": report.runs,
        "divergences": len(report.divergences),
    }
    checked = verify(rt.store, session.id)
    seen["verify"] = {"ok": checked.ok, "lines": len(checked.lines())}
    seen["notes_after_replay"] = notes

print(json.dumps(seen, sort_keys=True))
