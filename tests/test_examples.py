"""The files under ``examples/`` are real programs: run them and check what they print and store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _processes import child_env

from actors.runtime.runtime import Runtime
from eventlog.blocks import text_of
from eventlog.events import ToolCallFinished, ToolCallStarted
from eventlog.ids import idempotency_key

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EMBED = EXAMPLES / "embed.py"
TEAM = EXAMPLES / "team.py"
#: The ``key: value`` lines the examples print.
KEYS = ("answer", "refund", "refunds", "session", "replay")


def run_example(
    example: Path, cwd: Path, *args: str, env_home: Path | None = None
) -> dict[str, str]:
    """Run an example (this checkout's code); return its ``key: value`` lines as a dict."""
    env = child_env(**({"CLEW_HOME": str(env_home)} if env_home is not None else {}))
    done = subprocess.run(
        [sys.executable, str(example), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    lines = [ln.split(": ", 1) for ln in done.stdout.splitlines()]
    return {ln[0]: ln[1] for ln in lines if len(ln) == 2 and ln[0] in KEYS}


def run_embed(cwd: Path, *args: str, env_home: Path | None = None) -> dict[str, str]:
    """Run examples/embed.py; return its ``key: value`` output lines as a dict."""
    return run_example(EMBED, cwd, *args, env_home=env_home)


def test_embed_example_runs_its_tool_and_replays_identically(tmp_path: Path) -> None:
    home = tmp_path / "clew-home"

    out = run_embed(tmp_path, env_home=home)

    assert "Take sunglasses: Lisbon is sunny, 21 °C." == out["answer"]
    assert out["replay"].endswith("events in 2 runs reproduced identically")
    with Runtime(home, project_dir=home) as rt:
        assert [out["session"]] == [s.session_id for s in rt.sessions()]
        finished = [
            e.event
            for e in rt.store.read_events(out["session"])
            if isinstance(e.event, ToolCallFinished)
        ]
        assert ["Sunny and 21 °C in Lisbon"] == [text_of(f.content) for f in finished]
        assert rt.replay(out["session"]).identical


def test_embed_example_takes_its_home_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "from-argv"

    out = run_embed(tmp_path, str(home), env_home=tmp_path / "ignored")

    assert (home / "sessions.sqlite").exists()
    assert not (tmp_path / "ignored").exists()
    assert out["session"].startswith("sess_")


def test_team_example_answers_with_its_typed_output_and_refunds_once_per_call(
    tmp_path: Path,
) -> None:
    home = tmp_path / "clew-home"

    out = run_example(TEAM, tmp_path, str(home))

    assert ("Sorry! Refunded 42 EUR.", "R-1", "1") == (
        out["answer"],
        out["refund"],
        out["refunds"],
    )
    assert out["replay"].endswith("events in 3 runs reproduced identically")
    with Runtime(home, project_dir=home) as rt:
        (started,) = [
            e
            for e in rt.store.read_events(out["session"])
            if isinstance(e.event, ToolCallStarted) and e.event.tool_name == "issue_refund"
        ]
    # The refund is keyed by the call's idempotency key (its run and recorded call id): a
    # resume re-running it finds it.
    assert started.run_id is not None
    key = idempotency_key(started.run_id, started.event.tool_call_id)
    ledger = json.loads((home / "refunds.json").read_text())
    assert {key: {"refund_id": "R-1", "order": "42", "eur": 42}} == ledger
