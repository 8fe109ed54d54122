"""The CLI's logs: on stderr only, one info line per run, worker, model call and tool call
(``--log-level info``), JSON lines with ``--log-format json`` / ``$CLEW_LOG_FORMAT``, and a
quiet stderr by default."""

from __future__ import annotations

import json
from collections import Counter

from _cli_helpers import Where, invoke, run_process

from actors.cli.output import one_line

DIGEST = ("run_started", "run_ended", "worker_started", "worker_ended", "model_call", "tool_call")


def _stored_counts(where: Where, sid: str) -> dict[str, int]:
    rows = [json.loads(x) for x in invoke(where, "export", sid).out.splitlines()]
    types = Counter(r["event_type"] for r in rows)
    main_runs = sum(
        1 for r in rows if r["event_type"] == "run_started" and r["run_id"].count("/") == 0
    )
    workers = types["run_started"] - main_runs
    return {
        "run_started": main_runs,
        "run_ended": main_runs,
        "worker_started": workers,
        "worker_ended": workers,
        "model_call": types["model_responded"] + types["model_failed"],
        "tool_call": types["tool_call_finished"] + types["tool_failed"],
    }


def test_a_demo_at_info_logs_one_line_per_run_worker_model_and_tool_call_on_stderr(
    empty: Where,
) -> None:
    result = run_process(empty, "--log-level", "info", "demo", "--json")

    assert 0 == result.code, result.err
    sid = result.json()["session_id"]  # stdout is still exactly one JSON document
    assert not any(name in result.out for name in DIGEST)
    # A console line: ``<timestamp> [info     ] <name>  key=value …``
    names = Counter(line.split("] ", 1)[1].split()[0] for line in result.err_lines())
    assert _stored_counts(empty, sid) == {name: names[name] for name in DIGEST}
    assert set(names) == set(DIGEST)  # nothing else at info (task_wal_opened is debug now)
    for line in result.err_lines():
        assert f"session_id={sid}" in line and " run_id=" in line and " agent_id=" in line


def test_json_log_lines_parse_and_carry_the_ids_tokens_and_durations(empty: Where) -> None:
    result = run_process(empty, "demo", CLEW_LOG_LEVEL="info", CLEW_LOG_FORMAT="json")

    assert 0 == result.code, result.err
    records = [json.loads(line) for line in result.err_lines()]
    assert {"clew.run"} == {r["logger"] for r in records}
    assert {"info"} == {r["level"] for r in records}
    model = next(r for r in records if r["event"] == "model_call")
    assert {"session_id", "run_id", "agent_id", "role", "model", "input_tokens"} <= set(model)
    assert {"output_tokens", "ms", "ok", "timestamp"} <= set(model)
    tool = next(r for r in records if r["event"] == "tool_call")
    assert {"tool": "lookup", "ok": True} == {k: tool[k] for k in ("tool", "ok")}
    assert isinstance(tool["ms"], float)


def test_the_log_format_flag_gives_json_lines_in_process_too(empty: Where) -> None:
    result = invoke(empty, "--log-format", "json", "--log-level", "info", "demo", "--json")

    assert 0 == result.code, result.err
    events = [json.loads(line)["event"] for line in result.err_lines()]
    assert "run_ended" == events[-1]


def test_by_default_a_successful_demo_writes_nothing_on_stderr(empty: Where) -> None:
    result = invoke(empty, "demo")

    assert (0, "") == (result.code, result.err)


def test_a_bad_log_format_variable_is_one_line_and_exit_2(empty: Where) -> None:
    result = run_process(empty, "sessions", CLEW_LOG_FORMAT="xml")

    assert (2, "") == (result.code, result.out)
    assert ["error: $CLEW_LOG_FORMAT must be one of console, json, not 'xml'"] == [
        one_line(x) for x in result.err_lines()
    ]
