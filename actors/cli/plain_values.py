"""Options' plain values taken as typed, without building pydantic's validators.

typer (0.2x) coerces every option's value through a pydantic ``TypeAdapter`` it builds
at the first value: importing pydantic, pydantic-core and pydantic's plugin loader was
~17% of ``clew sessions``'s start (docs/performance.md, "The CLI's start"). For a plain
``str``, ``int`` or ``bool`` option — no parser, no choices, no path checks, no clamp,
one value — the adapter hands a well-formed value back unchanged (a ``str`` as given, an
``int`` written in ASCII digits within its bounds), so :func:`take_plain_values` gives
such an option a coercion that returns that value itself. Any other value (a typo, a
number out of range, a sign, a space) goes to typer's own coercion, pydantic and all, so
what is accepted and every error message stay typer's. A typer without this coercion
layer (before 0.2x: click's types, no pydantic) is left as it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

#: What :func:`plain_value` returns for a value typer's own coercion must see.
MISS: Any = object()


def plain_value(annotation: object, value: object, low: float | None, high: float | None) -> Any:
    """``value`` as typer's coercion to ``annotation`` (within ``low``..``high``) would
    return it, when that is certain without pydantic; else :data:`MISS`."""
    if annotation is str and isinstance(value, str):
        return value
    if annotation is bool and isinstance(value, bool):
        return value
    if annotation is int:
        if isinstance(value, str) and value.isascii() and value.isdigit():
            number = int(value)
        elif type(value) is int:
            number = value
        else:
            return MISS
        if (low is None or number >= low) and (high is None or number <= high):
            return number
    return MISS


def _plain_coercion() -> type | None:
    """The coercion class of a plain option, on typer's private coercion layer (None: this
    typer has none)."""
    try:
        coercion: Any = importlib.import_module("typer._coercion")
    except ImportError:  # pragma: no cover - an older typer: click's types, no pydantic
        return None

    class PlainValue(coercion.RuntimeParam):  # type: ignore[misc]
        """A plain option's coercion: the value as typed; typer's own for anything else."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            info = self.parameter_info
            plain = plain_value(self.annotation, value, info.min, info.max)
            if plain is not MISS:
                return plain
            typers = coercion.build_runtime_param(param.type_descriptor)
            return typers._coerce_value(value, param, ctx)  # noqa: SLF001 - typer's own

    return PlainValue


_PLAIN_VALUE = _plain_coercion()


def take_plain_values(params: Iterable[object]) -> None:
    """Give each plain ``str`` / ``int`` / ``bool`` option of ``params`` (a click
    command's) the coercion that takes a well-formed value as typed."""
    if _PLAIN_VALUE is None:  # pragma: no cover - an older typer
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue  # not typer's parameter, or its coercion is already built
        info = descriptor.parameter_info
        if (
            descriptor.annotation in (str, int, bool)
            and info.parser is None
            and not info.clamp
            and not (descriptor.is_path or descriptor.is_choice or descriptor.is_file)
            and not getattr(param, "multiple", True)
        ):
            try:
                coercion = _PLAIN_VALUE(parameter_info=info, annotation=descriptor.annotation)
            except TypeError:  # pragma: no cover - another typer's layer: leave it be
                return
            param._runtime_param = coercion  # type: ignore[attr-defined]  # noqa: SLF001
