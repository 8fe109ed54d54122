"""Flow 4: a plan of no workers hands the primary the request again (issue 32, item 10).

Before, the primary's conversation ended with its own plan and a bare user turn "No
workers ran." — the line a real model then answers instead of the question.
"""

from __future__ import annotations

from pathlib import Path

from actors import ModelRequest, ModelResponse, Runtime, ScriptedModel
from actors.recording.inputs import FLOW
from eventlog.blocks import TextBlock

SCRIPT = {
    "rules": [
        {"role": "router", "replies": [{"json": {"primary_role": "assistant", "workers": []}}]},
        {"role": "assistant", "replies": [{"text": "Lisbon."}]},
    ]
}


class Spy:
    """The scripted model, keeping every request it was asked."""

    def __init__(self) -> None:
        self.inner = ScriptedModel(SCRIPT)
        self.name = self.inner.name
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.inner.complete(request)


def test_with_no_workers_the_primarys_last_turn_is_the_request_again(tmp_path: Path) -> None:
    spy = Spy()
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        outcome = session.run("What is the capital of Portugal?", model=spy)
        report = rt.replay(session.id)

    primary = [r for r in spy.requests if r.role == "assistant"][-1]
    last = primary.messages[-1]
    assert 4 == FLOW
    assert ("completed", "Lisbon.") == (outcome.status, outcome.answer)
    assert "user" == last.role
    assert [TextBlock(text="No workers ran. Answer the request yourself:\n\n"
                      "What is the capital of Portugal?")] == last.content  # fmt: skip
    assert report.identical, report.summary()
