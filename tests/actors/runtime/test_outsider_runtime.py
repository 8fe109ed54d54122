"""What an application hit in the runtime (issue 32): reruns of its sessions (a
``scripted:PATH`` model asked live, a team with typed output), queued runs naming model
specs or unknown recipes, and a recipe that raises while a queued run is built."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pydantic
import pytest
from _runtime_helpers import route, rule, scripted

from actors import ScriptedModel
from actors.errors import UsageError
from actors.orchestration.team import Role, Team
from actors.runtime.runtime import Runtime
from actors.runtime.serving import RecipeContext, Recipes, ServeReport
from eventlog.errors import Refused


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime(tmp_path / "home", tmp_path) as runtime:
        yield runtime


def serve_until_done(rt: Runtime, recipes: Recipes | None = None) -> ServeReport:
    stop = threading.Event()

    def watch() -> None:
        while not all(r.status == "done" for r in rt.queue()):
            time.sleep(0.05)
        stop.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    report = rt.serve(recipes=recipes, stop=stop, poll_s=0.05)
    watcher.join()
    return report


# --- item 6: reruns -----------------------------------------------------------------------


def test_item6_a_rerun_of_a_scripted_path_session_asks_the_model_live(
    rt: Runtime, tmp_path: Path
) -> None:
    script = tmp_path / "model.json"
    script.write_text(json.dumps({"rules": [route(), rule("lead", {"text": "Hello."})]}))
    spec = f"scripted:{script}"
    made = rt.new_session().run("Hi", model=ScriptedModel(script, name=spec))
    assert "completed" == made.status

    # An application's session: no model given; the recorded name is built again.
    report = rt.rerun(made.session_id, prompt="Hi again")

    assert ("completed", "Hello.") == (report.outcome.status, report.outcome.answer)
    assert report.live_calls >= 1


class Answer(pydantic.BaseModel):
    text: str
    confidence: float


def _typed_team() -> Team:
    return Team(roles=[Role("writer", description="writes", output=Answer)], primary="writer")


def test_item6_a_team_with_typed_output_is_rerun_given_its_team(rt: Runtime) -> None:
    model = scripted(
        route(primary_role="writer"),
        rule(
            "writer",
            {"text": "(turn 0 is never asked)"},
            {"json": {"text": "Late.", "confidence": 0.5}},
            {"json": {"text": "Late.", "confidence": 0.5}},
        ),
    )
    session = rt.new_session()
    assert "completed" == session.run("Late?", model=model, team=_typed_team()).status

    with pytest.raises(UsageError, match="pass its team to rerun it"):
        rt.rerun(session.id, instructions={"writer": "Be brief."}, model=model)

    report = rt.rerun(
        session.id, instructions={"writer": "Be brief."}, model=model, team=_typed_team()
    )

    assert "completed" == report.outcome.status
    assert Answer(text="Late.", confidence=0.5) == report.outcome.output  # validated live
    assert report.live_calls >= 1
    assert rt.replay(report.session_id).identical


# --- item 7 and 21: queued runs --------------------------------------------------------------


def test_item7_a_queued_run_takes_a_model_spec_as_clew_run_does(
    rt: Runtime, tmp_path: Path
) -> None:
    script = tmp_path / "model.json"
    script.write_text(json.dumps({"rules": [route(), rule("lead", {"text": "Queued hello."})]}))
    rt.submit("Hi", model=f"scripted:{script}")

    serve_until_done(rt)

    (row,) = rt.queue()
    assert ("completed", None) == (row.outcome, row.error)
    assert row.session_id is not None
    assert rt.replay(row.session_id).identical


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("gpt4:turbo", "no model recipe named 'gpt4:turbo'"),
        ("scripted:/nowhere/at/all.json", "all.json"),
    ],
)
def test_item7_a_model_no_recipe_source_knows_is_refused_at_submit(
    rt: Runtime, model: str, message: str
) -> None:
    with pytest.raises(Refused, match=message):  # UsageError, or ScriptError for a script
        rt.submit("Hi", model=model)
    assert not (rt.home / "coord.sqlite").exists() or [] == rt.queue()


def test_item7_with_the_app_given_its_unknown_names_are_refused_at_submit(rt: Runtime) -> None:
    app = Recipes(models={"support": lambda ctx: scripted(route())})
    rt.submit("Hi", model="support", recipes=app)  # the app knows it
    with pytest.raises(UsageError, match="no model recipe named 'suport'"):
        rt.submit("Hi", model="suport", recipes=app)
    with pytest.raises(UsageError, match="no tools recipe named 'kit'"):
        rt.submit("Hi", model="support", tools="kit", recipes=app)
    assert 1 == len(rt.queue())


def test_item21_a_recipe_that_raises_at_build_leaves_no_empty_session(rt: Runtime) -> None:
    def broken(ctx: RecipeContext) -> ScriptedModel:
        raise RuntimeError("no API key in this environment")

    rt.submit("Hi", model="broken")

    serve_until_done(rt, Recipes(models={"broken": broken}))

    (row,) = rt.queue()
    assert ("error", None) == (row.outcome, row.session_id)
    assert row.error is not None and "no API key" in row.error
    assert [] == rt.store.list_sessions()
