"""Tool invocation: a tool's own thread, a timeout, every BaseException contained."""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

import pydantic
import pytest

from actors.errors import ToolAborted, ToolTimeout, Unencodable
from actors.models.tools import (
    FunctionTool,
    ToolContext,
    ToolRegistry,
    call_tool,
    error_type_of,
    invoke,
    takes_context,
    timeout_of,
)


class NoArgs(pydantic.BaseModel):
    pass


def make(fn: Callable[[], Any], **kw: Any) -> FunctionTool:
    return FunctionTool("t", lambda _args: fn(), NoArgs, **kw)


def test_a_tool_returns_its_output_through_invoke() -> None:
    assert "ok" == invoke(make(lambda: "ok"), NoArgs(), timeout=5)


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), GeneratorExit()])
def test_a_base_exception_from_a_tool_is_contained_with_its_type_name(
    exc: BaseException,
) -> None:
    def raise_it() -> None:
        raise exc

    with pytest.raises(ToolAborted) as caught:
        invoke(make(raise_it), NoArgs(), timeout=5)

    assert type(exc).__name__ == error_type_of(caught.value)


def test_an_exception_from_a_tool_is_raised_as_it_was() -> None:
    def raise_it() -> None:
        raise LookupError("nope")

    with pytest.raises(LookupError, match="nope") as caught:
        invoke(make(raise_it), NoArgs(), timeout=5)
    assert "LookupError" == error_type_of(caught.value)


def test_a_hanging_tool_times_out_and_its_daemon_thread_is_left_behind() -> None:
    release = threading.Event()
    started = time.monotonic()

    with pytest.raises(ToolTimeout, match=r"did not return within 0\.2 s") as caught:
        invoke(make(release.wait), NoArgs(), timeout=0.2)

    assert time.monotonic() - started < 5
    assert "timeout" == error_type_of(caught.value)
    (left,) = [t for t in threading.enumerate() if t.name == "clew-call-tool-t"]
    assert left.daemon  # it cannot keep the interpreter alive
    release.set()
    # Released, the helper thread returns to the pool (it is reused, never joined).
    deadline = time.monotonic() + 5
    while left.name == "clew-call-tool-t" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert left.name == "clew-call-idle"


def test_an_unencodable_output_is_refused() -> None:
    with pytest.raises(Unencodable, match="the tool's output cannot be stored"):
        invoke(make(lambda: {"x": object()}), NoArgs(), timeout=5)


@pytest.mark.parametrize(
    ("own", "default", "expected"),
    [(None, 300.0, 300.0), (2.5, 300.0, 2.5), (None, None, None), (0, 300.0, None), (5, None, 5)],
)
def test_a_tools_own_timeout_wins_over_the_runs_default(
    own: float | None, default: float | None, expected: float | None
) -> None:
    assert expected == timeout_of(make(lambda: "", timeout_s=own), default)


class Query(pydantic.BaseModel):
    text: str


def test_registry_specs_are_built_once_and_rebuilt_when_a_tool_is_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = ToolRegistry([FunctionTool("b", lambda _a: "", Query)])
    built: list[str] = []
    original = Query.model_json_schema.__func__  # type: ignore[attr-defined]

    def counting(cls: type[pydantic.BaseModel], *args: Any, **kw: Any) -> Any:
        built.append(cls.__name__)
        return original(cls, *args, **kw)

    monkeypatch.setattr(Query, "model_json_schema", classmethod(counting))
    first = registry.specs()
    assert registry.specs() == first
    assert ["Query"] == built  # the second call reused the cached specs

    registry.add(FunctionTool("a", lambda _a: "", NoArgs))
    assert ["a", "b"] == [s.name for s in registry.specs()]
    assert ["Query", "Query"] == built  # registering a tool dropped the cache

    registry.specs().clear()  # a caller's copy: the cache is not theirs to change
    assert ["a", "b"] == [s.name for s in registry.specs()]


# --- takes_context: known per function, still right for every kind of callable ----------


def _one(args: object) -> None: ...


def _two(args: object, ctx: object) -> None: ...


def _star(*parts: object) -> None: ...


@pytest.mark.parametrize(
    ("fn", "expected"), [(_one, False), (_two, True), (_star, True), (len, False)]
)
def test_takes_context_answers_the_same_when_asked_again(
    fn: Callable[..., Any], expected: bool
) -> None:
    assert [expected, expected, expected] == [takes_context(fn) for _ in range(3)]


class _Plain:
    def call(self, args: object) -> str:
        return f"plain {args}"


class _WithContext:
    def call(self, args: object, ctx: object) -> str:
        return f"ctx {args} {ctx}"


def test_bound_methods_of_different_instances_each_get_their_class_answer() -> None:
    plains, with_ctx = [_Plain(), _Plain()], [_WithContext(), _WithContext()]

    asked = [takes_context(o.call) for o in [*plains, *with_ctx, *plains, *with_ctx]]

    assert [False, False, True, True] * 2 == asked


def test_one_function_asked_plain_and_bound_gets_each_its_own_answer() -> None:
    def shared(first: object, second: object) -> None: ...

    class Holder:
        call = shared  # bound: ``first`` is the instance, leaving one argument

    bound = Holder().call
    # Both orders: whichever is asked first must not decide the other's answer.
    assert [True, False, True, False] == [
        takes_context(shared),
        takes_context(bound),
        takes_context(shared),
        takes_context(Holder().call),
    ]

    def other(first: object, second: object) -> None: ...

    class Other:
        call = other

    assert [False, True] == [takes_context(Other().call), takes_context(other)]


def test_a_staticmethod_object_is_judged_by_its_own_signature_not_as_a_bound_method() -> None:
    def both(first: object, second: object) -> None: ...

    class Holder:
        call = both

    # A staticmethod object has a __func__ too, but nothing is bound: both parameters stay.
    assert [False, True] == [takes_context(Holder().call), takes_context(staticmethod(both))]


class _CallableOne:
    def __call__(self, args: object) -> None: ...


class _CallableTwo:
    def __call__(self, args: object, ctx: object) -> None: ...


def test_a_callable_instance_is_judged_by_its_call_method() -> None:
    assert [False, True, False, True] == [
        takes_context(_CallableOne()),
        takes_context(_CallableTwo()),
        takes_context(_CallableOne()),
        takes_context(_CallableTwo()),
    ]


def test_a_builtin_without_a_signature_takes_no_context() -> None:
    # getattr(obj, name, default) accepts two positional arguments, but has no
    # signature to tell: such a builtin is given no context.
    with pytest.raises(ValueError, match="no signature"):
        inspect.signature(getattr)
    assert [False, False] == [takes_context(getattr), takes_context(getattr)]


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, arity: int) -> None:
        self.arity = arity

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable) and other.arity == self.arity

    def __call__(self, args: object, ctx: object = None) -> None: ...


class _UnhashableOne:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, args: object) -> None: ...


def test_an_unhashable_callable_is_answered_each_time_without_a_crash() -> None:
    assert [True, True] == [takes_context(_Unhashable(1)), takes_context(_Unhashable(1))]
    assert [False, False] == [takes_context(_UnhashableOne()), takes_context(_UnhashableOne())]


class _ContextTool:
    name = "ctx_tool"
    description = ""
    args_model: type[pydantic.BaseModel] = NoArgs
    idempotent = True

    def __init__(self) -> None:
        self.got: list[ToolContext | None] = []

    def call(self, args: pydantic.BaseModel, ctx: ToolContext) -> str:
        self.got.append(ctx)
        return ctx.tool_call_id


def _ctx(call_id: str) -> ToolContext:
    return ToolContext(
        tool_call_id=call_id, session_id="sess_1", run_id="run_1", agent_id="a", role="lead"
    )


def test_a_tool_whose_call_takes_a_context_gets_it_on_every_call() -> None:
    first, second = _ContextTool(), _ContextTool()
    contexts = [_ctx(f"call_{i}") for i in range(4)]

    outputs = [
        call_tool(t, NoArgs(), c) for t, c in zip([first, second] * 2, contexts, strict=True)
    ]

    assert ["call_0", "call_1", "call_2", "call_3"] == outputs
    assert [contexts[0], contexts[2]] == first.got
    assert [contexts[1], contexts[3]] == second.got
    assert "call_9" == invoke(first, NoArgs(), _ctx("call_9"), timeout=5)


def test_a_function_tool_passes_the_context_only_to_a_function_that_takes_it() -> None:
    plain = FunctionTool("p", lambda _args: "no ctx", NoArgs)
    with_ctx = FunctionTool("c", lambda _args, ctx: ctx.tool_call_id, NoArgs)

    outputs = [call_tool(t, NoArgs(), _ctx("call_7")) for t in [plain, with_ctx, plain, with_ctx]]

    assert ["no ctx", "call_7", "no ctx", "call_7"] == outputs
