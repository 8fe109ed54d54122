"""Tool invocation: a tool's own thread, a timeout, every BaseException contained."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pydantic
import pytest

from actors.errors import ToolAborted, ToolTimeout, Unencodable
from actors.models.tools import FunctionTool, ToolRegistry, error_type_of, invoke, timeout_of


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
    left.join(5)


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
