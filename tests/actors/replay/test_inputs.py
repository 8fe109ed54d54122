"""A main run's recorded inputs: what a real run writes decodes back to itself, versions.

The real record comes from a demo session run through the ``Runtime`` API on a real
SQLite file; the property covers every valid ``RunInputs`` a strategy can build.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.replay.inputs import INPUTS_VERSION, RunInputs, RunSettings, ToolRecord
from actors.runtime.runtime import Runtime
from eventlog.clock import ManualClock
from eventlog.errors import DecodeError
from eventlog.events import RunStarted
from projections.references import FileReference, MissingReference, SessionReference
from tests.strategies import json_objects, session_ids, short_texts, texts


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


def test_todays_runs_record_version_2_with_the_tool_timeout(
    recorded_metadata: list[dict[str, Any]],
) -> None:
    main_run = recorded_metadata[0]

    assert (2, 300.0) == (main_run["inputs_version"], main_run["settings"]["tool_timeout_s"])
    assert 2 == RunInputs.from_metadata(main_run).inputs_version


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
    inputs_version=st.integers(min_value=1, max_value=INPUTS_VERSION),
).map(
    # A record of a version before settings.tool_timeout_s can only hold its default.
    lambda i: (
        i
        if i.inputs_version >= 2
        else msgspec.structs.replace(
            i, settings=msgspec.structs.replace(i.settings, tool_timeout_s=300.0)
        )
    )
)


@given(run_inputs)
def test_any_run_inputs_round_trip_through_the_metadata_and_its_json(inputs: RunInputs) -> None:
    metadata = inputs.to_metadata()
    stored = msgspec.json.decode(msgspec.json.encode(metadata))

    assert inputs == RunInputs.from_metadata(metadata)
    assert inputs == RunInputs.from_metadata(stored)
