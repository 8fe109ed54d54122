"""JUnit XML of replays (``clew replay --all --junit FILE``): one ``testsuite``, one
``testcase`` a session, a ``failure`` holding the divergence report when it diverged —
what CI dashboards (GitLab, Jenkins, GitHub test reporters) read."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from actors.cli.render import replay_lines
from actors.replay.report import ReplayReport


def junit_xml(reports: Sequence[ReplayReport], *, suite: str = "clew replay") -> bytes:
    """The JUnit XML document of ``reports``."""
    failures = sum(not r.identical for r in reports)
    root = ET.Element("testsuites", name=suite, tests=str(len(reports)), failures=str(failures))
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(reports)),
                         failures=str(failures), errors="0", skipped="0", time="0")  # fmt: skip
    for report in reports:
        case = ET.SubElement(
            node, "testcase", classname="clew.replay", name=report.session_id, time="0"
        )
        if not report.identical:
            failure = ET.SubElement(case, "failure", message=report.summary(), type="divergence")
            failure.text = "\n".join(replay_lines(report))
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def write_junit(path: str, reports: Sequence[ReplayReport]) -> None:
    """Write :func:`junit_xml` of ``reports`` to ``path``."""
    Path(path).write_bytes(junit_xml(reports))
