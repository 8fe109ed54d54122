"""A ``needs_approval`` tool of an Agents SDK run waits the clew way: decided by ``clew
approve`` / ``clew deny`` in another process, resumed later, replayed identically."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("agents")

from _framework_checks import (
    check_approved_elsewhere_resumes,
    check_denied_never_runs,
    waiting_for_approval,
)
from _oai_desk import DESK

from actors.openai_agents import DurableRunFailed


def test_an_approval_decided_by_clew_approve_in_another_process_resumes_the_run(
    tmp_path: Path,
) -> None:
    sid = waiting_for_approval(tmp_path, DESK, DurableRunFailed)
    check_approved_elsewhere_resumes(tmp_path, DESK, sid)


def test_a_denied_call_never_runs_and_the_model_is_told(tmp_path: Path) -> None:
    sid = waiting_for_approval(tmp_path, DESK, DurableRunFailed)
    check_denied_never_runs(tmp_path, DESK, sid)
