"""Property: for any reply, ``stream()`` ends with exactly what ``complete()`` returns.

Each example is served twice by a live loopback server — streamed in random fragments
(text and tool-call arguments cut anywhere) and as the equivalent plain JSON body — and
the two responses must be equal, the pieces joining to the reply's text.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from fake_server import FakeClock, FakeServer, Reply
from hypothesis import given, settings
from hypothesis import strategies as st
from sse_bodies import (
    StreamedCall,
    StreamedText,
    anthropic_stream,
    anthropic_whole,
    openai_stream,
    openai_whole,
    sse_reply,
)

from actors.models.protocol import ModelRequest, ModelResponse, StreamItem
from actors.models.providers import AnthropicModel, HttpOptions, OpenAIChatModel
from eventlog.blocks import Message, TextBlock

REQUEST = ModelRequest(
    model="x:test", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)
TEXT = st.text(max_size=30)
NAME = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
ARGS = st.dictionaries(
    NAME, st.one_of(st.integers(), st.text(max_size=10), st.booleans(), st.none()), max_size=3
)
USAGE = st.integers(0, 10_000)


def cut(data: st.DataObject, text: str) -> list[str]:
    """Return ``text`` cut at random places (empty pieces included: servers send them)."""
    points = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    """One server for every example (a fresh one per example would cost ~100 ms each)."""
    with FakeServer() as running:
        yield running


@pytest.fixture(scope="module")
def openai(server: FakeServer) -> Iterator[OpenAIChatModel]:
    with OpenAIChatModel("gpt", base_url=server.url, options=options()) as model:
        yield model


@pytest.fixture(scope="module")
def anthropic(server: FakeServer) -> Iterator[AnthropicModel]:
    with AnthropicModel("claude", base_url=server.url, options=options()) as model:
        yield model


def both(
    server: FakeServer, model: OpenAIChatModel | AnthropicModel, events: list[bytes], body: Any
) -> tuple[list[str], ModelResponse, ModelResponse]:
    """Serve ``events`` to ``stream()`` and ``body`` to ``complete()``; return what each gave."""
    server.reply(sse_reply(events), Reply(body=body))
    items: Iterator[StreamItem] = model.stream(REQUEST)
    *pieces, last = list(items)
    assert isinstance(last, ModelResponse)
    return [p for p in pieces if isinstance(p, str)], last, model.complete(REQUEST)


def options() -> HttpOptions:
    clock = FakeClock()
    return HttpOptions(timeout=5.0, sleep=clock.sleep, rng=random.Random(1), clock=clock.monotonic)


def texts_of(response: ModelResponse) -> str:
    return "".join(b.text for b in response.content if isinstance(b, TextBlock))


@settings(max_examples=40, deadline=None)
@given(
    text=TEXT,
    calls=st.lists(st.tuples(st.one_of(st.none(), NAME), NAME, ARGS), max_size=3),
    finish=st.sampled_from(["stop", "tool_calls", "length", "content_filter", "other"]),
    usage=st.tuples(USAGE, USAGE, USAGE),
    data=st.data(),
)
def test_openai_stream_ends_with_what_complete_returns(
    server: FakeServer,
    openai: OpenAIChatModel,
    text: str,
    calls: list[tuple[str | None, str, dict[str, Any]]],
    finish: str,
    usage: tuple[int, int, int],
    data: st.DataObject,
) -> None:
    pieces = cut(data, text)
    streamed = [StreamedCall(i, n, cut(data, json.dumps(a))) for i, n, a in calls]
    prompt, output, cached = usage
    wire_usage = {
        "prompt_tokens": prompt + cached,
        "completion_tokens": output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    shape = {"calls": streamed, "finish_reason": finish, "usage": wire_usage}
    got, from_stream, from_complete = both(
        server, openai, openai_stream(pieces, **shape), openai_whole(pieces, **shape)
    )

    assert from_complete == from_stream
    assert texts_of(from_complete) == "".join(got)


@settings(max_examples=40, deadline=None)
@given(
    blocks=st.lists(st.one_of(TEXT, st.tuples(NAME, NAME, ARGS)), max_size=4),
    stop=st.sampled_from(["end_turn", "tool_use", "max_tokens", "refusal", "pause_turn"]),
    usage=st.tuples(USAGE, USAGE, USAGE, USAGE),
    data=st.data(),
)
def test_anthropic_stream_ends_with_what_complete_returns(
    server: FakeServer,
    anthropic: AnthropicModel,
    blocks: list[str | tuple[str, str, dict[str, Any]]],
    stop: str,
    usage: tuple[int, int, int, int],
    data: st.DataObject,
) -> None:
    streamed = [
        StreamedText(cut(data, b))
        if isinstance(b, str)
        else StreamedCall(b[0], b[1], cut(data, json.dumps(b[2])))
        for b in blocks
    ]
    keys = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    shape: dict[str, Any] = {"stop_reason": stop, "usage": dict(zip(keys, usage, strict=True))}
    got, from_stream, from_complete = both(
        server, anthropic, anthropic_stream(*streamed, **shape), anthropic_whole(*streamed, **shape)
    )

    assert from_complete == from_stream
    assert texts_of(from_complete) == "".join(got)
