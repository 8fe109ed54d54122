"""``ScriptedModel.stream``: word pieces, the same response as ``complete``, scripted cuts."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.errors import ScriptError
from actors.models.protocol import (
    STREAM_INTERRUPTED,
    ModelRequest,
    ModelResponse,
    StreamingModel,
    StreamItem,
)
from actors.models.scripted import ScriptedModel, load_script, text_pieces
from eventlog.blocks import Message, TextBlock
from eventlog.errors import ModelError


def request(text: str = "hi") -> ModelRequest:
    return ModelRequest(
        model="scripted", messages=[Message(role="user", content=[TextBlock(text=text)])]
    )


def model_of(*replies: dict[str, Any], delay_ms: int | None = None) -> ScriptedModel:
    return ScriptedModel({"rules": [{"replies": list(replies)}]}, delay_ms=delay_ms)


def split(items: list[StreamItem]) -> tuple[list[str], ModelResponse]:
    *pieces, last = items
    assert isinstance(last, ModelResponse)
    return [p for p in pieces if isinstance(p, str)], last


@given(st.text(max_size=60))
def test_pieces_are_words_that_join_to_the_text(text: str) -> None:
    pieces = text_pieces(text)

    assert text == "".join(pieces)
    assert all(piece.strip() or piece == text for piece in pieces)


def test_stream_yields_the_words_then_what_complete_returns() -> None:
    model = model_of({"text": "the quick brown fox", "tool_calls": [{"name": "look"}]})

    pieces, response = split(list(model.stream(request())))

    assert ["the ", "quick ", "brown ", "fox"] == pieces
    assert model.complete(request()) == response
    assert isinstance(model, StreamingModel)


def test_a_reply_without_text_streams_only_its_response() -> None:
    model = model_of({"json": {"a": 1}})

    assert [model.complete(request())] == list(model.stream(request()))


def test_an_error_reply_raises_as_complete_raises_it() -> None:
    model = model_of({"error": "boom", "status": 503})

    with pytest.raises(ModelError, match="boom") as caught:
        list(model.stream(request()))
    assert (503, "ModelError") == (caught.value.status, caught.value.error_type)


def test_the_delay_is_spread_over_the_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("actors.models.scripted.time.sleep", slept.append)

    list(model_of({"text": "a b c d"}, delay_ms=200).stream(request()))
    list(model_of({"json": 1, "delay_ms": 30}).stream(request()))

    assert [0.05, 0.05, 0.05, 0.05, 0.03] == slept


def test_a_scripted_cut_interrupts_the_first_stream_only() -> None:
    model = model_of({"text": "one two three", "stream_cut_after": 2})
    seen: list[StreamItem] = []

    with pytest.raises(ModelError) as caught:
        seen.extend(model.stream(request()))

    assert ["one ", "two "] == seen
    assert (STREAM_INTERRUPTED, True) == (caught.value.error_type, caught.value.retryable)
    pieces, response = split(list(model.stream(request())))  # the next attempt: whole
    assert (["one ", "two ", "three"], model.complete(request())) == (pieces, response)
    with pytest.raises(ModelError):  # another request is cut on its own first stream
        list(model.stream(request("other")))


def test_complete_ignores_a_scripted_cut() -> None:
    model = model_of({"text": "whole", "stream_cut_after": 0})

    assert [TextBlock(text="whole")] == model.complete(request()).content
    with pytest.raises(ModelError, match="stream cut after 0 pieces"):
        list(model.stream(request()))


def test_a_negative_cut_is_refused() -> None:
    with pytest.raises(ScriptError, match="stream_cut_after"):
        load_script({"rules": [{"replies": [{"text": "x", "stream_cut_after": -1}]}]})
