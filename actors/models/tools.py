"""The tool seam: a ``Tool`` protocol, a function-backed tool, and a registry.

Arguments are validated with the tool's pydantic model *before* the call. A
validation error, an unknown tool or an exception from the tool becomes a
``tool_result`` block with ``is_error: true`` plus a ``tool_failed`` event — the
run goes on. Whether a tool may run twice after a crash is its ``idempotent``
flag; what happens to a non-idempotent call in doubt after a crash is its own
``in_doubt`` policy, else the run's (see docs/replay-and-recovery.md).

A tool may take a second parameter, a :class:`ToolContext`: who calls it, the call's
``tool_call_id`` and its ``idempotency_key`` — unique across sessions and forks, the same
when a resume runs the call again, so an exactly-once side effect keys on it.

A tool runs through :func:`invoke`, on a thread of its own, with a timeout (the tool's
``timeout_s`` attribute, else ``RunSettings.tool_timeout_s``). A tool that raises any
``BaseException`` (``SystemExit``, ``KeyboardInterrupt``) or outlives its timeout is a
``tool_failed`` like any other failure. Python cannot kill a thread: a timed-out tool
keeps running in the background until it returns (its result is dropped), so a tool
should be cancellable or idempotent; its thread is a daemon and never keeps the
interpreter alive.
"""

from __future__ import annotations

import contextlib
import inspect
import types
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec
import pydantic

from actors.errors import CallCancelled, CallTimedOut, ToolAborted, ToolTimeout, UsageError
from actors.models.calls import CancelScope, call_off_thread
from actors.models.protocol import ToolSpec
from actors.models.storable import check_storable
from eventlog.blocks import ContentBlock, JsonBlock, TextBlock
from eventlog.ids import idempotency_key

ToolOutput = str | dict[str, Any] | list[Any] | list[ContentBlock] | None
#: What to do with a call that started before a crash and has no recorded outcome.
InDoubtPolicy = Literal["retry", "fail", "skip"]


class ToolContext(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling a tool, handed to a tool that takes a second parameter.

    ``tool_call_id`` is the recorded id of the call (``tool_call_started``): a resume
    that runs an in-doubt call again passes the same id with ``attempt`` 2. The id comes
    from the model and need not be unique beyond its run (two sessions asking a scripted
    model the same thing get the same id): a tool with a side effect keys it on
    :attr:`idempotency_key` and does it exactly once.
    """

    tool_call_id: str
    session_id: str
    run_id: str
    agent_id: str
    #: The role of the agent calling (a worker's role, the primary's role).
    role: str
    #: 1 for the first run of the call; 2 when a resume runs it again after a crash.
    attempt: int = 1
    #: The run's cancellation (None outside a run); read it through :attr:`cancelled`.
    cancel: CancelScope | None = None

    @property
    def idempotency_key(self) -> str:
        """The key to do this call's side effect under: unique across sessions, forks and
        retried runs, the same when a resume runs the call again (``attempt`` 2)."""
        return idempotency_key(self.run_id, self.tool_call_id)

    @property
    def cancelled(self) -> bool:
        """True once the run was asked to stop: a long tool should check it and return."""
        return self.cancel is not None and self.cancel.cancelled


@runtime_checkable
class Tool(Protocol):
    """A tool a model may call."""

    name: str
    description: str
    args_model: type[pydantic.BaseModel]
    idempotent: bool

    def call(self, args: pydantic.BaseModel) -> ToolOutput:
        """Run the tool with validated ``args``; raise to report a failure.

        A tool whose ``call`` takes a second parameter gets a :class:`ToolContext`.
        A tool may also have an ``in_doubt`` attribute (an :data:`InDoubtPolicy`)
        overriding the run's policy for its calls in doubt after a crash.
        """
        ...


class FunctionTool:
    """A tool backed by a plain function ``fn(args)`` or ``fn(args, ctx)``."""

    def __init__(
        self,
        name: str,
        fn: Callable[..., ToolOutput],
        args_model: type[pydantic.BaseModel],
        *,
        description: str = "",
        idempotent: bool = False,
        in_doubt: InDoubtPolicy | None = None,
        timeout_s: float | None = None,
        needs_approval: bool | Callable[..., bool] = False,
    ) -> None:
        """Wrap ``fn``; ``timeout_s`` overrides the run's ``tool_timeout_s`` for this tool;
        ``needs_approval`` (True, or a policy ``(call, ctx) -> bool``) makes a call wait
        for a person's decision before it runs."""
        self.name = name
        self.description = description or (fn.__doc__ or "").strip().split("\n")[0]
        self.args_model = args_model
        self.idempotent = idempotent
        #: This tool's in-doubt policy; None: the run's (``RunSettings.in_doubt_policy``).
        self.in_doubt = in_doubt
        self.timeout_s = timeout_s
        self.needs_approval = needs_approval
        self._fn = fn
        self._wants_context = takes_context(fn)

    def call(self, args: pydantic.BaseModel, ctx: ToolContext | None = None) -> ToolOutput:
        if self._wants_context:
            return self._fn(args, ctx)
        return self._fn(args)


def tool(
    args_model: type[pydantic.BaseModel],
    *,
    name: str | None = None,
    idempotent: bool = False,
    in_doubt: InDoubtPolicy | None = None,
    timeout_s: float | None = None,
    needs_approval: bool | Callable[..., bool] = False,
) -> Callable[[Callable[..., ToolOutput]], FunctionTool]:
    """Decorate ``fn(args) -> output`` (or ``fn(args, ctx: ToolContext)``) into a tool.

    Args:
        idempotent: the tool may simply run again after a crash.
        in_doubt: what a resume does with a call of this tool left in doubt by a crash
            (``retry``, ``fail`` or ``skip``); None: the run's ``in_doubt_policy``.
        timeout_s: seconds this tool may run; None: the run's ``tool_timeout_s``.
        needs_approval: True, or a policy ``(call, ctx) -> bool``: a call waits for a
            person's decision before it runs (see docs/runtime.md, "Pause for a person").
    """

    def wrap(fn: Callable[..., ToolOutput]) -> FunctionTool:
        return FunctionTool(
            name or fn.__name__,
            fn,
            args_model,
            idempotent=idempotent,
            in_doubt=in_doubt,
            timeout_s=timeout_s,
            needs_approval=needs_approval,
        )

    return wrap


def takes_context(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` (a function, or a bound ``call``) accepts a context after the args.

    Known per function (a bound method by its class's function): ``inspect.signature``
    costs more than a zero-latency tool call.
    """
    known_of, key = (_BOUND, fn.__func__) if isinstance(fn, types.MethodType) else (_PLAIN, fn)
    try:
        known = known_of.get(key)
    except TypeError:  # not hashable or not weakly referable: asked each time
        return _takes_context(fn)
    if known is None:
        known = _takes_context(fn)
        with contextlib.suppress(TypeError):
            known_of[key] = known
    return known


#: :func:`takes_context` of bound methods (by their function: binding drops one
#: parameter, whatever the instance) and of other callables, kept while they live.
_BOUND: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_PLAIN: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _takes_context(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: no context
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in positional)


def call_tool(t: Tool, args: pydantic.BaseModel, ctx: ToolContext | None) -> ToolOutput:
    """Call ``t`` with its validated ``args``, and ``ctx`` when its ``call`` takes one."""
    if takes_context(t.call):
        return t.call(args, ctx)  # type: ignore[call-arg]
    return t.call(args)


def in_doubt_of(t: Tool | None) -> InDoubtPolicy | None:
    """Return the tool's own in-doubt policy (its ``in_doubt`` attribute), or None."""
    policy = getattr(t, "in_doubt", None)
    return policy if policy in ("retry", "fail", "skip") else None


def timeout_of(t: Tool, default: float | None) -> float | None:
    """Return the timeout of ``t`` in seconds: its own ``timeout_s``, else ``default``.

    None (or a value ≤ 0) means no timeout.
    """
    own = getattr(t, "timeout_s", None)
    chosen = own if isinstance(own, int | float) and not isinstance(own, bool) else default
    return chosen if chosen is not None and chosen > 0 else None


def invoke(
    t: Tool,
    args: pydantic.BaseModel,
    ctx: ToolContext | None = None,
    *,
    timeout: float | None,
    grace: float = 1.0,
) -> ToolOutput:
    """Run the tool (:func:`call_tool`) on a helper thread; return its output once checked
    storable.

    When the run is cancelled (``ctx.cancel``), the tool sees ``ctx.cancelled`` and has
    ``grace`` seconds to return; its outcome is then recorded like any other.

    Raises:
        ToolTimeout: no return within ``timeout`` seconds (the thread keeps running).
        ToolAborted: the tool raised a ``BaseException`` that is not an ``Exception``,
            or the run was cancelled and the tool did not return within ``grace``.
        Unencodable: the output cannot be stored in the log.
        Exception: whatever the tool raised, as it raised it.
    """
    if ctx is not None and ctx.cancelled:
        raise ToolAborted(
            "Cancelled", "the run was cancelled before the tool started; it did not run"
        )
    try:
        value = call_off_thread(
            lambda: call_tool(t, args, ctx),
            name=f"tool-{t.name}",
            timeout=timeout,
            cancel=ctx.cancel if ctx is not None else None,
            grace=grace,
        )
    except CallTimedOut:
        raise ToolTimeout(
            f"the tool did not return within {timeout:g} s; it may still be running"
            " (its result will be ignored)"
        ) from None
    except CallCancelled as e:
        raise ToolAborted(
            "Cancelled",
            f"the run was cancelled ({e}) and the tool did not stop within {grace:g} s;"
            " it may still be running (its result will be ignored)",
        ) from None
    except Exception:
        raise
    except BaseException as e:
        raise ToolAborted(type(e).__name__, f"the tool raised {e!r}") from None
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


def check_tool(t: object) -> Tool:
    """Return ``t`` if it is a tool.

    Raises:
        UsageError: it is not (a plain function not decorated with ``@tool``, …), naming
            the fix.
    """
    if isinstance(t, Tool):
        return t
    if inspect.isfunction(t) or inspect.ismethod(t):
        raise UsageError(
            f"tools: {t.__name__} is a plain function, not a tool: decorate it with "
            f"@tool(ArgsModel) (a pydantic model of its arguments; docs/runtime.md)"
        )
    missing = [a for a in ("name", "description", "args_model", "idempotent", "call")
               if not hasattr(t, a)]  # fmt: skip
    raise UsageError(
        f"tools: a {type(t).__name__} object is not a tool (it has no {', '.join(missing)}): "
        "make a function one with @tool(ArgsModel), or pass a FunctionTool"
    )


class ToolRegistry:
    """Tools by name; what a run may call."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        # Every model call asks for the specs; building them runs pydantic's
        # model_json_schema per tool (3–5% of a worker turn's profile). Cached until the
        # registry changes.
        self._with_specs: list[tuple[Tool, ToolSpec]] | None = None
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        """Register ``t``; a second tool with the same name is refused.

        Raises:
            UsageError: ``t`` is not a tool (a plain function not decorated with ``@tool``).
        """
        check_tool(t)
        if t.name in self._tools:
            raise ValueError(f"duplicate tool name {t.name!r}")
        self._tools[t.name] = t
        self._with_specs = None

    def get(self, name: str) -> Tool | None:
        """Return the tool called ``name``, or None."""
        return self._tools.get(name)

    def specs(self) -> list[ToolSpec]:
        """Return the specs of every tool, sorted by name (stable request hashes)."""
        return [spec for _, spec in self.with_specs()]

    def with_specs(self) -> list[tuple[Tool, ToolSpec]]:
        """Return every tool with its spec, sorted by name (built once per registry change)."""
        if self._with_specs is None:
            self._with_specs = [
                (self._tools[n], spec_of(self._tools[n])) for n in sorted(self._tools)
            ]
        return list(self._with_specs)

    def names(self) -> list[str]:
        """Return the sorted tool names."""
        return sorted(self._tools)

    def __len__(self) -> int:
        return len(self._tools)
