"""Linear storage: a value that extends the one stored before it is stored as the
increment, and every value reads back exactly (byte for byte) — without LangGraph."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from actors.langgraph.linear import array_header, increment, rebuild, split_array
from actors.langgraph.thread_log import ThreadLog
from eventlog.graph_events import CheckpointSaved
from eventlog.records import StoredEvent

_pack = msgspec.msgpack.encode
#: Items whose equal-but-different encodings would fool a comparison by value.
items = st.one_of(
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.none(),
    st.lists(st.integers(0, 3) | st.booleans(), max_size=3),
)


@st.composite
def histories(draw: st.DrawFn) -> list[Any]:
    """A channel's successive values: mostly the previous list plus items, sometimes a
    new list, a list with an item changed, or not a list at all."""
    values: list[Any] = []
    current: list[Any] = draw(st.lists(items, max_size=3))
    for _ in range(draw(st.integers(1, 8))):
        how = draw(st.sampled_from(["extend", "extend", "extend", "new", "edit", "scalar"]))
        if how == "extend":
            current = current + draw(st.lists(items, max_size=20))
        elif how == "new":
            current = draw(st.lists(items, max_size=5))
        elif how == "edit" and current:
            i = draw(st.integers(0, len(current) - 1))
            current = [*current[:i], draw(items), *current[i + 1 :]]
        elif how == "scalar":
            values.append(draw(items))
            continue
        values.append(list(current))
    return values


def _saved(i: int, blob: Any) -> StoredEvent:
    event = CheckpointSaved(
        thread_id="t",
        checkpoint_id=f"c{i:04}",
        checkpoint_type="msgpack",
        checkpoint=b"",
        metadata_type="msgpack",
        metadata=b"",
        channels=[blob],
    )
    return StoredEvent(
        f"s#{i}", i, None, None, None, "info", "checkpoint_saved", None, None, "", event
    )


@given(histories())
def test_any_sequence_of_channel_values_round_trips_exactly(values: list[Any]) -> None:
    log = ThreadLog("lgt_t", "now")
    for i, value in enumerate(values, start=1):
        blob = log.encode("", "messages", i, ("msgpack", _pack(value)))
        log.apply(_saved(i, blob))
    fresh = ThreadLog("lgt_t", "now")  # another process: nothing cached
    for i in range(1, len(values) + 1):
        fresh.apply(_saved(i, log.blobs[("", "messages", i)]))
    for i, value in enumerate(values, start=1):
        assert ("msgpack", _pack(value)) == fresh.value("", "messages", i)
        assert ("msgpack", _pack(value)) == log.value("", "messages", i)


def test_an_extended_list_is_stored_as_its_new_items_only() -> None:
    log = ThreadLog("lgt_t", "now")
    sizes = []
    messages: list[str] = []
    for i in range(1, 201):
        messages = [*messages, f"message number {i} " * 10]
        blob = log.encode("", "messages", i, ("msgpack", _pack(messages)))
        log.apply(_saved(i, blob))
        sizes.append(len(blob.data))
    assert (None, 1) == (log.blobs[("", "messages", 1)].extends, 1)
    assert 199 == sum(1 for i in range(2, 201) if log.blobs[("", "messages", i)].extends == i - 1)
    whole = len(_pack(messages))
    assert sum(sizes) < 2 * whole  # linear: about one copy of the final list, not 100
    assert ("msgpack", _pack(messages)) == log.value("", "messages", 200)


def test_equal_but_differently_encoded_items_do_not_count_as_an_extension() -> None:
    assert increment(_pack([1, 2]), _pack([True, 2, 3])) is None
    assert increment(_pack([1.0]), _pack([1, 2])) is None
    assert increment(_pack({"a": 1}), _pack([1])) is None
    assert _pack([3]) == increment(_pack([1, 2]), _pack([1, 2, 3]))


@given(st.integers(0, 70_000), st.integers(0, 5))
def test_array_headers_of_every_width_round_trip(n: int, extra: int) -> None:
    base = array_header(n) + b"\xc0" * n
    inc = array_header(extra) + b"\xc3" * extra
    split = split_array(rebuild(base, [inc]))
    assert split is not None
    assert n + extra == split[0]
    assert b"\xc0" * n + b"\xc3" * extra == bytes(split[1])
