"""Issue 32, item 21: a queued run whose serve died mid-run, adopted by a ``clew serve``
that lacks its recipe, ended ``error`` and left its session interrupted for good. Now
that serve leaves it alone and a serve with the recipe, started later, finishes it.

Three real ``clew serve`` processes on one SQLite home: one with the app, killed inside
the run (``CLEW_FAULT_KILL_AFTER_EVENTS``); one without the app; one with it again."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _processes import ROOT, child_env

from actors.runtime.runtime import Runtime

APP = ("--app", "tests.helpers._serve_app:recipes")
LEASE_TTL_S = 1.0
#: Generous for a loaded 2-core machine: they fail a hung test, never a slow one.
WITHIN_S = 180.0


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def _serve(
    tmp_path: Path, name: str, *app: str, procs: list[subprocess.Popen[bytes]], **env: str
) -> tuple[subprocess.Popen[bytes], Path]:
    out = tmp_path / f"{name}.out"
    with out.open("wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                *("-m", "actors", "serve", "--home", str(tmp_path / "home")),
                *("--project", str(tmp_path / "project"), *app),
                *("--lease-ttl", str(LEASE_TTL_S)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env(CLEW_TEST_MODEL_CALLS=str(tmp_path / "calls.txt"), **env),
            cwd=ROOT,
        )
    procs.append(proc)
    return proc, out


def _wait_for(what: str, check: Callable[[], bool]) -> None:
    end = time.monotonic() + WITHIN_S
    while not check():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_item21_an_orphan_whose_recipe_a_serve_lacks_waits_for_a_serve_that_has_it(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    (tmp_path / "project").mkdir()
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        row = rt.submit("Plan a small notes app.", model="counted", tools="demo")

        def status() -> tuple[str, str | None]:
            got = rt.coordinator().get(row.id)
            assert got is not None
            return got.status, got.outcome

        # 1. A serve with the app runs it and dies inside the run.
        first, _ = _serve(tmp_path, "first", *APP, procs=started, CLEW_FAULT_KILL_AFTER_EVENTS="40")
        assert -signal.SIGKILL == first.wait(timeout=WITHIN_S)
        taken = rt.coordinator().get(row.id)
        assert taken is not None and taken.session_id is not None
        assert ("running", None) == status()
        sid = taken.session_id
        assert "interrupted" == rt.session(sid).info().status

        # 2. A serve without the app leaves it (it would end it error: no 'counted' recipe).
        lacking, lacking_out = _serve(tmp_path, "lacking", procs=started)
        _wait_for(
            "the serve without the app to pass the orphan by",
            lambda: (
                "left to a serve with its recipes" in lacking_out.read_text()
                or status()[0] == "done"
            ),
        )
        assert ("running", None) == status(), lacking_out.read_text()
        said = lacking_out.read_text()
        assert f"queued run {row.id} of " in said and "no model recipe named 'counted'" in said
        lacking.send_signal(signal.SIGTERM)
        assert 0 == lacking.wait(timeout=WITHIN_S), lacking_out.read_text()

        # 3. A serve with the app, started later, adopts and finishes it.
        capable, capable_out = _serve(tmp_path, "capable", *APP, procs=started)
        _wait_for("the capable serve to finish it", lambda: status()[0] == "done")
        capable.send_signal(signal.SIGTERM)
        assert 0 == capable.wait(timeout=WITHIN_S), capable_out.read_text()
        assert ("done", "completed") == status(), capable_out.read_text()
        assert f"recovered queued run {row.id}: completed" in capable_out.read_text()
        assert "completed" == rt.session(sid).info().status
        assert 1 == len(rt.main_runs(sid))
        assert rt.verify(sid).ok
        assert rt.replay(sid).identical
