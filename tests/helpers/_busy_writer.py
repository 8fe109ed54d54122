"""A writer process for the verify tests: run the one-worker demo again and again in one
session (nodes, runs, usage and the session row all change), printing the session id
first. Usage: python _busy_writer.py HOME PROJECT RUNS [STORE_URL]"""

from __future__ import annotations

import sys
from pathlib import Path

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime


def main() -> int:
    home, project, runs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    store = sys.argv[4] if len(sys.argv) > 4 else None
    project.mkdir(parents=True, exist_ok=True)
    with Runtime(home, project, store=store) as rt:
        session = rt.new_session()
        print(session.id, flush=True)
        for _ in range(runs):
            out = session.run(DEMO_PROMPT, model=demo_model(1), tools=demo_tools(project))
            if out.status != "completed":
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
