"""Golden payloads: every stored shape, current and old, still decodes with today's code.

``tests/golden/<event_type>.v<schema_version>.json`` is a payload exactly as the store
writes it into ``payload_json``. Never edit a committed golden file: when an event type
gets a new version, add its new golden file and an upcaster, and keep the old file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eventlog.codec import CURRENT_VERSIONS, decode_event
from eventlog.events import EVENT_TYPES, TokenUsage, Usage, event_type_of

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
FILES = sorted(GOLDEN.glob("*.json"))
NAME = re.compile(r"^(?P<tag>[a-z_]+)\.v(?P<version>\d+)\.json$")


def _subset_of(expected: Any, actual: Any) -> bool:
    """Return whether every key of ``expected`` is in ``actual`` with an equal value."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _subset_of(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(_subset_of(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def test_every_event_type_has_a_golden_payload_at_its_current_version() -> None:
    present = {p.name for p in FILES}
    expected = {f"{tag}.v{CURRENT_VERSIONS[tag]}.json" for tag in EVENT_TYPES}
    assert set() == expected - present


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_golden_payload_is_named_after_its_tag_and_version(path: Path) -> None:
    match = NAME.match(path.name)
    assert match is not None
    payload = json.loads(path.read_bytes())
    assert (match["tag"], int(match["version"])) == (
        payload["event_type"],
        payload.get("schema_version", 1),
    )


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_golden_payload_decodes_to_its_event_type_at_the_current_version(
    path: Path,
) -> None:
    payload = json.loads(path.read_bytes())
    event = decode_event(path.read_bytes())
    tag = payload["event_type"]
    assert EVENT_TYPES[tag] is type(event)
    assert tag == event_type_of(event)
    assert CURRENT_VERSIONS[tag] == event.schema_version


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in FILES
        if NAME.match(p.name)
        and p.name.endswith(f".v{CURRENT_VERSIONS.get(p.name.split('.')[0], 0)}.json")
    ],
    ids=lambda p: p.name,
)
def test_a_current_version_golden_payload_decodes_without_losing_a_field(path: Path) -> None:
    # A later version may add fields (with defaults) to the decoded event, so compare
    # only the golden's own keys.
    payload = json.loads(path.read_bytes())
    actual = msgspec.to_builtins(decode_event(path.read_bytes()))
    assert _subset_of(payload, actual), (payload, actual)


def test_the_v1_token_usage_golden_is_upcast_to_nested_usage() -> None:
    expected = TokenUsage(
        model="gpt-x",
        role="router",
        phase="route",
        task_id=None,
        call_index=1,
        usage=Usage(input_tokens=10, output_tokens=2, cache_read_tokens=4, cache_write_tokens=1),
    )
    assert expected == decode_event((GOLDEN / "token_usage.v1.json").read_bytes())


def test_the_v1_and_v2_token_usage_goldens_decode_to_the_same_event() -> None:
    v1 = decode_event((GOLDEN / "token_usage.v1.json").read_bytes())
    v2 = decode_event((GOLDEN / "token_usage.v2.json").read_bytes())
    assert v2 == v1
