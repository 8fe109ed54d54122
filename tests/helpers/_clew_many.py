"""Child process: run several ``clew`` commands in this one process, print their results.

Usage: python _clew_many.py '[["sessions", "--home", "H"], ["timeline", "SID", …]]'
Prints one JSON list: ``[code, stdout, stderr]`` per command. One interpreter start for
many commands keeps the tests that need a real process (a read-only mount) fast.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from actors.cli import main


def run_all(commands: list[list[str]]) -> list[tuple[int, str, str]]:
    results = []
    for argv in commands:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        results.append((code, out.getvalue(), err.getvalue()))
    return results


if __name__ == "__main__":
    print(json.dumps(run_all(json.loads(sys.argv[1]))))
