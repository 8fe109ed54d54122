"""``clew submit``, ``clew queue``, ``clew serve``: ids, listings, refusals (exit 2), and a
real serving process stopped by SIGTERM — drained, or leaving a run for a peer."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_helpers import Where, invoke, spawn

from actors.runtime.coord.location import COORD_FILE
from actors.runtime.coord.sqlite import SQLiteCoordinator
from actors.runtime.runtime import Runtime


@pytest.fixture
def where(tmp_path: Path) -> Where:
    project = tmp_path / "project"
    project.mkdir()
    return Where(tmp_path / "home", project)


def rows(where: Where) -> list[dict[str, Any]]:
    result = invoke(where, "queue", "--json")
    assert 0 == result.code, result.err
    runs: list[dict[str, Any]] = result.json()["runs"]
    return runs


def statuses(where: Where) -> list[str]:
    """The queue's statuses, read straight from ``coord.sqlite`` (cheap enough to poll)."""
    coord = SQLiteCoordinator(where.home / COORD_FILE)
    try:
        return [r.status for r in coord.list_runs()]
    finally:
        coord.close()


def wait_for(what: str, check: Callable[[], bool], within: float = 300.0) -> None:
    end = time.monotonic() + within
    while not check():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.1)


def test_submit_prints_the_queued_runs_id_and_queue_lists_it(where: Where) -> None:
    assert "1\n" == invoke(where, "submit", "Plan a notes app.").out
    second = invoke(where, "submit", "Again.", "--model", "mine", "--tools", "kit", "--json")
    assert 0 == second.code, second.err
    doc = second.json()
    assert (2, "queued", "mine", "kit", None) == (
        doc["id"],
        doc["status"],
        doc["model"],
        doc["tools"],
        doc["session_id"],
    )
    listing = invoke(where, "queue")
    lines = listing.out.splitlines()
    assert 2 == len(lines)
    assert lines[0].startswith("1\tqueued\t-\tattempts=0\t-\t-\tPlan a notes app.")
    assert [("demo", "demo"), ("mine", "kit")] == [(r["model"], r["tools"]) for r in rows(where)]


def test_submit_to_a_session_resolves_its_name(where: Where) -> None:
    with Runtime(where.home, where.project) as rt:
        sid = rt.new_session().id
    result = invoke(where, "submit", "Go on.", "--session", "last")
    assert 0 == result.code, result.err
    assert [sid] == [r["session_id"] for r in rows(where)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["submit", "   "], "the prompt is empty"),
        (["submit", "hi", "--session", "sess_20260101_000000_0001"], "unknown session"),
        (["submit", "hi", "--coordination", "mysql://x"], "is not a postgresql:// URL"),
        (["serve", "--app", "nowhere_at_all:f"], "cannot import 'nowhere_at_all'"),
        (["serve", "--app", "actors.demo"], "is not of the form module:callable"),
        (["serve", "--concurrency", "0"], "--concurrency"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(where: Where, args: list[str], message: str) -> None:
    result = invoke(where, *args)
    assert 2 == result.code
    assert 1 == len(result.err_lines())
    assert message in result.err


def test_an_unreachable_coordination_database_is_one_line_and_exit_2(where: Where) -> None:
    url = "postgresql://clew:pw@127.0.0.1:1/clew?connect_timeout=2"
    result = invoke(where, "queue", "--coordination", url)
    assert 2 == result.code
    assert ["error:"] == [line.split()[0] for line in result.err_lines()]
    assert "cannot open the run queue" in result.err
    assert "pw" not in result.err


def test_sigterm_stops_serve_after_its_runs_are_done(where: Where) -> None:
    invoke(where, "submit", "One.")
    invoke(where, "submit", "Two.")
    child = spawn(where, "serve", "--concurrency", "2")
    try:
        wait_for("both runs done", lambda: ["done", "done"] == statuses(where))
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert 0 == child.returncode, err
    assert "stopped: 2 done, 0 recovered" == out.splitlines()[-1]
    assert ["completed", "completed"] == [r["outcome"] for r in rows(where)]


@pytest.mark.slow
def test_a_run_left_by_a_stopped_server_is_resumed_by_the_next(where: Where) -> None:
    calls = where.project / "calls.txt"
    app = ("--app", "tests.helpers._serve_app:recipes", "--lease-ttl", "1")
    invoke(where, "submit", "Slowly.", "--model", "counted", "--tools", "demo")
    first = spawn(where, "serve", *app, "--drain", "0", CLEW_TEST_MODEL_CALLS=str(calls))
    try:
        wait_for("a model call", lambda: calls.exists() and len(calls.read_text()) > 0)
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert 0 == first.returncode, err
    assert "stopped with queued run(s) 1 in progress" in err
    (row,) = rows(where)
    assert ("running", None) == (row["status"], row["outcome"])  # interrupted, not cancelled

    second = spawn(where, "serve", *app, CLEW_TEST_MODEL_CALLS=str(calls))
    try:
        wait_for("the run recovered", lambda: ["done"] == statuses(where))
        second.send_signal(signal.SIGTERM)
        out, _ = second.communicate(timeout=120)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()
    assert "recovered queued run 1: completed" in out
    (row,) = rows(where)
    with Runtime(where.home, where.project) as rt:
        assert [row["run_id"]] == rt.main_runs(row["session_id"])
        assert rt.replay(row["session_id"]).identical
        assert rt.verify(row["session_id"]).ok
