"""A long conversation: what a Runtime turn costs at N messages, and the reads in it.

Run: ``PYTHONPATH=. python benchmarks/bench_long_conversation.py [--turns 200]``.
Builds the peers benchmark's case-2 conversation (``session.run`` per turn: a user
message and the lead's reply, router + lead, scripted model, ``durability="full"``) to
``2 × turns`` messages, then prints, measured in this one run:

- the wall time of 10 more turns, per turn;
- ``read_active_path`` of the whole path through a new store handle (it has kept no path,
  so it walks from the root) beside the same read through the runtime's handle after
  one more turn (it kept the previous run's path and walks only the new nodes);
- ``read_runs`` (every run's record decoded) beside ``read_run_statuses`` (what a new run
  checks);
- what still grows with the conversation per run: ``build_context`` of the path and
  ``request_hash`` of a request holding it (a run's messages are new objects, so the
  incremental hasher starts over).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "peers"))

import _clew
from _common import user_text
from _timing import best_of

from actors.models.protocol import ModelRequest, request_hash
from eventlog.sqlite import SQLiteStore
from projections import build_context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, repeats = args.turns, args.repeats
    model = _clew.conversation_model(n + 12)
    with tempfile.TemporaryDirectory() as tmp, _clew.open_runtime(Path(tmp)) as rt:
        session = rt.new_session()
        for t in range(n):
            session.run(user_text(t), model=model, tools=[])
        t0 = time.perf_counter()
        for t in range(n, n + 10):
            session.run(user_text(t), model=model, tools=[])
        per_turn = (time.perf_counter() - t0) / 10
        sid, store = session.id, rt.store
        tip = store.read_session(sid).active_node_id
        assert tip is not None

        def cold() -> int:
            fresh = SQLiteStore(Path(tmp) / "home" / "sessions.sqlite", read_only=True)
            try:
                return len(fresh.read_active_path(sid, tip))
            finally:
                fresh.close()

        t_cold, nodes = best_of(repeats, cold)
        warm: list[float] = []
        for t in range(n + 10, n + 10 + repeats):
            store.read_active_path(sid)  # the kept path: the previous run's end
            session.run(user_text(t), model=model, tools=[])
            t0 = time.perf_counter()
            store.read_active_path(sid)
            warm.append(time.perf_counter() - t0)
        t_warm = min(warm)
        t_runs, runs = best_of(repeats, lambda: len(store.read_runs(sid)))
        t_statuses, _ = best_of(repeats, lambda: store.read_run_statuses(sid))
        path = store.read_active_path(sid)
        t_context, messages = best_of(repeats, lambda: build_context(path))
        request = ModelRequest(model="scripted", messages=messages, role="lead")
        t_hash, _ = best_of(repeats, lambda: request_hash(request))
    rows = [
        ("one more turn", per_turn, ""),
        ("read_active_path, new handle (walks all)", t_cold, ""),
        ("read_active_path, kept path (new nodes)", t_warm, f"{t_cold / t_warm:.0f}x less"),
        ("read_runs (every record decoded)", t_runs, ""),
        ("read_run_statuses", t_statuses, f"{t_runs / t_statuses:.1f}x less"),
        ("still per run: build_context", t_context, ""),
        ("still per run: request_hash", t_hash, ""),
    ]
    print(f"a Runtime conversation: {runs} runs, {nodes} nodes on the active path")
    for label, seconds, note in rows:
        print(f"  {label:42} {seconds * 1e3:8.2f} ms  {note}")


if __name__ == "__main__":
    main()
