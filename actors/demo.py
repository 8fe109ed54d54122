"""The built-in demo scenario: a routed plan, N workers (w2 depends on w1), tools, review.

Used by ``clew demo``, the crash-recovery sweep and the benchmarks. Everything
is scripted, so it runs offline and replays identically.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pydantic

from actors.models.scripted import ScriptedModel
from actors.models.tools import FunctionTool, Tool
from eventlog.regular_files import open_under

ROLES = ["researcher", "analyst", "engineer", "designer", "tester", "writer2"]
DEMO_PROMPT = "Plan a small offline-first notes app: research, analyse, and propose a design."


def demo_script(workers: int = 3, delay_ms: int = 0) -> dict[str, Any]:
    """Return the ScriptedModel script of the demo with ``workers`` workers."""
    if workers < 1:
        raise ValueError("the demo needs at least one worker")
    plan_workers: list[dict[str, Any]] = []
    for i in range(1, workers + 1):
        plan_workers.append(
            {
                "id": f"w{i}",
                "role": ROLES[(i - 1) % len(ROLES)],
                "goal": f"Part {i} of the work: {ROLES[(i - 1) % len(ROLES)]} findings",
                "deps": ["w1"] if i == 2 else [],
            }
        )
    rules: list[dict[str, Any]] = [
        {
            "role": "router",
            "phase": "route",
            "replies": [
                {
                    "json": {
                        "task_name": "notes-app-plan",
                        "primary_role": "lead",
                        "workers": plan_workers,
                        "review": True,
                    }
                }
            ],
        },
    ]
    rules += [_worker_rule(role) for role in dict.fromkeys(w["role"] for w in plan_workers)]
    rules.append(
        {
            "role": "lead",
            "replies": [
                {"text": "Proposal: a local-first notes app with CRDT sync, built in three steps."},
            ],
        }
    )
    rules.append(
        {
            "role": "reviewer",
            "phase": "review",
            "replies": [
                {"json": {"summary": "The proposal answers the request.", "verdict": "approved"}},
            ],
        }
    )
    return {"delay_ms": delay_ms, "rules": rules}


def _worker_rule(role: str) -> dict[str, Any]:
    """Return the script rule of one worker role: two tool calls, then a JSON result."""
    return {
        "role": role,
        "phase": "worker",
        "replies": [
            {
                "text": f"Looking things up as the {role}.",
                "tool_calls": [
                    {"name": "lookup", "arguments": {"topic": role}},
                    {"name": "save_note", "arguments": {"text": f"{role} was here"}},
                ],
            },
            {
                "json": {
                    "summary": f"The {role} found three relevant facts.",
                    "risks": [f"{role}: sample size is small"],
                    "nextQuestions": [],
                }
            },
        ],
    }


def demo_model(workers: int = 3, delay_ms: int = 0) -> ScriptedModel:
    """Return the demo's scripted model."""
    return ScriptedModel(demo_script(workers, delay_ms), name="scripted:demo")


class LookupArgs(pydantic.BaseModel):
    topic: str


class NoteArgs(pydantic.BaseModel):
    text: str


def demo_tools(project_dir: Path) -> list[Tool]:
    """Return the demo's tools: ``lookup`` (idempotent) and ``save_note`` (a side effect)."""
    notes = project_dir / ".clew" / "demo-notes.txt"

    def lookup(args: LookupArgs) -> dict[str, Any]:
        """Look up facts about a topic (read-only, safe to repeat)."""
        return {"topic": args.topic, "facts": [f"{args.topic} fact {i}" for i in (1, 2, 3)]}

    def save_note(args: NoteArgs) -> str:
        """Append a note to the project's notes file (a side effect: not idempotent)."""
        # A private file (0600, in a 0700 .clew/) that must be a regular file reached
        # without a symlink: a note never lands behind a link planted in the project.
        fd = open_under(project_dir, notes, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        assert fd is not None  # O_CREAT: created when missing
        try:
            view = memoryview((args.text + "\n").encode())
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        return f"saved note {args.text!r}"

    return [
        FunctionTool("lookup", lookup, LookupArgs, idempotent=True),
        FunctionTool("save_note", save_note, NoteArgs, idempotent=False),
    ]
