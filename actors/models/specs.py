"""Model specs: the strings that name a model, and the model each one builds.

``scripted:PATH`` (a :class:`~actors.models.scripted.ScriptedModel` of that script),
``openai:<model>`` and ``anthropic:<model>`` (a provider adapter, its key from the
environment). What ``clew run --model`` takes, and what is built again from a recorded
name wherever no model object is given: a queued run (``clew submit --model SPEC``), a
rerun asking a role live, a role of a team file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from actors.models.protocol import Model
from actors.models.providers import model_from_spec
from actors.models.scripted import ScriptedModel

#: The schemes a spec may start with.
SPEC_SCHEMES: Final = ("scripted", "openai", "anthropic")
SCRIPTED: Final = "scripted:"


def is_model_spec(name: str) -> bool:
    """True when ``name`` has the form of a model spec (``scheme:rest``, a known scheme)."""
    scheme, sep, rest = name.partition(":")
    return bool(sep) and bool(rest) and scheme in SPEC_SCHEMES


def model_of_spec(
    spec: str,
    *,
    env: Mapping[str, str],
    base_url: str | None = None,
    root: Path | None = None,
) -> Model:
    """Return the model ``spec`` names.

    Args:
        root: what a relative ``scripted:`` path is relative to (default: the working
            directory, as ``clew run`` reads it).

    Raises:
        ScriptError: a ``scripted:`` script that is missing or not a valid script.
        ProviderConfigError: an unknown scheme, or a provider spec that cannot be used
            (no model name, no key).
    """
    if spec.startswith(SCRIPTED):
        path = Path(spec.removeprefix(SCRIPTED))
        if root is not None and not path.is_absolute():
            path = root / path
        return ScriptedModel(path, name=spec)
    return model_from_spec(spec, env=env, base_url=base_url)
