"""The ``model=`` argument: one model, a fallback chain, or a chain per role."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from actors.models.protocol import Model

ModelArg = Model | Sequence[Model] | Mapping[str, Model | Sequence[Model]]


def model_chains(model: ModelArg) -> dict[str, list[Model]]:
    """Normalise the ``model=`` argument to ``{role: [candidates…]}`` (``default`` = fallback)."""
    if isinstance(model, Mapping):
        return {
            role: ([m] if not isinstance(m, Sequence) else list(m)) for role, m in model.items()
        }
    if isinstance(model, Sequence):
        return {"default": list(model)}
    return {"default": [model]}
