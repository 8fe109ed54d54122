"""Issue 32 item 19: ``verify`` of a session another process is writing reports no false
problems — the whole check reads one snapshot (``EventStore.read_snapshot``)."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _processes import child_env

from actors.runtime.runtime import Runtime

WRITER = Path(__file__).parents[2] / "helpers" / "_busy_writer.py"
RUNS = 25


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    opened: dict[str, Any] = {"home": tmp_path / "home", "project_dir": tmp_path / "proj"}
    if request.param == "postgres":
        opened["store"] = request.getfixturevalue("pg_url")
    yield opened


def test_verify_reports_no_false_problems_while_another_process_writes_the_session(
    where: dict[str, Any],
) -> None:
    argv = [sys.executable, str(WRITER), str(where["home"]), str(where["project_dir"]), str(RUNS)]
    if "store" in where:
        argv.append(where["store"])
    writer = subprocess.Popen(argv, env=child_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        sid = writer.stdout.readline().strip()
        problems: list[str] = []
        checks = 0
        with Runtime(**where, read_only=True) as rt:
            while writer.poll() is None:
                report = rt.verify(sid)
                checks += 1
                problems += [p for s in report.sessions for p in s.problems]
            assert 0 == writer.wait(), "the writer failed"
            assert rt.verify(sid).ok
        assert checks > 20, checks
        assert [] == problems[:5], f"{len(problems)} problems in {checks} verifies"
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
