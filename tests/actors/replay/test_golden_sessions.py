"""Sessions recorded by clew 0a7c95d replay, verify and resume with today's code.

The fixtures, and the commands that recorded them, are in tests/golden/sessions/README.md.
Every test works on a fresh copy in ``tmp_path``: the committed files are never opened
in place (an open in WAL mode leaves ``-wal``/``-shm`` beside them; a resume appends).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from actors.cli import main
from actors.cli.recipes import models_for_resume
from actors.recording.inputs import RunInputs
from actors.runtime.runtime import Runtime
from eventlog.events import InDoubtResolved, ModelRequested, ModelResponded, RunStarted
from eventlog.store import EventStore

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "sessions"


@dataclass(frozen=True)
class Golden:
    """One committed fixture and what the recording holds."""

    name: str
    session_id: str
    #: Events of the session's runs (every event but ``session_created``).
    run_events: int
    #: Runs in the recording: main runs and worker runs.
    runs: int
    main_runs: int
    #: Runs the crash left unfinished (0 for a completed session).
    interrupted_runs: int = 0
    #: ``demo-notes.txt`` after a resume: each completed ``save_note`` once, none in doubt.
    notes_after_resume: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.name


DEMO = Golden(
    name="demo", session_id="sess_20261130_231819_679c", run_events=101, runs=5, main_runs=1
)
INTERRUPTED = Golden(
    name="interrupted",
    session_id="sess_20261130_232215_8ae8",
    run_events=39,
    runs=3,
    main_runs=1,
    interrupted_runs=3,
    # w1 and w3 saved their notes before the kill; w2 saves its note on resume.
    notes_after_resume=("analyst was here", "engineer was here", "researcher was here"),
)
INTERRUPTED_TOOL = Golden(
    name="interrupted_tool",
    session_id="sess_20261130_232224_3edc",
    run_events=33,
    runs=3,
    main_runs=1,
    interrupted_runs=3,
    # w1's save_note was in doubt: failed by policy, never run; w2's and w3's run on resume.
    notes_after_resume=("analyst was here", "engineer was here"),
)
SCRIPTED = Golden(
    name="scripted", session_id="sess_20261130_232317_bfed", run_events=91, runs=6, main_runs=2
)
#: Recorded by clew 7f22d07 (flow 2, requests by value, node content in the node rows):
#: the first fixture of the flow that by-reference requests (flow 3) succeeded.
INTERRUPTED_FLOW2 = Golden(
    name="interrupted_flow2",
    session_id="sess_20261201_105548_b20e",
    run_events=59,
    runs=4,
    main_runs=1,
    interrupted_runs=2,
    # w1 and w3 saved their notes before the kill; w2 saves its note on resume.
    notes_after_resume=("analyst was here", "engineer was here", "researcher was here"),
)
ALL = [DEMO, INTERRUPTED, INTERRUPTED_TOOL, SCRIPTED, INTERRUPTED_FLOW2]
CRASHED = [g for g in ALL if g.interrupted_runs]


def copy_fixture(golden: Golden, dest: Path) -> tuple[Path, Path]:
    """Copy the fixture's home and project under ``dest``; return (home, project)."""
    root = shutil.copytree(GOLDEN / golden.name, dest / golden.name)
    return root / "home", root / "project"


@contextmanager
def opened(golden: Golden, dest: Path) -> Iterator[Runtime]:
    """Open today's Runtime on a fresh copy of the fixture."""
    home, project = copy_fixture(golden, dest)
    with Runtime(home, project) as rt:
        yield rt


def cli_on_a_copy(golden: Golden, dest: Path, *commands: str) -> list[int]:
    """Run ``clew <command> <session>`` for each command on one fresh copy; return the codes."""
    home, project = copy_fixture(golden, dest)
    where = ["--home", str(home), "--project", str(project)]
    return [main([command, golden.session_id, *where]) for command in commands]


Call = tuple[str, int]  # (run_id, call_index)


def model_calls(store: EventStore, sid: str) -> tuple[Counter[Call], set[Call]]:
    """Return the ``model_requested`` count per call and the calls that were answered."""
    requested: Counter[Call] = Counter()
    answered: set[Call] = set()
    for e in store.iter_events(sid):
        match e.event:
            case ModelRequested(call_index=i) if e.run_id is not None:
                requested[(e.run_id, i)] += 1
            case ModelResponded(call_index=i) if e.run_id is not None:
                answered.add((e.run_id, i))
    return requested, answered


def resume_as_the_cli_does(rt: Runtime, sid: str) -> str:
    """Resume with the model and tools the CLI builds from the session's recipe."""
    models, tools = models_for_resume(
        rt.store.read_session(sid),
        env={},
        project_dir=rt.project_dir,
        slow_ms=None,
        override=[],
        base_url=None,
    )
    return rt.resume(sid, model=models, tools=tools).status


def notes(rt: Runtime) -> list[str]:
    """Return the demo's notes file, line by line, sorted (workers run concurrently)."""
    path = rt.project_dir / ".clew" / "demo-notes.txt"
    return sorted(path.read_text(encoding="utf-8").splitlines()) if path.exists() else []


@pytest.mark.parametrize("golden", ALL, ids=str)
def test_a_golden_session_is_found_as_recorded(golden: Golden, tmp_path: Path) -> None:
    with opened(golden, tmp_path) as rt:
        [info] = rt.sessions()
        assert (golden.session_id, golden.run_events + 1, bool(golden.interrupted_runs)) == (
            info.session_id,
            info.events,
            info.interrupted,
        )


@pytest.mark.parametrize("golden", ALL, ids=str)
def test_a_golden_session_replays_identically(golden: Golden, tmp_path: Path) -> None:
    with opened(golden, tmp_path) as rt:
        report = rt.replay(golden.session_id)
    assert report.identical, report.summary()
    assert (golden.run_events, golden.runs, [], golden.interrupted_runs) == (
        report.events,
        report.runs,
        report.divergences,
        len(report.incomplete_runs),
    )


@pytest.mark.parametrize("golden", ALL, ids=str)
def test_a_golden_session_verifies(golden: Golden, tmp_path: Path) -> None:
    with opened(golden, tmp_path) as rt:
        report = rt.verify(golden.session_id)
    [check] = report.sessions
    assert ([], golden.run_events + 1, golden.main_runs) == (
        check.problems,
        check.events,
        len(check.wals),
    )
    assert report.ok


@pytest.mark.parametrize("golden", ALL, ids=str)
def test_every_recorded_main_run_input_round_trips_through_run_inputs(
    golden: Golden, tmp_path: Path
) -> None:
    with opened(golden, tmp_path) as rt:
        sid = golden.session_id
        main_runs = rt.main_runs(sid)
        assert golden.main_runs == len(main_runs)
        for run_id in main_runs:
            [started] = [
                e.event for e in rt.store.read_run(sid, run_id) if isinstance(e.event, RunStarted)
            ]
            inputs = RunInputs.from_metadata(started.metadata)
            assert started.metadata == inputs.to_metadata(), run_id


@pytest.mark.parametrize("golden", CRASHED, ids=str)
def test_an_interrupted_golden_session_resumes_without_repaying_a_model_call(
    golden: Golden, tmp_path: Path
) -> None:
    with opened(golden, tmp_path) as rt:
        sid = golden.session_id
        requested_before, answered = model_calls(rt.store, sid)
        assert answered, "the fixture holds no answered model call"

        assert "completed" == resume_as_the_cli_does(rt, sid)

        requested_after, answered_after = model_calls(rt.store, sid)
        # A call answered before the crash is re-executed from the recording, never
        # requested from the model again.
        assert {k: requested_before[k] for k in answered} == {
            k: requested_after[k] for k in answered
        }
        assert answered < answered_after
        assert [] == rt.interrupted_runs(sid)
        assert list(golden.notes_after_resume) == notes(rt)
        report = rt.replay(sid)
        assert report.identical, report.summary()
        run_events = sum(1 for e in rt.store.iter_events(sid) if e.run_id is not None)
        assert (run_events, [], []) == (
            report.events,
            report.divergences,
            report.incomplete_runs,
        )
        verified = rt.verify(sid)
        assert [] == verified.sessions[0].problems
        assert verified.ok


def test_in_doubt_tool_calls_of_a_golden_session_are_settled_by_idempotency(
    tmp_path: Path,
) -> None:
    with opened(INTERRUPTED_TOOL, tmp_path) as rt:
        sid = INTERRUPTED_TOOL.session_id
        assert "completed" == resume_as_the_cli_does(rt, sid)
        settled = sorted(
            (e.event.tool_name, e.event.decision)
            for e in rt.store.iter_events(sid)
            if isinstance(e.event, InDoubtResolved)
        )
    assert [("lookup", "retry"), ("save_note", "fail")] == settled


@pytest.mark.parametrize("golden", CRASHED, ids=str)
def test_the_cli_resumes_an_interrupted_golden_session(
    golden: Golden, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = cli_on_a_copy(golden, tmp_path, "resume", "replay", "verify")
    assert [0, 0, 0] == codes, capsys.readouterr().err


@pytest.mark.parametrize("golden", ALL, ids=str)
def test_the_cli_replays_and_verifies_a_golden_session(
    golden: Golden, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = cli_on_a_copy(golden, tmp_path, "replay", "verify")
    assert [0, 0] == codes, capsys.readouterr().err
