"""Leases against a model (house style 15): random acquire / renew / release / time
passing on the SQLite coordinator, compared after every step with a dict of who holds
what until when."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from actors.runtime.coord.location import COORD_FILE
from actors.runtime.coord.sqlite import SQLiteCoordinator
from tests.actors.runtime.coord_conformance import Clock

NAMES = st.sampled_from(["s1", "s2", "s3"])
OWNERS = st.sampled_from(["a", "b", "c"])
TTLS = st.sampled_from([1.0, 2.0, 5.0])


class LeaseMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        self.clock = Clock()
        self.coord = SQLiteCoordinator(Path(self.dir.name) / COORD_FILE, clock=self.clock)
        self.model: dict[str, tuple[str, float]] = {}

    def teardown(self) -> None:
        self.coord.close()
        self.dir.cleanup()

    def _live(self, name: str) -> tuple[str, float] | None:
        held = self.model.get(name)
        return held if held is not None and held[1] > self.clock.now else None

    @rule(name=NAMES, owner=OWNERS, ttl=TTLS)
    def acquire(self, name: str, owner: str, ttl: float) -> None:
        live = self._live(name)
        expected = live is None or live[0] == owner
        assert expected == self.coord.acquire(name, owner, ttl)
        if expected:
            self.model[name] = (owner, self.clock.now + ttl)

    @rule(owner=OWNERS, ttl=TTLS)
    def renew(self, owner: str, ttl: float) -> None:
        mine = {n for n, (o, _) in self.model.items() if o == owner}
        assert mine == self.coord.renew(owner, ttl)
        for n in mine:
            self.model[n] = (owner, self.clock.now + ttl)

    @rule(name=NAMES, owner=OWNERS)
    def release(self, name: str, owner: str) -> None:
        self.coord.release(name, owner)
        if name in self.model and self.model[name][0] == owner:
            del self.model[name]

    @rule(seconds=st.sampled_from([0.5, 1.0, 3.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.now += seconds

    @invariant()
    def holders_match(self) -> None:
        for name in ("s1", "s2", "s3"):
            lease = self.coord.holder(name)
            live = self._live(name)
            assert live == (None if lease is None else (lease.owner, lease.expires_at))
        expired = {n for n, (_, e) in self.model.items() if e <= self.clock.now}
        assert expired == {lease.name for lease in self.coord.expired()}


LeaseMachine.TestCase.settings = settings(max_examples=20, stateful_step_count=20, deadline=None)
test_leases_behave_like_the_model = LeaseMachine.TestCase
