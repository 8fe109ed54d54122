"""``clew sessions --limit N --after SESSION``: keyset pages of the list, oldest first."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

from _cli_helpers import Where, invoke

from actors.runtime.runtime import Runtime


def test_pages_walk_the_list_once_and_the_text_names_the_next_page(tmp_path: Path) -> None:
    where = Where(home=tmp_path / "home", project=tmp_path / "proj")
    where.project.mkdir()
    with Runtime(where.home, where.project) as rt:
        ids = [rt.new_session().id for _ in range(5)]
    everything = [s["session_id"] for s in invoke(where, "sessions", "--json").json()]
    assert ids == everything
    seen: list[str] = []
    after: list[str] = []
    while True:
        page = invoke(where, "sessions", "--limit", "2", *after, "--json").json()
        if not page:
            break
        seen += [s["session_id"] for s in page]
        after = ["--after", page[-1]["session_id"]]
    assert ids == seen
    text = invoke(where, "sessions", "--limit", "2").out
    assert f"next page: clew sessions --after {ids[1]} --limit 2" in text
    failed = invoke(where, "sessions", "--status", "failed", "--limit", "2", "--json").json()
    assert [] == failed
