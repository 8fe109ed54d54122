"""The clew wrapper's per-step overhead on a Pydantic AI agent, vs the unwrapped agent and
vs ``DBOSAgent`` (SQLite system database), in the same run.

One agent, one run of ``--steps`` steps (default 40: Pydantic AI allows 50 requests a
run): each step is a model request answered with one tool call (a ``FunctionModel``: no
network, no tokens), then the tool; the last request answers with text. So a step is one
model request and one tool call — what a durable wrapper records. Each side runs the
same agent ``--runs`` times (default 5), best of the runs (clew: a new session each run
in one open home; DBOS: one SQLite system database); the table prints the time per step
and the ratio to the unwrapped agent. DBOS's side wraps model requests as steps (its
tools are not: DBOS does not wrap plain tool functions) — clew records both.

Not a test: numbers depend on the machine.

    python benchmarks/bench_pydantic_ai.py [--steps 40] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import best_of

from actors import Runtime
from actors.pydantic_ai import DurableAgent, ToolPolicy


def agent(steps: int, name: str = "bench") -> Agent[Any, str]:
    """Return the benchmark agent: ``steps`` tool calls, then an answer."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(1 for m in messages if isinstance(m, ModelResponse))
        if turn < steps:
            args = {"i": turn}
            return ModelResponse(parts=[ToolCallPart("step", args, tool_call_id=f"c{turn}")])
        return ModelResponse(parts=[TextPart(f"done after {turn} steps")])

    a: Agent[Any, str] = Agent(FunctionModel(model), name=name)

    @a.tool_plain
    def step(i: int) -> str:
        """One unit of work."""
        return f"step {i} done"

    return a


def plain(steps: int, runs: int, mode: str) -> float:
    a = agent(steps)

    def once() -> str:
        with a.parallel_tool_call_execution_mode(mode):  # type: ignore[arg-type]
            return str(a.run_sync("go").output)

    seconds, output = best_of(runs, once)
    assert output == f"done after {steps} steps"
    return seconds


def clew(steps: int, runs: int) -> float:
    durable = DurableAgent(agent(steps), tools={"step": ToolPolicy(idempotent=True)})
    with tempfile.TemporaryDirectory() as tmp, Runtime(Path(tmp) / "home", tmp) as rt:
        # A new session each run, in one open home (as an application runs them).
        seconds, result = best_of(runs, lambda: durable.run_sync("go", session=rt.new_session()))
    assert result.output == f"done after {steps} steps"
    return seconds


def dbos(steps: int, runs: int) -> float | None:
    try:
        from dbos import DBOS  # noqa: PLC0415 - the bench extra
        from pydantic_ai.durable_exec.dbos import DBOSAgent  # noqa: PLC0415
    except ImportError:
        return None
    logging.getLogger("dbos").setLevel(logging.WARNING)
    folder = Path(tempfile.mkdtemp())
    db = folder / "dbos.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL").fetchall()  # as clew's home runs
    conn.close()
    with warnings.catch_warnings():  # DBOSAgent is deprecated for a capability in 2.68
        warnings.simplefilter("ignore")
        wrapped = DBOSAgent(agent(steps, name="bench_dbos"))
    DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{db}",
                 "log_level": "WARNING", "run_admin_server": False})  # fmt: skip
    DBOS.launch()
    try:
        seconds, result = best_of(runs, lambda: asyncio.run(wrapped.run("go")))
    finally:
        DBOS.destroy()
    assert result.output == f"done after {steps} steps"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    steps, runs = args.steps, args.runs
    base = plain(steps, runs, "parallel")
    rows = [
        ("Pydantic AI, unwrapped", base),
        ("  … sequential tool calls", plain(steps, runs, "sequential")),
        ("clew DurableAgent (SQLite)", clew(steps, runs)),
    ]
    d = dbos(steps, runs)
    if d is not None:
        rows.append(("DBOSAgent (SQLite)", d))
    print(f"{steps} steps (a model request and a tool call each), best of {runs} runs")
    print(f"{'side':<28} {'per step':>10} {'ratio':>7}")
    for name, seconds in rows:
        per = seconds / args.steps * 1e3
        print(f"{name:<28} {per:>8.2f}ms {seconds / base:>6.1f}×")


if __name__ == "__main__":
    main()
