"""Fixtures for the provider tests: a live loopback server and fast, recorded retry seams."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, TypeVar

import pytest
from fake_server import TEST_KEY, FakeClock, FakeServer

from actors.models.providers import AnthropicModel, HttpOptions, OpenAIChatModel, RetryPolicy
from actors.models.providers.http import HttpModel

M = TypeVar("M", bound=HttpModel)


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
    yield from _closing_maker(
        partial(OpenAIChatModel, "gpt-test", base_url=server.url + "/v1"), options
    )


@pytest.fixture
def anthropic_model(
    server: FakeServer, options: HttpOptions
) -> Iterator[Callable[..., AnthropicModel]]:
    yield from _closing_maker(partial(AnthropicModel, "claude-test", base_url=server.url), options)


def _closing_maker(build: Callable[..., M], options: HttpOptions) -> Iterator[Callable[..., M]]:
    """Yield ``make(api_key=TEST_KEY, **option_overrides)``; close every adapter it made after."""
    made: list[M] = []

    def make(api_key: str | None = TEST_KEY, **overrides: Any) -> M:
        model = build(api_key=api_key, options=dataclasses.replace(options, **overrides))
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()
