"""Each streamed ``TextDelta`` says which role and phase its call is (issue 32, item 9):
a UI keeps the primary's answer apart from the router's plan and the workers' replies."""

from __future__ import annotations

from pathlib import Path

from actors import Runtime, ScriptedModel, TextDelta

PLAN = '{"primary_role": "lead", "workers": [{"id": "w1", "role": "researcher", "goal": "Look"}]}'
SCRIPT = {
    "rules": [
        {"role": "router", "replies": [{"text": PLAN}]},  # text, so it streams as a real one
        {"role": "researcher", "replies": [{"text": "Three facts."}]},
        {"role": "lead", "replies": [{"text": "The answer from the facts."}]},
    ]
}


def test_every_text_delta_names_its_role_and_phase(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        handle = session.start("Research it", model=ScriptedModel(SCRIPT))
        deltas = [item for item in handle.stream() if isinstance(item, TextDelta)]
        outcome = handle.result()

    by_role: dict[tuple[str, str], str] = {}
    for d in deltas:
        by_role[(d.role, d.phase)] = by_role.get((d.role, d.phase), "") + d.text
    primary = "".join(d.text for d in deltas if d.phase == "primary")
    assert "The answer from the facts." == outcome.answer == primary
    # The router's pieces may stream before stream() is first asked: judged when there.
    plan = by_role.pop(("router", "route"), None)
    assert plan is None or plan.startswith('{"primary_role"')
    assert {("researcher", "worker"): "Three facts.", ("lead", "primary"): primary} == by_role
