"""``clew tail``: one line (or one JSON object) per event, ``--since``, and following a
demo that another process is running, until Ctrl-C or until the run is done."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import structlog
from _cli_helpers import Where, count_events, invoke, spawn
from _processes import child_env

from eventlog.events import EVENT_TYPES


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    """One finished demo session, recorded once for the module (read it, never change it)."""
    base = tmp_path_factory.mktemp("tail")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    result = invoke(where, "demo", "--json")
    structlog.reset_defaults()
    assert 0 == result.code, result.err
    return where, result.json()["session_id"]


def test_tail_prints_one_line_per_event_with_seq_time_agent_type_and_summary(
    recorded: tuple[Where, str],
) -> None:
    where, sid = recorded

    result = invoke(where, "tail", sid)

    assert (0, "") == (result.code, result.err)
    lines = result.out.splitlines()
    assert count_events(where.home, sid) == len(lines)
    assert [str(n) for n in range(1, len(lines) + 1)] == [line.split()[0] for line in lines]
    by_type: dict[str, list[str]] = {}
    for line in lines:
        event_type = next(word for word in line.split() if word in EVENT_TYPES)
        by_type.setdefault(event_type, []).append(line)
    first_tool = by_type["tool_call_started"][0]
    assert "(researcher)" in first_tool or "(engineer)" in first_tool, first_tool
    assert "lookup {" in first_tool
    assert "scripted:demo 20→94 tokens end_turn" in by_type["model_responded"][0]
    assert "→ w1 (researcher): Part 1 of the work" in by_type["handoff_sent"][0]
    assert lines[-1].split()[2:4] == ["brain", "run_ended"]
    assert "completed, 1 turns" in lines[-1]


def test_tail_json_prints_the_rows_of_export_one_object_per_line(
    recorded: tuple[Where, str],
) -> None:
    where, sid = recorded

    result = invoke(where, "tail", sid, "--json")

    assert (0, invoke(where, "export", sid).out) == (result.code, result.out)
    assert all(json.loads(line)["seq"] for line in result.out.splitlines())


def test_tail_since_a_seq_prints_only_the_events_after_it(recorded: tuple[Where, str]) -> None:
    where, sid = recorded
    total = count_events(where.home, sid)

    result = invoke(where, "tail", sid, "--since", "90", "--json")

    assert list(range(91, total + 1)) == [json.loads(x)["seq"] for x in result.out.splitlines()]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["tail", "not a session!"], "invalid session id"),
        (["tail", "sess_19990101_000000_dead"], "unknown session"),
        (["tail", "SID", "--since", "-1"], "--since"),
        (["tail", "SID", "--poll", "0"], "--poll"),
        (["--log-level", "loud", "tail", "SID"], "--log-level must be one of"),
    ],
)
def test_tail_refuses_bad_input_in_one_line_with_exit_2(
    recorded: tuple[Where, str], args: list[str], fragment: str
) -> None:
    where, sid = recorded

    result = invoke(where, *[sid if a == "SID" else a for a in args])

    assert (2, "") == (result.code, result.out)
    [line] = result.err_lines()
    assert line.startswith("error: ") and fragment in line, line


# --- a second process watching a running demo -------------------------------------------


def _start_demo(where: Where) -> tuple[subprocess.Popen[str], str]:
    demo = spawn(where, "demo", "--workers", "2", "--slow", "150")
    assert demo.stdout is not None
    return demo, demo.stdout.readline().split()[1]


def _tail(where: Where, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "actors", "tail", *args, *where.flags()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def _export(where: Where, sid: str) -> list[str]:
    return invoke(where, "export", sid).out.splitlines()


def test_tail_follow_prints_a_demo_another_process_runs_and_exits_0_on_ctrl_c(
    empty: Where,
) -> None:
    demo, sid = _start_demo(empty)
    follower = _tail(empty, sid, "--follow", "--json", "--poll", "0.05")
    assert follower.stdout is not None
    seen: list[str] = []
    for line in follower.stdout:  # live: lines arrive while the demo writes them
        seen.append(line.rstrip("\n"))
        row = json.loads(line)
        if row["event_type"] == "run_ended" and row["run_id"] == f"{sid}:brain:r1":
            break
    _, demo_err = demo.communicate(timeout=60)
    assert 0 == demo.returncode, demo_err

    follower.send_signal(signal.SIGINT)
    out, err = follower.communicate(timeout=30)

    assert (0, "", "") == (follower.returncode, out, err)
    assert _export(empty, sid) == seen


def test_tail_until_done_exits_by_itself_once_the_run_it_follows_has_ended(
    empty: Where,
) -> None:
    demo, sid = _start_demo(empty)
    deadline = time.monotonic() + 60
    while count_events(empty.home, sid) < 2:  # run_started: a run is in progress
        assert demo.poll() is None and time.monotonic() < deadline, "the run never started"
        time.sleep(0.02)

    follower = _tail(empty, sid, "--until-done", "--json", "--poll", "0.05")
    out, err = follower.communicate(timeout=60)

    _, demo_err = demo.communicate(timeout=60)
    assert 0 == demo.returncode, demo_err
    assert (0, "") == (follower.returncode, err)
    assert _export(empty, sid) == out.splitlines()


def test_tail_of_a_session_in_a_home_that_does_not_exist_creates_nothing(
    tmp_path: Path,
) -> None:
    where = Where(tmp_path / "home", tmp_path)

    result = invoke(where, "tail", "sess_19990101_000000_dead", "--follow")

    assert 2 == result.code
    assert "holds no sessions" in result.err
    assert not where.home.exists()
