"""The project instruction file: recorded once, in the worker and primary prompts, listed in
each handoff's ``context_refs``; a replay never reads it again."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.errors import UsageError
from actors.recording.inputs import RunInputs, RunSettings
from actors.runtime.runtime import Runtime
from eventlog.blocks import TextBlock
from eventlog.events import HandoffSent, RunStarted
from eventlog.packets import ContextRef

RULES = "Always answer in French.\nNever touch the billing module.\n"


def project(rt: Runtime) -> Path:
    rt.project_dir.mkdir(parents=True, exist_ok=True)
    return rt.project_dir


def model() -> object:
    return scripted(
        route([worker("w1", "scout", "Look"), worker("w2", "writer", "Write", deps=["w1"])]),
        rule("scout", {"text": "Found it."}),
        rule("writer", {"text": "Wrote it."}),
    )


def inputs_of(rt: Runtime, sid: str, run_id: str) -> RunInputs:
    (started,) = [
        e.event
        for e in rt.store.read_events(sid)
        if isinstance(e.event, RunStarted) and e.run_id == run_id
    ]
    return RunInputs.from_metadata(started.metadata)


def test_the_instruction_file_is_in_the_worker_and_primary_prompts_and_the_handoffs(
    rt: Runtime,
) -> None:
    (project(rt) / "AGENTS.md").write_text(RULES)

    s = run_session(rt, "Fix the bug.", model())

    context = inputs_of(rt, s.sid, s.brain_run).context
    assert context is not None and context.instructions is not None
    assert ("AGENTS.md", RULES, False) == (
        context.instructions.path,
        context.instructions.text,
        context.instructions.truncated,
    )
    for run_id in s.worker_runs():
        first = s.requests(run_id)[0].messages[0].content[0]
        assert isinstance(first, TextBlock)
        assert first.text.startswith(
            "# Project instructions (AGENTS.md)\n\nAlways answer in French."
        )
    (primary,) = [r for r in s.requests(s.brain_run) if r.role == "lead"]
    assert "Never touch the billing module." in primary.system
    (router,) = [r for r in s.requests(s.brain_run) if r.role == "router"]
    assert "billing" not in router.system
    sha = hashlib.sha256(RULES.encode()).hexdigest()[:12]
    instructions = ContextRef(
        kind="file",
        uri="AGENTS.md",
        label=f"project instructions, {len(RULES)} bytes, sha256 {sha}",
    )
    refs = [h.packet.task.context_refs for h in s.of(HandoffSent)]
    assert [
        [instructions],
        [
            instructions,
            ContextRef(kind="summary", uri=f"worker:{s.ctx('w1')}", label="result (completed)"),
        ],
    ] == refs


def test_a_replay_uses_the_recorded_text_not_the_file(rt: Runtime) -> None:
    (project(rt) / "AGENTS.md").write_text(RULES)
    s = run_session(rt, "Fix the bug.", model())
    (project(rt) / "AGENTS.md").write_text("Something else entirely.")

    assert rt.replay(s.sid).identical
    (project(rt) / "AGENTS.md").unlink()
    assert rt.replay(s.sid).identical


def test_a_long_file_is_clipped_to_the_byte_budget_at_a_character(rt: Runtime) -> None:
    (project(rt) / "AGENTS.md").write_text("é" * 100)  # 200 bytes

    s = run_session(rt, "Hi.", model(), settings=RunSettings(instructions_max_bytes=51))

    found = inputs_of(rt, s.sid, s.brain_run).context.instructions  # type: ignore[union-attr]
    assert found is not None
    assert ("é" * 25, 200, True) == (found.text, found.size_bytes, found.truncated)


def test_no_file_or_no_name_means_no_section_and_another_name_may_be_chosen(rt: Runtime) -> None:
    (project(rt) / "CLAUDE.md").write_text(RULES)
    s = run_session(rt, "Hi.", model())
    assert None is inputs_of(rt, s.sid, s.brain_run).context.instructions  # type: ignore[union-attr]

    s = run_session(rt, "Hi.", model(), settings=RunSettings(instructions_file="CLAUDE.md"))
    found = inputs_of(rt, s.sid, s.brain_run).context.instructions  # type: ignore[union-attr]
    assert found is not None and RULES == found.text


@pytest.mark.parametrize("name", ["../outside.md", "/etc/passwd"])
def test_an_instruction_file_outside_the_project_is_refused_before_anything_is_written(
    rt: Runtime, name: str
) -> None:
    session = rt.new_session()
    with pytest.raises(UsageError, match="must be a path inside the project"):
        session.run("Hi.", model=model(), settings=RunSettings(instructions_file=name))  # type: ignore[arg-type]
    assert [] == rt.store.read_runs(session.id)


def test_a_budget_outside_zero_to_one_is_refused(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    with pytest.raises(UsageError, match=r"context_budget must be in \(0, 1\]"):
        session.run("Hi.", model=model(), settings=RunSettings(context_budget=1.5))  # type: ignore[arg-type]
