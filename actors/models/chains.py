"""The ``model=`` argument: one model, a fallback chain, or a chain per role.

A model is a sync ``Model`` or an ``AsyncModel``; each async one is wrapped in its sync
adapter here, when a run resolves its chains (see ``async_models``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from actors.models.async_models import AnyModel, as_model
from actors.models.protocol import Model

ModelArg = AnyModel | Sequence[AnyModel] | Mapping[str, AnyModel | Sequence[AnyModel]]


def model_chains(model: ModelArg) -> dict[str, list[Model]]:
    """Normalise the ``model=`` argument to ``{role: [candidates…]}`` (``default`` = fallback)."""
    if isinstance(model, Mapping):
        return {role: _chain(m) for role, m in model.items()}
    return {"default": _chain(model)}


def _chain(model: AnyModel | Sequence[AnyModel]) -> list[Model]:
    candidates = list(model) if isinstance(model, Sequence) else [model]
    return [as_model(m) for m in candidates]
