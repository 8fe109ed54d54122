"""Build a model adapter from a spec string such as ``openai:gpt-4o-mini``.

The caller passes the environment in (the CLI passes ``os.environ``); nothing
here reads process state, so tests and embedders choose exactly what is seen.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping

import httpx

from actors.errors import ProviderConfigError
from actors.models.providers import anthropic, openai
from actors.models.providers.anthropic import AnthropicModel
from actors.models.providers.http import MAX_RESPONSE_BYTES, HttpOptions, Sleep
from actors.models.providers.openai import OpenAIChatModel
from actors.models.providers.retry import RetryPolicy
from eventlog.errors import clipped, quoted

ProviderModel = OpenAIChatModel | AnthropicModel

SCHEMES = ("openai", "anthropic")
_EXPECTED = "expected openai:<model> or anthropic:<model>"


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``spec`` into ``(scheme, model)``; the model may itself hold colons.

    Raises:
        ProviderConfigError: no scheme, an unknown scheme, or no model name.
    """
    scheme, sep, model = spec.partition(":")
    if not sep or not scheme:
        raise ProviderConfigError(f"model spec {quoted(spec)} has no provider prefix; {_EXPECTED}.")
    if scheme not in SCHEMES:
        raise ProviderConfigError(
            f"unknown model provider {quoted(scheme)} in {quoted(spec)}; {_EXPECTED}."
        )
    if not model.strip():
        raise ProviderConfigError(f"model spec {quoted(spec)} names no model; {_EXPECTED}.")
    return scheme, model


def model_from_spec(
    spec: str,
    *,
    env: Mapping[str, str],
    base_url: str | None = None,
    timeout: float = 60.0,
    retry: RetryPolicy | None = None,
    sleep: Sleep = time.sleep,
    rng: random.Random | None = None,
    client: httpx.Client | None = None,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
    context_window: int | None = None,
) -> ProviderModel:
    """Return the adapter for ``spec`` (``openai:<model>`` or ``anthropic:<model>``).

    Args:
        spec: the model spec; its text becomes the adapter's ``name``.
        env: where ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``ANTHROPIC_API_KEY`` /
            ``ANTHROPIC_BASE_URL`` are looked up (the CLI passes ``os.environ``).
        base_url: overrides the ``*_BASE_URL`` variable (the CLI's ``--base-url``).
        timeout: wall-clock seconds per attempt (connect, headers and body together).
        retry: attempts, backoff and deadline (:class:`RetryPolicy` defaults).
        sleep, rng: the retry loop's seams.
        client: an ``httpx.Client`` to share between adapters.
        max_response_bytes: the largest reply body read (32 MiB by default).
        context_window: the model's context window in tokens (default: known for common
            models; docs/context.md).

    Raises:
        ProviderConfigError: a bad spec, a bad base URL, or no key for the
            provider's public API (a custom base URL needs none).
    """
    scheme, model = parse_spec(spec)
    options = HttpOptions(
        timeout=timeout,
        retry=retry or RetryPolicy(),
        sleep=sleep,
        rng=rng,
        client=client,
        max_response_bytes=max_response_bytes,
    )
    if scheme == "openai":
        url, key = _settings(spec, env, base_url, "OPENAI", openai.DEFAULT_BASE_URL)
        return OpenAIChatModel(
            model, base_url=url, api_key=key, options=options, context_window=context_window
        )
    url, key = _settings(spec, env, base_url, "ANTHROPIC", anthropic.DEFAULT_BASE_URL)
    return AnthropicModel(
        model, base_url=url, api_key=key, options=options, context_window=context_window
    )


def _settings(
    spec: str, env: Mapping[str, str], base_url: str | None, prefix: str, default_url: str
) -> tuple[str, str | None]:
    url = base_url or env.get(f"{prefix}_BASE_URL") or default_url
    try:
        scheme = httpx.URL(url).scheme
    except httpx.InvalidURL:
        scheme = ""
    if scheme not in ("http", "https"):
        raise ProviderConfigError(
            f"base URL {quoted(url)} for {clipped(spec)} is not an http(s) URL."
        )
    key = env.get(f"{prefix}_API_KEY") or None
    if key is None and url.rstrip("/") == default_url:
        raise ProviderConfigError(
            f"{prefix}_API_KEY is not set; {clipped(spec)} needs it for {default_url} "
            f"(a local server or gateway set through {prefix}_BASE_URL may need none)."
        )
    return url, key
