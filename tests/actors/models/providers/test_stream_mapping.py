"""``stream()`` of both adapters against a live loopback SSE server: what each maps.

Every test checks the streaming promise: the pieces join to the reply's text and the
last item equals what ``complete`` returns for the same reply unstreamed.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from fake_server import FakeServer, Reply
from sse_bodies import (
    DONE,
    SSE_TYPE,
    StreamedCall,
    StreamedText,
    anthropic_stream,
    anthropic_whole,
    openai_chunk,
    openai_stream,
    openai_whole,
    sse_event,
    sse_reply,
)

from actors.models.protocol import ModelRequest, ModelResponse, StreamingModel, StreamItem
from actors.models.providers import AnthropicModel, OpenAIChatModel
from eventlog.blocks import Message, TextBlock, ToolCallBlock
from eventlog.events import Usage

MakeOpenAI = Callable[..., OpenAIChatModel]
MakeAnthropic = Callable[..., AnthropicModel]

REQUEST = ModelRequest(
    model="x:test",
    messages=[Message(role="user", content=[TextBlock(text="hi")])],
    system="be brief",
)


def streamed(items: Iterator[StreamItem]) -> tuple[list[str], ModelResponse]:
    """Return the text pieces of a stream and its last item, checking the shape on the way."""
    everything = list(items)
    *pieces, last = everything
    assert all(isinstance(p, str) for p in pieces)
    assert isinstance(last, ModelResponse)
    return [p for p in pieces if isinstance(p, str)], last


def unstreamed(
    server: FakeServer, model: OpenAIChatModel | AnthropicModel, body: object
) -> ModelResponse:
    server.reply(Reply(body=body))
    return model.complete(REQUEST)


# --- OpenAI Chat Completions ------------------------------------------------------------


def test_openai_streams_text_pieces_then_the_response_complete_returns(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    usage = {
        "prompt_tokens": 30,
        "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 20},
    }
    server.reply(sse_reply(openai_stream(["Hel", "lo", " world"], usage=usage)))
    model = openai_model()

    pieces, response = streamed(model.stream(REQUEST))

    assert ["Hel", "lo", " world"] == pieces
    assert unstreamed(server, model, openai_whole(["Hello world"], usage=usage)) == response
    assert Usage(input_tokens=10, output_tokens=3, cache_read_tokens=20) == response.usage
    sent = server.requests[0].json()
    assert (True, {"include_usage": True}) == (sent["stream"], sent["stream_options"])
    assert isinstance(model, StreamingModel)


def test_openai_tool_call_arguments_in_fragments_are_parsed_at_the_end(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    calls = [
        StreamedCall("call_a", "search", ['{"q": "ca', 't", "n"', ": 3}"]),
        StreamedCall(None, "clock", []),  # no id: the same fallback id as complete's
    ]
    server.reply(sse_reply(openai_stream(["Looking"], calls=calls, finish_reason="tool_calls")))
    model = openai_model()

    pieces, response = streamed(model.stream(REQUEST))

    assert ["Looking"] == pieces
    assert (
        unstreamed(
            server, model, openai_whole(["Looking"], calls=calls, finish_reason="tool_calls")
        )
        == response
    )
    first, second = response.content[1:]
    assert isinstance(first, ToolCallBlock) and isinstance(second, ToolCallBlock)
    assert ("call_a", {"q": "cat", "n": 3}) == (first.id, first.arguments)
    assert second.id.startswith("call_") and {} == second.arguments
    assert "tool_use" == response.stop_reason


def test_openai_a_stream_ending_after_its_finish_reason_without_done_is_accepted(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    events = openai_stream(["ok"])
    server.reply(sse_reply(events[:-2]))  # no usage chunk, no [DONE]: an older local server

    pieces, response = streamed(openai_model().stream(REQUEST))

    assert (["ok"], "end_turn", Usage()) == (pieces, response.stop_reason, response.usage)


def test_openai_a_refusal_streams_as_the_text(server: FakeServer, openai_model: MakeOpenAI) -> None:
    events = [openai_chunk({"refusal": "I can"}), openai_chunk({"refusal": "not."}, "stop"), DONE]
    server.reply(sse_reply(events))

    pieces, response = streamed(openai_model().stream(REQUEST))

    assert ["I can", "not."] == pieces
    assert [TextBlock(text="I cannot.")] == response.content


# --- Anthropic Messages -----------------------------------------------------------------


def test_anthropic_streams_text_and_a_tool_call_with_usage_from_start_and_delta(
    server: FakeServer, anthropic_model: MakeAnthropic
) -> None:
    blocks = (
        StreamedText(["Let me ", "check."]),
        StreamedCall("toolu_1", "search", ['{"q":', ' "cat"}']),
    )
    usage = {
        "input_tokens": 12,
        "output_tokens": 40,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 7,
    }
    server.reply(sse_reply(anthropic_stream(*blocks, stop_reason="tool_use", usage=usage)))
    model = anthropic_model()

    pieces, response = streamed(model.stream(REQUEST))

    assert ["Let me ", "check."] == pieces
    assert (
        unstreamed(server, model, anthropic_whole(*blocks, stop_reason="tool_use", usage=usage))
        == response
    )
    assert (
        Usage(input_tokens=12, output_tokens=40, cache_read_tokens=100, cache_write_tokens=7)
        == response.usage
    )
    assert ToolCallBlock(id="toolu_1", name="search", arguments={"q": "cat"}) == response.content[1]
    assert True is server.requests[0].json()["stream"]


def test_anthropic_thinking_blocks_and_unknown_events_are_dropped_as_complete_drops_them(
    server: FakeServer, anthropic_model: MakeAnthropic
) -> None:
    events = anthropic_stream(StreamedText(["hi"]))
    thinking = [
        sse_event(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "thinking", "thinking": ""},
            }
        ),
        sse_event(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "thinking_delta", "thinking": "hmm"},
            }
        ),
        sse_event({"type": "some_future_event"}),
        b": a comment line\n\n",
    ]
    server.reply(sse_reply([*events[:2], *thinking, *events[2:]]))

    pieces, response = streamed(anthropic_model().stream(REQUEST))

    assert (["hi"], [TextBlock(text="hi")]) == (pieces, response.content)


# --- both -------------------------------------------------------------------------------


def test_pieces_reach_the_caller_before_the_stream_ends(
    server: FakeServer, openai_model: MakeOpenAI, anthropic_model: MakeAnthropic
) -> None:
    """The server holds the rest of the stream until the caller has the first piece."""
    for model, events in (
        (openai_model(), openai_stream(["first", " second"])),
        (anthropic_model(), anthropic_stream(StreamedText(["first", " second"]))),
    ):
        release = threading.Event()
        server.reply(sse_reply(events, stall_after=4, release=release))
        items = model.stream(REQUEST)

        assert "first" == next(items)  # would time out if the adapter read the whole body first
        release.set()
        assert " second" == next(items)
        assert isinstance(list(items)[-1], ModelResponse)


def test_a_server_that_ignores_stream_is_read_as_complete_reads_it(
    server: FakeServer, openai_model: MakeOpenAI, anthropic_model: MakeAnthropic
) -> None:
    for model, body in (
        (openai_model(), openai_whole(["whole reply"])),
        (anthropic_model(), anthropic_whole(StreamedText(["whole reply"]))),
    ):
        server.reply(Reply(body=body))

        pieces, response = streamed(model.stream(REQUEST))

        assert ["whole reply"] == pieces
        assert unstreamed(server, model, body) == response


def test_stopping_early_drops_the_stream_and_the_adapter_keeps_working(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    model = openai_model()
    server.reply(sse_reply(openai_stream(["a", "b", "c"]), stall_after=3))  # never finishes
    items = model.stream(REQUEST)
    assert "a" == next(items)
    items.close()  # type: ignore[attr-defined]

    server.reply(sse_reply(openai_stream(["again"])))
    assert ["again"] == streamed(model.stream(REQUEST))[0]


def test_crlf_and_cr_line_ends_and_one_byte_chunks_parse_the_same(
    server: FakeServer, anthropic_model: MakeAnthropic
) -> None:
    events = anthropic_stream(StreamedText(["line ", "ends"]))
    body = b"".join(events)
    crlf = body.replace(b"\n", b"\r\n")
    server.reply(
        Reply(content_type=SSE_TYPE, parts=tuple(crlf[i : i + 1] for i in range(len(crlf))))
    )
    server.reply(
        Reply(content_type=SSE_TYPE + "; charset=utf-8", parts=(body.replace(b"\n", b"\r"),))
    )
    model = anthropic_model()

    assert ["line ", "ends"] == streamed(model.stream(REQUEST))[0]
    assert ["line ", "ends"] == streamed(model.stream(REQUEST))[0]


def test_whatever_follows_the_streams_end_is_read_and_ignored(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    after = [openai_chunk({"content": "late"}), b"data: \xff\xfe\n\n"]  # more text, not UTF-8
    server.reply(sse_reply([*openai_stream(["on time"]), *after]))

    pieces, response = streamed(openai_model().stream(REQUEST))

    assert (["on time"], [TextBlock(text="on time")]) == (pieces, response.content)
