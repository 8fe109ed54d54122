"""A long conversation: is a Runtime turn flat in the conversation's length, and the reads in it.

Run: ``PYTHONPATH=. python benchmarks/bench_long_conversation.py [--turns 400]``.
Builds the peers benchmark's case-2 conversation (``session.run`` per turn: a user
message and the lead's reply, router + lead, scripted model, ``durability="full"``) to
``2 × turns`` messages, then prints, measured in this one run:

- a turn at 100 messages and at ``2 × turns``: two sessions of the runtime, one grown to
  each size, then turns of the two alternated (so both sizes share the machine's moment:
  on a loaded machine a window of turns measured minutes apart moves by tens of per
  cent); the median of 20 turns' wall time and of their process CPU time (every thread:
  the fsyncs' wait is not in it, so it is the runtime's own cost, whatever the disk
  does), and the ratio (issue 34: ≤ 1.2×);
- ``read_active_path`` of the whole path through a new store handle (it has kept no path,
  so it walks from the root) beside the same read through the runtime's handle after
  one more turn (it kept the previous run's path and walks only the new nodes);
- ``read_runs`` (every run's record decoded) and ``read_run_statuses`` beside
  ``read_new_run_check`` (what a new run checks now: its unfinished runs and a count);
- the context and the request hash a run starts from: built whole (what every run did
  before the session memo) beside the memo's (only the previous run's nodes and
  messages: ``ContextMemo``, ``RequestHasher`` going on from the last message it saw).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "peers"))

import _clew
import msgspec
from _common import user_text
from _timing import best_of

from actors.models.protocol import ModelRequest, RequestHasher, request_hash
from actors.runtime.session import Session
from eventlog.ids import brain_agent_id
from eventlog.sqlite import SQLiteStore
from projections import build_context
from projections.context import ContextMemo

#: Turns each "turn at N messages" is the median of.
WINDOW = 20


def turn(session: Session, model: object, t: int) -> tuple[float, float]:
    """Run turn ``t``; return its wall and process CPU seconds."""
    t0, c0 = time.perf_counter(), time.process_time()
    session.run(user_text(t), model=model, tools=[])  # type: ignore[arg-type]
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:  # noqa: PLR0915 - one run, measured in order
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, repeats = args.turns, args.repeats
    small = 50
    if n < small:
        parser.error(f"--turns must be at least {small}")
    model = _clew.conversation_model(n + WINDOW + repeats + 2)
    with tempfile.TemporaryDirectory() as tmp, _clew.open_runtime(Path(tmp)) as rt:
        short, session = rt.new_session(), rt.new_session()
        for t in range(small):
            short.run(user_text(t), model=model, tools=[])
        for t in range(n):
            session.run(user_text(t), model=model, tools=[])
        at_small: list[tuple[float, float]] = []
        at_large: list[tuple[float, float]] = []
        for k in range(WINDOW):  # alternated: the two sizes share the machine's moment
            at_small.append(turn(short, model, small + k))
            at_large.append(turn(session, model, n + k))
        wall_small, cpu_small = (statistics.median(x) for x in zip(*at_small, strict=True))
        wall_large, cpu_large = (statistics.median(x) for x in zip(*at_large, strict=True))
        n += WINDOW
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
        for t in range(n, n + repeats):
            store.read_active_path(sid)  # the kept path: the previous run's end
            session.run(user_text(t), model=model, tools=[])
            t0 = time.perf_counter()
            store.read_active_path(sid)
            warm.append(time.perf_counter() - t0)
        t_warm = min(warm)
        t_runs, runs = best_of(repeats, lambda: len(store.read_runs(sid)))
        t_statuses, _ = best_of(repeats, lambda: store.read_run_statuses(sid))
        brain = brain_agent_id(sid)
        t_check, _ = best_of(repeats, lambda: store.read_new_run_check(sid, brain))
        path = store.read_active_path(sid)
        t_context, messages = best_of(repeats, lambda: build_context(path))
        # The memo after the previous run: it built the path without the last run's nodes.
        last_run = next(
            i for i in range(len(path) - 1, -1, -1) if path[i].run_id != path[-1].run_id
        )
        before = path[: last_run + 1]
        memos: list[ContextMemo] = []
        for _ in range(repeats):
            memos.append(ContextMemo())
            memos[-1].build(before)
        t_memo, kept = best_of(repeats, lambda: memos.pop().build(path))
        assert kept == messages
        request = ModelRequest(model="scripted", messages=messages, role="lead")
        t_hash, _ = best_of(repeats, lambda: request_hash(request))
        # A hasher that saw the previous run's request goes on from its last message.
        earlier = ModelRequest(model="scripted", messages=messages[: len(before)], role="lead")
        hashers: list[RequestHasher] = []
        for _ in range(repeats):
            hashers.append(RequestHasher())
            hashers[-1].hash(earlier)
        rebuilt = [*messages[: len(before)], *map(msgspec.structs.replace, messages[len(before) :])]
        again = ModelRequest(model="scripted", messages=rebuilt, role="lead")
        t_hash_memo, digest = best_of(repeats, lambda: hashers.pop().hash(again))
        assert digest == request_hash(request)
    print(f"a Runtime conversation: {runs} runs, {nodes} nodes on the active path\n")
    print(f"| a turn (median of {WINDOW}, alternated) | wall ms | process CPU ms |")
    print("|---|---|---|")
    print(f"| at {2 * small} messages | {wall_small * 1e3:.1f} | {cpu_small * 1e3:.2f} |")
    print(f"| at {2 * args.turns} messages | {wall_large * 1e3:.1f} | {cpu_large * 1e3:.2f} |")
    print(
        f"| ratio (target ≤ 1.2) | {wall_large / wall_small:.2f} | {cpu_large / cpu_small:.2f} |\n"
    )
    rows = [
        ("read_active_path, new handle (walks all)", t_cold, ""),
        ("read_active_path, kept path (new nodes)", t_warm, f"{t_cold / t_warm:.0f}x less"),
        ("read_runs (every record decoded)", t_runs, ""),
        ("read_run_statuses", t_statuses, f"{t_runs / t_statuses:.1f}x less"),
        ("read_new_run_check (what a run checks)", t_check, f"{t_runs / t_check:.1f}x less"),
        ("build_context of the whole path", t_context, ""),
        ("ContextMemo.build (the last run's nodes)", t_memo, f"{t_context / t_memo:.0f}x less"),
        ("request_hash of the whole request", t_hash, ""),
        ("RequestHasher after the previous run", t_hash_memo, f"{t_hash / t_hash_memo:.0f}x less"),
    ]
    for label, seconds, note in rows:
        print(f"  {label:44} {seconds * 1e3:8.3f} ms  {note}")


if __name__ == "__main__":
    main()
