"""The clew wrapper's per-step overhead on an OpenAI Agents SDK agent, vs the unwrapped
agent, in the same run.

One agent, one run of ``--steps`` steps (default 40): each step is a model call answered
with one function call (a fake ``Model``: no network, no tokens), then the tool; the last
call answers with text. So a step is one model call and one tool call — what the durable
runner records. Each side runs the same agent ``--runs`` times (default 9), the two sides
in turns, which goes first alternating (measured: the side that ran second in a round was
up to 40% slower on a loaded machine), best of the runs (clew: a new session each run in
one open home); the table prints the time per step and the ratio to the unwrapped agent
(``Runner.run``, tracing off on both sides).

Not a test: numbers depend on the machine.

    python benchmarks/bench_openai_agents.py [--steps 40] [--runs 9]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import best_of

from actors import Runtime
from actors.openai_agents import DurableRunner, ToolPolicy

CONFIG = RunConfig(tracing_disabled=True)


class StepModel(Model):
    """``steps`` function calls, then an answer."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any) -> Any:
        turn = (
            0
            if isinstance(input, str)
            else sum(1 for i in input if i.get("type") == "function_call_output")
        )
        if turn < self.steps:
            output = [function_call("step", {"i": turn}, call_id=f"c{turn}")]
        else:
            output = [assistant_message(f"done after {turn} steps")]
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    async def stream_response(self, *a: Any, **k: Any) -> Any:
        raise NotImplementedError
        yield


# An async tool: the SDK runs a sync one on a worker thread, whose hand-off (~8 ms a call
# on the loaded 2-core machine this was written on) would swamp both sides' own cost.
@function_tool
async def step(i: int) -> str:
    """One unit of work."""
    return f"step {i} done"


def agent(steps: int) -> Agent[Any]:
    """Return the benchmark agent: ``steps`` tool calls, then an answer."""
    return Agent(name="bench", model=StepModel(steps), tools=[step])


def interleaved(steps: int, runs: int) -> tuple[float, float]:
    """Return the best time of the unwrapped run and of the durable one, run in turns (one
    of each per round, which goes first alternating: a loaded machine slows both alike)."""
    bare = agent(steps)
    runner = DurableRunner(agent(steps), tools={"step": ToolPolicy(idempotent=True)},
                           run_config=CONFIG, max_turns=steps + 2)  # fmt: skip
    expected = f"done after {steps} steps"
    times: dict[str, list[float]] = {"plain": [], "durable": []}
    with tempfile.TemporaryDirectory() as tmp, Runtime(Path(tmp) / "home", tmp) as rt:
        sides = {
            "plain": lambda: asyncio.run(
                Runner.run(bare, "go", max_turns=steps + 2, run_config=CONFIG)
            ),
            # A new session each run, in one open home (as an application runs them).
            "durable": lambda: runner.run_sync("go", session=rt.new_session()),
        }
        for n in range(runs):
            for side in ("plain", "durable") if n % 2 == 0 else ("durable", "plain"):
                seconds, result = best_of(1, sides[side])
                assert result.final_output == expected
                times[side].append(seconds)
    return min(times["plain"]), min(times["durable"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    steps, runs = args.steps, args.runs
    base, durable = interleaved(steps, runs)
    rows = [("Agents SDK Runner, unwrapped", base), ("clew DurableRunner (SQLite)", durable)]
    print(f"{steps} steps (a model call and a tool call each), best of {runs} runs")
    print(f"{'side':<30} {'per step':>10} {'ratio':>7}")
    for name, seconds in rows:
        per = seconds / steps * 1e3
        print(f"{name:<30} {per:>8.2f}ms {seconds / base:>6.1f}×")


if __name__ == "__main__":
    main()
