"""``clew run --team FILE``, ``--session SID``, ``clew replay --team`` and ``clew resume`` of
a team session, and the team file shipped for ``clew demo``."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from _cli_helpers import Where, invoke, run_process, script_model, total_rows
from _runtime_helpers import route, rule, worker

from actors.cli.team_file import DEMO_TEAM, load_team
from actors.demo import demo_tools
from actors.recording.inputs import RunInputs
from eventlog.events import RunStarted

TEAM = """\
instructions = "You are the support desk of ACME."
primary = "writer"
reviewer = "critic"

[router]
instructions = "Prefer one worker."

[[roles]]
name = "researcher"
description = "finds facts"
instructions = "Search first."
tools = ["kb_tools:search_kb"]
settings = { max_tokens = 800, temperature = 0.2 }

[[roles]]
name = "writer"
description = "writes the answer"
instructions = "Be brief."
output = "kb_tools:Answer"

[[roles]]
name = "critic"
extends = "researcher"
instructions = "Find what is missing."
tools = []
"""

KB_TOOLS = '''\
import pydantic

from actors import tool


class Query(pydantic.BaseModel):
    query: str


class Answer(pydantic.BaseModel):
    text: str


@tool(Query, idempotent=True)
def search_kb(args: Query) -> str:
    """Search the knowledge base."""
    return "shipping takes 3 days"
'''

RULES = [
    route([worker("w1", "researcher", "Find the order")], primary_role="writer"),
    rule(
        "researcher",
        {"tool_calls": [{"name": "search_kb", "arguments": {"query": "order 42"}}]},
        {"json": {"summary": "Shipped late."}},
    ),
    rule("writer", {"text": "(turn 0)"}, {"json": {"text": "Sorry: it ships tomorrow."}}),
]


def team_dir(tmp_path: Path, text: str = TEAM) -> Path:
    """Write the team file (and the module its references import) to a directory."""
    folder = tmp_path / "team"
    folder.mkdir(exist_ok=True)
    (folder / "kb_tools.py").write_text(KB_TOOLS)
    (folder / "team.toml").write_text(text)
    return folder / "team.toml"


def inputs_of(where: Where, sid: str) -> list[RunInputs]:
    """The recorded inputs of the session's main runs, in order."""
    rows = [json.loads(line) for line in invoke(where, "export", sid).out.splitlines()]
    return [
        RunInputs.from_metadata(r["payload"]["metadata"])
        for r in rows
        if r["event_type"] == "run_started" and r["run_id"].count(":") == 2
    ]


def test_run_with_a_team_file_records_the_team_and_prints_the_typed_output(
    empty: Where, tmp_path: Path
) -> None:
    model = script_model(tmp_path / "script.json", *RULES)

    result = invoke(
        empty, "run", "Where is #42?", "--model", model, "--team", str(team_dir(tmp_path)), "--json"
    )

    assert 0 == result.code, result.err
    doc = result.json()
    assert ("completed", {"text": "Sorry: it ships tomorrow."}) == (doc["status"], doc["output"])
    (inputs,) = inputs_of(empty, doc["session_id"])
    assert inputs.team is not None
    assert ["researcher", "writer", "critic"] == [r.name for r in inputs.team.roles]
    assert inputs.team.router is not None
    assert ("Prefer one worker.", 5) == (inputs.team.router.instructions, inputs.inputs_version)
    assert 0 == invoke(empty, "replay", doc["session_id"]).code


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("roles = [", "is not valid TOML"),
        ('instruction = "typo"', "invalid at instruction: Extra inputs are not permitted"),
        ('[[roles]]\nname = "a"\ntools = ["nope"]', "unknown tool 'nope'"),
        ('[[roles]]\nname = "a"\ntools = ["no_such_module:x"]', "cannot import no_such_module"),
        ('[[roles]]\nname = "a"\noutput = "kb_tools:search_kb"', "is not a pydantic model class"),
        (
            '[[roles]]\nname = "a"\nextends = "b"\n[[roles]]\nname = "b"\nextends = "a"',
            "extends cycle a → b → a",
        ),
        ('primary = "ghost"\n[[roles]]\nname = "a"', "the primary 'ghost' is not one of"),
    ],
    ids=["toml", "unknown-key", "unknown-tool", "import", "output", "cycle", "primary"],
)
def test_a_bad_team_file_is_one_line_exit_2_and_writes_nothing(
    empty: Where, tmp_path: Path, text: str, message: str
) -> None:
    model = script_model(tmp_path / "script.json", *RULES)
    path = team_dir(tmp_path, text)

    result = invoke(empty, "run", "hi", "--model", model, "--team", str(path))

    assert 2 == result.code
    (line,) = result.err_lines()
    assert line.startswith("error: ") and message in line, line
    assert 0 == total_rows(empty.home)


def test_a_missing_team_file_is_one_line_and_exit_2(empty: Where, tmp_path: Path) -> None:
    model = script_model(tmp_path / "script.json", *RULES)

    result = invoke(empty, "run", "hi", "--model", model, "--team", str(tmp_path / "none.toml"))

    assert 2 == result.code
    assert ["error: cannot read team file"] == [ln[:28] for ln in result.err_lines()]


def test_run_with_session_continues_that_session(empty: Where, tmp_path: Path) -> None:
    model = script_model(tmp_path / "script.json", route(), rule("lead", {"text": "Hi."}))
    first = invoke(empty, "run", "Hello", "--model", model, "--json").json()

    again = invoke(
        empty, "run", "Again", "--model", model, "--session", first["session_id"], "--json"
    )

    assert 0 == again.code, again.err
    assert (first["session_id"], f"{first['session_id']}:brain:r2") == (
        again.json()["session_id"],
        again.json()["run_id"],
    )
    assert ["Hello", "Again"] == [i.prompt for i in inputs_of(empty, first["session_id"])]
    assert 1 == len(invoke(empty, "sessions", "--json").json())


@pytest.mark.parametrize("sid", ["sess_20990101_000000_abcd", "../etc"], ids=["unknown", "invalid"])
def test_run_with_an_unknown_or_invalid_session_is_refused(
    empty: Where, tmp_path: Path, sid: str
) -> None:
    model = script_model(tmp_path / "script.json", route(), rule("lead", {"text": "Hi."}))
    invoke(empty, "run", "Hello", "--model", model)  # a home with one other session
    before = total_rows(empty.home)

    result = invoke(empty, "run", "Hello", "--model", model, "--session", sid)

    assert 2 == result.code
    assert 1 == len(result.err_lines())
    assert before == total_rows(empty.home)


def test_replay_with_an_edited_team_file_shows_the_changed_lines(
    empty: Where, tmp_path: Path
) -> None:
    model = script_model(tmp_path / "script.json", *RULES)
    path = team_dir(tmp_path)
    sid = invoke(empty, "run", "Where?", "--model", model, "--team", str(path), "--json").json()[
        "session_id"
    ]
    path.write_text(TEAM.replace('"Search first."', '"""Search first.\nThen ask the carrier."""'))

    result = invoke(empty, "replay", sid, "--team", str(path))

    assert 1 == result.code
    assert "  system changed:" in result.out
    assert "    +Then ask the carrier." in result.out.splitlines()
    assert 0 == invoke(empty, "replay", sid).code  # the recorded team still reproduces


def test_a_killed_team_run_resumes_with_its_team_file(empty: Where, tmp_path: Path) -> None:
    model = script_model(tmp_path / "script.json", *RULES)
    path = team_dir(tmp_path)
    killed = run_process(
        empty,
        "run",
        "Where?",
        "--model",
        model,
        "--team",
        str(path),
        CLEW_FAULT_KILL_AFTER_EVENTS="14",
    )
    assert -signal.SIGKILL == killed.code
    [info] = invoke(empty, "sessions", "--json").json()

    resumed = invoke(empty, "resume", info["session_id"], "--json")

    assert 0 == resumed.code, resumed.err
    assert {"text": "Sorry: it ships tomorrow."} == resumed.json()["output"]
    assert 0 == invoke(empty, "verify", info["session_id"]).code
    assert 0 == invoke(empty, "replay", info["session_id"]).code


def test_the_demo_team_file_ships_with_the_package_and_is_the_default_team(
    tmp_path: Path,
) -> None:
    tools = demo_tools(tmp_path)
    team = load_team(DEMO_TEAM, tools={t.name: t for t in tools}, build_model=str)

    assert ((), "", None) == (tuple(team.roles), team.instructions, team.primary)
    assert ["lookup", "save_note"] == [t.name for t in team.tools]
    pyproject = (Path(__file__).resolve().parents[3] / "pyproject.toml").read_text()
    assert f'"{DEMO_TEAM.name}"' in pyproject  # shipped as package data


def test_demo_records_no_team_so_its_events_are_those_of_a_run_without_one(
    empty: Where,
) -> None:
    result = invoke(empty, "demo", "--workers", "1", "--json")

    assert 0 == result.code, result.err
    rows = [
        json.loads(line)
        for line in invoke(empty, "export", result.json()["session_id"]).out.splitlines()
    ]
    (main,) = [
        r["payload"]["metadata"]
        for r in rows
        if r["event_type"] == RunStarted.__struct_config__.tag and r["run_id"].endswith(":brain:r1")
    ]
    # No team recorded: the default team (its version is flow 2's, 5, like any new run's).
    assert (None, 5) == (main.get("team"), main["inputs_version"])


def test_diff_of_an_instructions_only_rerun_exits_1_naming_the_changed_system_prompt(
    empty: Where, tmp_path: Path
) -> None:
    # no typed output: a rerun of such a team may take new instructions
    untyped = TEAM.replace('output = "kb_tools:Answer"\n', "")
    model = script_model(
        tmp_path / "script.json",
        *RULES[:2],
        rule("writer", {"text": "(turn 0)"}, {"text": "Soon."}),
    )
    path = team_dir(tmp_path, untyped)
    ran = invoke(empty, "run", "Where?", "--model", model, "--team", str(path), "--json")
    assert 0 == ran.code, ran.err
    sid = ran.json()["session_id"]
    writer = tmp_path / "writer.md"
    writer.write_text("Be warm, then brief.")

    rerun = invoke(empty, "rerun", sid, "--instructions", f"writer={writer}", "--json")
    assert 0 == rerun.code, rerun.err
    diff = invoke(empty, "diff", sid, rerun.json()["session_id"])

    assert 1 == diff.code, diff.out
    assert "identical" not in diff.out
    assert "request writer · system prompt" in diff.out
    assert "Be warm, then brief." in diff.out
