"""What the log can hold: the seams' check, by a table of real unencodable values."""

from __future__ import annotations

from functools import reduce
from typing import Any

import msgspec
import pytest

from actors.errors import Unencodable
from actors.models.storable import MAX_DEPTH, check_storable, check_text, safe_text
from eventlog.blocks import JsonBlock, TextBlock


def nested(levels: int) -> Any:
    """``levels`` lists inside each other: ``[[…[1]…]]``."""
    return reduce(lambda inner, _: [inner], range(levels), 1)


#: A byte that is not UTF-8, decoded as Python decodes a command-line argument.
LONE = b"caf\xe9".decode("utf-8", "surrogateescape")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"path": LONE}, r"text at \$\.path holds the lone surrogate '\\udce9'"),
        ([TextBlock(text=LONE)], r"text at \$\[0\]\.text holds the lone surrogate"),
        ({LONE: 1}, r"text at \$ \(a key\) holds the lone surrogate"),
        ({"x": object()}, "Encoding objects of type object is unsupported"),
        ({None: 1}, "Only dicts with str-like or number-like keys"),
        (nested(5000), f"nested deeper than {MAX_DEPTH} levels"),
        (nested(MAX_DEPTH + 1), rf"nested deeper than {MAX_DEPTH} levels \(at \$\[0\]"),
    ],
    ids=[
        "surrogate",
        "surrogate-in-a-block",
        "surrogate-key",
        "object",
        "none-key",
        "5000-deep",
        "one-too-deep",
    ],
)
def test_an_unencodable_value_is_refused_with_what_and_where(value: object, reason: str) -> None:
    with pytest.raises(Unencodable, match=f"^the output cannot be stored: .*{reason}"):
        check_storable(value, "the output")


@pytest.mark.parametrize(
    "value",
    [
        "plain text ✓",
        {"a": [1, 2.5, None, True], "b": {"c": "d"}},
        [JsonBlock(data={"k": [1, 2]}), TextBlock(text="t")],
        nested(MAX_DEPTH),
        # Brackets inside strings are no nesting: the fast bound is exceeded, the exact
        # walk finds nothing.
        {"text": "[" * 500},
    ],
    ids=["text", "json", "blocks", "at-the-limit", "brackets-in-a-string"],
)
def test_a_storable_value_passes_and_encodes(value: object) -> None:
    check_storable(value, "the output")

    msgspec.json.encode(value)


def test_safe_text_escapes_lone_surrogates_and_keeps_valid_text() -> None:
    assert ("caf\\udce9", "café ✓") == (safe_text(LONE), safe_text("café ✓"))
    msgspec.json.encode(safe_text(LONE))


def test_check_text_names_the_bad_character_and_its_position() -> None:
    with pytest.raises(
        Unencodable, match=r"^the prompt is not valid text: '\\udce9' at position 3"
    ):
        check_text(LONE, "the prompt")
