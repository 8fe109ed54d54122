"""A main run's recorded inputs: what a real run writes decodes back to itself, versions.

The real record comes from a demo session run through the ``Runtime`` API on a real
SQLite file; the property covers every valid ``RunInputs`` a strategy can build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.protocol import ModelSettings
from actors.orchestration.team import Role, Team
from actors.recording.inputs import (
    FLOW,
    INPUTS_VERSION,
    CheckRecord,
    ContextRecord,
    RoleRecord,
    RunInputs,
    RunSettings,
    TeamRecord,
    ToolRecord,
)
from actors.runtime.runtime import Runtime
from eventlog.clock import ManualClock
from eventlog.errors import DecodeError
from eventlog.events import RunStarted
from projections.references import FileReference, MissingReference, SessionReference
from tests.strategies import json_objects, json_values, session_ids, short_texts, texts


@pytest.fixture(scope="module")
def recorded_metadata(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The ``run_started.metadata`` of every run of one demo session: main run first."""
    base = tmp_path_factory.mktemp("inputs")
    with Runtime(base / "home", base / "proj", clock=ManualClock()) as rt:
        session = rt.new_session()
        out = session.run(DEMO_PROMPT, model=demo_model(2), tools=demo_tools(base / "proj"))
        assert "completed" == out.status
        return [
            e.event.metadata
            for e in rt.store.read_events(session.id)
            if isinstance(e.event, RunStarted)
        ]


def test_the_inputs_a_real_main_run_records_decode_and_encode_back_unchanged(
    recorded_metadata: list[dict[str, Any]],
) -> None:
    main_run = recorded_metadata[0]

    inputs = RunInputs.from_metadata(main_run)

    assert main_run == inputs.to_metadata()
    assert (DEMO_PROMPT, True) == (inputs.prompt, inputs.create_agent)
    assert ["lookup", "save_note"] == [t.name for t in inputs.tools]


def test_a_version_1_record_carries_no_inputs_version_key_and_no_later_field() -> None:
    written = RunInputs(prompt="hi", inputs_version=1).to_metadata()

    assert "inputs_version" not in written
    # settings.tool_timeout_s came with version 2: a version-1 record is written without it.
    assert "tool_timeout_s" not in written["settings"]
    assert (1, RunSettings().tool_timeout_s) == (
        RunInputs.from_metadata(written).inputs_version,
        RunInputs.from_metadata(written).settings.tool_timeout_s,
    )


def test_todays_runs_record_flow_2_in_the_oldest_version_that_holds_it(
    recorded_metadata: list[dict[str, Any]],
) -> None:
    main_run = recorded_metadata[0]
    # Flow 2 came with version 5: every new run records version 5, its flow and its context.
    assert (5, FLOW) == (main_run["inputs_version"], main_run["flow"])
    assert {"budget": 0.8, "windows": {}, "instructions": None} == main_run["context"]
    assert (5, FLOW) == (
        RunInputs.from_metadata(main_run).inputs_version,
        RunInputs.from_metadata(main_run).flow,
    )

    timed = RunInputs(prompt="hi", settings=RunSettings(tool_timeout_s=5.0))
    written = timed.in_oldest_version().to_metadata()
    assert (2, 5.0) == (written["inputs_version"], written["settings"]["tool_timeout_s"])


def test_a_record_from_a_newer_clew_is_refused_with_a_decode_error() -> None:
    future = {"prompt": "hi", "inputs_version": INPUTS_VERSION + 1}

    with pytest.raises(DecodeError, match=f"version {INPUTS_VERSION + 1} is newer than this clew"):
        RunInputs.from_metadata(future)


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"prompt": 3},
        {"prompt": "hi", "tools": "lookup"},
        {"prompt": "hi", "settings": {"in_doubt_policy": "guess"}},
        {"prompt": "hi", "references": [{"type": "nonsense", "token": "@x"}]},
        {"prompt": "hi", "inputs_version": "one"},
    ],
    ids=[
        "empty",
        "prompt-not-text",
        "tools-not-a-list",
        "unknown-policy",
        "unknown-reference-tag",
        "version-not-a-number",
    ],
)
def test_metadata_that_is_not_run_inputs_is_a_decode_error(metadata: dict[str, Any]) -> None:
    with pytest.raises(DecodeError, match="run_started holds no valid run inputs"):
        RunInputs.from_metadata(metadata)


def test_a_worker_runs_metadata_is_not_the_inputs_of_a_main_run(
    recorded_metadata: list[dict[str, Any]],
) -> None:
    worker_run = recorded_metadata[1]
    assert {"task_id", "handoff_id"} == set(worker_run)

    with pytest.raises(DecodeError):
        RunInputs.from_metadata(worker_run)


# --- any valid RunInputs round-trips ----------------------------------------------------------

references = st.one_of(
    st.builds(
        FileReference,
        token=short_texts,
        path=short_texts,
        text=texts,
        size_bytes=st.integers(min_value=0, max_value=65_536),
    ),
    st.builds(SessionReference, token=short_texts, session_id=session_ids, snapshot=texts),
    st.builds(MissingReference, token=short_texts, target=short_texts, reason=texts),
)
tool_records = st.builds(
    ToolRecord,
    name=short_texts,
    description=texts,
    parameters=json_objects,
    idempotent=st.booleans(),
)
run_settings = st.builds(
    RunSettings,
    max_workers=st.integers(min_value=1, max_value=16),
    max_turns=st.integers(min_value=1, max_value=64),
    max_fix_iterations=st.integers(min_value=0, max_value=8),
    in_doubt_policy=st.sampled_from(["retry", "fail", "skip"]),
    tool_timeout_s=st.one_of(st.none(), st.floats(min_value=0.001, max_value=1e6)),
)
run_inputs = st.builds(
    RunInputs,
    prompt=texts,
    raw_prompt=texts,
    create_agent=st.booleans(),
    references=st.lists(references, max_size=3),
    models=st.dictionaries(short_texts, st.lists(short_texts, min_size=1, max_size=3), max_size=3),
    tools=st.lists(tool_records, max_size=3),
    settings=run_settings,
    flow=st.integers(min_value=1, max_value=FLOW),
    user_node_id=st.none() | short_texts,
    retry_of=st.none() | short_texts,
    inputs_version=st.integers(min_value=1, max_value=INPUTS_VERSION),
).map(
    # A record of a version before a field was added can only hold its default.
    lambda i: msgspec.structs.replace(
        i,
        settings=(
            i.settings
            if i.inputs_version >= 2
            else msgspec.structs.replace(i.settings, tool_timeout_s=300.0)
        ),
        **({} if i.inputs_version >= 5 else {"flow": 1, "user_node_id": None, "retry_of": None}),
    )
)


@given(run_inputs)
def test_any_run_inputs_round_trip_through_the_metadata_and_its_json(inputs: RunInputs) -> None:
    metadata = inputs.to_metadata()
    stored = msgspec.json.decode(msgspec.json.encode(metadata))

    assert inputs == RunInputs.from_metadata(metadata)
    assert inputs == RunInputs.from_metadata(stored)


# --- version 2: teams, per-tool in-doubt policies, the dispatch bound -------------------------

TEAM = TeamRecord(
    instructions="You are the support desk.",
    roles=[
        RoleRecord(
            name="researcher",
            description="finds facts",
            instructions="Search first.",
            tools=["lookup"],
            settings=ModelSettings(max_tokens=800, temperature=0.2),
        ),
        RoleRecord(name="writer", output={"type": "object"}, extends="researcher"),
    ],
    primary="writer",
)


@pytest.mark.parametrize(
    ("changes", "version"),
    [
        ({}, 1),
        ({"tools": [ToolRecord(name="charge")]}, 1),
        ({"tools": [ToolRecord(name="charge", in_doubt="skip")]}, 2),
        ({"settings": RunSettings(max_dispatches=2)}, 2),
        ({"team": TEAM}, 2),
        ({"context": ContextRecord()}, 3),
        ({"settings": RunSettings(context_budget=0.5)}, 3),
        ({"flow": 2}, 5),
        ({"retry_of": "s:brain:r1", "user_node_id": "s:brain:r1:n1"}, 5),
        (
            {"team": msgspec.structs.replace(TEAM, checks=[CheckRecord(name="t", command="make")])},
            5,
        ),
    ],
    ids=[
        "nothing-new",
        "plain-tool",
        "tool-policy",
        "dispatch-bound",
        "team",
        "context",
        "budget",
        "flow-2",
        "retry",
        "team-checks",
    ],
)
def test_a_run_records_the_oldest_version_that_holds_its_inputs(
    changes: dict[str, Any], version: int
) -> None:
    inputs = msgspec.structs.replace(RunInputs(prompt="hi"), **changes)

    recorded = inputs.in_oldest_version()

    assert version == recorded.inputs_version
    assert msgspec.structs.replace(inputs, inputs_version=version) == recorded
    assert recorded == RunInputs.from_metadata(recorded.to_metadata())


def test_a_version_1_record_leaves_out_every_field_added_since() -> None:
    inputs = RunInputs(
        prompt="hi",
        tools=[ToolRecord(name="charge", in_doubt="retry")],
        team=TEAM,
        context=ContextRecord(windows={"default": 1000}),
        inputs_version=1,
    )

    written = inputs.to_metadata()

    assert "team" not in written
    assert "context_budget" not in written["settings"]
    assert "in_doubt" not in written["tools"][0]
    assert "max_dispatches" not in written["settings"]
    assert {"prompt", "raw_prompt", "create_agent", "references", "models", "tools"} | {
        "settings"
    } == set(written)


def test_a_version_2_record_leaves_out_the_context_and_its_settings() -> None:
    inputs = RunInputs(
        prompt="hi",
        team=msgspec.structs.replace(TEAM, summarizer=RoleRecord(name="summarizer")),
        context=ContextRecord(windows={"default": 1000}),
        inputs_version=2,
    )

    written = inputs.to_metadata()

    assert "context" not in written
    assert "summarizer" not in written["team"]
    assert not {"context_budget", "instructions_file", "instructions_max_bytes"} & set(
        written["settings"]
    )
    assert None is RunInputs.from_metadata(written).context


def test_a_team_run_records_the_resolved_team(tmp_path: Path) -> None:
    lookup, note = demo_tools(tmp_path)
    team = Team(
        instructions="Plan apps.",
        roles=[
            Role("researcher", description="finds facts", tools=[lookup]),
            Role("lead", extends="researcher", instructions="Write the plan.", tools=[note]),
        ],
        primary="lead",
    )
    with Runtime(tmp_path / "home", tmp_path, clock=ManualClock()) as rt:
        session = rt.new_session()
        session.run(DEMO_PROMPT, model=demo_model(1), team=team)
        (started,) = [
            e.event
            for e in rt.store.read_events(session.id)
            if isinstance(e.event, RunStarted) and e.run_id == rt.main_runs(session.id)[0]
        ]

    inputs = RunInputs.from_metadata(started.metadata)
    assert (5, 5) == (started.metadata["inputs_version"], inputs.inputs_version)
    assert inputs.team is not None
    assert "Plan apps." == inputs.team.instructions
    assert [("researcher", ["lookup"], None), ("lead", ["save_note"], "researcher")] == [
        (r.name, r.tools, r.extends) for r in inputs.team.roles
    ]
    assert ("finds facts", "Write the plan.") == (
        inputs.team.roles[1].description,
        inputs.team.roles[1].instructions,
    )
    assert ["lookup", "save_note"] == [t.name for t in inputs.tools]
    assert started.metadata == inputs.to_metadata()


role_records = st.builds(
    RoleRecord,
    name=short_texts,
    description=texts,
    instructions=texts,
    tools=st.lists(short_texts, max_size=3),
    settings=st.builds(
        ModelSettings,
        max_tokens=st.none() | st.integers(min_value=1, max_value=8192),
        temperature=st.none() | st.floats(min_value=0, max_value=2),
    ),
    output=st.none() | json_objects,
    extends=st.none() | short_texts,
)
team_records = st.builds(
    TeamRecord,
    instructions=texts,
    roles=st.lists(role_records, max_size=3),
    primary=st.none() | short_texts,
    reviewer=st.none() | short_texts,
    router=st.none() | role_records,
)


@settings(suppress_health_check=[HealthCheck.too_slow])  # big teams; slow on a busy machine
@given(run_inputs, team_records, st.sampled_from([None, "retry", "fail", "skip"]))
def test_any_version_2_inputs_with_a_team_round_trip(
    inputs: RunInputs, team: TeamRecord, policy: str | None
) -> None:
    tools = [msgspec.structs.replace(t, in_doubt=policy) for t in inputs.tools]
    current = msgspec.structs.replace(
        inputs,
        team=team,
        tools=tools,
        inputs_version=2,
        # (the fields of version 3 hold their defaults in a version-2 record)
        flow=1,
        user_node_id=None,
        retry_of=None,
    )

    metadata = current.to_metadata()

    assert current == RunInputs.from_metadata(msgspec.json.decode(msgspec.json.encode(metadata)))


@given(
    run_inputs,
    team_records,
    st.lists(st.builds(CheckRecord, name=short_texts, command=st.none() | texts), max_size=3),
)
def test_any_version_5_inputs_with_checks_round_trip(
    inputs: RunInputs, team: TeamRecord, checks: list[CheckRecord]
) -> None:
    current = msgspec.structs.replace(
        inputs, team=msgspec.structs.replace(team, checks=checks), inputs_version=5
    )

    metadata = current.to_metadata()

    assert current == RunInputs.from_metadata(msgspec.json.decode(msgspec.json.encode(metadata)))


# --- version 6: the re-drive --------------------------------------------------------------


def test_a_redriven_retry_records_version_6_and_any_other_run_version_5() -> None:
    retry = RunInputs(prompt="hi", flow=FLOW, retry_of="s:brain:r1")
    redriven = msgspec.structs.replace(retry, redrive="redrive_20260101_000000_ab12")

    assert 5 == retry.in_oldest_version().inputs_version
    recorded = redriven.in_oldest_version()
    assert (6, "redrive_20260101_000000_ab12") == (recorded.inputs_version, recorded.redrive)
    assert "redrive_20260101_000000_ab12" == recorded.to_metadata()["redrive"]
    assert recorded == RunInputs.from_metadata(recorded.to_metadata())


def test_a_version_5_record_has_no_redrive_key_and_upcasts_to_none() -> None:
    v5 = RunInputs(prompt="hi", flow=FLOW, redrive="redrive_x", inputs_version=5)

    written = v5.to_metadata()

    assert "redrive" not in written
    assert None is RunInputs.from_metadata(written).redrive
    assert written == RunInputs.from_metadata(written).to_metadata()  # written back as is


@given(run_inputs, st.none() | short_texts)
def test_any_version_6_inputs_with_a_redrive_round_trip(
    inputs: RunInputs, redrive: str | None
) -> None:
    current = msgspec.structs.replace(inputs, redrive=redrive, inputs_version=6)

    metadata = current.to_metadata()

    assert current == RunInputs.from_metadata(msgspec.json.decode(msgspec.json.encode(metadata)))


# --- version 7: the history a framework's run goes on from ---------------------------------

_HISTORY = [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "earlier"}]}]


def test_a_run_given_a_history_records_version_7_and_a_framework_run_without_one_6() -> None:
    plain = RunInputs(prompt="hi", flow=FLOW)
    given_one = msgspec.structs.replace(plain, history=_HISTORY)

    assert 5 == plain.in_oldest_version().inputs_version  # a Brain's run: unchanged
    assert 6 == plain.in_oldest_version(6).inputs_version  # a framework's run: unchanged
    recorded = given_one.in_oldest_version(6)
    assert (7, _HISTORY) == (recorded.inputs_version, recorded.to_metadata()["history"])
    assert recorded == RunInputs.from_metadata(recorded.to_metadata())


def test_a_version_6_record_has_no_history_key_and_upcasts_to_none() -> None:
    v6 = RunInputs(prompt="hi", flow=FLOW, history=_HISTORY, inputs_version=6)

    written = v6.to_metadata()

    assert "history" not in written
    assert None is RunInputs.from_metadata(written).history
    assert written == RunInputs.from_metadata(written).to_metadata()  # written back as is


@given(run_inputs, st.none() | st.lists(json_values(), max_size=3))
def test_any_version_7_inputs_with_a_history_round_trip(
    inputs: RunInputs, history: list[Any] | None
) -> None:
    current = msgspec.structs.replace(inputs, history=history, inputs_version=7)

    metadata = current.to_metadata()

    assert current == RunInputs.from_metadata(msgspec.json.decode(msgspec.json.encode(metadata)))
