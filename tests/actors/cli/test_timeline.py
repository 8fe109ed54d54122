"""``clew timeline`` on real sessions: what each row says, the filters, JSON lines, and the
pager on a terminal (``actors/cli/timeline_rows.py``, ``actors/cli/pager.py``)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import structlog
from _cli_helpers import Where, invoke
from _processes import child_env
from _terminal import run_in_pty


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    base = tmp_path_factory.mktemp("timeline")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    result = invoke(where, "demo", "--json")
    structlog.reset_defaults()
    assert 0 == result.code, result.err
    return where, result.json()["session_id"]


def _rows(out: str) -> list[str]:
    return out.splitlines()[1:-1]  # without the header and the "N events" line


def test_rows_name_the_role_model_tokens_tool_and_duration(demo: tuple[Where, str]) -> None:
    where, sid = demo
    rows = _rows(invoke(where, "timeline", sid).out)
    by_type: dict[str, list[str]] = {}
    for row in rows:
        by_type.setdefault(row.split()[4 if row.split()[2] != "-" else 3], []).append(row)
    assert "user/message brain:r1:n1" in by_type["node_appended"][0]
    assert re.search(r"router → scripted:demo call 1$", by_type["model_requested"][0])
    responded = r"router ← scripted:demo \d+→\d+ tokens end_turn · \d+ ms$"
    assert re.search(responded, by_type["model_responded"][0])
    assert re.search(r'lookup \{"topic":"\w+"\}$', by_type["tool_call_started"][0])
    assert re.search(r"lookup ok: .* · \d+ ms$", by_type["tool_call_finished"][0])
    assert re.search(r"completed, \d+ turns, \d+→\d+ tokens · \d+ ms$", by_type["run_ended"][-1])
    # A row names the tool, never only its opaque call id.
    assert not any(re.search(r"\bcall_[0-9a-f]{6,}", row) for row in rows)


def test_limit_since_type_and_agent_select_events(demo: tuple[Where, str]) -> None:
    where, sid = demo
    page = invoke(where, "timeline", sid, "--since", "10", "--limit", "3", "--json").json()
    assert [11, 12, 13] == [e["seq"] for e in page["events"]]
    table = invoke(where, "timeline", sid, "--limit", "5")
    assert (0, 5, "5 events") == (table.code, len(_rows(table.out)), table.out.splitlines()[-1])
    worker = f"{sid}:brain:r1/w2"
    picked = invoke(
        where, "timeline", sid, "--agent", "brain:r1/w2", "--type", "tool_call_started", "--json"
    )
    events = picked.json()["events"]
    assert 2 == len(events)
    assert {worker} == {e["agent_id"] for e in events}


def test_jsonl_streams_the_export_lines_of_the_selected_events(demo: tuple[Where, str]) -> None:
    where, sid = demo
    exported = invoke(where, "export", sid).out.splitlines()
    assert exported == invoke(where, "timeline", sid, "--jsonl").out.splitlines()
    runs = invoke(where, "timeline", sid, "--jsonl", "--run", "brain:r1/w1:r1").out.splitlines()
    assert [
        line for line in exported if json.loads(line)["run_id"] == f"{sid}:brain:r1/w1:r1"
    ] == runs
    both = invoke(where, "timeline", sid, "--json", "--jsonl")
    assert (2, ["error: give --json (one document) or --jsonl (JSON lines), not both"]) == (
        both.code,
        both.err_lines(),
    )


def test_on_a_terminal_the_table_goes_through_the_pager(
    demo: tuple[Where, str], tmp_path: Path
) -> None:
    where, sid = demo
    paged = tmp_path / "paged.txt"
    pager = tmp_path / "pager.py"
    pager.write_text(f"import sys\nopen({str(paged)!r}, 'w').write(sys.stdin.read())\n")
    argv = [sys.executable, "-m", "actors", "timeline", sid, *where.flags()]
    env = child_env(PAGER=f"{sys.executable} {pager}")
    output, code = run_in_pty(argv, 40, 120, env)
    assert 0 == code, output
    text = paged.read_text()
    assert "node_appended" in text and "node_appended" not in output
    assert text.splitlines()[-1].endswith(" events")
    direct, code = run_in_pty([*argv, "--no-pager"], 40, 120, env)
    assert 0 == code and "node_appended" in direct
    # On a terminal no row is wider than it.
    plain = re.sub(r"\x1b\[[0-9;]*m", "", direct).replace("\r\n", "\n").splitlines()
    assert max(len(row) for row in plain) <= 120


@pytest.mark.skipif(shutil.which("less") is None, reason="less is not installed")
def test_quitting_less_on_the_first_screen_ends_the_command_quietly(
    demo: tuple[Where, str],
) -> None:
    where, sid = demo
    env = {k: v for k, v in child_env().items() if k not in ("PAGER", "CLEW_PAGER", "LESS")}
    argv = [sys.executable, "-m", "actors", "timeline", sid, *where.flags()]
    output, code = run_in_pty(argv, 20, 120, env, keys=b"q")  # q: typed ahead, read by less
    assert 0 == code, output
    assert "error" not in output and "Traceback" not in output
    assert "run_started" in output  # the first screen was shown
