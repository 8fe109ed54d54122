"""Real model providers over HTTP: OpenAI-compatible Chat Completions and Anthropic Messages.

Build one from a spec string with :func:`model_from_spec`, or construct an
adapter directly with a base URL and key. Adapters hold their key in their
HTTP headers only: it is never part of a ``ModelRequest``, ``ModelResponse``
or error message, so nothing the runtime records can contain it.
"""

from actors.errors import ProviderConfigError
from actors.models.providers.anthropic import AnthropicModel
from actors.models.providers.http import HttpOptions
from actors.models.providers.mapping import end_reason_for
from actors.models.providers.openai import OpenAIChatModel
from actors.models.providers.retry import RetryPolicy, parse_retry_after
from actors.models.providers.spec import ProviderModel, model_from_spec, parse_spec

__all__ = [
    "AnthropicModel",
    "HttpOptions",
    "OpenAIChatModel",
    "ProviderConfigError",
    "ProviderModel",
    "RetryPolicy",
    "end_reason_for",
    "model_from_spec",
    "parse_retry_after",
    "parse_spec",
]
