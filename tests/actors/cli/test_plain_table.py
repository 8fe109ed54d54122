"""``clew sessions``'s table off a terminal, written without rich
(:mod:`actors.cli.plain_table`), is byte for byte what rich draws — or rich draws it."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from actors.cli import render
from actors.cli.plain_table import plain_output, sessions_text
from actors.runtime.status import SessionInfo


def drawn_by_rich(infos: list[SessionInfo], scenarios: dict[str, str]) -> str:
    """The table as ``clew sessions`` prints it with rich off a terminal."""
    out = io.StringIO()
    console = Console(file=out, highlight=False, emoji=False, width=200, soft_wrap=True)
    console.print(render.sessions_table(infos, scenarios))
    return out.getvalue()


def info(sid: str, status: str, *, runs: int, events: int, archived: bool) -> SessionInfo:
    return SessionInfo(
        session_id=sid,
        status=status,
        created_at="2026-06-12T16:00:00.123456+00:00",
        updated_at="2026-06-12T16:00:01.5+00:00",
        interrupted=status == "interrupted",
        runs=runs,
        events=events,
        active_node_id=None,
        main_runs=runs,
        lifecycle="archived" if archived else "active",
    )


def shapes(seed: int) -> tuple[list[SessionInfo], dict[str, str]]:
    """A list of 1-10 sessions of varied widths (long ids, wide counts, scenario names
    around the column's limit, archived ones, text that looks like rich markup)."""
    rnd = random.Random(seed)
    infos, scenarios = [], {}
    for k in range(rnd.choice([1, 2, 3, 10])):
        sid = f"sess_20260612_160000_{k:04x}" + "x" * rnd.choice([0, 0, 5, 40, 79, 80, 81])
        status = rnd.choice(["completed", "failed", "interrupted", "waiting", "new", "[x]odd"])
        runs, events = rnd.choice([0, 1, 12, 1234567]), rnd.choice([0, 5, 22, 123456789])
        infos.append(info(sid, status, runs=runs, events=events, archived=rnd.random() < 0.2))
        scenarios[sid] = rnd.choice(["", "demo", "a" * 15, "b" * 16, "c" * 17, "[bold]x", "é"])
    return infos, scenarios


@pytest.mark.parametrize("seed", range(200))
def test_the_plain_table_is_what_rich_draws_or_none(seed: int) -> None:
    infos, scenarios = shapes(seed)

    text = sessions_text(infos, scenarios)

    assert text is None or text == drawn_by_rich(infos, scenarios)


def test_the_usual_list_is_plain_and_what_rich_cuts_or_measures_is_not() -> None:
    usual = [info(f"sess_20260612_160000_{k:04x}", "completed", runs=1, events=22, archived=False)
             for k in range(100)]  # fmt: skip
    sid = usual[0].session_id

    assert sessions_text(usual, {sid: "demo"}) == drawn_by_rich(usual, {sid: "demo"})
    assert sessions_text(usual, {sid: "x" * 17}) is None  # rich cuts it: "xxxxxxxxxxxxxxx…"
    assert sessions_text(usual, {sid: "déjà"}) is None  # rich measures cells, not characters
    assert sessions_text([], {}) is None


def test_plain_only_off_a_terminal_without_forced_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert (True, False) == (plain_output(io.StringIO()), plain_output(Tty()))
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not plain_output(io.StringIO())
