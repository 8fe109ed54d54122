"""``clew replay --all --junit FILE``: JUnit XML with the structure the JUnit schema
requires (testsuites/testsuite/testcase, a failure holding the divergence report)."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from _cli_helpers import Where, invoke

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.orchestration.team import Team
from actors.runtime.runtime import Runtime

TEAM = 'instructions = "{text}"\ntools = ["lookup", "save_note"]\n'


def _session(where: Where, instructions: str) -> str:
    with Runtime(where.home, where.project) as rt:
        tools = demo_tools(where.project)
        session = rt.new_session()
        team = Team(instructions=instructions, tools=tools)
        assert "completed" == session.run(DEMO_PROMPT, model=demo_model(2), tools=tools,
                                          team=team).status  # fmt: skip
        return session.id


def test_junit_xml_has_a_testcase_per_session_and_a_failure_with_the_diff(
    empty: Where, tmp_path: Path
) -> None:
    same, edited = _session(empty, "Be brief."), _session(empty, "Be long.")
    team = tmp_path / "team.toml"
    team.write_text(TEAM.format(text="Be brief."))
    out = tmp_path / "junit.xml"

    result = invoke(empty, "replay", "--all", "--team", str(team), "--junit", str(out))

    assert 1 == result.code, result.err
    root = ET.parse(out).getroot()
    assert "testsuites" == root.tag
    [suite] = root.findall("testsuite")
    assert {"name", "tests", "failures", "errors"} <= set(suite.attrib)
    assert ("2", "1") == (suite.get("tests"), suite.get("failures"))
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert {same, edited} == set(cases)
    assert all({"classname", "name", "time"} <= set(c.attrib) for c in cases.values())
    assert [] == list(cases[same])
    [failure] = list(cases[edited])
    assert "failure" == failure.tag
    assert failure.get("message")
    assert "-Be long." in (failure.text or "")
    assert "+Be brief." in (failure.text or "")


def test_junit_of_one_identical_session_has_no_failure(empty: Where, tmp_path: Path) -> None:
    sid = _session(empty, "Be brief.")
    out = tmp_path / "one.xml"
    assert 0 == invoke(empty, "replay", sid, "--junit", str(out)).code
    [case] = ET.parse(out).getroot().iter("testcase")
    assert (sid, []) == (case.get("name"), list(case))
