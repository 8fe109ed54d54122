"""One JSON POST to a model provider, with bounded retries: the loop both adapters share.

Policy (numbers in :class:`RetryPolicy`; the prose lives in ``docs/providers.md``):

- 429 and every 5xx are retried; any other non-2xx status fails at once, and so does a
  429 whose error code is a billing state (``insufficient_quota``: no wait ends it);
- a timeout, a refused/reset connection or a body cut off mid-way is retried;
- a complete 2xx body that is not a JSON object fails at once (a wrong base URL
  serving HTML does not get better by asking again);
- the wait before retry *n* is the server's ``Retry-After`` when it sent one
  (``retry-after-ms``, seconds, or an HTTP date), else full jitter:
  ``uniform(0, min(max_delay, base_delay * 2 ** (n - 1)))``;
- at most ``max_attempts`` requests, and never past ``deadline`` seconds from the
  first one: each attempt's timeout is cut to what is left, and a wait that would
  end past the deadline is not started;
- an attempt's timeout is wall-clock time for the whole attempt — connect, headers and
  body — not per read (``deadline.py``), so a server dripping bytes cannot stretch it;
- a reply body over ``max_response_bytes`` (32 MiB) fails at once, not retried.

Sleeping, randomness and both clocks are constructor seams, so tests run in
milliseconds and see exact delays. Secrets handed to the client are scrubbed
from every error message.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self, TypeVar

import httpx
import msgspec

from actors.errors import ProviderConfigError
from actors.models.protocol import ModelRequest, ModelResponse
from actors.models.providers.deadline import AttemptDeadline, deadline_client
from actors.models.providers.retry import (
    RetryPolicy,
    Tries,
    is_retryable_status,
    parse_retry_after,
)
from eventlog.errors import ModelError

EXCERPT_LIMIT = 200
MIB = 1024 * 1024
#: The default cap on a reply body. A chat completion is a few KB, a long one with tool
#: calls a few hundred KB; 32 MiB is far past any real reply, while an endless body
#: (which grew the memory at 110 MB/s) is cut within a third of a second.
MAX_RESPONSE_BYTES = 32 * MIB

Sleep = Callable[[float], None]
Clock = Callable[[], float]


def excerpt(text: str, secrets: Iterable[str] = (), limit: int = EXCERPT_LIMIT) -> str:
    """Return ``text`` with secrets masked, whitespace collapsed, cut to ``limit`` chars."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def error_detail(body: bytes) -> str:
    """Return the provider's error message from a JSON error body, else the raw text."""
    text = body.decode("utf-8", errors="replace")
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return text
    # OpenAI: {"error": {"message": …}}; Anthropic: {"type": "error", "error": {"message": …}};
    # Ollama: {"error": "…"}; vLLM: {"object": "error", "message": "…"}
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return str(data["message"])
    return text


def error_code(body: bytes) -> str | None:
    """Return the ``code`` (else ``type``) of an OpenAI-style JSON error body, if any."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None
    code = error.get("code") or error.get("type")
    return code if isinstance(code, str) else None


def redacted_url(url: str) -> str:
    """Return ``url`` without user info or query string, safe for an error message."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(userinfo=b"", query=None, fragment=None))


class _Attempt(Exception):
    """One failed attempt: the error to raise if no retry follows, and how long to wait."""

    def __init__(self, error: ModelError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


@dataclass(frozen=True, kw_only=True)
class HttpOptions:
    """Transport settings and seams shared by every adapter.

    Attributes:
        timeout: wall-clock seconds per attempt — connect, headers and body together —
            cut to what is left of the retry deadline.
        retry: attempts, backoff and deadline.
        sleep: waits between attempts (``time.sleep``; tests pass a recorder).
        rng: draws the jitter (a fresh ``random.Random`` when ``None``).
        clock: monotonic seconds, for the deadline.
        wall_clock: epoch seconds, to turn a ``Retry-After`` HTTP date into a wait.
        client: an ``httpx.Client`` to share; one is created (and owned) otherwise. Its
            own timeouts bound each socket operation; the attempt's wall-clock limit is
            then checked between body chunks only (clew's client enforces it on every
            read, headers included).
        max_response_bytes: the largest reply body read (decoded); a bigger one fails.
    """

    timeout: float = 60.0
    retry: RetryPolicy = RetryPolicy()  # noqa: RUF009 (frozen: one shared default is safe)
    sleep: Sleep = time.sleep
    rng: random.Random | None = None
    clock: Clock = time.monotonic
    wall_clock: Clock = time.time
    client: httpx.Client | None = None
    max_response_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.max_response_bytes < 1:
            raise ProviderConfigError(
                "the timeout and max_response_bytes of HttpOptions must be positive."
            )


class JsonHttpClient:
    """POST a JSON body to one URL and return the decoded JSON object, retrying per policy.

    Args:
        label: who is calling, for error messages (the model spec, ``openai:gpt-4o``).
        url: the endpoint; its query string and user info never appear in messages.
        headers: sent with every request (may hold secrets: they are never echoed).
        secrets: strings scrubbed from every error message (the API key).
        options: timeout, retry policy and seams.
    """

    def __init__(
        self,
        *,
        label: str,
        url: str,
        headers: Mapping[str, str],
        secrets: Iterable[str] = (),
        options: HttpOptions | None = None,
    ) -> None:
        options = options or HttpOptions()
        self._label = label
        self._url = url
        self._where = redacted_url(url)
        self._headers = {"content-type": "application/json", **headers}
        self._secrets = tuple(s for s in secrets if s)
        self._timeout = options.timeout
        self._policy = options.retry
        self._sleep = options.sleep
        self._rng = options.rng or random.Random()
        self._clock = options.clock
        self._wall_clock = options.wall_clock
        self._max_bytes = options.max_response_bytes
        self._deadline = AttemptDeadline(options.clock)
        self._owns_client = options.client is None
        # No environment is read (proxy variables included); whoever needs a proxy
        # passes a client built at the edge.
        self._client = options.client or deadline_client(self._deadline)

    @property
    def where(self) -> str:
        """Return the endpoint URL as it may be shown (no query, no user info)."""
        return self._where

    def unexpected(self, data: Any, detail: str) -> ModelError:
        """Return the error for a 2xx JSON reply whose shape the adapter cannot map."""
        shown = excerpt(msgspec.json.encode(data).decode(), self._secrets)
        return ModelError(
            f"{self._label} call failed: HTTP 200 with an unexpected body ({detail}): {shown!r}",
            status=200,
        )

    def close(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_client:
            self._client.close()

    def post(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Send ``payload`` and return the reply's JSON object.

        Raises:
            ModelError: the call failed for good; ``status`` is the last HTTP status
                (``None`` if no response arrived), ``retryable`` says whether the
                failure was of a transient kind (so a fallback may be worth it).
        """
        body = msgspec.json.encode(payload)
        tries = self.tries()
        while True:
            timeout = self.next_attempt(tries)
            try:
                response, at = self.open(body, timeout)
                return self.read_json(response, at, timeout)
            except _Attempt as failed:
                self.after_failure(tries, failed)

    def tries(self) -> Tries:
        """Return the state of a new call's retry loop, its deadline counted from now."""
        return Tries(start=self._clock())

    def next_attempt(self, tries: Tries) -> float:
        """Count one more attempt of ``tries`` and return its timeout (cut to the deadline).

        Raises:
            ModelError: the last wait overslept the retry deadline; no attempt is left.
        """
        tries.attempt += 1
        remaining = self._policy.deadline - (self._clock() - tries.start)
        if remaining <= 0 and tries.error is not None:
            tail = "; not retried: the retry deadline passed"
            raise self._final(tries.error, tries.attempt - 1, tail) from None
        return min(self._timeout, remaining)

    def after_failure(self, tries: Tries, failed: _Attempt) -> None:
        """Wait before the next attempt, or raise the error if the policy gives up.

        Raises:
            ModelError: the failure is not retryable, no attempt is left, or the wait
                would end past the retry deadline.
        """
        error = tries.error = failed.error
        policy = self._policy
        if not error.retryable:
            raise error from None
        if tries.attempt >= policy.max_attempts:
            raise self._final(error, tries.attempt) from None
        if failed.retry_after is not None:
            wait = failed.retry_after
            why = f"Retry-After {wait:g} s would pass the deadline"
        else:
            wait = policy.backoff(tries.attempt, self._rng)
            why = "the retry deadline passed"
        # A wait that ends at or past the deadline leaves no time for the next attempt.
        if wait >= policy.deadline - (self._clock() - tries.start):
            raise self._final(error, tries.attempt, f"; not retried: {why}") from None
        self._sleep(wait)

    def open(self, body: bytes, timeout: float) -> tuple[httpx.Response, float]:
        """POST ``body``; return the 2xx response, its body unread, and when the attempt ends.

        The caller reads the body (:meth:`body_chunks`) and closes the response.

        Raises:
            _Attempt: no response, or a non-2xx one (its error body read and closed).
        """
        request = self._client.build_request(
            "POST", self._url, content=body, headers=self._headers, timeout=timeout
        )
        at = self._clock() + timeout
        with self._deadline.until(at):
            try:
                response = self._client.send(request, stream=True)
            except httpx.TimeoutException:
                raise _Attempt(self._timed_out(timeout)) from None
            except httpx.TransportError as e:
                verb = (
                    "cannot connect to" if isinstance(e, httpx.ConnectError) else "lost the link to"
                )
                raise _Attempt(
                    self.fail(f"{verb} {self._where} ({type(e).__name__})", retry=True)
                ) from None
        status = response.status_code
        if 200 <= status <= 299:
            return response, at
        raw = self._read(response, at, timeout)
        detail = excerpt(error_detail(raw), self._secrets)
        retry = is_retryable_status(status, error_code(raw))
        wait = parse_retry_after(response.headers, self._wall_clock()) if retry else None
        raise _Attempt(self.fail(f"HTTP {status}: {detail}", status, retry), wait)

    def read_json(self, response: httpx.Response, at: float, timeout: float) -> dict[str, Any]:
        """Read the body of an :meth:`open` response and return it as a JSON object.

        Raises:
            _Attempt: reading failed, or the body is not a JSON object.
        """
        raw = self._read(response, at, timeout)
        try:
            data = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            data = None
        if not isinstance(data, dict):
            shown = self.shown(raw.decode("utf-8", errors="replace"))
            raise _Attempt(
                self.fail(
                    f"HTTP {response.status_code} with a body that is not a JSON object: {shown!r}",
                    response.status_code,
                )
            )
        return data

    def _read(self, response: httpx.Response, at: float, timeout: float) -> bytes:
        """Read the whole body and close ``response``."""
        chunks: list[bytes] = []
        try:
            chunks.extend(self.body_chunks(response, at, timeout))
        except httpx.TransportError:
            got = b"".join(chunks)
            shown = self.shown(got.decode("utf-8", errors="replace"))
            raise _Attempt(
                self.fail(
                    f"HTTP {response.status_code} body cut off after {len(got)} bytes: {shown!r}",
                    response.status_code,
                    retry=True,
                )
            ) from None
        finally:
            response.close()
        return b"".join(chunks)

    def body_chunks(self, response: httpx.Response, at: float, timeout: float) -> Iterator[bytes]:
        """Yield the body as it comes: at most ``max_response_bytes``, until the clock reads ``at``.

        The deadline bounds each read only while it runs: the consumer may take its
        time between chunks (its time still counts against the attempt).

        Raises:
            _Attempt: the attempt's time ran out, or the body passed the size cap.
            httpx.TransportError: the connection broke (the caller says what was cut).
        """
        status = response.status_code
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise _Attempt(self._too_big(status, f"Content-Length {declared}"))
        pieces = response.iter_bytes()
        size = 0
        while True:
            try:
                with self._deadline.until(at):
                    chunk = next(pieces, None)
            except httpx.TimeoutException:
                raise _Attempt(self._timed_out(timeout, status, "reading the body")) from None
            if chunk is None:
                return
            size += len(chunk)
            if size > self._max_bytes:
                raise _Attempt(self._too_big(status, f"{size:,} bytes read"))
            # With a caller's client the reads are bounded one by one only.
            if self._clock() >= at:
                raise _Attempt(self._timed_out(timeout, status, "reading the body"))
            yield chunk

    def shown(self, text: str) -> str:
        """Return ``text`` as an error message may show it: secrets masked, cut short."""
        return excerpt(text, self._secrets)

    def _timed_out(self, timeout: float, status: int | None = None, doing: str = "") -> ModelError:
        what = f"timed out after {timeout:.3g} s" + (f" {doing}" if doing else "")
        return self.fail(what, status, retry=True)

    def _too_big(self, status: int, seen: str) -> ModelError:
        limit = self._max_bytes
        cap = f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit:,} bytes"
        # Not retried: the same server would send the same body again.
        return self.fail(
            f"HTTP {status} body over the {cap} limit ({seen}; HttpOptions.max_response_bytes)",
            status,
        )

    def fail(self, what: str, status: int | None = None, retry: bool = False) -> ModelError:
        return ModelError(f"{self._label} call failed: {what}", status=status, retryable=retry)

    def _final(self, error: ModelError, attempts: int, tail: str = "") -> ModelError:
        message = f"{error} (after {attempts} attempt{'s' if attempts != 1 else ''}{tail})"
        return ModelError(message, status=error.status, retryable=error.retryable)


_R = TypeVar("_R")


class HttpModel:
    """What both adapters share: the client, the ``complete`` exchange, typing a reply, closing.

    A subclass names its provider, endpoint and headers in ``__init__`` and maps a
    request to its wire body (``_payload``) and the reply's JSON back (``_response``).
    """

    def __init__(
        self,
        provider: str,
        model: str,
        *,
        url: str,
        headers: Mapping[str, str],
        api_key: str | None,
        options: HttpOptions | None,
    ) -> None:
        """Name the adapter ``provider:model`` and build its client; ``api_key`` never shows."""
        self.name = f"{provider}:{model}"
        self.model = model
        self._http = JsonHttpClient(
            label=self.name,
            url=url,
            headers=headers,
            secrets=(api_key or "",),
            options=options,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, url={self._http.where!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the HTTP connection pool (if this adapter created it)."""
        self._http.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` to the provider's endpoint and map the reply.

        The adapter's own model name is sent; ``request.model`` is only recorded.

        Raises:
            ModelError: after the retry policy gave up, or for a reply it cannot map.
        """
        return self._response(self._http.post(self._payload(request)))

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        """Return the wire body for ``request``."""
        raise NotImplementedError

    def _response(self, data: Any) -> ModelResponse:
        """Map the reply's JSON object to a :class:`ModelResponse`.

        Raises:
            ModelError: the reply has a shape the adapter cannot map.
        """
        raise NotImplementedError

    def _convert(self, data: Any, reply_type: type[_R]) -> _R:
        """Return the reply's JSON ``data`` converted to ``reply_type``.

        Raises:
            ModelError: the reply has the wrong shape.
        """
        try:
            return msgspec.convert(data, reply_type)
        except msgspec.ValidationError as e:
            raise self._http.unexpected(data, str(e)) from None
