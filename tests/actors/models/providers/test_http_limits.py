"""An attempt's wall-clock deadline and the reply size cap, against a live loopback server.

A slowloris server (one byte every few seconds) never trips a per-read timeout, and an
endless body grows the memory without bound: both must end with a one-line ModelError.
Limits are small here so each test takes well under two seconds.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fake_server import FakeClock, FakeServer, Reply, openai_reply

from actors.errors import ProviderConfigError
from actors.models.protocol import ModelRequest
from actors.models.providers import HttpOptions, OpenAIChatModel, RetryPolicy
from actors.runtime.runtime import Runtime
from eventlog.blocks import Message, TextBlock
from eventlog.errors import ModelError
from eventlog.events import ModelFailed

MakeOpenAI = Callable[..., OpenAIChatModel]

REQUEST = ModelRequest(
    model="openai:gpt-test",
    messages=[Message(role="user", content=[TextBlock(text="hi")])],
)
BODY = json.dumps(openai_reply("fine")).encode()
ONCE = RetryPolicy(max_attempts=1)


def failure(make: MakeOpenAI, **overrides: object) -> ModelError:
    with pytest.raises(ModelError) as caught:
        make(**overrides).complete(REQUEST)
    return caught.value


def timed_failure(make: MakeOpenAI, **overrides: object) -> tuple[ModelError, float]:
    """Return the error of one call and how long it took, in wall-clock seconds."""
    model = make(clock=time.monotonic, **overrides)
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        model.complete(REQUEST)
    return caught.value, time.monotonic() - started


# --- the attempt's deadline -------------------------------------------------------------


def test_a_body_dripping_one_byte_at_a_time_ends_at_the_attempt_timeout(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(body=BODY, drip=0.1))  # ~20 s to send it all; no read waits 0.5 s

    error, took = timed_failure(openai_model, timeout=0.5, retry=ONCE)

    assert "openai:gpt-test call failed: timed out after 0.5 s reading the body" in str(error)
    assert (200, True) == (error.status, error.retryable)
    assert 0.5 <= took < 1.5


def test_dripping_headers_end_at_the_attempt_timeout_too(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(body=BODY, drip=0.1, drip_headers=True))

    error, took = timed_failure(openai_model, timeout=0.5, retry=ONCE)

    assert "openai:gpt-test call failed: timed out after 0.5 s (after 1 attempt)" == str(error)
    assert (None, True) == (error.status, error.retryable)
    assert 0.5 <= took < 1.5


def test_retries_of_a_dripping_server_all_end_by_the_deadline(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(*[Reply(body=BODY, drip=0.1)] * 10)
    retry = RetryPolicy(max_attempts=10, deadline=1.2)

    error, took = timed_failure(openai_model, timeout=0.5, retry=retry)

    # Attempts of 0.5, 0.5 and what is left: the deadline ends the call, not the attempts.
    assert "timed out after" in str(error)
    assert 1.2 <= took < 2.0
    assert 3 <= len(server.requests) < 10


def test_no_attempt_starts_when_a_wait_overslept_the_deadline(
    server: FakeServer, clock: FakeClock, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(status=503), Reply(body=BODY))

    def oversleep(seconds: float) -> None:
        clock.now += seconds + 60  # a suspended laptop, a starved thread

    error = failure(openai_model, sleep=oversleep, retry=RetryPolicy(deadline=30))

    assert str(error).endswith("(after 1 attempt; not retried: the retry deadline passed)")
    assert 1 == len(server.requests)


def test_a_callers_own_client_still_ends_a_dripping_body_between_chunks(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(body=BODY, drip=0.1))

    with httpx.Client() as client:
        error, took = timed_failure(openai_model, timeout=0.5, retry=ONCE, client=client)

    assert "timed out after 0.5 s reading the body" in str(error)
    assert took < 1.5


def test_a_prompt_reply_is_untouched_by_the_deadline(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(body=BODY), Reply(body=BODY))
    model = openai_model(timeout=0.5, clock=time.monotonic)

    # Twice: the second call reuses the pooled connection, deadline and all.
    assert [TextBlock(text="fine")] * 2 == [model.complete(REQUEST).content[0] for _ in "ab"]


# --- the size cap -------------------------------------------------------------------------


def test_an_endless_body_fails_at_the_size_cap_and_is_not_retried(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(body=b'{"choices": [', endless=True), Reply(body=BODY))

    error, took = timed_failure(openai_model, max_response_bytes=1024 * 1024)

    assert str(error).startswith("openai:gpt-test call failed: HTTP 200 body over the 1 MiB")
    assert "HttpOptions.max_response_bytes" in str(error)
    assert (200, False) == (error.status, error.retryable)
    assert 1 == len(server.requests)
    assert took < 2.0


def test_a_declared_length_over_the_cap_is_refused_before_the_body_is_read(
    server: FakeServer, openai_model: MakeOpenAI
) -> None:
    server.reply(Reply(body=b"x" * 5000))

    error, _ = timed_failure(openai_model, max_response_bytes=4096)

    expected = (
        "openai:gpt-test call failed: HTTP 200 body over the 4,096 bytes limit"
        " (Content-Length 5000; HttpOptions.max_response_bytes)"
    )
    assert expected == str(error)


def test_a_body_of_exactly_the_cap_is_read(server: FakeServer, openai_model: MakeOpenAI) -> None:
    server.reply(Reply(body=BODY))

    response = openai_model(max_response_bytes=len(BODY)).complete(REQUEST)

    assert [TextBlock(text="fine")] == response.content


@pytest.mark.parametrize("options", [{"max_response_bytes": 0}, {"timeout": 0}])
def test_a_cap_or_timeout_that_is_not_positive_is_refused(options: dict[str, float]) -> None:
    with pytest.raises(ProviderConfigError, match="must be positive"):
        HttpOptions(**options)  # type: ignore[arg-type]


def test_an_oversized_reply_is_recorded_as_model_failed_naming_the_limit(
    server: FakeServer, tmp_path: Path
) -> None:
    server.answer_with(lambda _path, _request: Reply(body=b"[", endless=True))
    options = HttpOptions(max_response_bytes=64 * 1024, retry=ONCE)
    rt = Runtime(tmp_path / "home", tmp_path)
    try:
        with OpenAIChatModel("gpt-test", base_url=server.url + "/v1", options=options) as model:
            session = rt.new_session()
            outcome = session.run("hi", model=model)
        events = list(rt.store.iter_events(session.id))
    finally:
        rt.close()

    failed = [e.event for e in events if isinstance(e.event, ModelFailed)]
    assert "failed" == outcome.status
    assert [("ModelError", 200)] == [(f.error_type, f.status) for f in failed]
    assert "body over the 65,536 bytes limit" in failed[0].message
