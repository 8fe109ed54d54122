"""clew, streamed: the native Team of :mod:`sys_clew`, its run watched with ``handle.stream()``.

The same scenario, store and recovery as :mod:`sys_clew`; the run is started with
``Session.start`` and its events and text pieces are consumed as they come
(docs/runtime.md, "Streaming"), so the model is asked with ``"stream": true`` and every
"mid reply" kill of the runner lands inside a server-sent event stream: the process dies
with half a streamed reply read. Recovery is ``rt.resume`` (not streamed).
"""

from __future__ import annotations

from pathlib import Path

import scenario
import sys_clew

from actors import Runtime
from actors.models.providers import OpenAIChatModel

NAME = "clew (streamed replies)"
committed = sys_clew.committed
boundaries = sys_clew.boundaries


def run(mode: str, trial: Path, base_url: str) -> str:
    """Run the scenario streamed (``run``) or recover it as :mod:`sys_clew` does."""
    if mode == "recover":
        return sys_clew.run(mode, trial, base_url)
    model = OpenAIChatModel("crash-model", base_url=base_url, api_key="crash")
    rt = Runtime.from_env(home=str(trial / "store"), project_dir=str(trial))
    try:
        scenario.ready()
        session = rt.new_session()
        (trial / sys_clew.SESSION_FILE).write_text(session.id)
        handle = session.start(scenario.PROMPT, model=model, team=sys_clew.team(trial))
        for _item in handle.stream():  # events and TextDelta pieces, as a UI would show them
            pass
        return handle.result().answer
    finally:
        rt.close()
