"""``Runtime.submit`` / ``Runtime.serve`` in one process, and session leases beside the
lock files: a leased session keeps an embedded runtime out."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.errors import SessionBusy, UsageError
from actors.runtime.coord.location import COORD_FILE
from actors.runtime.coord.protocol import RunSpec
from actors.runtime.coord.sqlite import SQLiteCoordinator
from actors.runtime.runtime import Runtime
from actors.runtime.serving import RecipeContext, Recipes, ServeReport, load_app
from eventlog.errors import UnknownSession


def serve_until_done(rt: Runtime, **kw: object) -> ServeReport:
    """Serve until every queued run is done (a watcher sets the stop event)."""
    stop = threading.Event()

    def watch() -> None:
        while not all(r.status == "done" for r in rt.queue()):
            time.sleep(0.05)
        stop.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    report = rt.serve(stop=stop, poll_s=0.05, **kw)  # type: ignore[arg-type]
    watcher.join()
    return report


def assert_replays_and_verifies(rt: Runtime, session_id: str) -> None:
    assert rt.replay(session_id).identical
    assert rt.verify(session_id).ok


def test_queued_runs_each_complete_once_in_their_own_session(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        rows = [rt.submit(f"{DEMO_PROMPT} ({i})", model="demo", tools="demo") for i in range(3)]
        assert ["queued"] * 3 == [r.status for r in rows]
        report = serve_until_done(rt, concurrency=2)
        done = rt.queue()
        assert sorted(r.id for r in rows) == sorted(report.done)
        assert ["completed"] * 3 == [r.outcome for r in done]
        assert [1] * 3 == [r.attempts for r in done]
        sessions = {r.session_id for r in done}
        assert 3 == len(sessions)
        for r in done:
            assert r.session_id is not None
            assert [r.run_id] == rt.main_runs(r.session_id)
            assert_replays_and_verifies(rt, r.session_id)


def test_a_queued_run_in_a_given_session_continues_it(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        session.run(DEMO_PROMPT, model=demo_model(), tools=demo_tools(tmp_path))
        row = rt.submit("And now once more.", model="demo", tools="demo", session=session.id)
        serve_until_done(rt)
        done = rt.coordinator().get(row.id)
        assert done is not None
        assert (session.id, 1, "completed") == (done.session_id, done.runs_before, done.outcome)
        assert 2 == len(rt.main_runs(session.id))
        assert_replays_and_verifies(rt, session.id)


def test_a_lease_held_by_another_process_keeps_an_embedded_runtime_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
        # Another process (here: another coordinator handle) leases the session.
        other = SQLiteCoordinator(home / COORD_FILE)
        assert other.acquire(sid, "another-host:42:abcd", 60)
        assert rt.is_owned(sid)
        with pytest.raises(SessionBusy, match="leased by another clew process"):
            rt.run(sid, DEMO_PROMPT, model=demo_model(), tools=demo_tools(tmp_path))
        # Refused before anything was written: no run started, the lock file is free.
        assert [] == rt.main_runs(sid)
        other.release(sid, "another-host:42:abcd")
        out = rt.run(sid, DEMO_PROMPT, model=demo_model(), tools=demo_tools(tmp_path))
        assert "completed" == out.status
        # The run's lease was this runtime's while it ran, and is released after it.
        assert other.holder(sid) is None
        other.close()
        assert_replays_and_verifies(rt, sid)


def test_an_embedded_runs_lease_keeps_a_queued_run_of_its_session_waiting(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as embedded, Runtime(home, tmp_path) as server:
        sid = embedded.new_session().id
        row = server.submit(DEMO_PROMPT, model="demo", tools="demo", session=sid)
        embedded.lock(sid)  # the embedded runtime owns the session: lock file and lease
        assert server.coordinator().take("peer") is None
        embedded.unlock(sid)
        taken = server.coordinator().take("peer")
        assert taken is not None
        assert row.id == taken.id


def test_a_home_never_served_gets_no_coordination_file(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        session.run(DEMO_PROMPT, model=demo_model(), tools=demo_tools(tmp_path))
        assert not rt.is_owned(session.id)
    assert not (tmp_path / "home" / COORD_FILE).exists()


def test_an_unknown_recipe_ends_the_queued_run_as_an_error_without_a_session(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        rt.submit(DEMO_PROMPT, model="nope")
        serve_until_done(rt)
        (row,) = rt.queue()
        assert ("error", None) == (row.outcome, row.session_id)
        assert row.error is not None
        assert "no model recipe named 'nope'" in row.error
        assert [] == rt.sessions()


def test_a_run_taken_by_a_dead_process_before_it_started_is_queued_again(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path, lease_ttl=1.0) as rt:
        row = rt.submit(DEMO_PROMPT, model="demo", tools="demo")
        # A process took it and died at once: it never renewed a worker lease.
        assert rt.coordinator().take("dead-host:1:0000") is not None
        report = serve_until_done(rt)
        assert [row.id] == report.requeued
        (done,) = rt.queue()
        assert ("completed", 3) == (done.outcome, done.attempts)  # taken, adopted, taken


def test_a_run_that_ended_before_its_process_died_is_marked_done_not_run_again(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        row = rt.submit(DEMO_PROMPT, model="demo", tools="demo")
        coord = rt.coordinator()
        assert coord.take("dead-host:1:0000") is not None
        session = rt.new_session()
        coord.attach(row.id, "dead-host:1:0000", session.id, 0)
        out = session.run(DEMO_PROMPT, model=demo_model(), tools=demo_tools(tmp_path))
        report = serve_until_done(rt)
        assert [row.id] == report.recovered
        done = coord.get(row.id)
        assert done is not None
        assert ("completed", out.run_id) == (done.outcome, done.run_id)
        assert [out.run_id] == rt.main_runs(session.id)


def test_submit_refuses_bad_input_before_anything_is_queued(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        with pytest.raises(UsageError, match="the prompt is empty"):
            rt.submit("  ", model="demo")
        with pytest.raises(UnknownSession):
            rt.submit("hi", model="demo", session="sess_20260101_000000_0001")
        with pytest.raises(UsageError, match="at least 1"):
            rt.serve(concurrency=0)
        assert [] == rt.queue()


def test_recipes_build_what_the_app_registered(tmp_path: Path) -> None:
    made: list[str] = []

    def model(ctx: RecipeContext) -> object:
        made.append(ctx.session_id)
        return demo_model(1)

    recipes = Recipes(models={"one": model}).with_demo()  # type: ignore[dict-item]
    ctx = RecipeContext(session_id="s", project_dir=tmp_path, environ={})
    built = recipes.build(RunSpec(prompt="p", model="one", tools="demo"), ctx)
    assert ["s"] == made
    assert ["lookup", "save_note"] == [t.name for t in built.tools]
    with pytest.raises(UsageError, match="no team recipe named 'x'"):
        recipes.check(RunSpec(prompt="p", model="one", team="x"))


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("no_colon", "is not of the form module:callable"),
        ("no_such_module_here:f", "cannot import"),
        ("actors.demo:NOT_THERE", "is not a callable"),
        ("actors.demo:demo_script", "returned dict, not Recipes"),
    ],
)
def test_a_bad_app_reference_is_one_usage_error(ref: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_app(ref)


def test_a_recipe_that_raises_ends_its_queued_run_as_an_error_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    def boom(ctx: RecipeContext) -> object:
        raise ValueError("no key for this model")

    with Runtime(tmp_path / "home", tmp_path) as rt:
        rt.submit("first", model="boom")
        rt.submit(DEMO_PROMPT, model="demo", tools="demo")
        serve_until_done(rt, recipes=Recipes(models={"boom": boom}))  # type: ignore[dict-item]
        first, second = rt.queue()
        assert ("error", "ValueError: no key for this model") == (first.outcome, first.error)
        assert "completed" == second.outcome
