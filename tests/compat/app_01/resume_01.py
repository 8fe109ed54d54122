"""A small application written from clew 0.1.0's docs (replay-and-recovery, runtime) only.

``run``: open the home with ``Runtime.from_env()`` (``$CLEW_HOME``; it honours
``CLEW_FAULT_KILL_AFTER_EVENTS``, so the test kills it mid-run) and run a routed plan.
``resume SESSION``: a later process finds the session interrupted, resumes it with the
same model and tools, then replays and verifies it. Each prints one JSON line.

Usage: ``python resume_01.py run PROJECT`` / ``python resume_01.py resume PROJECT SESSION``.
Do not modernise this file: it is the 0.1 contract (docs/compatibility.md).
"""

import json
import sys

import pydantic

from actors import Runtime, ScriptedModel, tool
from projections.verify import verify


class LookupArgs(pydantic.BaseModel):
    topic: str


@tool(LookupArgs, idempotent=True)  # idempotent: a call in doubt after a crash runs again
def lookup(args: LookupArgs) -> str:
    """Look a topic up."""
    return f"facts about {args.topic}"


plan = {
    "primary_role": "lead",
    "workers": [
        {"id": "w1", "role": "researcher", "goal": "Find facts"},
        {"id": "w2", "role": "researcher", "goal": "Find more facts", "deps": ["w1"]},
    ],
}
worker_replies = [
    {"tool_calls": [{"name": "lookup", "arguments": {"topic": "tides"}}]},
    {"json": {"summary": "Facts found."}},
]
model = ScriptedModel(
    {
        "rules": [
            {"role": "router", "replies": [{"json": plan}]},
            {"role": "researcher", "replies": worker_replies},
            {"role": "lead", "replies": [{"text": "Done."}]},
        ]
    }
)

mode, project = sys.argv[1], sys.argv[2]
with Runtime.from_env(project_dir=project) as rt:
    if mode == "run":
        session = rt.new_session()
        print(json.dumps({"session": session.id}), flush=True)
        outcome = session.run("Tides?", model=model, tools=[lookup])
        print(json.dumps({"status": outcome.status}))
    else:
        sid = sys.argv[3]
        before = rt.session(sid).info()
        outcome = rt.resume(sid, model=model, tools=[lookup])
        report = rt.replay(sid)
        seen = {
            "interrupted_before": before.interrupted,
            "interrupted_after": rt.session(sid).info().interrupted,
            "status": outcome.status,
            "answer": outcome.answer,
            "workers": [r.status for r in outcome.worker_results],
            "replay": report.identical,
            "verify": verify(rt.store, sid).ok,
        }
        print(json.dumps(seen, sort_keys=True))
