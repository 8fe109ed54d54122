"""Sessions the web inspector's tests look at: the demo, one that waits for an approval,
one whose model reply is markup, a slow live run; and the headless Chromium they use."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pydantic

from actors import Runtime, ScriptedModel, tool
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.tools import Tool
from eventlog.blocks import TextBlock
from eventlog.events import Node, NodeAppended
from eventlog.records import AppendRequest

#: Debian's chromium; the tests never download a browser.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: A model reply that would run script if the page inserted it as markup.
MARKUP = '<script>window.__clew_pwned = 1</script><img src="x" onerror="window.__clew_pwned = 2">'


def _plan(workers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "router",
        "phase": "route",
        "replies": [{"json": {"primary_role": "lead", "workers": workers, "review": False}}],
    }


def markup_model() -> ScriptedModel:
    """A session whose final answer is :data:`MARKUP`."""
    return ScriptedModel({"rules": [_plan([]), {"role": "lead", "replies": [{"text": MARKUP}]}]})


PAY_SCRIPT: dict[str, Any] = {
    "rules": [
        _plan([{"id": "w1", "role": "payer", "goal": "Pay the invoice", "deps": []}]),
        {
            "role": "payer",
            "phase": "worker",
            "replies": [
                {"tool_calls": [{"name": "pay", "arguments": {"amount": 42}}]},
                {"json": {"summary": "Paid."}},
            ],
        },
        {"role": "lead", "replies": [{"text": "All paid."}]},
    ]
}


class PayArgs(pydantic.BaseModel):
    amount: int


def pay_tools(paid: list[int]) -> list[Tool]:
    """``pay``: needs a person's approval; appends the amount to ``paid``."""

    @tool(PayArgs, needs_approval=True)
    def pay(args: PayArgs) -> str:
        """Pay an amount."""
        paid.append(args.amount)
        return f"paid {args.amount}"

    return [pay]


def pay_model() -> ScriptedModel:
    return ScriptedModel(PAY_SCRIPT)


def demo_session(rt: Runtime, *, delay_ms: int = 0) -> str:
    """Run the demo (what ``clew demo`` runs) in a new session; return its id."""
    session = rt.new_session()
    session.run(DEMO_PROMPT, model=demo_model(3, delay_ms), tools=demo_tools(rt.project_dir))
    return session.id


def waiting_session(rt: Runtime, paid: list[int]) -> str:
    """A session parked on the approval of ``pay``; return its id."""
    session = rt.new_session()
    out = session.run("Pay the invoice.", model=pay_model(), tools=pay_tools(paid))
    assert "waiting" == out.status, out
    return session.id


def markup_session(rt: Runtime) -> str:
    session = rt.new_session()
    session.run("Say something.", model=markup_model())
    return session.id


def big_session(rt: Runtime, chain: int = 1500, every: int = 100, branch: int = 5) -> str:
    """A session of ``chain`` nodes in one conversation, with a side branch of ``branch``
    nodes every ``every`` nodes; the active node is the chain's last. Returns its id."""
    sid = rt.new_session().id
    agent = f"{sid}:brain"
    requests = []

    def node(node_id: str, parent: str | None, role: str, text: str, activate: bool) -> None:
        n = Node(
            node_id=f"{sid}:{node_id}",
            parent_id=f"{sid}:{parent}" if parent else None,
            agent_id=agent,
            run_id=None,
            role=role,  # type: ignore[arg-type]
            content=[TextBlock(text=text)],
        )
        requests.append(
            AppendRequest(
                session_id=sid,
                event=NodeAppended(node=n, activate=activate),
                created_at=rt.clock.now(),
                agent_id=agent,
            )
        )

    parent: str | None = None
    for i in range(1, chain + 1):
        role = "user" if i % 2 else "assistant"
        node(f"brain:r1:n{i}", parent, role, f"turn {i} of the long conversation", True)
        if i % every == 1 and i > 1:
            side = parent
            for j in range(1, branch + 1):
                role = "user" if j % 2 else "assistant"
                node(f"brain:b{i}:n{j}", side, role, f"side branch at {i}, turn {j}", False)
                side = f"brain:b{i}:n{j}"
        parent = f"brain:r1:n{i}"
    futures = [rt.writer.submit(r) for r in requests]
    for f in futures:
        f.get(timeout=120)
    return sid


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is absent (apt-get install chromium)"
    return None


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


CSRF = "test-csrf-token-0123456789"


class Home:
    """A home the read-only tests share: the demo session and the markup session."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.project = root / "proj"
        self.project.mkdir(parents=True)
        with Runtime(self.home, self.project) as rt:
            self.demo = demo_session(rt)
            self.markup = markup_session(rt)
