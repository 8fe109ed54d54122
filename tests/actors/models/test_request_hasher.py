"""RequestHasher: the incremental request hash is always request_hash's, byte for byte."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from actors.models.protocol import ModelRequest, RequestHasher, ToolSpec, request_hash
from eventlog.blocks import Message
from tests.strategies import messages, short_texts, texts

specs = st.lists(
    st.builds(ToolSpec, name=short_texts, description=texts, parameters=st.just({})),
    max_size=2,
)
# One step of a conversation's life: append messages, replace the list (a compaction),
# change the system prompt or tools, the model (a fallback), or drop the last message.
steps = st.one_of(
    st.tuples(st.just("append"), st.lists(messages(), min_size=1, max_size=3)),
    st.tuples(st.just("replace"), st.lists(messages(), max_size=3)),
    st.tuples(st.just("system"), texts),
    st.tuples(st.just("tools"), specs),
    st.tuples(st.just("model"), st.sampled_from(["m1", "m2"])),
    st.tuples(st.just("drop"), st.none()),
    # The next run's context: the last messages rebuilt (equal copies), the rest kept.
    st.tuples(st.just("rebuild tail"), st.integers(0, 4)),
)


@given(st.lists(steps, max_size=25), st.booleans())
def test_the_incremental_hash_is_request_hash_after_every_step(
    history: list[tuple[str, Any]], rebuilt: bool
) -> None:
    """``rebuilt``: each request holds equal copies of the messages, never the same ones
    (the hasher must notice and start over, still right)."""
    hasher = RequestHasher()
    conv: list[Message] = []
    fields: dict[str, Any] = {"model": "m1", "system": "", "tools": []}
    for kind, value in history:
        if kind == "append":
            conv = [*conv, *value]
        elif kind == "replace":
            conv = list(value)
        elif kind == "drop":
            conv = conv[:-1]
        elif kind == "rebuild tail":
            keep = max(0, len(conv) - value)
            conv = conv[:keep] + [msgspec.structs.replace(m) for m in conv[keep:]]
        else:
            fields[kind] = value
        sent = [msgspec.structs.replace(m) for m in conv] if rebuilt else list(conv)
        request = ModelRequest(messages=sent, role="lead", **fields)
        assert request_hash(request) == hasher.hash(request)


def test_a_conversation_longer_than_the_states_kept_still_hashes_right() -> None:
    hasher = RequestHasher()
    conv = [Message(role="user", content=[]) for _ in range(RequestHasher.KEPT + 10)]
    request = ModelRequest(model="m", messages=conv, role="lead")
    assert request_hash(request) == hasher.hash(request)
    # A match older than the states kept starts over; one within them goes on.
    for cut in (3, len(conv) - 5):
        conv = conv[:cut] + [msgspec.structs.replace(m) for m in conv[cut:]]
        request = ModelRequest(model="m", messages=conv, role="lead")
        assert request_hash(request) == hasher.hash(request)
