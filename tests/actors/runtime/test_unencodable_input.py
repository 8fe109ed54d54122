"""Input the log cannot hold is refused before anything is written: API and CLI.

``clew run $'hi \\xff'`` once wrote a ``run_ended`` without a ``run_started``; now a bad
prompt (or session metadata) is a ``UsageError`` — exit 2, one line — and no session or
run exists afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import script_model, total_rows
from _processes import child_env

from actors.demo import demo_model
from actors.errors import UsageError
from actors.runtime.runtime import Runtime

#: ``$'hi \\xff'`` as Python sees it in ``sys.argv``.
BAD_PROMPT = b"hi \xff".decode("utf-8", "surrogateescape")


def test_a_prompt_with_a_lone_surrogate_is_refused_before_the_run_is_written(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()
        before = rt.store.count_events(session.id)

        with pytest.raises(
            UsageError, match=r"^the prompt is not valid text: '\\udcff' at position 3"
        ):
            session.run(BAD_PROMPT, model=demo_model(1))

        assert (before, []) == (rt.store.count_events(session.id), rt.store.read_runs(session.id))


def test_session_metadata_the_log_cannot_hold_creates_no_session(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        with pytest.raises(UsageError, match="the session's metadata cannot be stored"):
            rt.new_session(metadata={"label": BAD_PROMPT})
        with pytest.raises(UsageError, match="type object is unsupported"):
            rt.new_session(metadata={"handle": object()})

        assert [] == rt.sessions()


def test_clew_run_with_an_undecodable_prompt_exits_2_with_one_line_and_no_session(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    spec = script_model(tmp_path / "script.json", {"replies": [{"text": "hi"}]})
    argv = [sys.executable, "-m", "actors", "run", b"hi \xff", "--model", spec]
    argv += ["--home", str(home), "--project", str(project)]

    # A real process, with the raw byte in its argv (as a shell passes $'hi \xff').
    done = subprocess.run(
        [os.fsencode(a) for a in argv], env=child_env(), capture_output=True, timeout=60
    )

    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    assert (2, 1) == (done.returncode, len(err)), err
    assert "the prompt is not valid" in err[0], err
    assert 0 == total_rows(home)
