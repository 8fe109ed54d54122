"""Issue 32 item 3: an approval's edited arguments are checked against the tool's recorded
parameters when decided — refused with a typed error naming the field (``clew approve
--args`` exits 2), nothing recorded — and a fitting edit still runs."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest
from _cli_helpers import Where, run_process

from actors import Edit, Runtime, ScriptedModel, tool
from actors.errors import InvalidEdit
from actors.models.tools import Tool
from projections import verify

SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "role": "router",
            "replies": [
                {
                    "json": {
                        "primary_role": "lead",
                        "workers": [{"id": "w1", "role": "payer", "goal": "Refund"}],
                    }
                }
            ],
        },
        {
            "role": "payer",
            "phase": "worker",
            "replies": [
                {"tool_calls": [{"name": "refund", "arguments": {"amount_eur": 30}}]},
                {"json": {"summary": "Refunded."}},
            ],
        },
        {"role": "lead", "replies": [{"text": "Done."}]},
    ]
}


class RefundArgs(pydantic.BaseModel):
    amount_eur: int = pydantic.Field(gt=0)
    note: str | None = pydantic.Field(default=None, max_length=20)


def _tools(paid: list[int]) -> list[Tool]:
    @tool(RefundArgs, needs_approval=True)
    def refund(args: RefundArgs) -> str:
        """Refund an amount."""
        paid.append(args.amount_eur)
        return f"refunded {args.amount_eur}"

    return [refund]


def test_an_edit_is_checked_against_the_tools_parameters_when_decided(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    paid: list[int] = []
    with Runtime(home, project) as rt:
        session = rt.new_session()
        out = session.run("Refund it.", model=ScriptedModel(SCRIPT), tools=_tools(paid))
        assert "waiting" == out.status
        ((call, sid),) = [(p.tool_call_id, p.session_id) for p in out.pending]
        before = rt.store.count_events(sid)
        for bad, field in (
            ({"amount_eur": -5}, "amount_eur"),
            ({"amount_eur": "ten"}, "amount_eur"),
            ({}, "amount_eur"),
            ({"amount_eur": 5, "note": "x" * 30}, "note"),
        ):
            with pytest.raises(InvalidEdit, match=field):
                rt.decide(sid, call, Edit(arguments=bad))
        assert before == rt.store.count_events(sid)
    refused = run_process(
        Where(home, project), "approve", sid, call, "--args", '{"amount_eur": -5}'
    )
    assert 2 == refused.code, (refused.out, refused.err)
    assert "amount_eur" in refused.err and "Traceback" not in refused.err
    with Runtime(home, project) as rt:
        assert before == rt.store.count_events(sid)
        rt.decide(sid, call, Edit(arguments={"amount_eur": 7}))
        done = rt.resume(sid, model=ScriptedModel(SCRIPT), tools=_tools(paid))
        assert "completed" == done.status
        assert [7] == paid
        assert verify(rt.store, sid).ok
