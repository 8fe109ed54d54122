"""``clew resume SESSION --agent MODULE:CALLABLE`` finishes an Agents SDK run from the
command line: after a SIGKILL inside the refund, and after ``clew approve`` — each in a
process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents")

from _cli_helpers import Where, run_process
from _framework_checks import ledger
from _oai_desk import PROMPT
from _processes import ROOT, child_env

from actors.runtime.runtime import Runtime

HELPERS = Path(__file__).resolve().parents[2] / "helpers"
DESK = HELPERS / "_oai_desk.py"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), str(HELPERS)]),
            "DESK_WORKDIR": str(tmp_path), **extra}  # fmt: skip


@pytest.mark.slow
def test_clew_resume_with_the_agent_finishes_a_killed_run(tmp_path: Path) -> None:
    where = Where(tmp_path / "home", tmp_path)
    with Runtime(where.home, tmp_path) as rt:
        sid = rt.new_session().id
    child = subprocess.run(
        [sys.executable, str(DESK), str(where.home), sid, str(tmp_path)],
        env=child_env(DESK_KILL_IN_REFUND="1"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert -9 == child.returncode, child.stderr
    resumed = run_process(where, "resume", sid, "--agent", "_oai_desk:cli_desk",
                          **_env(tmp_path))  # fmt: skip
    assert 0 == resumed.code, resumed.out + resumed.err
    assert "completed" in resumed.out
    assert 1 == len(ledger(tmp_path))
    verified = run_process(where, "verify", sid)
    assert 0 == verified.code, verified.out + verified.err


def test_an_approval_and_the_resume_both_from_other_processes(tmp_path: Path) -> None:
    from _oai_desk import desk  # noqa: PLC0415

    from actors.openai_agents import DurableRunFailed  # noqa: PLC0415

    where = Where(tmp_path / "home", tmp_path)
    with Runtime(where.home, tmp_path) as rt:
        session = rt.new_session()
        with pytest.raises(DurableRunFailed):
            desk(tmp_path, approval=True).run_sync(PROMPT, session=session)
    approved = run_process(where, "approve", session.id, "call-2")
    assert 0 == approved.code, approved.err
    resumed = run_process(where, "resume", session.id, "--agent", "_oai_desk:cli_desk",
                          **_env(tmp_path, DESK_APPROVAL="1"))  # fmt: skip
    assert 0 == resumed.code, resumed.out + resumed.err
    assert 1 == len(ledger(tmp_path))


@pytest.mark.slow
def test_a_bad_agent_reference_is_one_line_and_exit_2(tmp_path: Path) -> None:
    where = Where(tmp_path / "home", tmp_path)
    with Runtime(where.home, tmp_path) as rt:
        sid = rt.new_session().id
    child = subprocess.run(
        [sys.executable, str(DESK), str(where.home), sid, str(tmp_path)],
        env=child_env(CLEW_FAULT_KILL_AFTER_EVENTS="5"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert -9 == child.returncode
    resumed = run_process(where, "resume", sid, "--agent", "no_such_module_q:make")
    assert 2 == resumed.code
    assert "cannot import" in resumed.err
