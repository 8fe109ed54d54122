"""Fixtures for the provider tests: a live loopback server and fast, recorded retry seams."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_server import TEST_KEY, FakeClock, FakeServer

from actors.models.providers import AnthropicModel, HttpOptions, OpenAIChatModel, RetryPolicy


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def options(clock: FakeClock) -> HttpOptions:
    """Loopback-sized timeout, no real waiting, seeded jitter; waits land in ``clock.sleeps``."""
    return HttpOptions(
        timeout=2.0,
        retry=RetryPolicy(),
        sleep=clock.sleep,
        rng=random.Random(7),
        clock=clock.monotonic,
    )


@pytest.fixture
def openai_model(
    server: FakeServer, options: HttpOptions
) -> Iterator[Callable[..., OpenAIChatModel]]:
    made: list[OpenAIChatModel] = []

    def make(api_key: str | None = TEST_KEY, **overrides: Any) -> OpenAIChatModel:
        model = OpenAIChatModel(
            "gpt-test",
            base_url=server.url + "/v1",
            api_key=api_key,
            options=_with(options, overrides),
        )
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


@pytest.fixture
def anthropic_model(
    server: FakeServer, options: HttpOptions
) -> Iterator[Callable[..., AnthropicModel]]:
    made: list[AnthropicModel] = []

    def make(api_key: str | None = TEST_KEY, **overrides: Any) -> AnthropicModel:
        model = AnthropicModel(
            "claude-test", base_url=server.url, api_key=api_key, options=_with(options, overrides)
        )
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


def _with(options: HttpOptions, overrides: dict[str, Any]) -> HttpOptions:
    return dataclasses.replace(options, **overrides)
