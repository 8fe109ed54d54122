"""Embed clew: a custom tool, a scripted model, one run, then a replay of the recording.

Usage: ``python examples/embed.py [HOME]`` (else ``$CLEW_HOME``, else a fresh temp dir).
"""

import os
import sys
import tempfile
from pathlib import Path

import pydantic

from actors import Runtime, ScriptedModel, tool


class WeatherArgs(pydantic.BaseModel):
    city: str


@tool(WeatherArgs, idempotent=True)  # idempotent: safe to run again after a crash
def weather(args: WeatherArgs) -> str:
    """Return today's weather in a city."""
    return f"Sunny and 21 °C in {args.city}"


# A scripted model, so this runs offline. In production pass your own client instead:
# anything with a ``name`` and ``complete(request) -> response`` (see docs/runtime.md).
plan = {"primary_role": "lead", "workers": [{"id": "w1", "role": "forecaster", "goal": "Lisbon?"}]}
look_up = {"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]}
report = {"json": {"summary": "Lisbon: sunny, 21 °C."}}
model = ScriptedModel(
    {
        "rules": [
            {"role": "router", "replies": [{"json": plan}]},
            {"role": "forecaster", "replies": [look_up, report]},  # turn 1, then turn 2
            {"role": "lead", "replies": [{"text": "Take sunglasses: Lisbon is sunny, 21 °C."}]},
        ]
    }
)

home = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CLEW_HOME") or tempfile.mkdtemp())
with Runtime(home, project_dir=home) as rt:
    session = rt.new_session()
    outcome = session.run("Do I need sunglasses in Lisbon today?", model=model, tools=[weather])
    print("answer:", outcome.answer)
    print("session:", session.id)
    print("replay:", rt.replay(session.id).summary())
