"""The ``clew`` CLI: every command, every exit code, the JSON shapes, bad input, and a
kill-mid-demo → resume → verify → replay round trip through real processes."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
import structlog
from _cli_helpers import (
    Where,
    copy_where,
    count_events,
    invoke,
    main_wal,
    reseal,
    run_process,
    script_model,
    spawn,
    sql,
    total_rows,
)
from _processes import ROOT
from _runtime_helpers import route, rule, worker
from fake_server import FakeServer, Reply

from actors import Runtime

TASK_IDS = ["w1", "w2", "w3", "primary", "review"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    """One finished demo session, recorded once for the module (copy it before changing it)."""
    base = tmp_path_factory.mktemp("recorded")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    result = invoke(where, "demo", "--json")
    structlog.reset_defaults()
    assert 0 == result.code, result.err
    return where, result.json()["session_id"]


@pytest.fixture
def demo_copy(recorded: tuple[Where, str], tmp_path: Path) -> tuple[Where, str]:
    """A private copy of the recorded demo (home and project) that a test may change."""
    where, sid = recorded
    return copy_where(where, tmp_path), sid


# --- demo and run -----------------------------------------------------------------------


def test_demo_prints_the_session_the_tree_the_dag_and_a_replay_check(empty: Where) -> None:
    result = invoke(empty, "demo", "--workers", "2")
    assert 0 == result.code, result.err
    first = result.out.splitlines()[0]
    assert first.startswith("session sess_")
    sid = first.split()[1]
    assert "▶" in result.out and "(active)" in result.out
    assert "task DAG" in result.out and "w2" in result.out
    runs = count_events(empty.home, sid, runs_only=True)
    assert f"replay check: {runs} events in 4 runs reproduced identically" in (result.out)
    assert "" == result.err


def _events(where: Where, sid: str) -> int:
    return count_events(where.home, sid)


def test_demo_json_is_one_document_with_the_outcome_and_the_replay(
    recorded: tuple[Where, str],
) -> None:
    where, sid = recorded
    result = invoke(where, "sessions", "--json")
    assert 0 == result.code
    [info] = result.json()
    assert sid == info["session_id"]
    assert "demo" == info["scenario"]
    expected_keys = {"session_id", "status", "created_at", "updated_at", "interrupted", "runs"}
    assert expected_keys | {"events"} <= set(info)
    # One main run (the request); 5 runs with the workers and the review (`runs`, as in
    # 0.1; `all_runs` is its other name).
    assert (False, "completed", 1, 5, 5) == (
        info["interrupted"],
        info["status"],
        info["main_runs"],
        info["runs"],
        info["all_runs"],
    )


def test_run_with_a_scripted_model_prints_the_answer_and_records_the_spec(
    empty: Where, tmp_path: Path
) -> None:
    model = script_model(
        tmp_path / "script.json", route(), rule("lead", {"text": "Hello from the script."})
    )
    result = invoke(empty, "run", "Say hello", "--model", model)
    assert 0 == result.code, result.err
    assert "Hello from the script.\n" == result.out
    sid = result.err.split()[1]
    exported = [json.loads(line) for line in invoke(empty, "export", sid).out.splitlines()]
    assert {"scenario": "run", "model": model} == exported[0]["payload"]["metadata"]


def test_run_through_an_openai_compatible_server_completes_and_replays(empty: Where) -> None:
    with FakeServer() as server:
        result = invoke(
            empty,
            "run",
            "hello there",
            "--model",
            "openai:test-model",
            "--base-url",
            server.url,
            "--json",
        )
    assert 0 == result.code, result.err
    outcome = result.json()
    assert "completed" == outcome["status"]
    replayed = invoke(empty, "replay", outcome["session_id"], "--json")  # server stopped
    assert (0, True) == (replayed.code, replayed.json()["identical"])


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--model", "foo:bar"], "unknown model spec 'foo:bar'"),
        (["--model", "gpt-4o"], "unknown model spec 'gpt-4o'"),
        (["--model", "scripted:/no/such/script.json"], "cannot read script"),
        (["--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1"], "cannot reach openai:m"),
        (["--model", "openai:m", "--base-url", "ftp://x"], "not an http(s) URL"),
        ([], "Missing option '--model'"),
    ],
)
def test_run_with_a_bad_or_unreachable_model_is_one_line_and_exit_2(
    empty: Where, args: list[str], fragment: str
) -> None:
    result = invoke(empty, "run", "hello", *args)
    assert 2 == result.code
    [line] = result.err_lines()
    assert fragment in line
    assert "" == result.out
    assert not (empty.home / "sessions.sqlite").exists()


def test_run_refuses_a_script_that_is_not_a_valid_script(empty: Where, tmp_path: Path) -> None:
    result = invoke(empty, "run", "hello", "--model", script_model(tmp_path / "bad.json"))
    assert (2, 1) == (result.code, len(result.err_lines()))
    assert "invalid script at rules" in result.err


# --- reading ----------------------------------------------------------------------------


def test_sessions_on_an_empty_dir_lists_nothing_and_creates_no_home(empty: Where) -> None:
    result = invoke(empty, "sessions", "--json")
    assert (0, []) == (result.code, result.json())
    assert not empty.home.exists()


def test_home_and_project_may_come_before_the_command(recorded: tuple[Where, str]) -> None:
    where, sid = recorded
    result = invoke(None, *where.flags(), "sessions", "--json")
    assert [sid] == [s["session_id"] for s in result.json()]


def test_show_json_lists_every_node_with_the_active_path_marked(
    recorded: tuple[Where, str],
) -> None:
    where, sid = recorded
    doc = invoke(where, "show", sid, "--json").json()
    # The Brain: prompt, plan, task board, task board after the pool, summaries, answer.
    assert f"{sid}:brain:r1:n6" == doc["active_node_id"]
    assert [f"{sid}:brain:r1:n{i}" for i in range(1, 7)] == doc["active_path"]
    assert 20 == len(doc["nodes"])
    assert f"{sid}:brain:r1:n1" == doc["roots"][0]
    on_path = [n["node_id"] for n in doc["nodes"] if n["on_active_path"]]
    assert doc["active_path"] == on_path


def test_show_draws_the_tree_with_the_active_node_highlighted(
    recorded: tuple[Where, str],
) -> None:
    where, sid = recorded
    result = invoke(where, "show", sid)
    assert 0 == result.code
    assert "▶ brain:r1:n6 assistant/message" in result.out
    assert "brain:r1:n3 user/task_board" in result.out
    # A worker's context is folded to one line under its main run; --all expands it.
    assert "▸ brain:r1/w1:r1 · 4 nodes" in result.out
    assert "brain:r1/w1:r1:n1 user/task_instruction" not in result.out
    expanded = invoke(where, "show", sid, "--all")
    assert "brain:r1/w1:r1:n1 user/task_instruction" in expanded.out


def test_timeline_filters_by_run_and_by_type(recorded: tuple[Where, str]) -> None:
    where, sid = recorded
    doc = invoke(
        where,
        "timeline",
        sid,
        "--run",
        "brain:r1",
        "--type",
        "run_started",
        "--type",
        "run_ended",
        "--json",
    ).json()
    assert [("run_started", 1), ("run_ended", 36)] == [
        (e["event_type"], e["run_seq"]) for e in doc["events"]
    ]
    everything = invoke(where, "timeline", sid, "--json").json()["events"]
    seqs = [e["seq"] for e in everything]
    assert list(range(1, len(seqs) + 1)) == seqs


def test_tasks_json_has_the_dag_and_the_wal_status(recorded: tuple[Where, str]) -> None:
    where, sid = recorded
    doc = invoke(where, "tasks", sid, "--json").json()
    assert TASK_IDS == [t["id"] for t in doc["tasks"]]
    assert {"completed"} == {t["status"] for t in doc["tasks"]}
    assert ["w1"] == next(t["deps"] for t in doc["tasks"] if t["id"] == "w2")
    assert (str(main_wal(where, sid)), False) == (doc["wal"]["path"], doc["wal"]["truncated_tail"])
    assert doc["wal"]["lines"] > 0


def test_tasks_reports_a_torn_wal_tail_without_touching_the_file(
    demo_copy: tuple[Where, str],
) -> None:
    where, sid = demo_copy
    wal = main_wal(where, sid)
    with wal.open("ab") as f:
        f.write(b'{"seq": 99, "torn')
    before = wal.read_bytes()
    result = invoke(where, "tasks", sid, "--json")
    assert 0 == result.code
    assert (True, 17) == (
        result.json()["wal"]["truncated_tail"],
        result.json()["wal"]["truncated_bytes"],
    )
    assert before == wal.read_bytes()


def test_export_prints_every_event_as_one_json_line(recorded: tuple[Where, str]) -> None:
    where, sid = recorded
    lines = invoke(where, "export", sid).out.splitlines()
    rows = [json.loads(line) for line in lines]
    assert count_events(where.home, sid) == len(rows)
    assert {"seq", "run_id", "run_seq", "event_type", "node_id", "created_at", "payload"} <= (
        set(rows[0])
    )
    assert ["session_created", "session_created"] == [
        rows[0]["event_type"],
        rows[0]["payload"]["event_type"],
    ]


# --- replay and verify ------------------------------------------------------------------


def test_replay_of_an_untouched_session_is_identical_and_exits_0(
    recorded: tuple[Where, str],
) -> None:
    where, sid = recorded
    result = invoke(where, "replay", sid, "--json")
    doc = result.json()
    assert (0, True, [], 5) == (result.code, doc["identical"], doc["divergences"], doc["runs"])
    assert {"session_id", "identical", "events", "runs", "divergences"} <= set(doc)
    human = invoke(where, "replay", sid)
    assert f"{doc['events']} events in 5 runs reproduced identically\n" == human.out


def test_replay_of_a_changed_recording_reports_the_divergence_and_exits_1(
    demo_copy: tuple[Where, str],
) -> None:
    where, sid = demo_copy
    # Today's code is fed another prompt than the one its first node recorded.
    sql(
        where.home,
        f"UPDATE events_{sid} SET payload_json = replace(payload_json,"
        " 'Plan a small', 'Plan a huge') WHERE event_type = 'run_started'",
    )
    reseal(where.home, sid)  # a code change, not tampering: the chain must still hold
    result = invoke(where, "replay", sid, "--json")
    doc = result.json()
    assert (1, False) == (result.code, doc["identical"])
    assert f"{sid}:brain:r1" == doc["divergences"][0]["run_id"]
    human = invoke(where, "replay", sid)
    assert 1 == human.code
    assert "diverged" in human.out.splitlines()[0]


def test_verify_of_a_healthy_session_and_of_all_sessions_is_ok(
    recorded: tuple[Where, str],
) -> None:
    where, sid = recorded
    one = invoke(where, "verify", sid, "--json")
    assert (0, {"ok": True}) == (one.code, {"ok": one.json()["ok"]})
    assert [(sid, True, [])] == [
        (s["session_id"], s["ok"], s["problems"]) for s in one.json()["sessions"]
    ]
    every = invoke(where, "verify", "--all")
    assert 0 == every.code
    assert "1 sessions verified: ok" in every.out


def test_verify_finds_a_tampered_table_and_exits_1(demo_copy: tuple[Where, str]) -> None:
    where, sid = demo_copy
    sql(where.home, f"UPDATE nodes_{sid} SET role = 'tool' WHERE node_id = '{sid}:brain:r1:n1'")
    result = invoke(where, "verify", "--all", "--json")
    assert 1 == result.code
    [session] = result.json()["sessions"]
    assert not session["ok"]
    assert any(f"nodes_{sid}[{sid}:brain:r1:n1].role" in p for p in session["problems"])


def test_verify_finds_a_corrupt_task_wal_and_exits_1(demo_copy: tuple[Where, str]) -> None:
    where, sid = demo_copy
    wal = main_wal(where, sid)
    lines = wal.read_bytes().split(b"\n")
    lines[2] = b"this is not json"
    wal.write_bytes(b"\n".join(lines))
    result = invoke(where, "verify", sid, "--json")
    assert 1 == result.code
    [problem] = result.json()["sessions"][0]["problems"]
    # The demo's WAL is named after its plan's task (the run id is in its first line).
    assert problem.startswith("task WAL notes-app-plan:") and ":3:" in problem
    tasks = invoke(where, "tasks", sid, "--json").json()
    assert (False, []) == (tasks["wal"]["available"], tasks["tasks"])


@pytest.mark.parametrize("args", [[], ["SID", "--all"]])
def test_verify_needs_exactly_one_of_a_session_or_all(
    recorded: tuple[Where, str], args: list[str]
) -> None:
    where, sid = recorded
    result = invoke(where, "verify", *[sid if a == "SID" else a for a in args])
    assert (2, 1) == (result.code, len(result.err_lines()))


# --- changing ---------------------------------------------------------------------------


def test_switch_node_moves_the_active_node_and_show_follows(
    demo_copy: tuple[Where, str],
) -> None:
    where, sid = demo_copy
    result = invoke(where, "switch-node", sid, "brain:r1:n2", "--json")
    assert 0 == result.code, result.err
    assert {
        "session_id": sid,
        "from_node_id": f"{sid}:brain:r1:n6",
        "to_node_id": f"{sid}:brain:r1:n2",
    } == result.json()
    doc = invoke(where, "show", sid, "--json").json()
    assert [f"{sid}:brain:r1:n1", f"{sid}:brain:r1:n2"] == doc["active_path"]
    assert 0 == invoke(where, "verify", sid).code


def test_resume_of_a_session_without_an_interrupted_run_is_refused(
    recorded: tuple[Where, str],
) -> None:
    where, sid = recorded
    result = invoke(where, "resume", sid)
    assert 2 == result.code
    assert [f"error: session {sid} has no interrupted run; nothing to resume"] == (
        result.err_lines()
    )


# --- bad input --------------------------------------------------------------------------

BAD_INPUTS = [
    (["show", "../x"], "invalid session id '../x'"),
    (["show", "sess_19990101_000000_dead"], "unknown session sess_19990101_000000_dead"),
    (["timeline", "../x"], "invalid session id"),
    (["timeline", "SID", "--run", "brain:r9"], "has no run 'brain:r9'"),
    (["timeline", "SID", "--run", ""], "has no run ''"),
    (["timeline", "SID", "--type", "nope"], "unknown event type 'nope'"),
    (["tasks", "sess_19990101_000000_dead"], "unknown session"),
    (["replay", "../x"], "invalid session id"),
    (["resume", "sess_19990101_000000_dead"], "unknown session"),
    (["verify", "../x"], "invalid session id"),
    (["switch-node", "SID", "no_such_node"], "cannot switch to unknown node 'no_such_node'"),
    (["switch-node", "../x", "n1"], "invalid session id"),
    (["export", "sess_19990101_000000_dead"], "unknown session"),
    (["demo", "--workers", "0"], "Invalid value for '--workers'"),
    (["sessions", "--bogus"], "No such option: --bogus"),
    (["show"], "Missing argument 'SESSION'"),
    (["frobnicate"], "No such command 'frobnicate'"),
]


@pytest.mark.parametrize(("args", "fragment"), BAD_INPUTS)
def test_bad_input_is_one_line_on_stderr_exit_2_and_writes_nothing(
    recorded: tuple[Where, str], args: list[str], fragment: str
) -> None:
    where, sid = recorded
    before = total_rows(where.home)
    result = invoke(where, *[sid if a == "SID" else a for a in args])
    assert 2 == result.code
    [line] = result.err_lines()
    assert line.startswith("error: ") and fragment in line, line
    assert "" == result.out
    assert before == total_rows(where.home)


def test_an_unusable_home_project_or_fault_variable_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    project = tmp_path / "project"
    project.mkdir()
    cases = [
        (Where(a_file, project), {}, "cannot open the clew home"),
        (Where(tmp_path / "home", a_file), {}, "is not a directory"),
        (Where(tmp_path / "home", tmp_path / "no_such_project"), {}, "is not a directory"),
        (
            Where(tmp_path / "home", project),
            {"CLEW_FAULT_KILL_AFTER_EVENTS": "abc"},
            "CLEW_FAULT_KILL_AFTER_EVENTS must be a positive integer, not 'abc'",
        ),
    ]
    for where, env, fragment in cases:
        with monkeypatch.context() as m:
            for name, value in env.items():
                m.setenv(name, value)
            result = invoke(where, "demo")
        assert 2 == result.code, (where, result.err)
        [line] = result.err_lines()
        assert line.startswith("error: ") and fragment in line, line
        assert "" == result.out
        assert not (tmp_path / "home").exists()
        assert not (tmp_path / "no_such_project").exists()


def test_switch_node_to_a_missing_node_does_not_touch_the_session_lock(
    demo_copy: tuple[Where, str],
) -> None:
    where, sid = demo_copy
    lock = where.home / "locks" / f"{sid}.lock"
    lock.write_text("untouched")
    result = invoke(where, "switch-node", sid, f"{sid}:brain:r9:n1")
    assert 2 == result.code
    assert "untouched" == lock.read_text()


def test_a_run_whose_model_fails_is_one_line_on_stderr(empty: Where) -> None:
    with FakeServer() as server:
        server.reply(Reply(status=401, body={"error": {"message": "bad key"}}))
        result = invoke(empty, "run", "hello", "--model", "openai:m", "--base-url", server.url)
    assert 2 == result.code
    [line] = result.err_lines()
    assert line.startswith("error: the model failed:") and "HTTP 401: bad key" in line, line


def test_ctrl_c_cancels_a_demo_at_once_and_records_it_cancelled(empty: Where) -> None:
    child = spawn(empty, "demo", "--slow", "1000")
    assert child.stdout is not None
    sid = child.stdout.readline().split()[1]
    deadline = time.monotonic() + 30
    while count_events(empty.home, sid) < 6 and child.poll() is None:
        assert time.monotonic() < deadline, "the demo never committed 6 events"
        time.sleep(0.02)
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = child.communicate(timeout=30)
    # The rest of the run takes ~5 s at --slow 1000; a Ctrl-C must not wait for it.
    assert time.monotonic() - sent < 2.0
    assert 130 == child.returncode
    assert 1 == len(err.strip().splitlines()) and "interrupted" in err, err
    [info] = run_process(empty, "sessions", "--json").json()
    assert not info["interrupted"]
    with Runtime(empty.home, empty.project, read_only=True) as rt:
        [main] = [r for r in rt.store.read_runs(sid) if r.run_id == f"{sid}:brain:r1"]
        assert "cancelled" == main.status
        assert rt.replay(sid).identical
        assert rt.verify(sid).ok
    assert 2 == run_process(empty, "resume", sid).code  # nothing to resume


def test_a_read_command_on_a_missing_home_is_refused_without_creating_it(empty: Where) -> None:
    result = invoke(empty, "show", "sess_19990101_000000_dead")
    assert 2 == result.code
    assert "holds no sessions" in result.err
    assert not empty.home.exists()


# --- real processes: crash, resume, verify, replay --------------------------------------


def test_a_demo_killed_by_sigkill_resumes_verifies_and_replays_identically(
    empty: Where,
) -> None:
    child = spawn(empty, "demo", "--slow", "150")
    assert child.stdout is not None
    first = child.stdout.readline()
    assert first.startswith("session sess_"), first
    sid = first.split()[1]
    deadline = time.monotonic() + 30
    while count_events(empty.home, sid) < 12 and child.poll() is None:
        assert time.monotonic() < deadline, "the demo never committed 12 events"
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert -signal.SIGKILL == child.returncode

    listed = run_process(empty, "sessions", "--json").json()
    assert [(sid, True)] == [(s["session_id"], s["interrupted"]) for s in listed]
    resumed = run_process(empty, "resume", sid)
    assert 0 == resumed.code, resumed.err
    assert f"session {sid}: completed" == resumed.out.splitlines()[0]
    verified = run_process(empty, "verify", sid)
    assert 0 == verified.code, verified.out + verified.err
    replayed = run_process(empty, "replay", sid, "--json")
    assert (0, True) == (replayed.code, replayed.json()["identical"]), replayed.out


def test_a_fault_injected_kill_after_40_events_is_resumed_by_the_cli(empty: Where) -> None:
    killed = run_process(empty, "demo", CLEW_FAULT_KILL_AFTER_EVENTS="40")
    assert -signal.SIGKILL == killed.code
    sid = killed.out.split()[1]
    # Killed right after the commit holding the 40th event: a group commit (issue 17)
    # may hold a few more.
    assert 48 >= count_events(empty.home, sid) >= 40
    assert 0 == invoke(empty, "resume", sid, "--json").code
    assert 0 == invoke(empty, "verify", sid).code
    assert 0 == invoke(empty, "replay", sid).code


def test_a_killed_scripted_run_resumes_with_the_recorded_model_spec(
    empty: Where, tmp_path: Path
) -> None:
    model = script_model(
        tmp_path / "script.json",
        route([worker("w1", "helper", "help")]),
        rule("helper", {"text": "helped"}),
        rule("lead", {"text": "Done."}),
    )
    killed = run_process(empty, "run", "go", "--model", model, CLEW_FAULT_KILL_AFTER_EVENTS="12")
    assert -signal.SIGKILL == killed.code
    [info] = invoke(empty, "sessions", "--json").json()
    assert info["interrupted"]
    resumed = invoke(empty, "resume", info["session_id"], "--json")
    assert (0, "completed", "Done.") == (
        resumed.code,
        resumed.json()["status"],
        resumed.json()["answer"],
    )


def test_library_logs_go_to_stderr_so_json_stdout_stays_one_document(
    demo_copy: tuple[Where, str],
) -> None:
    where, sid = demo_copy
    with main_wal(where, sid).open("ab") as f:
        f.write(b"torn")
    result = run_process(where, "tasks", sid, "--json", CLEW_LOG_LEVEL="info")
    assert 0 == result.code
    assert sid == result.json()["session_id"]
    assert "task_wal_torn_tail" in result.err


def test_the_readme_embedding_example_is_the_code_of_examples_embed_py() -> None:
    embed = (ROOT / "examples" / "embed.py").read_text(encoding="utf-8")
    body = embed.split('"""', 2)[2].strip("\n")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"```python\n{body}\n```" in readme


def test_help_lists_every_command_of_the_contract() -> None:
    result = invoke(None, "--help")
    assert 0 == result.code
    for command in (
        "demo",
        "run",
        "sessions",
        "show",
        "timeline",
        "tasks",
        "replay",
        "resume",
        "verify",
        "switch-node",
        "export",
    ):
        assert command in result.out
