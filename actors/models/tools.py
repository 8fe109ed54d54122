"""The tool seam: a ``Tool`` protocol, a function-backed tool, and a registry.

Arguments are validated with the tool's pydantic model *before* the call. A
validation error, an unknown tool or an exception from the tool becomes a
``tool_result`` block with ``is_error: true`` plus a ``tool_failed`` event — the
run goes on. Whether a tool may run twice after a crash is its ``idempotent``
flag (see docs/replay-and-recovery.md).

A tool runs through :func:`invoke`, on a thread of its own, with a timeout (the tool's
``timeout_s`` attribute, else ``RunSettings.tool_timeout_s``). A tool that raises any
``BaseException`` (``SystemExit``, ``KeyboardInterrupt``) or outlives its timeout is a
``tool_failed`` like any other failure. Python cannot kill a thread: a timed-out tool
keeps running in the background until it returns (its result is dropped), so a tool
should be cancellable or idempotent; its thread is a daemon and never keeps the
interpreter alive.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

import pydantic

from actors.errors import ToolAborted, ToolTimeout
from actors.models.protocol import ToolSpec
from actors.models.storable import check_storable
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
        timeout_s: float | None = None,
    ) -> None:
        """Wrap ``fn``; ``timeout_s`` overrides the run's ``tool_timeout_s`` for this tool."""
        self.name = name
        self.description = description or (fn.__doc__ or "").strip().split("\n")[0]
        self.args_model = args_model
        self.idempotent = idempotent
        self.timeout_s = timeout_s
        self._fn = fn

    def call(self, args: pydantic.BaseModel) -> ToolOutput:
        return self._fn(args)


def tool(
    args_model: type[pydantic.BaseModel],
    *,
    name: str | None = None,
    idempotent: bool = False,
    timeout_s: float | None = None,
) -> Callable[[Callable[[Any], ToolOutput]], FunctionTool]:
    """Decorate a function ``fn(args) -> output`` into a :class:`FunctionTool`."""

    def wrap(fn: Callable[[Any], ToolOutput]) -> FunctionTool:
        return FunctionTool(
            name or fn.__name__, fn, args_model, idempotent=idempotent, timeout_s=timeout_s
        )

    return wrap


def timeout_of(t: Tool, default: float | None) -> float | None:
    """Return the timeout of ``t`` in seconds: its own ``timeout_s``, else ``default``.

    None (or a value ≤ 0) means no timeout.
    """
    own = getattr(t, "timeout_s", None)
    chosen = own if isinstance(own, int | float) and not isinstance(own, bool) else default
    return chosen if chosen is not None and chosen > 0 else None


def invoke(t: Tool, args: pydantic.BaseModel, *, timeout: float | None) -> ToolOutput:
    """Run ``t.call(args)`` on a daemon thread; return its output once checked storable.

    Raises:
        ToolTimeout: no return within ``timeout`` seconds (the thread keeps running).
        ToolAborted: the tool raised a ``BaseException`` that is not an ``Exception``.
        Unencodable: the output cannot be stored in the log.
        Exception: whatever the tool raised, as it raised it.
    """
    box: list[Any] = []
    done = threading.Event()

    def body() -> None:
        try:
            box.append((True, t.call(args)))
        except BaseException as e:
            box.append((False, e))
        finally:
            done.set()

    # A daemon: a tool that never returns must not keep the interpreter alive at exit.
    threading.Thread(target=body, name=f"clew-tool-{t.name}", daemon=True).start()
    if not done.wait(timeout):
        raise ToolTimeout(
            f"the tool did not return within {timeout:g} s; it may still be running"
            " (its result will be ignored)"
        )
    ok, value = box[0]
    if not ok:
        if isinstance(value, Exception):
            raise value
        raise ToolAborted(type(value).__name__, f"the tool raised {value!r}")
    check_storable(value, "the tool's output")
    output: ToolOutput = value
    return output


def error_type_of(e: Exception) -> str:
    """Return the ``error_type`` a ``tool_failed`` records for ``e``."""
    if isinstance(e, ToolTimeout | ToolAborted):
        return e.error_type
    return type(e).__name__


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
