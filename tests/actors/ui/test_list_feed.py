"""The inspector's sessions list streams share one change feed: N streams cost the store
one look per tick, and a look is two statements whatever the number of sessions."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from typing import Any

from actors.ui.live import ListFeed


class _Store:
    def __init__(self) -> None:
        self.looks = 0
        self.mark: tuple[int, str | None] = (3, "t1")

    def sessions_mark(self) -> tuple[int, str | None]:
        self.looks += 1
        return self.mark

    def open_run_sessions(self, newest: int | None = None) -> list[str]:
        return ["sess_a", "sess_b"]


class _Runtime:
    def __init__(self) -> None:
        self.store = _Store()
        self.probed: list[str] = []

    def is_owned(self, sid: str) -> bool:
        self.probed.append(sid)
        return sid == "sess_a"


def test_streams_share_one_look_per_tick_and_probe_only_open_runs() -> None:
    rt: Any = _Runtime()
    feed = ListFeed(rt, max_age=3600.0)
    looks = [feed.look() for _ in range(20)]  # twenty tabs in one tick
    assert 1 == rt.store.looks
    assert [(3, "t1", ("sess_a",))] * 20 == looks
    assert ["sess_a", "sess_b"] == rt.probed


def test_a_new_look_after_max_age_sees_the_change() -> None:
    rt: Any = _Runtime()
    feed = ListFeed(rt, max_age=0.0, owners_every=3600.0)
    first = feed.look()
    rt.store.mark = (4, "t2")
    assert first != feed.look()
    assert 2 == rt.store.looks
    assert ["sess_a", "sess_b"] == rt.probed  # owners probed once in the hour
