"""The retry policy of a provider call: attempts, backoff, deadline, and ``Retry-After``.

The loop itself is :class:`~actors.models.providers.http.JsonHttpClient`'s; it keeps one
:class:`Tries` per call, so the JSON exchange and the streamed one (``sse.py``) count
attempts and the deadline the same way.
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Mapping
from dataclasses import dataclass

from actors.errors import ProviderConfigError
from eventlog.errors import ModelError


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How hard to try: attempts, backoff shape and a total deadline, in seconds."""

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    deadline: float = 180.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ProviderConfigError(f"max_attempts must be at least 1, not {self.max_attempts}.")
        if self.deadline <= 0 or self.base_delay < 0 or self.max_delay < 0:
            raise ProviderConfigError(
                "the retry deadline must be positive and delays non-negative."
            )

    def backoff(self, failures: int, rng: random.Random) -> float:
        """Return the full-jitter wait after ``failures`` failed attempts (1-based)."""
        cap = min(self.max_delay, self.base_delay * 2 ** (failures - 1))
        return rng.uniform(0.0, cap)


#: Error codes of a 429 that is a billing state, not a transient limit: asking again only
#: waits out the deadline (OpenAI and the gateways copying its error body).
BILLING_ERROR_CODES = frozenset(
    {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}
)


def is_retryable_status(status: int, error_code: str | None = None) -> bool:
    """Return whether an HTTP status is worth another attempt (429 and 5xx), given the
    error body's ``code``/``type`` (a 429 saying ``insufficient_quota`` is not)."""
    if status == 429:
        return error_code not in BILLING_ERROR_CODES
    return 500 <= status <= 599


def parse_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Return the wait the server asked for, in seconds, or ``None`` if it asked none.

    Reads ``retry-after-ms`` (OpenAI) first, then ``retry-after`` as seconds or
    as an HTTP date, measured from the wall-clock time ``now``. A negative wait
    is clamped to 0; an unparseable header counts as absent.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT; be lenient with a missing zone
        return None
    return max(0.0, when.timestamp() - now)


@dataclass(kw_only=True)
class Tries:
    """One call's retry loop so far: when it started, attempts made, the last error."""

    start: float
    attempt: int = 0
    error: ModelError | None = None
