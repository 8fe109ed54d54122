"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``)
against ``ClewSaver`` on a real home: every base and every extended capability."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from actors.langgraph import ClewSaver


def test_clew_saver_passes_the_conformance_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    homes = itertools.count()

    @checkpointer_test(name="ClewSaver")
    async def clew_saver() -> AsyncGenerator[ClewSaver, None]:
        saver = ClewSaver.from_home(tmp_path / f"home{next(homes)}")
        try:
            yield saver
        finally:
            saver.close()

    report = asyncio.run(validate(clew_saver, progress=ProgressCallbacks.verbose()))
    report.print_report()
    with capsys.disabled():
        print(capsys.readouterr().out)

    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert {} == failures
    assert report.passed_all_base()
    for capability in EXTENDED_CAPABILITIES | BASE_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected, capability
        assert result.passed is True, capability
