"""Tools and model replies that misbehave stay outcomes: recorded, replayed, never a crash.

A tool raising ``SystemExit``/``KeyboardInterrupt``, a tool that hangs, a tool output or
a model reply the log cannot encode — each becomes a ``tool_failed`` / ``model_failed``
the model sees, and the session replays identically and verifies (``run_session``).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from functools import reduce
from pathlib import Path
from typing import Any

import msgspec
import pydantic
import pytest
from _processes import child_env
from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.models.protocol import ModelRequest, ModelResponse
from actors.models.scripted import ScriptedModel
from actors.models.tools import FunctionTool
from actors.recording.inputs import RunSettings
from actors.runtime.runtime import Runtime
from eventlog.blocks import TextBlock, ToolResultBlock
from eventlog.events import ModelFailed, NodeAppended, RunEnded, ToolFailed

PROMPT = "Use the tool and report."
#: What Python makes of the non-UTF-8 byte 0xff (a file name, a command-line argument).
LONE = b"\xff".decode("utf-8", "surrogateescape")


class NoArgs(pydantic.BaseModel):
    pass


def a_tool(body: Callable[[], Any], **kw: Any) -> FunctionTool:
    return FunctionTool("probe", lambda _args: body(), NoArgs, description="A probe.", **kw)


def calling_model() -> Any:
    """w1 calls ``probe`` once, then reports whatever came back."""
    return scripted(
        route([worker("w1", "prober", "Probe")]),
        rule("prober", {"tool_calls": [{"name": "probe"}]}, {"text": "reported"}),
    )


def tool_result_text(s: Any) -> str:
    """The text of w1's tool node: what the model was shown."""
    (node,) = [n.node for n in s.of(NodeAppended, s.worker_run("w1")) if n.node.role == "tool"]
    (block,) = node.content
    assert isinstance(block, ToolResultBlock) and block.is_error
    (text,) = block.content
    assert isinstance(text, TextBlock)
    return text.text


def raising(exc: BaseException) -> Callable[[], Any]:
    def body() -> Any:
        raise exc

    return body


@pytest.mark.parametrize(
    "exc", [SystemExit(1), KeyboardInterrupt()], ids=["SystemExit", "KeyboardInterrupt"]
)
def test_a_tool_raising_a_base_exception_is_a_tool_failed_with_its_type(
    rt: Runtime, exc: BaseException
) -> None:
    s = run_session(rt, PROMPT, calling_model(), tools=[a_tool(raising(exc))])

    (failed,) = s.of(ToolFailed)
    assert type(exc).__name__ == failed.error_type
    assert tool_result_text(s).startswith(f"{type(exc).__name__}: the tool raised")
    assert ("completed", ["completed"]) == (
        s.outcome.status,
        [r.status for r in s.outcome.worker_results],
    )


@pytest.fixture
def hang() -> Iterator[threading.Event]:
    """An event a hanging tool waits on; set at teardown so its thread ends."""
    release = threading.Event()
    yield release
    release.set()


@pytest.mark.parametrize("where", ["tool", "settings"])
def test_a_hanging_tool_times_out_as_a_tool_failed_the_model_sees(
    rt: Runtime, hang: threading.Event, where: str
) -> None:
    tool = a_tool(hang.wait, timeout_s=0.3) if where == "tool" else a_tool(hang.wait)
    settings = RunSettings(tool_timeout_s=0.3) if where == "settings" else None

    s = run_session(rt, PROMPT, calling_model(), tools=[tool], settings=settings)

    (failed,) = s.of(ToolFailed)
    assert ("timeout", "probe") == (failed.error_type, failed.tool_name)
    assert tool_result_text(s).startswith("timeout: the tool did not return within 0.3 s")
    assert ["completed", "completed"] == [e.status for e in s.of(RunEnded)][-2:]


def deep(levels: int) -> Any:
    return reduce(lambda inner, _: [inner], range(levels), "bottom")


@pytest.mark.parametrize(
    ("output", "why"),
    [
        (f"a file name: {LONE}", "holds the lone surrogate '\\udcff'"),
        ({"handle": object()}, "Encoding objects of type object is unsupported"),
        (deep(5000), "nested deeper than 100 levels"),
    ],
    ids=["lone-surrogate", "unserialisable-object", "5000-deep"],
)
def test_a_tool_output_the_log_cannot_hold_is_a_replayable_tool_failed(
    rt: Runtime, output: Any, why: str
) -> None:
    s = run_session(rt, PROMPT, calling_model(), tools=[a_tool(lambda: output)])

    (failed,) = s.of(ToolFailed)
    assert "Unencodable" == failed.error_type
    assert failed.message.startswith("the tool's output cannot be stored: ")
    assert why in failed.message
    assert "completed" == s.outcome.status


def test_an_exception_message_with_a_lone_surrogate_is_recorded_escaped(rt: Runtime) -> None:
    missing = FileNotFoundError(2, "No such file or directory", f"/data/{LONE}.txt")

    s = run_session(rt, PROMPT, calling_model(), tools=[a_tool(raising(missing))])

    (failed,) = s.of(ToolFailed)
    assert "FileNotFoundError" == failed.error_type
    assert "/data/\\udcff.txt" in failed.message


class _Garbling:
    """A model whose replies carry a lone surrogate (as a buggy provider client's may)."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name

    def complete(self, request: ModelRequest) -> ModelResponse:
        reply = self.inner.complete(request)
        return msgspec.structs.replace(reply, content=[TextBlock(text=f"done {LONE}")])


def test_a_model_reply_with_a_lone_surrogate_is_a_model_failed_and_the_chain_falls_back(
    rt: Runtime,
) -> None:
    # A provider can return what a script may not hold (scripts refuse lone surrogates at
    # load time), so the garbled model wraps a clean script and spoils its reply.
    bad = _Garbling(scripted(rule("prober", {"text": "done"}), name="garbled"))
    good = scripted(rule("prober", {"text": "done"}), name="clean")
    model = {"router": scripted(route([worker("w1", "prober", "Probe")])), "prober": [bad, good]}
    model["default"] = scripted()

    s = run_session(rt, PROMPT, model)

    run_id = s.worker_run("w1")
    (failed,) = s.of(ModelFailed, run_id)
    assert ("garbled", "Unencodable", True) == (
        failed.model,
        failed.error_type,
        failed.will_fallback,
    )
    assert "the model's reply cannot be stored" in failed.message
    assert ["completed"] == [r.status for r in s.outcome.worker_results]


CHILD = """
import sys, pydantic
from actors.demo import DEMO_PROMPT
from actors.models.scripted import ScriptedModel
from actors.models.protocol import ModelRequest, ModelResponse
from actors.models.scripted import ScriptedModel
from actors.models.tools import FunctionTool
from actors.runtime.runtime import Runtime

class NoArgs(pydantic.BaseModel):
    pass

def body(_args):
    raise {exc}

model = ScriptedModel({{"rules": [
    {{"role": "router", "replies": [{{"json": {{"primary_role": "lead", "review": False,
      "workers": [{{"id": "w1", "role": "prober", "goal": "Probe", "deps": []}}]}}}}]}},
    {{"role": "prober", "replies": [{{"tool_calls": [{{"name": "probe"}}]}}, {{"text": "ok"}}]}},
    {{"role": "lead", "replies": [{{"text": "answer"}}]}},
]}})
rt = Runtime(sys.argv[1], sys.argv[2])
out = rt.new_session().run(DEMO_PROMPT, model=model, tools=[FunctionTool("probe", body, NoArgs)])
print(out.status, flush=True)
# no rt.close(): the process must still exit
"""


@pytest.mark.parametrize("exc", ["SystemExit(3)", "KeyboardInterrupt()"])
def test_a_process_whose_tool_raises_a_base_exception_finishes_its_run_and_exits(
    tmp_path: Path, exc: str
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(exc=exc))

    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "home"), str(tmp_path / "project")],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,  # the old deadlock (pykka stop_all waiting on the Brain) never returned
        check=False,
    )

    # structlog's default output goes to stdout too: the status is the last line.
    assert (0, "completed") == (done.returncode, done.stdout.splitlines()[-1]), done.stderr
