"""What outsiders hit on the command line (issue 32): dead ends after a decision, call ids
by prefix, the help's layout, numbers out of range, unreadable Task WALs, scripts."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pydantic
import pytest
from _cli_helpers import Where, invoke, run_process, script_model
from _processes import child_env

from actors import Runtime, ScriptedModel, tool
from actors.documents.excerpts import short_call_id

# --- a session an application made, waiting for an approval -----------------------------


class Amount(pydantic.BaseModel):
    amount: int


@tool(Amount, needs_approval=True)
def pay(args: Amount) -> str:
    """Pay an amount."""
    return f"paid {args.amount}"


def _script(calls: int) -> dict[str, object]:
    return {
        "rules": [
            {"role": "router", "replies": [{"json": {"primary_role": "clerk"}}]},
            {
                "role": "clerk",
                "replies": [
                    {"text": "(never)"},
                    {
                        "tool_calls": [
                            {"name": "pay", "arguments": {"amount": 40 + i}} for i in range(calls)
                        ]
                    },
                    {"text": "Done."},
                ],
            },
        ]
    }


def _app_session(where: Where, calls: int = 1) -> tuple[str, list[str]]:
    """A waiting session made by an application (no recipe the CLI could resume from)."""
    with Runtime(where.home, where.project) as rt:
        out = rt.new_session().run("Pay.", model=ScriptedModel(_script(calls)), tools=[pay])
    return out.session_id, [p.tool_call_id for p in out.pending]


def test_item5_approve_of_an_app_session_says_what_resume_needs(empty: Where) -> None:
    sid, (call,) = _app_session(empty)
    result = invoke(empty, "approve", sid, call)
    assert 0 == result.code, result.err
    assert f"{sid}: {call} approved; resume it: clew resume {sid} --model SPEC" in result.out
    assert "or resume it in the application" in result.out
    # Without --model, resume refuses it for the reason the line gave.
    refused = invoke(empty, "resume", sid)
    assert (2, True) == (refused.code, "pass --model SPEC" in refused.err)


def test_item5_approve_of_a_run_session_says_plain_resume(empty: Where) -> None:
    script = empty.project / "pay.json"
    spec = script_model(script, *_script(1)["rules"])  # type: ignore[arg-type]
    with Runtime(empty.home, empty.project) as rt:
        s = rt.new_session(metadata={"scenario": "run", "model": spec})
        out = s.run("Pay.", model=ScriptedModel(script), tools=[pay])
    (p,) = out.pending
    result = invoke(empty, "approve", out.session_id, p.tool_call_id)
    assert result.out.rstrip().endswith(f"resume it: clew resume {out.session_id}")


def test_item5_resume_before_deciding_names_the_pending_call(empty: Where) -> None:
    sid, (call,) = _app_session(empty)
    result = invoke(empty, "resume", sid)
    assert 2 == result.code
    assert 1 == len(result.err_lines())
    assert f"still waiting for approval of {call} (pay" in result.err
    assert "--model" not in result.err


def test_item11_a_call_is_named_by_a_unique_prefix(empty: Where) -> None:
    _, (call,) = _app_session(empty)
    typed = call[: len("call_") + 4]
    result = invoke(empty, "deny", "last", typed, "--reason", "no", "--json")
    assert 0 == result.code, result.err
    assert call == result.json()["tool_call_id"]


def test_item12_approve_with_edited_arguments_prints_edited(empty: Where) -> None:
    sid, (call,) = _app_session(empty)
    result = invoke(empty, "approve", sid, call, "--args", '{"amount": 5}')
    assert f"{sid}: {call} edited;" in result.out


def test_item12_deny_prints_denied(empty: Where) -> None:
    sid, (call,) = _app_session(empty)
    assert f"{call} denied;" in invoke(empty, "deny", sid, call, "--reason", "no").out


# --- the help --------------------------------------------------------------------------


def _panels(help_text: str) -> dict[str, list[str]]:
    panels: dict[str, list[str]] = {}
    current = ""
    for line in help_text.splitlines():
        title = re.match(r"╭─ (.+?) ─", line)
        if title:
            current = title.group(1)
            panels[current] = []
        elif current and (m := re.match(r"│ ([a-z][a-z-]+)\s{2,}", line)):
            panels[current].append(m.group(1))
    return panels


def test_item12_help_groups_the_commands_start_inspect_history_serve(empty: Where) -> None:
    result = run_process(empty, "--help", COLUMNS="100")
    assert 0 == result.code, result.err
    panels = _panels(result.out)
    names = list(panels)
    assert names[0] == "Options"
    assert ["demo", "run", "resume"] == panels[names[1]][:3]
    assert ["sessions", "show", "timeline"] == panels["Inspect"][:3]
    assert ["fork", "rerun", "diff"] == panels["History"][:3]
    assert ["submit", "queue", "serve"] == panels["Serve"][:3]
    listed = [c for n in names[1:] for c in panels[n]]
    assert len(listed) == len(set(listed)) >= 29


def test_item12_flags_are_not_printed_as_bool(empty: Where) -> None:
    for args in (["--help"], ["copy", "--help"], ["timeline", "--help"]):
        result = subprocess.run(
            [sys.executable, "-m", "actors", *args],
            capture_output=True,
            text=True,
            env=child_env(COLUMNS="100"),
            check=False,
        )
        assert 0 == result.returncode, result.stderr
        assert "--json" in result.stdout or "--version" in result.stdout
        assert "<bool>" not in result.stdout, args


def test_item12_copy_and_cancel_help_lines_are_whole_sentences(empty: Where) -> None:
    out = run_process(empty, "--help", COLUMNS="200").out
    for name in ("copy", "cancel"):
        (row,) = [line for line in out.splitlines() if re.match(rf"│ {name}\s", line)]
        assert row.rstrip(" │").endswith("."), row  # one line, ending its sentence


def test_item12_json_before_the_command_works_like_home(empty: Where) -> None:
    invoke(empty, "demo")
    result = run_process(empty, "--json", "sessions")
    assert 0 == result.code, result.err
    (row,) = json.loads(result.out)
    assert "completed" == row["status"]
    refused = run_process(empty, "--json", "export", "last")
    assert (2, 1) == (refused.code, len(refused.err_lines()))
    assert "clew export has no --json" in refused.err


# --- numbers out of range, one line each ------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["tail", "last", "--since", "9223372036854775808"],
        ["timeline", "last", "--limit", "1" + "0" * 26],
        ["timeline", "last", "--since", "1" + "0" * 30],
        ["queue", "--limit", "1" + "0" * 20],
    ],
)
def test_item21_a_number_beyond_the_store_is_one_line_and_exit_2(
    empty: Where, args: list[str]
) -> None:
    invoke(empty, "demo")
    result = run_process(empty, *args)
    assert 2 == result.code
    assert "Traceback" not in result.err
    assert 1 == len(result.err_lines()), result.err
    assert "less than or equal to 9223372036854775807" in result.err


def test_item21_an_unreadable_task_wal_directory_is_reported_not_a_traceback(
    empty: Where, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke(empty, "demo")
    elsewhere = Where(empty.home, tmp_path / "elsewhere")
    elsewhere.project.mkdir()
    private = elsewhere.project / ".clew" / "tasks"
    real_is_dir = Path.is_dir

    def is_dir(self: Path) -> bool:
        if private in self.parents:  # what a private .clew/tasks does to a reader
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_dir(self)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    verify = invoke(elsewhere, "verify", "last")
    assert 0 == verify.code, verify.err
    tasks = invoke(elsewhere, "tasks", "last")
    assert 0 == tasks.code, tasks.err


# --- scripts ---------------------------------------------------------------------------


def test_item21_a_scripted_stop_reason_must_be_a_normalised_one(empty: Where) -> None:
    spec = script_model(
        empty.project / "m.json", {"replies": [{"text": "x", "stop_reason": "bogus"}]}
    )
    result = invoke(empty, "run", "hi", "--model", spec)
    assert 2 == result.code
    assert "stop_reason" in result.err and "'end_turn'" in result.err
    assert not (empty.home / "sessions.sqlite").exists()
    good = script_model(
        empty.project / "g.json", {"replies": [{"text": "x", "stop_reason": "max_tokens"}]}
    )
    assert ScriptedModel(Path(good.removeprefix("scripted:"))).name


# --- PostgreSQL: a read-only role, and what errors name -----------------------------------


@pytest.fixture
def read_only_role(pg_url: str) -> Iterator[str]:
    """The URL of ``pg_url``'s database for a role that may connect and nothing else."""
    import psycopg  # noqa: PLC0415 - the postgres extra

    role = f"clew_ro_{secrets.token_hex(4)}"
    db = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(f"GRANT CONNECT ON DATABASE {db} TO {role}")
    yield pg_url.replace("://postgres@", f"://{role}@", 1)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"REVOKE ALL ON DATABASE {db} FROM {role}")
        conn.execute(f"DROP ROLE {role}")


def test_item21_copy_to_a_read_only_role_is_refused_with_exit_2_like_other_commands(
    empty: Where, read_only_role: str
) -> None:
    invoke(empty, "demo")
    copied = invoke(None, "copy", "--from", str(empty.home), "--to", read_only_role)
    assert (2, 1) == (copied.code, len(copied.err_lines())), copied.err
    assert "--to: " in copied.err and "nothing was copied" in copied.err
    listed = invoke(None, "--store", read_only_role, "sessions", "--home", str(empty.home))
    assert 2 == listed.code  # the same store refused the same way


def test_item21_a_postgres_store_error_names_the_store_not_the_clew_home(
    empty: Where, read_only_role: str
) -> None:
    for args in (["queue"], ["verify", "--all"]):
        result = invoke(empty, "--store", read_only_role, *args)
        assert 2 == result.code, result.err
        assert "the clew home" not in result.err, result.err


def test_item11_tail_names_an_approval_by_its_tool_call_id(empty: Where) -> None:
    sid, (call,) = _app_session(empty)
    result = invoke(empty, "tail", sid)
    (line,) = [x for x in result.out.splitlines() if "approval_requested" in x]
    assert line.endswith(call)
    timeline = invoke(empty, "timeline", sid, "--no-pager")
    (row,) = [x for x in timeline.out.splitlines() if "approval_requested" in x]
    assert call in row


def test_item11_rerun_names_the_runs_tool_calls_when_one_is_unknown(empty: Where) -> None:
    invoke(empty, "demo")
    result_file = empty.project / "r.txt"
    result_file.write_text("other facts")
    refused = invoke(empty, "rerun", "last", "--tool-result", f"call_nope={result_file}")
    assert 2 == refused.code
    assert re.search(r"its tool calls: call_\w+ \(lookup\)", refused.err), refused.err


def test_item11_timeline_and_tail_show_a_short_call_id_that_rerun_and_approve_take(
    empty: Where,
) -> None:
    sid = invoke(empty, "demo", "--json").json()["session_id"]
    events = invoke(empty, "timeline", sid, "--type", "tool_call_started", "--json").json()
    call = events["events"][0]["tool_call_id"]  # the JSON keeps the whole id
    shown = short_call_id(call)
    assert (True, False) == (call.startswith("call_"), shown.startswith("call_")), call
    timeline = invoke(empty, "timeline", sid, "--no-pager").out.splitlines()
    tail = invoke(empty, "tail", sid).out.splitlines()
    for rows in (timeline, tail):
        for kind in ("tool_call_started", "tool_call_finished"):
            (row,) = [r for r in rows if f"  {kind} " in r and f"  {shown}  " in r]
            assert re.search(rf"  {shown}  (lookup|save_note) ", row), row
            assert call not in row  # the row shows the short id, not the whole one
    result_file = empty.project / "r.json"
    result_file.write_text('"other facts"')
    rerun = invoke(empty, "rerun", sid, "--tool-result", f"{shown}={result_file}", "--json")
    assert 0 == rerun.code, rerun.err
    # An approval is decided by the short id too (its request's row ends with the whole id).
    app_sid, (pending,) = _app_session(empty)
    approved = invoke(empty, "approve", app_sid, short_call_id(pending), "--json")
    assert (0, pending) == (approved.code, approved.json().get("tool_call_id")), approved.err
