"""Child processes of the tests: they run this checkout's code, whatever else is installed.

A child started as ``python path/to/script.py`` has the script's directory, not the
working directory, first on ``sys.path``; without ``PYTHONPATH`` it would import an
installed ``clew`` (an editable install may point at another checkout) instead of the
code under test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: The checkout the tests run from (``tests/helpers/`` is two levels below it).
ROOT = Path(__file__).resolve().parents[2]
#: The crash-sweep child: run or resume the demo, maybe SIGKILLed by a fault variable.
CRASH_DEMO = Path(__file__).with_name("_crash_demo.py")
#: The team crash child: a team session with a dispatch and a non-idempotent tool.
CRASH_TEAM = Path(__file__).with_name("_crash_team.py")


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child: this checkout first, no ``CLEW_*`` from outside, ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLEW_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def run_crash_demo(
    home: Path,
    project: Path,
    *args: str,
    env: dict[str, str] | None = None,
    child: Path = CRASH_DEMO,
) -> subprocess.CompletedProcess[str]:
    """Run ``_crash_demo.py HOME PROJECT ARGS`` (or another ``child``) to its end or SIGKILL.

    ``env`` holds the fault variables; any set outside the test are dropped.
    """
    return subprocess.run(
        [sys.executable, str(child), str(home), str(project), *args],
        env=child_env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=120,
    )
