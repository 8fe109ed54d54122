"""Child process of the crash-recovery sweep: run (or resume) the demo, maybe get killed.

Usage: python _crash_demo.py HOME PROJECT run WORKERS
       python _crash_demo.py HOME PROJECT resume SESSION_ID WORKERS
The fault env vars (CLEW_FAULT_KILL_AFTER_EVENTS / CLEW_FAULT_KILL_BEFORE_TOOL) decide
where the process SIGKILLs itself; Runtime.from_env reads them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime


def main() -> int:
    home, project, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    rt = Runtime.from_env(home=home, project_dir=str(project))
    try:
        if mode == "run":
            workers = int(sys.argv[4])
            session = rt.new_session()
            print(session.id, flush=True)
            out = session.run(DEMO_PROMPT, model=demo_model(workers), tools=demo_tools(project))
        else:
            sid, workers = sys.argv[4], int(sys.argv[5])
            out = rt.resume(sid, model=demo_model(workers), tools=demo_tools(project))
        print(out.status, flush=True)
        return 0 if out.status == "completed" else 1
    finally:
        rt.close()


if __name__ == "__main__":
    raise SystemExit(main())
