"""clew's rows of the crash suite (benchmarks/crash, issue 37) hold, in its ``--quick`` mode.

Two rows: clew's native Team and a Pydantic AI agent wrapped in ``DurableAgent`` (skipped
when Pydantic AI is not installed). The streamed row (``clew_stream``) is the benchmark's.

The support-desk agent is SIGKILLed at >= 10 points — clew's own fault points, inside the
refund tool right after its ledger write, in the middle of a model reply, at seeded random
instants — and resumed; every kill must recover to the right answer with exactly one
refund, re-pay at most the one model call in flight, and keep every committed event. The
runner is run as a subprocess on clew only (no peer needed), writing only under tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("system", ["clew", "clew_pai"])
def test_every_kill_of_the_support_desk_resumes_once_with_nothing_lost(
    tmp_path: Path, system: str
) -> None:
    if system == "clew_pai":
        pytest.importorskip("pydantic_ai")
    out = tmp_path / "crash.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLEW_", "CRASH_"))}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "crash" / "run.py"),
            "--quick",
            "--systems",
            system,
            "--durable-only",
            "--kills",
            "11",
            "--jobs",
            "2",
            "--timeout",
            "60",
            "--work",
            str(tmp_path / "work"),
            "--json",
            str(out),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert 0 == result.returncode, result.stdout + result.stderr
    (row,) = json.loads(out.read_text())["rows"]
    summary, kills = row["summary"], [o for o in row["outcomes"] if o["killed"]]
    failed = [o for o in kills if not o["recovered"] or o["refunds"] != 1 or o["repaid"] > 1]
    assert [] == failed
    assert "ok" == summary["status"]
    assert summary["kills"] >= 10
    assert 100.0 == summary["recovered_pct"]
    assert 0 == summary["duplicate_refunds"]
    assert 0 == summary["missing_refunds"]
    assert summary["repaid_max"] <= 1
    assert 0 == summary["lost_progress"]
    labels = {o["point"] for o in kills}
    assert "tool issue_refund:written" in labels  # the refund was written, its result was not
    assert any("mid reply" in label for label in labels)
