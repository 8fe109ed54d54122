"""`clew demo` shows its progress live; `clew cancel` refuses what it cannot cancel."""

from __future__ import annotations

import json

from _cli_helpers import Where, invoke


def test_demo_prints_one_line_per_step_as_the_run_goes(empty: Where) -> None:
    result = invoke(empty, "demo", "--workers", "2")
    assert 0 == result.code, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("session sess_")
    progress = lines[1 : lines.index(next(x for x in lines if x.startswith("status:")))]
    assert "  ▸ brain started" == progress[0]
    assert "  ✓ brain completed" == progress[-1]
    for worker in ("w1 (researcher)", "w2 (analyst)"):
        started = progress.index(f"  ▸ {worker} started")
        ended = progress.index(f"  ✓ {worker} completed")
        assert f"    {worker}: tool lookup" in progress[started:ended]
    # w2 waits for w1: it starts after w1 ended.
    assert progress.index("  ✓ w1 (researcher) completed") < progress.index(
        "  ▸ w2 (analyst) started"
    )


def test_cancel_refuses_a_session_with_no_run_in_progress(empty: Where) -> None:
    session = json.loads(invoke(empty, "demo", "--json").out)["session_id"]
    result = invoke(empty, "cancel", session)
    assert 2 == result.code
    assert f"error: session {session} has no run in progress" == result.err.strip()
    assert 2 == invoke(empty, "cancel", "sess_19990101_000000_dead").code
    assert 2 == invoke(empty, "cancel", "not a session").code
    assert 2 == invoke(empty, "cancel", session, "--reason", "  ").code
