"""``clew pending``, ``approve``, ``deny``, ``answer`` and ``resume`` of a waiting session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
from _cli_helpers import Where, invoke, script_model

from actors import Runtime, ScriptedModel, tool


class Amount(pydantic.BaseModel):
    amount: int


@tool(Amount, needs_approval=True)
def pay(args: Amount) -> str:
    """Pay an amount."""
    return f"paid {args.amount}"


MODEL = ScriptedModel(
    {
        "rules": [
            {"role": "router", "replies": [{"json": {"primary_role": "clerk"}}]},
            {
                "role": "clerk",
                "replies": [
                    {"text": "(never)"},
                    {"tool_calls": [{"name": "pay", "arguments": {"amount": 42}}]},
                    {"text": "Done."},
                ],
            },
        ]
    }
)


def _waiting(where: Where) -> tuple[str, str]:
    with Runtime(where.home, where.project) as rt:
        out = rt.new_session().run("Pay.", model=MODEL, tools=[pay])
    (p,) = out.pending
    return out.session_id, p.tool_call_id


def _pending(where: Where, *args: str) -> Any:
    result = invoke(where, "pending", *args, "--json")
    assert 0 == result.code, result.err
    return json.loads(result.out)["waiting"]


def test_pending_lists_the_waiting_call_and_sessions_shows_waiting(empty: Where) -> None:
    sid, call = _waiting(empty)
    (state,) = _pending(empty)
    assert (sid, [call], [{"amount": 42}], False) == (
        state["session_id"],
        [p["tool_call_id"] for p in state["pending"]],
        [p["arguments"] for p in state["pending"]],
        state["ready"],
    )
    assert [state] == _pending(empty, sid)
    text = invoke(empty, "pending").out
    assert call in text and "pay" in text
    (info,) = json.loads(invoke(empty, "sessions", "--json").out)
    assert (True, False) == (info["waiting"], info["interrupted"])


def test_approve_with_edited_arguments_then_the_run_resumes(empty: Where) -> None:
    sid, call = _waiting(empty)
    result = invoke(empty, "approve", sid, call, "--args", '{"amount": 7}', "--json")
    assert 0 == result.code, result.err
    doc = json.loads(result.out)
    assert ({"type": "edit", "arguments": {"amount": 7}}, []) == (
        doc["decision"],
        doc["still_pending"],
    )
    assert [] == _pending(empty, sid)[0]["pending"]
    with Runtime(empty.home, empty.project) as rt:
        out = rt.session(sid).resume_waiting(model=MODEL, tools=[pay])
        assert ("completed", "Done.") == (out.status, out.answer)
        assert rt.replay(sid).identical
    assert [] == _pending(empty)


def test_deciding_wrongly_exits_2_with_one_line_and_writes_nothing(empty: Where) -> None:
    sid, call = _waiting(empty)
    with Runtime(empty.home, empty.project) as rt:
        other = rt.new_session().id
        before = rt.store.count_events(sid)
    for args in (
        ("approve", sid, "call_nope"),
        ("approve", other, call),  # a call of another session
        ("approve", sid, call, "--args", "[1]"),
        ("approve", sid, call, "--args", "{nope"),
        ("deny", sid, call, "--reason", " "),
        ("answer", sid, "iOS"),  # it waits for an approval, not an answer
        ("answer", other, "iOS"),
        ("approve", "sess_19990101_000000_dead", call),
    ):
        result = invoke(empty, *args)
        assert 2 == result.code, args
        assert 1 == len(result.err.strip().splitlines()), result.err
        assert result.err.startswith("error: ")
    assert 0 == invoke(empty, "deny", sid, call, "--reason", "too much").code
    result = invoke(empty, "deny", sid, call, "--reason", "again")
    assert (2, f"error: tool call {call} of session {sid} was decided already") == (
        result.code,
        result.err.strip(),
    )
    with Runtime(empty.home, empty.project, read_only=True) as rt:
        assert before + 1 == rt.store.count_events(sid)


def test_a_clarification_is_answered_and_resumed_from_the_command_line(
    empty: Where, tmp_path: Path
) -> None:
    ask = {"required": True, "question": "Which platform?"}
    spec = script_model(
        tmp_path / "script.json",
        {
            "role": "router",
            "replies": [
                {"json": {"primary_role": "lead", "clarification": ask}},
                {"json": {"primary_role": "lead"}},
            ],
        },
        {"role": "lead", "replies": [{"text": "(never)"}, {"text": "For iOS: three apps."}]},
    )
    result = invoke(empty, "run", "Find apps.", "--model", spec, "--json")
    assert 0 == result.code, result.err
    out = json.loads(result.out)
    sid = out["session_id"]
    assert ("needs_clarification", "Which platform?") == (out["status"], out["question"])
    (state,) = _pending(empty, sid)
    assert ("Which platform?", False) == (state["question"], state["ready"])
    resumed = invoke(empty, "resume", sid)
    assert 2 == resumed.code
    assert "waiting for an answer to: Which platform?" in resumed.err
    assert 0 == invoke(empty, "answer", sid, "iOS").code
    assert 2 == invoke(empty, "answer", sid, "Android").code
    resumed = invoke(empty, "resume", sid, "--json")
    assert 0 == resumed.code, resumed.err
    assert ("completed", "For iOS: three apps.") == (
        json.loads(resumed.out)["status"],
        json.loads(resumed.out)["answer"],
    )
    assert 0 == invoke(empty, "verify", sid).code
    assert 0 == invoke(empty, "replay", sid).code
