"""The offline token estimate: deterministic, monotone, cheap on huge texts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eventlog.blocks import JsonBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from projections.tokens import (
    MESSAGE_OVERHEAD,
    SCAN_LIMIT,
    count_block,
    count_message,
    count_text,
)


def test_common_words_are_a_token_each_and_a_leading_space_is_free() -> None:
    assert 0 == count_text("")
    assert 1 == count_text("hello")
    assert 3 == count_text("the quick fox")
    assert 3 == count_text("internationalization")  # 20 letters: one per 8, rounded up


def test_digits_go_by_three_and_signs_by_runs() -> None:
    assert 2 == count_text("123456")
    assert 1 == count_text("}}")
    assert 1 == count_text("\n\n")


def test_a_cjk_character_is_a_token() -> None:
    assert 4 == count_text("日本語だ")


def test_a_text_over_the_scan_limit_is_estimated_from_its_length() -> None:
    text = "a b " * (SCAN_LIMIT // 4 + 1)
    assert (len(text) + 3) // 4 == count_text(text)


@given(st.text(max_size=300), st.text(max_size=300))
def test_the_estimate_of_two_texts_is_about_the_sum_of_theirs(a: str, b: str) -> None:
    # Joining can merge the last piece of one with the first of the other: at most a
    # couple of tokens either way.
    assert abs(count_text(a + b) - count_text(a) - count_text(b)) <= 2
    assert count_text(a) == count_text(a)  # a pure function


@given(st.text(max_size=500))
def test_no_text_costs_more_than_one_token_a_byte(text: str) -> None:
    assert 0 <= count_text(text) <= len(text.encode("utf-8", "surrogatepass"))


def test_blocks_count_their_text_and_a_little_overhead() -> None:
    call = ToolCallBlock(id="c1", name="read", arguments={"path": "a.py"})
    result = ToolResultBlock(tool_call_id="c1", content=[TextBlock(text="file text")])
    assert count_text('{"a":[1,2]}') == count_block(JsonBlock(data={"a": [1, 2]}))
    assert count_block(call) > count_text("read")
    assert count_block(result) > count_text("file text")
    message = Message(role="user", content=[TextBlock(text="hi there")])
    assert MESSAGE_OVERHEAD + 2 == count_message(message)
