"""From flow 4 a reply stopped with ``error`` (Azure OpenAI's content filter) is a failed
candidate: recorded with its usage, then the chain's next model answers (issue 32, item 4)."""

from __future__ import annotations

from pathlib import Path

from actors import Runtime, ScriptedModel
from eventlog.events import ModelResponded, TokenUsage

PLAN = {"primary_role": "assistant", "workers": []}
FILTERED = {"text": "", "stop_reason": "error"}


def test_a_content_filtered_reply_falls_back_to_the_next_model(tmp_path: Path) -> None:
    strict = ScriptedModel(
        {"rules": [{"role": "router", "replies": [{"json": PLAN}]},
                   {"role": "assistant", "replies": [FILTERED]}]},
        name="scripted:filtered",
    )  # fmt: skip
    lenient = ScriptedModel({"rules": [{"replies": [{"text": "Here you are."}]}]}, name="ok")
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        outcome = session.run("Tell me.", model=[strict, lenient])
        events = [e.event for e in rt.store.read_events(session.id)]
        report = rt.replay(session.id, model=[strict, lenient])

    replies = [(e.model, e.stop_reason) for e in events if isinstance(e, ModelResponded)]
    usage = [e.model for e in events if isinstance(e, TokenUsage)]
    assert "Here you are." == outcome.answer
    assert [("scripted:filtered", "end_turn"), ("scripted:filtered", "error"),
            ("ok", "end_turn")] == replies  # fmt: skip
    assert ["scripted:filtered", "scripted:filtered", "ok"] == usage  # the filtered one billed
    assert report.identical, report.summary()
