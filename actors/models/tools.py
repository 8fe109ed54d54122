"""The tool seam: a ``Tool`` protocol, a function-backed tool, and a registry.

Arguments are validated with the tool's pydantic model *before* the call. A
validation error, an unknown tool or an exception from the tool becomes a
``tool_result`` block with ``is_error: true`` plus a ``tool_failed`` event — the
run goes on. Whether a tool may run twice after a crash is its ``idempotent``
flag (see docs/replay-and-recovery.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

import pydantic

from actors.models.protocol import ToolSpec
from eventlog.blocks import ContentBlock, JsonBlock, TextBlock

ToolOutput = str | dict[str, Any] | list[Any] | list[ContentBlock] | None


@runtime_checkable
class Tool(Protocol):
    """A tool a model may call."""

    name: str
    description: str
    args_model: type[pydantic.BaseModel]
    idempotent: bool

    def call(self, args: pydantic.BaseModel) -> ToolOutput:
        """Run the tool with validated ``args``; raise to report a failure."""
        ...


class FunctionTool:
    """A tool backed by a plain function taking the validated arguments model."""

    def __init__(
        self,
        name: str,
        fn: Callable[[Any], ToolOutput],
        args_model: type[pydantic.BaseModel],
        *,
        description: str = "",
        idempotent: bool = False,
    ) -> None:
        self.name = name
        self.description = description or (fn.__doc__ or "").strip().split("\n")[0]
        self.args_model = args_model
        self.idempotent = idempotent
        self._fn = fn

    def call(self, args: pydantic.BaseModel) -> ToolOutput:
        return self._fn(args)


def tool(
    args_model: type[pydantic.BaseModel], *, name: str | None = None, idempotent: bool = False
) -> Callable[[Callable[[Any], ToolOutput]], FunctionTool]:
    """Decorate a function ``fn(args) -> output`` into a :class:`FunctionTool`."""

    def wrap(fn: Callable[[Any], ToolOutput]) -> FunctionTool:
        return FunctionTool(name or fn.__name__, fn, args_model, idempotent=idempotent)

    return wrap


def spec_of(t: Tool) -> ToolSpec:
    """Return what the model is told about ``t``."""
    recorded = getattr(t, "spec", None)
    if isinstance(recorded, ToolSpec):
        return recorded
    return ToolSpec(
        name=t.name, description=t.description, parameters=t.args_model.model_json_schema()
    )


def output_blocks(output: ToolOutput) -> list[ContentBlock]:
    """Normalise a tool's return value into content blocks."""
    if output is None:
        return []
    if isinstance(output, str):
        return [TextBlock(text=output)]
    if (
        isinstance(output, list)
        and output
        and all(
            isinstance(b, TextBlock | JsonBlock) or hasattr(b, "__struct_config__") for b in output
        )
    ):
        return list(output)
    return [JsonBlock(data=output)]


class ToolRegistry:
    """Tools by name; what a run may call."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        """Register ``t``; a second tool with the same name is refused."""
        if t.name in self._tools:
            raise ValueError(f"duplicate tool name {t.name!r}")
        self._tools[t.name] = t

    def get(self, name: str) -> Tool | None:
        """Return the tool called ``name``, or None."""
        return self._tools.get(name)

    def specs(self) -> list[ToolSpec]:
        """Return the specs of every tool, sorted by name (stable request hashes)."""
        return [spec for _, spec in self.with_specs()]

    def with_specs(self) -> list[tuple[Tool, ToolSpec]]:
        """Return every tool with its spec, sorted by name."""
        return [(self._tools[n], spec_of(self._tools[n])) for n in sorted(self._tools)]

    def names(self) -> list[str]:
        """Return the sorted tool names."""
        return sorted(self._tools)

    def __len__(self) -> int:
        return len(self._tools)
