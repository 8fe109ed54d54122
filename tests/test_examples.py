"""The files under ``examples/`` are real programs: run them and check what they print and store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _processes import child_env

from actors.runtime.runtime import Runtime
from eventlog.blocks import text_of
from eventlog.events import ToolCallFinished

EMBED = Path(__file__).resolve().parents[1] / "examples" / "embed.py"


def run_embed(cwd: Path, *args: str, env_home: Path | None = None) -> dict[str, str]:
    """Run examples/embed.py; return its ``key: value`` output lines as a dict."""
    # This checkout's code (not an installed clew), no CLEW_* from outside.
    env = child_env()
    if env_home is not None:
        env["CLEW_HOME"] = str(env_home)
    done = subprocess.run(
        [sys.executable, str(EMBED), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    lines = [ln.split(": ", 1) for ln in done.stdout.splitlines()]
    return {
        ln[0]: ln[1] for ln in lines if len(ln) == 2 and ln[0] in ("answer", "session", "replay")
    }


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
