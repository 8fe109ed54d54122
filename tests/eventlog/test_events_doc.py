"""docs/events.md is the event catalogue: every event type, its version and every field."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from eventlog.codec import CURRENT_VERSIONS
from eventlog.events import EVENT_TYPES

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def _sections() -> dict[str, str]:
    """Return the text of each ``### `tag` — vN …`` section of the catalogue, by heading."""
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    return {p.split("\n", 1)[0]: p for p in parts}


@pytest.mark.parametrize("tag", sorted(EVENT_TYPES))
def test_every_event_type_is_in_the_catalogue_with_its_version_and_every_field(
    tag: str,
) -> None:
    sections = {heading.split(" ")[0]: (heading, body) for heading, body in _sections().items()}
    assert f"`{tag}`" in sections
    heading, body = sections[f"`{tag}`"]
    assert f"v{CURRENT_VERSIONS[tag]}" == heading.split(" ")[2].rstrip(",")
    fields = [
        f.name for f in msgspec.structs.fields(EVENT_TYPES[tag]) if f.name != "schema_version"
    ]
    documented = re.findall(r"^\| `(\w+)` \|", body, flags=re.MULTILINE)
    assert fields == documented
