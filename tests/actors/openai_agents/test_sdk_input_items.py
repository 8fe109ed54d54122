"""A durable Agents SDK run given a list of input items: the model is asked exactly what the
unwrapped ``Runner.run(agent, items)`` asks (by ``run`` and ``run_streamed``), the items are
the run's recorded inputs (``history``, inputs version 7; a string input records version 6
as before), a replay and a resume (``session.resume``, ``clew resume --agent`` in a
process of its own, after an approval and after a SIGKILL inside a tool) hand the SDK the
same items again, and a conversation goes on from ``result.to_input_list()``; an input
that cannot be recorded writes nothing."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from _cli_helpers import Where, run_process
from _processes import ROOT
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage
from openai.types.responses import Response, ResponseCompletedEvent, ResponseCreatedEvent
from pydantic import BaseModel

from actors import Approve
from actors.errors import DurableRunFailed, UsageError
from actors.openai_agents import DurableRunner, ToolPolicy
from actors.runtime.runtime import Runtime
from actors.runtime.session import Session
from eventlog.events import ModelRequested, NodeAppended, RunStarted

#: An earlier conversation, then the new turn: the run notes it, then answers.
ITEMS: list[Any] = [
    {"role": "user", "content": "my name is Ada"},
    {"role": "assistant", "content": "Hello Ada."},
    {"role": "user", "content": [{"type": "input_text", "text": "note it"}]},
]
_CONFIG = RunConfig(tracing_disabled=True)


def _json(item: Any) -> Any:
    """An input item as the model sees it sent (a pydantic one as the client dumps it)."""
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json", exclude_unset=True)
    return item


def _set(data: Any) -> Any:
    """``data`` without its None fields: a reply's items come back to the SDK from their
    recording (live as on a resume) with the fields the reply left unset as None
    (``namespace``, ``caller`` …), which the unwrapped run's leave out; the input items
    themselves are compared exactly."""
    if isinstance(data, dict):
        return {k: _set(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [_set(v) for v in data]
    return data


class NotesModel(Model):
    """Notes the last user message with a tool, then says how many items it was given;
    each request's input is kept in ``seen``."""

    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    def _reply(self, input: Any) -> list[Any]:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.seen.append([_json(i) for i in items])
        last = _json(items[-1])
        if last.get("role") == "user":
            return [function_call("note", {"text": "x"}, call_id=f"call-{len(items)}")]
        return [assistant_message(f"seen {len(items)} items", item_id=f"msg-{len(items)}")]

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        return ModelResponse(output=self._reply(input), usage=Usage(requests=1), response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        output = self._reply(input)
        yield ResponseCreatedEvent(type="response.created", sequence_number=0,
                                   response=_response([]))  # fmt: skip
        yield ResponseCompletedEvent(type="response.completed", sequence_number=1,
                                     response=_response(output))  # fmt: skip


def _response(output: list[Any]) -> Response:
    return Response.model_construct(id="resp-fake", created_at=time.time(), model="fake",
                                    object="response", output=output, parallel_tool_calls=False,
                                    tool_choice="auto", tools=[], usage=None)  # fmt: skip


def _agent(seen: list[Any], *, approval: bool = False, kill: bool = False) -> Agent[Any]:
    @function_tool(needs_approval=approval)
    def note(text: str) -> str:
        """Note a text (``kill``: SIGKILL the process first)."""
        if kill:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"noted {text}"

    return Agent(name="notes", model=NotesModel(seen), tools=[note])


def _runner(seen: list[Any], *, approval: bool = False) -> DurableRunner:
    return DurableRunner(_agent(seen, approval=approval), run_config=_CONFIG)


def cli_notes() -> DurableRunner:
    """The runner whose note needs approval, for ``clew resume --agent``."""
    return _runner([], approval=True)


def cli_idempotent(*, kill: bool = False) -> DurableRunner:
    """The runner whose note is idempotent (run again after a crash), for ``clew resume
    --agent``; ``kill``: its note SIGKILLs the process."""
    policies = {"note": ToolPolicy(idempotent=True)}
    return DurableRunner(_agent([], kill=kill), tools=policies, run_config=_CONFIG)


def _child(home: str, work: str, sid: str) -> None:
    """(A process of its own.) Run :data:`ITEMS` in session ``sid``: killed in the note."""
    with Runtime(home, work) as rt:
        cli_idempotent(kill=True).run_sync(list(ITEMS), session=rt.session(sid))


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = Runtime(tmp_path / "home", tmp_path)
    yield runtime
    runtime.close()


def _started(rt: Runtime, sid: str) -> list[RunStarted]:
    return [e.event for e in rt.store.iter_events(sid) if isinstance(e.event, RunStarted)]


def _user_nodes(rt: Runtime, sid: str) -> list[str]:
    return [
        e.event.node.content[0].text  # type: ignore[union-attr]
        for e in rt.store.iter_events(sid)
        if isinstance(e.event, NodeAppended) and e.event.node.role == "user"
    ]


# --- what the model is asked ------------------------------------------------------------


def test_the_model_is_asked_what_the_unwrapped_runner_asks_with_the_items(rt: Runtime) -> None:
    unwrapped: list[Any] = []
    expected = asyncio.run(Runner.run(_agent(unwrapped), list(ITEMS), run_config=_CONFIG))
    durable: list[Any] = []
    session = rt.new_session()

    result = _runner(durable).run_sync(list(ITEMS), session=session)

    assert 2 == len(durable)
    assert unwrapped[0] == durable[0] == ITEMS  # handed over as given
    assert _set(unwrapped) == _set(durable)
    assert expected.final_output == result.final_output == "seen 5 items"
    assert _set(expected.to_input_list()) == _set(result.to_input_list())
    first = next(
        e.event for e in rt.store.iter_events(session.id) if isinstance(e.event, ModelRequested)
    )
    assert 3 == len(first.messages)  # the items, as clew renders a request


def test_a_streamed_run_asks_the_same_with_the_items(rt: Runtime) -> None:
    async def unwrapped_run(seen: list[Any]) -> Any:
        streamed = Runner.run_streamed(_agent(seen), list(ITEMS), run_config=_CONFIG)
        async for _ in streamed.stream_events():
            pass
        return streamed.final_output

    async def durable_run(seen: list[Any], session: Session) -> Any:
        async with _runner(seen).run_streamed(list(ITEMS), session=session) as streamed:
            async for _ in streamed.stream_events():
                pass
        return streamed.final_output

    unwrapped: list[Any] = []
    assert "seen 5 items" == asyncio.run(unwrapped_run(unwrapped))
    durable: list[Any] = []
    session = rt.new_session()
    assert "seen 5 items" == asyncio.run(durable_run(durable, session))
    assert unwrapped[0] == durable[0] == ITEMS
    assert _set(unwrapped) == _set(durable)
    assert rt.replay(session.id, agent=_runner([])).identical


def test_a_pydantic_item_is_given_as_the_client_would_send_it(rt: Runtime) -> None:
    """The SDK alone would hand a pydantic item on as a list of its fields' pairs: a
    durable run records and gives its JSON (what the OpenAI client sends of it)."""
    item = assistant_message("Hello Ada.", item_id="msg-0")
    dumped = item.model_dump(mode="json", exclude_unset=True)
    unwrapped: list[Any] = []
    asyncio.run(Runner.run(_agent(unwrapped), [ITEMS[0], dumped, ITEMS[2]], run_config=_CONFIG))
    durable: list[Any] = []
    session = rt.new_session()
    _runner(durable).run_sync([ITEMS[0], item, ITEMS[2]], session=session)
    assert unwrapped[0] == durable[0]
    assert _set(unwrapped) == _set(durable)
    (started,) = _started(rt, session.id)
    assert [ITEMS[0], dumped, ITEMS[2]] == started.metadata["history"]


def test_with_memory_the_sdk_runs_on_the_memorys_items_then_the_lists(rt: Runtime) -> None:
    async def unwrapped_run(seen: list[Any], memory: SQLiteSession) -> Any:
        return (await Runner.run(_agent(seen), list(ITEMS), run_config=_CONFIG,
                                 session=memory)).final_output  # fmt: skip

    earlier = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hi."}]
    unwrapped: list[Any] = []
    plain = SQLiteSession("plain")
    asyncio.run(plain.add_items(list(earlier)))  # type: ignore[arg-type]
    assert "seen 7 items" == asyncio.run(unwrapped_run(unwrapped, plain))
    durable: list[Any] = []
    memory = SQLiteSession("durable")
    asyncio.run(memory.add_items(list(earlier)))  # type: ignore[arg-type]
    session = rt.new_session()
    result = _runner(durable).run_sync(list(ITEMS), session=session, memory=memory)
    assert "seen 7 items" == result.final_output
    assert unwrapped[0] == durable[0] == [*earlier, *ITEMS]
    assert _set(unwrapped) == _set(durable)
    assert _set(asyncio.run(plain.get_items())) == _set(asyncio.run(memory.get_items()))
    replayed: list[Any] = []
    again = DurableRunner(_agent(replayed), run_config=_CONFIG, memory=SQLiteSession("replay"))
    report = rt.replay(session.id, agent=again)  # the memory's reads come from the recording
    assert report.identical, report.summary()
    assert [] == replayed


# --- the recording ----------------------------------------------------------------------


def test_the_items_are_recorded_in_the_runs_inputs_version_7(rt: Runtime) -> None:
    given = rt.new_session()
    _runner([]).run_sync(list(ITEMS), session=given)
    plain = rt.new_session()
    _runner([]).run_sync("note it", session=plain)

    (with_items,) = _started(rt, given.id)
    assert 7 == with_items.metadata["inputs_version"]
    assert ITEMS == with_items.metadata["history"]
    assert "note it" == with_items.metadata["prompt"]
    assert ["note it"] == _user_nodes(rt, given.id)  # the last user message: the new turn
    (without,) = _started(rt, plain.id)
    assert 6 == without.metadata["inputs_version"]  # what a string input recorded before
    assert "history" not in without.metadata
    assert ["note it"] == _user_nodes(rt, plain.id)
    assert rt.verify(given.id).ok


class _Opaque:
    pass


@pytest.mark.parametrize(
    ("items", "says"),
    [
        ([ITEMS[0], {"role": "user", "content": _Opaque()}], "input item 1"),
        ([{"role": "user", "content": "x", "score": math.nan}], "input item 0"),
        ([{"role": "user", "content": "bad \udc80"}], "input item 0"),
        ([ITEMS[0], "note it"], "input item 1"),
        ([], "empty"),
        ([{"role": "assistant", "content": "Hello."}], "no user message"),
    ],
)
def test_an_input_that_cannot_be_recorded_writes_nothing(
    rt: Runtime, items: list[Any], says: str
) -> None:
    session = rt.new_session()
    before = len(list(rt.store.iter_events(session.id)))
    seen: list[Any] = []
    with pytest.raises(UsageError, match=says):
        _runner(seen).run_sync(items, session=session)
    assert [] == seen
    assert before == len(list(rt.store.iter_events(session.id)))
    assert "seen 3 items" == _runner([]).run_sync("note it", session=session).final_output


def test_a_streamed_run_of_an_input_that_cannot_be_recorded_writes_nothing(rt: Runtime) -> None:
    session = rt.new_session()
    before = len(list(rt.store.iter_events(session.id)))

    async def go() -> None:
        async with _runner([]).run_streamed([{"role": "user", "content": b"x"}], session=session):
            pass

    with pytest.raises(UsageError, match="input item 0"):
        asyncio.run(go())
    assert before == len(list(rt.store.iter_events(session.id)))


# --- replay, resume ---------------------------------------------------------------------


def test_a_replay_hands_the_items_back_and_is_identical(rt: Runtime) -> None:
    session = rt.new_session()
    _runner([]).run_sync(list(ITEMS), session=session)
    replayed: list[Any] = []

    report = rt.replay(session.id, agent=_runner(replayed))

    assert report.identical, report.summary()
    assert [] == replayed  # nothing asked: each request matched the recording's


def _waiting(session: Session) -> None:
    """Run the items to the note's approval; decide it."""
    with pytest.raises(DurableRunFailed) as raised:
        cli_notes().run_sync(list(ITEMS), session=session)
    assert "waiting" == raised.value.outcome.status
    session.decide("call-3", Approve())


def test_a_resume_hands_the_items_back(rt: Runtime) -> None:
    session = rt.new_session()
    _waiting(session)
    resumed: list[Any] = []

    outcome = session.resume(agent=_runner(resumed, approval=True))

    assert ("completed", "seen 5 items") == (outcome.status, outcome.output)
    (asked,) = resumed  # the first request came from the recording; the second is live
    assert ITEMS == asked[:3]
    assert rt.replay(session.id, agent=_runner([], approval=True)).identical


def test_clew_resume_with_the_agent_hands_the_items_back(tmp_path: Path) -> None:
    where = Where(tmp_path / "home", tmp_path)
    with Runtime(where.home, tmp_path) as rt:
        session = rt.new_session()
        _waiting(session)
    here = str(Path(__file__).resolve().parent)
    path = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "helpers"), here])
    resumed = run_process(where, "resume", session.id, "--agent",
                          "test_sdk_input_items:cli_notes", PYTHONPATH=path)  # fmt: skip
    assert 0 == resumed.code, resumed.out + resumed.err
    with Runtime(where.home, tmp_path) as rt:
        assert "completed" == rt.store.read_runs(session.id)[-1].status
        ended = rt.store.read_events(session.id)[-1].event
        assert "seen 5 items" == ended.outcome["output"]  # type: ignore[union-attr]
        assert rt.verify(session.id).ok


# --- a conversation ---------------------------------------------------------------------


def test_a_conversation_goes_on_from_the_last_runs_input_list(rt: Runtime) -> None:
    async def unwrapped_chat(seen: list[Any]) -> Any:
        first = await Runner.run(_agent(seen), "my name is Ada", run_config=_CONFIG)
        again = [*first.to_input_list(), {"role": "user", "content": "note it again"}]
        return (await Runner.run(_agent(seen), again, run_config=_CONFIG)).to_input_list()

    unwrapped: list[Any] = []
    expected = asyncio.run(unwrapped_chat(unwrapped))
    durable: list[Any] = []
    session = rt.new_session()
    runner = _runner(durable)
    first = runner.run_sync("my name is Ada", session=session)
    again = [*first.to_input_list(), {"role": "user", "content": "note it again"}]
    second = runner.run_sync(again, session=session)

    assert again == durable[2]  # the second run's items, as given
    assert _set(unwrapped) == _set(durable)
    assert _set(expected) == _set(second.to_input_list())
    assert "seen 7 items" == second.final_output
    assert [6, 7] == [s.metadata["inputs_version"] for s in _started(rt, session.id)]
    assert ["my name is Ada", "note it again"] == _user_nodes(rt, session.id)
    replayed: list[Any] = []
    report = rt.replay(session.id, agent=_runner(replayed))
    assert report.identical, report.summary()
    assert [] == replayed


def test_a_run_killed_in_its_tool_resumes_from_the_cli_with_its_items(tmp_path: Path) -> None:
    where = Where(tmp_path / "home", tmp_path)
    with Runtime(where.home, tmp_path) as rt:
        sid = rt.new_session().id
    here = str(Path(__file__).resolve().parent)
    path = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "helpers"), here])
    args = f"{str(where.home)!r}, {str(tmp_path)!r}, {sid!r}"
    code = f"import test_sdk_input_items as t; t._child({args})"
    child = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path},
                           capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert -signal.SIGKILL == child.returncode, child.stderr
    resumed = run_process(where, "resume", sid, "--agent",
                          "test_sdk_input_items:cli_idempotent", PYTHONPATH=path)  # fmt: skip
    assert 0 == resumed.code, resumed.out + resumed.err
    with Runtime(where.home, tmp_path) as rt:
        (started,) = _started(rt, sid)
        assert ITEMS == started.metadata["history"]
        ended = rt.store.read_events(sid)[-1].event
        assert "seen 5 items" == ended.outcome["output"]  # type: ignore[union-attr]
        asked = [e for e in rt.store.iter_events(sid) if isinstance(e.event, ModelRequested)]
        assert 2 == len(asked)  # the first request was answered before the kill: not again
        assert rt.verify(sid).ok
