"""Where clew's log records go: an app's structlog configuration is kept and receives
them; else the stdlib logger of their name; nothing is configured at import, and nothing
ever reaches stdout."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog
from _cli_helpers import Where, invoke
from _processes import child_env
from structlog.typing import EventDict, WrappedLogger

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.logs import get_logger

DIGEST = {"run_started", "run_ended", "worker_started", "worker_ended", "model_call", "tool_call"}


def _run_demo(tmp_path: Path) -> str:
    (tmp_path / "project").mkdir(exist_ok=True)
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()
        outcome = session.run(
            DEMO_PROMPT, model=demo_model(2), tools=demo_tools(tmp_path / "project")
        )
        assert "completed" == outcome.status
        return session.id


def _configure_like_an_app(captured: list[EventDict]) -> None:
    def mark(_logger: WrappedLogger, _name: str, event_dict: EventDict) -> EventDict:
        event_dict["seen_by"] = "the app"
        return event_dict

    def sink(_logger: WrappedLogger, _name: str, event_dict: EventDict) -> str:
        captured.append(dict(event_dict))
        raise structlog.DropEvent

    structlog.configure(
        processors=[structlog.processors.add_log_level, mark, sink],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
    )


def _refuse_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**_kw: Any) -> None:
        raise AssertionError("clew called structlog.configure")

    monkeypatch.setattr(structlog, "configure", refuse)


def test_an_app_that_configured_structlog_keeps_its_processors_and_gets_clew_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    captured: list[EventDict] = []
    _configure_like_an_app(captured)
    before = structlog.get_config()
    _refuse_configure(monkeypatch)

    sid = _run_demo(tmp_path)

    assert before == structlog.get_config()
    digest = [e for e in captured if e["event"] in DIGEST]
    assert {"run_started", "worker_ended", "model_call", "tool_call"} <= {
        e["event"] for e in digest
    }
    assert all(e["seen_by"] == "the app" and e["session_id"] == sid for e in digest)
    assert all(e["level"] == "info" for e in digest)


def test_the_cli_called_by_such_an_app_leaves_its_structlog_configuration_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    captured: list[EventDict] = []
    _configure_like_an_app(captured)
    before = structlog.get_config()
    _refuse_configure(monkeypatch)
    where = Where(tmp_path / "home", tmp_path / "project")
    where.project.mkdir()

    result = invoke(where, "--log-level", "debug", "--log-format", "json", "demo", "--json")

    assert (0, "") == (result.code, result.err)  # the app's pipeline took every record
    assert before == structlog.get_config()
    assert "model_call" in {e["event"] for e in captured}


def test_unconfigured_structlog_sends_clew_lines_to_the_stdlib_logger_of_their_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="clew")

    sid = _run_demo(tmp_path)

    digest = [r for r in caplog.records if r.name == "clew.run"]
    assert {"run_started", "model_call", "tool_call", "run_ended"} <= {
        r.getMessage().split()[0] for r in digest
    }
    assert all(f"session_id={sid}" in r.getMessage() for r in digest)
    assert all(r.levelno == logging.INFO for r in digest)


def test_the_stdlib_level_decides_as_for_any_library(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="clew")
    log = get_logger("clew.test").bind(session_id="s1")

    log.info("chatty")
    log.warning("careful", detail="a b")

    assert [("clew.test", "careful detail='a b' session_id=s1")] == [
        (r.name, r.getMessage()) for r in caplog.records
    ]


_CHILD = """
import logging, sys
import structlog
import actors, actors.cli, eventlog.logs
print(structlog.is_configured(), logging.getLogger().handlers, logging.getLogger("clew").handlers)
log = eventlog.logs.get_logger("clew.test")
log.info("chatty")
log.warning("careful", n=1)
"""


def test_importing_clew_configures_nothing_and_a_warning_goes_to_stderr_not_stdout() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (0, "False [] []\n", "careful n=1\n") == (done.returncode, done.stdout, done.stderr)
