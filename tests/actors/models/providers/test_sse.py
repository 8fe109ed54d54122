"""The event-stream parser: however the bytes are chunked, the same events come out."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.models.providers.sse import SseEvent, SseParser, _StreamProblem

LINE = st.text(st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]), max_size=20)
EVENT = st.tuples(st.one_of(st.none(), LINE), st.lists(LINE, min_size=1, max_size=3))


def parse(body: bytes, cuts: list[int]) -> list[SseEvent]:
    """Feed ``body`` cut at ``cuts``, then end it; return every event."""
    parser = SseParser()
    events: list[SseEvent] = []
    start = 0
    for cut in [*sorted(cuts), len(body)]:
        events += parser.feed(body[start:cut])
        start = cut
    return events + parser.close()


@given(
    events=st.lists(EVENT, max_size=6),
    end=st.sampled_from(["\n", "\r\n", "\r"]),
    comments=st.booleans(),
    data=st.data(),
)
def test_events_parse_the_same_however_the_stream_is_chunked(
    events: list[tuple[str | None, list[str]]], end: str, comments: bool, data: st.DataObject
) -> None:
    lines: list[str] = []
    for name, values in events:
        if comments:
            lines += [": keep-alive", "id: 7", "retry: 1000"]
        if name is not None:
            lines.append(f"event: {name}")
        lines += [f"data: {value}" for value in values]
        lines.append("")
    body = "".join(line + end for line in lines).encode()
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=8))

    expected = [SseEvent(event=name or "message", data="\n".join(v)) for name, v in events]
    assert expected == parse(body, cuts)


def test_a_line_split_inside_a_utf8_character_and_a_bom_are_handled() -> None:
    body = "\ufeffdata: café ☕\n\n".encode()

    assert [SseEvent(data="café ☕")] == parse(body, list(range(1, len(body))))


def test_field_forms_of_the_standard() -> None:
    body = b"data\ndata:no space\ndata:  two spaces\nevent:named\nunknown: x\n\n"

    assert [SseEvent(event="named", data="\nno space\n two spaces")] == parse(body, [])


def test_an_event_without_its_blank_line_at_the_end_is_dropped() -> None:
    assert [SseEvent(data="a")] == parse(b"data: a\n\ndata: b\n", [])


def test_a_line_that_is_not_utf8_is_a_stream_problem() -> None:
    with pytest.raises(_StreamProblem, match="not UTF-8"):
        parse(b"data: \xff\xfe\n\n", [])


def test_a_long_line_in_many_small_chunks_is_scanned_once() -> None:
    parser = SseParser()
    for _ in range(10_000):
        assert [] == parser.feed(b"x" * 10)  # quadratic rescans would take minutes here
    assert [] == parser.feed(b"\n\n")
    assert 100_002 == parser.received
