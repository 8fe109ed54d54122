"""The pytest plugin: ``pytest --clew-replay DIR`` replays each bundle as one test item, a
diverging one failing with the divergence report; ``--junitxml`` carries it;
``--clew-rerecord`` accepts an intended change without running the agent live again.

Each test runs a real inner pytest (``pytester``) over a folder of real bundles."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import importlib.metadata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.orchestration.team import Role, Team
from actors.runtime.bundles.files import export_bundle, read_bundle
from actors.runtime.runtime import Runtime

pytest_plugins = ["pytester"]

PLUGIN = "actors.testing.pytest_plugin"
TODAY = "Plan well: one worker per question."
CONFTEST = f"""
from pathlib import Path

from actors.demo import demo_model, demo_tools
from actors.orchestration.team import Role, Team
from actors.runtime.bundles.replay import App


def pytest_clew_app(config, path):
    tools = demo_tools(Path(str(config.rootpath)))
    team = Team(router=Role("router", instructions={TODAY!r}), tools=tools)
    return App(team=team, tools=tools, model=demo_model(2))
"""


def _plugin_args() -> list[str]:
    """``-p`` the plugin unless the installed clew registers it (its pytest11 entry point)."""
    installed = importlib.metadata.entry_points(group="pytest11")
    return [] if any(ep.value == PLUGIN for ep in installed) else ["-p", PLUGIN]


def _bundle(tmp: Path, folder: Path, name: str, router: str) -> str:
    project = tmp / f"proj-{name}"
    project.mkdir()
    home = tmp / f"home-{name}"
    tools = demo_tools(project)
    with Runtime(home, project) as rt:
        session = rt.new_session()
        team = Team(router=Role("router", instructions=router), tools=tools)
        out = session.run(DEMO_PROMPT, model=demo_model(2), tools=tools, team=team)
        assert "completed" == out.status
    export_bundle(home, session.id, folder / f"{name}.clew", project)
    return session.id


@pytest.fixture
def sessions(pytester: pytest.Pytester, tmp_path: Path) -> tuple[Path, str, str]:
    """A folder of two bundles: one recorded with today's router, one with an older one."""
    pytester.makeconftest(CONFTEST)
    folder = pytester.path / "sessions"
    folder.mkdir()
    same = _bundle(tmp_path, folder, "same", TODAY)
    edited = _bundle(tmp_path, folder, "edited", "Plan.")
    return folder, same, edited


def test_a_clean_bundle_passes_and_an_edited_instruction_fails_with_its_unified_diff(
    pytester: pytest.Pytester, sessions: tuple[Path, str, str]
) -> None:
    folder, same, edited = sessions
    result = pytester.runpytest(*_plugin_args(), "--clew-replay", str(folder), "-rA")

    result.assert_outcomes(passed=1, failed=1)
    text = result.stdout.str()
    assert f"PASSED sessions/same.clew::{same}" in text
    assert f"FAILED sessions/edited.clew::{edited}" in text
    result.stdout.fnmatch_lines(
        ["*first divergence: seq *", "*system changed:", "*-Plan.", f"*+{TODAY}"]
    )


def test_without_the_flag_a_bundle_is_not_collected(
    pytester: pytest.Pytester, sessions: tuple[Path, str, str]
) -> None:
    folder, _, _ = sessions
    result = pytester.runpytest(*_plugin_args(), str(folder))
    assert [] == [line for line in result.outlines if "passed" in line or "failed" in line]
    assert 5 == result.ret  # pytest's "no tests collected"


def test_junit_xml_holds_a_testsuite_with_a_testcase_per_session_and_the_failure(
    pytester: pytest.Pytester, sessions: tuple[Path, str, str]
) -> None:
    folder, same, edited = sessions
    xml = pytester.path / "junit.xml"
    pytester.runpytest(*_plugin_args(), "--clew-replay", str(folder), f"--junitxml={xml}")

    root = ET.parse(xml).getroot()
    [suite] = root.iter("testsuite") if root.tag == "testsuites" else [root]
    assert ("2", "1") == (suite.get("tests"), suite.get("failures"))
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert {same, edited} == set(cases)
    assert all(c.get("classname") is not None and c.get("time") for c in cases.values())
    assert cases[same].find("failure") is None
    failure = cases[edited].find("failure")
    assert failure is not None
    assert failure.get("message")
    assert f"+{TODAY}" in (failure.text or "")


def test_rerecord_accepts_the_change_and_the_folder_then_passes(
    pytester: pytest.Pytester, sessions: tuple[Path, str, str]
) -> None:
    folder, _, edited = sessions
    before = (folder / "same.clew").read_bytes()

    accepted = pytester.runpytest(*_plugin_args(), "--clew-replay", "--clew-rerecord",
                                  str(folder), "-rA")  # fmt: skip
    accepted.assert_outcomes(passed=2)
    accepted.stdout.fnmatch_lines(["*re-recorded edited.clew: * served, * asked live*"])
    assert before == (folder / "same.clew").read_bytes()
    bundle = read_bundle(folder / "edited.clew")
    assert edited == bundle.header.sessions[0]  # the old recording travels as its parent
    assert edited != bundle.session_id

    again = pytester.runpytest(*_plugin_args(), "--clew-replay", str(folder))
    again.assert_outcomes(passed=2)


def test_the_clew_replay_fixture_replays_one_bundle_in_a_custom_test(
    pytester: pytest.Pytester, sessions: tuple[Path, str, str]
) -> None:
    folder, _, _ = sessions
    pytester.makepyfile(
        test_custom=f"""
        def test_same(clew_replay):
            assert clew_replay({str(folder / "same.clew")!r}).identical

        def test_edited(clew_replay):
            report = clew_replay({str(folder / "edited.clew")!r})
            assert not report.identical
            assert report.first_divergence.event_type == "model_requested"
        """
    )
    result = pytester.runpytest(*_plugin_args(), "test_custom.py")
    result.assert_outcomes(passed=2)


def test_clew_rerecord_of_a_bundle_that_replays_identically_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from actors.cli.main import main  # noqa: PLC0415

    folder = tmp_path / "sessions"
    folder.mkdir()
    _bundle(tmp_path, folder, "plain", TODAY)
    file = folder / "plain.clew"
    team = tmp_path / "team.toml"
    team.write_text(f'tools = ["lookup", "save_note"]\n\n[router]\ninstructions = "{TODAY}"\n')
    before = file.read_bytes()

    code = main(["rerecord", str(file), "--team", str(team)])
    out, err = capsys.readouterr()

    assert 0 == code, err
    assert "nothing to re-record" in out
    assert before == file.read_bytes()
    assert 2 == main(["rerecord", str(file)])
    assert "needs --team FILE" in capsys.readouterr().err


def test_an_altered_bundle_is_a_collection_error_of_one_line(
    pytester: pytest.Pytester, sessions: tuple[Path, str, str]
) -> None:
    import gzip  # noqa: PLC0415

    folder, _, _ = sessions
    data = gzip.decompress((folder / "same.clew").read_bytes())
    (folder / "same.clew").write_bytes(gzip.compress(data.replace(b"completed", b"complated", 1)))
    result = pytester.runpytest(*_plugin_args(), "--clew-replay", str(folder))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*same.clew was altered since it was written (digest differs)"])
    assert "Traceback" not in result.stdout.str()
