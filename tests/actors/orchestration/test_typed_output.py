"""Typed output: a role's reply is validated against its pydantic model, retried once.

Every run goes through ``run_session``: it replays identically with the recorded
verdicts (no model class) and with the team given again (re-validated), and verifies.
"""

from __future__ import annotations

import json

import pydantic
from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.orchestration.team import Role, Team
from actors.runtime.runtime import Runtime
from eventlog.blocks import text_of
from eventlog.events import HandoffSent, NodeAppended, RunEnded, WorkerFailed

PROMPT = "Is the order late?"


class Answer(pydantic.BaseModel):
    text: str
    confidence: float


class Finding(pydantic.BaseModel):
    fact: str


def team() -> Team:
    return Team(
        roles=[
            Role("researcher", description="finds facts", output=Finding),
            Role("writer", description="writes the answer", output=Answer),
        ],
        primary="writer",
    )


GOOD = {"json": {"text": "Yes, two days late.", "confidence": 0.8}}
BAD = {"json": {"text": "Yes"}}  # confidence is missing


def writer_replies(*replies: dict[str, object]) -> dict[str, object]:
    # The primary's first call is turn 1: the Brain's conversation holds the router's reply.
    return rule("writer", {"text": "(turn 0 is never asked)"}, *replies)


def test_a_valid_typed_reply_is_the_outcomes_output(rt: Runtime) -> None:
    model = scripted(route(primary_role="writer"), writer_replies(GOOD))

    s = run_session(rt, PROMPT, model, team=team())

    assert Answer(text="Yes, two days late.", confidence=0.8) == s.outcome.output
    assert {"text": "Yes, two days late.", "confidence": 0.8} == json.loads(s.outcome.answer)
    last = [n.node for n in s.of(NodeAppended, s.brain_run)][-1]
    assert {"output": "valid"} == last.metadata
    (request,) = [r for r in s.requests() if r.role == "writer"]
    assert '"required": ["text", "confidence"]' in request.system  # the schema is told


def test_an_invalid_reply_is_fed_back_once_and_the_second_reply_counts(rt: Runtime) -> None:
    model = scripted(route(primary_role="writer"), writer_replies(BAD, GOOD))

    s = run_session(rt, PROMPT, model, team=team())

    assert "completed" == s.outcome.status
    assert 0.8 == s.outcome.output.confidence
    nodes = [n.node for n in s.of(NodeAppended, s.brain_run)]
    invalid, fed_back, valid = nodes[-3:]
    assert {"output_error": "invalid output at confidence: Field required"} == invalid.metadata
    assert ("user", "system_note") == (fed_back.role, fed_back.node_type)
    assert "invalid output at confidence: Field required" in text_of(fed_back.content)
    assert {"output": "valid"} == valid.metadata


def test_a_primary_whose_reply_stays_invalid_fails_the_run_with_the_reason(rt: Runtime) -> None:
    model = scripted(route(primary_role="writer"), writer_replies(BAD, {"text": "no JSON"}))

    s = run_session(rt, PROMPT, model, team=team())

    assert "failed" == s.outcome.status
    (ended,) = s.of(RunEnded, s.brain_run)
    assert ("failed", "OutputInvalid") == (ended.status, (ended.error or {})["type"])
    assert "role 'writer': the reply is not JSON" in (ended.error or {})["message"]


def test_a_typed_worker_answers_with_its_json_and_a_stubborn_one_fails(rt: Runtime) -> None:
    model = scripted(
        route([worker("w1", "researcher", "Check A"), worker("w2", "researcher", "Check B")]),
        rule("researcher", {"json": {"fact": "A shipped."}}, contains="Check A"),
        rule("researcher", {"text": "B? no idea"}, contains="Check B"),
        rule("researcher", {"text": "Still no idea."}, contains="Reply again"),  # the feedback
        writer_replies(GOOD),
    )

    s = run_session(rt, PROMPT, model, team=team())

    w1, w2 = s.outcome.worker_results
    assert ("completed", '{"fact":"A shipped."}') == (w1.status, w1.summary)
    assert "failed" == w2.status
    (failed,) = s.of(WorkerFailed, s.worker_run("w2"))
    assert "OutputInvalid" == failed.error_type
    # The handoff asks for the schema instead of the generic reply shape.
    handoff = s.of(HandoffSent)[0].packet
    assert handoff.expected_result.startswith("Reply with only a JSON value")
    assert '"fact"' in handoff.expected_result
