"""A process that never closes its ``Runtime`` — or whose tool never returns — still exits.

Every actor runs on a daemon thread and open runtimes are closed at exit, so the child
below exits on its own, and what it wrote is committed: the session it left completed
replays identically and verifies.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _processes import child_env

from actors.runtime.runtime import Runtime
from eventlog.events import ToolFailed

NEVER_CLOSED = """
import sys, time
from pathlib import Path
import pydantic
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.scripted import ScriptedModel
from actors.models.tools import FunctionTool
from actors.runtime.runtime import Runtime
from eventlog.events import ToolFailed

class NoArgs(pydantic.BaseModel):
    pass

def hang(_args):
    time.sleep(3600)  # never returns in time: its thread outlives the run

home, project, with_hang = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "hang"
model, tools = demo_model(2), demo_tools(project)
if with_hang:
    plan = {"primary_role": "lead", "review": False,
            "workers": [{"id": "w1", "role": "prober", "goal": "Probe", "deps": []}]}
    model = ScriptedModel({"rules": [
        {"role": "router", "replies": [{"json": plan}]},
        {"role": "prober", "replies": [{"tool_calls": [{"name": "hang"}]}, {"text": "ok"}]},
        {"role": "lead", "replies": [{"text": "answer"}]},
    ]})
    tools = [FunctionTool("hang", hang, NoArgs, timeout_s=0.5)]
rt = Runtime(home, project)
session = rt.new_session()
print(session.id, flush=True)
print(session.run(DEMO_PROMPT, model=model, tools=tools).status, flush=True)
# no rt.close(), no shutdown of anything
"""


@pytest.mark.parametrize("hang", [False, True], ids=["demo", "demo-with-a-hanging-tool"])
def test_a_runtime_never_closed_does_not_keep_the_process_alive(tmp_path: Path, hang: bool) -> None:
    script = tmp_path / "never_closed.py"
    script.write_text(NEVER_CLOSED)
    home, project = tmp_path / "home", tmp_path / "project"

    done = subprocess.run(
        [sys.executable, str(script), str(home), str(project), "hang" if hang else "-"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,  # before: the writer's and task manager's threads kept it alive forever
        check=False,
    )

    assert 0 == done.returncode, done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith("20")]
    sid, status = lines[0], lines[-1]
    assert "completed" == status
    with Runtime(home, project) as rt:
        assert [] == rt.interrupted_runs(sid)
        timeouts = [
            e.event.error_type for e in rt.store.read_events(sid) if isinstance(e.event, ToolFailed)
        ]
        assert (["timeout"] if hang else []) == timeouts
        assert rt.replay(sid).identical
        assert rt.verify(sid).ok
