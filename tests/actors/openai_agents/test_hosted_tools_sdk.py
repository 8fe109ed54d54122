"""Hosted tools of the Agents SDK (``WebSearchTool``, ``FileSearchTool``) run on the model
provider's side: their calls and results arrive as items of the model's response. clew's
recording model keeps those items exactly (the recorded ``ModelResponse``), so a resume
hands the SDK the same items, and the next request (which carries them as input) is the
same on a replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FileSearchTool, RunConfig, WebSearchTool, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage
from openai.types.responses import ResponseFileSearchToolCall, ResponseFunctionWebSearch
from openai.types.responses.response_file_search_tool_call import Result
from openai.types.responses.response_function_web_search import ActionSearch

from actors import Approve
from actors.errors import DurableRunFailed
from actors.openai_agents import DurableRunner
from actors.openai_agents.messages import response_blocks, response_of
from actors.runtime.runtime import Runtime
from eventlog.blocks import JsonBlock
from eventlog.events import ModelResponded

PROMPT = "What does the handbook say about refunds? Search the web too."
WEB = ResponseFunctionWebSearch(
    id="ws_1",
    action=ActionSearch(type="search", query="refund policy"),
    status="completed",
    type="web_search_call",
)
FILES = ResponseFileSearchToolCall(
    id="fs_1",
    queries=["refunds"],
    status="completed",
    type="file_search_call",
    results=[Result(file_id="file-1", filename="handbook.md", score=0.9, text="30 days.")],
)


class HostedModel(Model):  # type: ignore[misc]
    """A fake model whose first reply holds hosted tool calls (with their results), a
    message and a local tool call; its second answers. It keeps every input it is given."""

    def __init__(self) -> None:
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(input)
        usage = Usage(requests=1, input_tokens=7, output_tokens=3, total_tokens=10)
        if len(self.inputs) == 1:
            note = function_call("file_note", {"text": "30 days"}, call_id="call-1")
            said = assistant_message("The handbook says 30 days.", item_id="msg-1")
            return ModelResponse(output=[WEB, FILES, said, note], usage=usage, response_id="r1")
        done = assistant_message("Refunds within 30 days.", item_id="msg-2")
        return ModelResponse(output=[done], usage=usage, response_id="r2")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _runner(model: HostedModel, approval: bool = False) -> DurableRunner:
    @function_tool(needs_approval=approval)
    def file_note(text: str) -> str:
        """File a note."""
        return "filed"

    tools = [WebSearchTool(), FileSearchTool(vector_store_ids=["vs_1"]), file_note]
    agent = Agent(name="researcher", model=model, tools=tools)
    return DurableRunner(agent, run_config=RunConfig(tracing_disabled=True))


def _hosted(items: Any) -> list[dict[str, Any]]:
    """The hosted tool items among a model input's items, as JSON."""
    dumped = [i if isinstance(i, dict) else i.model_dump() for i in items]
    return [i for i in dumped if i.get("type") in ("web_search_call", "file_search_call")]


def test_a_recorded_reply_gives_back_the_hosted_tool_items_field_for_field() -> None:
    usage = Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2)
    said = assistant_message("done", item_id="msg-1")
    response = ModelResponse(output=[WEB, FILES, said], usage=usage, response_id="r1")

    blocks = response_blocks(response)
    back = response_of(blocks)

    assert [WEB, FILES, said] == back.output
    assert isinstance(back.output[0], ResponseFunctionWebSearch)
    assert isinstance(back.output[1], ResponseFileSearchToolCall)
    readable = [b for b in blocks if isinstance(b, JsonBlock)][:2]  # the timeline's view
    assert ["web_search_call", "file_search_call"] == [b.summary for b in readable]
    assert "handbook.md" == readable[1].data["results"][0]["filename"]


def test_hosted_tool_items_are_recorded_and_the_next_request_replays_identically(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        model = HostedModel()
        result = _runner(model).run_sync(PROMPT, session=session)
        assert "Refunds within 30 days." == result.final_output
        assert [WEB, FILES] == [i.raw_item for i in result.new_items[:2]]
        first = next(e.event for e in rt.store.iter_events(session.id)
                     if isinstance(e.event, ModelResponded))  # fmt: skip
        assert [WEB, FILES] == response_of(first.content).output[:2]
        sent = _hosted(model.inputs[1])  # the SDK sends the hosted items back as input
        assert [WEB.model_dump(), FILES.model_dump()] == sent

        again = HostedModel()
        report = rt.replay(session.id, agent=_runner(again))
        assert report.identical, report.summary()
        assert [] == again.inputs  # the replay asked the model nothing
        assert rt.verify(session.id).ok


def test_a_resume_hands_the_sdk_the_recorded_hosted_items(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        live = HostedModel()
        with pytest.raises(DurableRunFailed):  # the local tool waits for a person
            _runner(live, approval=True).run_sync(PROMPT, session=session)
        assert 1 == len(live.inputs)
        rt.decide(session.id, "call-1", Approve())

        resumed = HostedModel()
        resumed.inputs.append("asked before the wait")  # its next reply is the second
        outcome = rt.resume(session.id, agent=_runner(resumed, approval=True))
        assert "completed" == outcome.status, outcome.error
        assert "Refunds within 30 days." == outcome.output
        (_, second) = resumed.inputs  # only the request after the wait went live
        assert [WEB.model_dump(), FILES.model_dump()] == _hosted(second)
        report = rt.replay(session.id, agent=_runner(HostedModel(), approval=True))
        assert report.identical, report.summary()
