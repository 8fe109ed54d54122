"""Context windows models declare, and a provider's "prompt too long" error recognised."""

from __future__ import annotations

import pytest

from actors.errors import ScriptError
from actors.models.overflow import is_context_overflow
from actors.models.providers import model_from_spec
from actors.models.scripted import ScriptedModel
from actors.models.windows import known_window, window_of
from eventlog.errors import ModelError

RULES = {"rules": [{"replies": [{"text": "ok"}]}]}


@pytest.mark.parametrize(
    "message",
    [
        "openai:gpt-4o call failed: HTTP 400: This model's maximum context length is 128000"
        " tokens. However, your messages resulted in 130512 tokens.",
        "anthropic:claude-sonnet-4-5 call failed: HTTP 400: prompt is too long: 210000 tokens"
        " > 200000 maximum",
        "HTTP 400: the request exceeds the context window of this model",
        "context_length_exceeded",
    ],
)
def test_providers_context_length_errors_are_recognised(message: str) -> None:
    assert is_context_overflow(ModelError(message, status=400))


@pytest.mark.parametrize(
    "message", ["HTTP 429: rate limited", "HTTP 400: invalid tool schema", "overloaded"]
)
def test_other_errors_are_not_taken_for_an_overflow(message: str) -> None:
    assert not is_context_overflow(ModelError(message, status=400))


def test_adapters_know_common_windows_and_take_an_override() -> None:
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    assert 128_000 == model_from_spec("openai:gpt-4o-mini", env=env).context_window
    assert 200_000 == model_from_spec("anthropic:claude-sonnet-4-5", env=env).context_window
    assert None is model_from_spec("openai:llama3.2:3b", env=env).context_window
    assert (
        8_000 == model_from_spec("openai:llama3.2:3b", env=env, context_window=8_000).context_window
    )
    assert 1_047_576 == known_window("gpt-4.1-mini")  # the longest prefix wins over gpt-4


def test_scripted_model_declares_a_window_given_or_scripted() -> None:
    assert None is ScriptedModel(RULES).context_window
    assert 500 == ScriptedModel(RULES, context_window=500).context_window
    assert 700 == ScriptedModel({**RULES, "context_window": 700}).context_window
    assert 700 == window_of(ScriptedModel({**RULES, "context_window": 700}))
    with pytest.raises(ScriptError, match="context_window"):
        ScriptedModel({**RULES, "context_window": 0})
    with pytest.raises(ScriptError, match="context_window"):
        ScriptedModel(RULES, context_window=-1)


def test_a_window_that_is_not_a_positive_int_is_none() -> None:
    class Odd:
        context_window = True

    assert None is window_of(Odd())
    assert None is window_of(object())
