"""A by-reference request's texts are in the log before it, whichever run committed first.

The runs of one main run (the Brain's, each worker's) commit in groups of their own, in
no order between them. A text claimed by one run but not committed yet must not let
another run's request refer to it bare: a SIGKILL could keep that request and lose the
text (the flaky ``test_resume_past_divergence[40]``: worker 3's divergence named a hash,
not the changed prompt, because worker 2's ``content_stored`` died in its buffer).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _processes import run_crash_demo

from actors.replay.requests import ContentIndex
from actors.runtime.runtime import Runtime
from eventlog.events import ContentStored, ModelRequested
from eventlog.store import EventStore


def test_a_claim_is_the_claimer_s_until_its_text_is_committed(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        index = ContentIndex(rt.store, rt.new_session().id)
        assert index.claim("h1", "run-a")
        assert not index.claim("h1", "run-a")  # its own buffer holds the text already
        assert index.claim("h1", "run-b")  # another run stores a copy of its own
        index.committed("h1")
        assert not index.claim("h1", "run-c")  # in the log now: nobody stores it again
        assert not index.claim("h1", "run-b")


def _unreferenced(store: EventStore, sid: str) -> list[str]:
    """Return the requests of ``sid`` that refer to a text not stored before them."""
    stored: set[str] = set()
    bad: list[str] = []
    for e in store.iter_events(sid):
        if isinstance(e.event, ContentStored):
            stored.add(e.event.content_hash)
        elif isinstance(e.event, ModelRequested):
            refs = {e.event.system_ref, e.event.tools_ref} - {""}
            bad += [f"seq {e.seq} ({e.run_id}) refers to {r}" for r in sorted(refs - stored)]
    return bad


@pytest.mark.parametrize("k", [25, 40, 55, None])
def test_every_request_the_log_keeps_has_its_texts_before_it(tmp_path: Path, k: int | None) -> None:
    env = {} if k is None else {"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)}
    p = run_crash_demo(tmp_path / "home", tmp_path / "proj", "run", "3", env=env)
    assert (0 if k is None else -9) == p.returncode, p.stderr[-2000:]
    sid = p.stdout.split()[0]
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        requests = [e for e in rt.store.iter_events(sid) if isinstance(e.event, ModelRequested)]
        assert requests
        assert [] == _unreferenced(rt.store, sid)
