"""The one error the provider layer adds to ``eventlog.errors``: a bad provider setup."""

from __future__ import annotations

from eventlog.errors import ClewError


class ProviderConfigError(ClewError, ValueError):
    """A model spec or provider setting is unusable (unknown scheme, missing key, …).

    Raised before any request is sent; its message is one sentence a CLI can print.
    """
