"""Recovery benchmark: time to resume-ready, and replay (re-execution) time vs live.

Prints, in one run:

- resume-ready time (open the runtime + find the interrupted main run + read its
  events and its workers' + replay its Task WAL: ``Runtime.resume_ready``) for a
  session of ~10k and one of ~100k events, with the ratio to the 0.5 s target, and
  for reference the time to read and rebuild the *whole* log of the same session;
- the live time of a session's runs with a zero-latency scripted model, the time to
  re-execute the same runs against the recording (``Runtime.replay``), and their ratio
  (target ≤ 1.2×).

Sessions are real demo sessions written through the real store; each main run routes
to ``--workers`` workers. Not a test: numbers depend on the machine.

    python benchmarks/bench_recovery.py [--workers 48] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _timing import best_of

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.events import RunEnded, RunStarted
from eventlog.ids import brain_agent_id, main_run_id
from eventlog.records import AppendRequest
from projections import rebuild


def build_session(home: Path, project: Path, target_events: int, workers: int) -> tuple[str, float]:
    """Run demo runs in one session until it holds ``target_events``; return (sid, live s)."""
    live = 0.0
    with Runtime(home, project) as rt:
        session = rt.new_session()
        model, tools = demo_model(workers), demo_tools(project)
        while rt.store.count_events(session.id) < target_events:
            t0 = time.perf_counter()
            out = session.run(DEMO_PROMPT, model=model, tools=tools)
            live += time.perf_counter() - t0
            assert out.status == "completed", out
        return session.id, live


def interrupt_last_run(home: Path, project: Path, sid: str) -> None:
    """Append a started-but-unfinished main run, so resume_ready has work to find."""
    with Runtime(home, project) as rt:
        brain = brain_agent_id(sid)
        run_id = main_run_id(sid, len(rt.main_runs(sid)) + 1)
        rt.writer.append(
            AppendRequest(
                session_id=sid,
                event=RunStarted(run_id=run_id, agent_id=brain, metadata={"prompt": DEMO_PROMPT}),
                created_at=rt.clock.now(),
                agent_id=brain,
                run_id=run_id,
            )
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="clew_bench_recovery_"))
    try:
        rows = []
        replay_rows = []
        for label, target in (("10k", 10_000), ("100k", 100_000)):
            home, project = root / label / "home", root / label / "proj"
            sid, live = build_session(home, project, target, args.workers)
            if label == "10k":

                def replay(home: Path = home, project: Path = project, sid: str = sid) -> None:
                    with Runtime(home, project) as rt:
                        report = rt.replay(sid)
                        assert report.identical, report.summary()

                t_replay, _ = best_of(args.repeats, replay)
                replay_rows.append((label, live, t_replay))
            interrupt_last_run(home, project, sid)

            def ready(home: Path = home, project: Path = project, sid: str = sid) -> int:
                with Runtime(home, project) as rt:
                    plan = rt.resume_ready(sid)
                    return plan.events

            def full_log(home: Path = home, project: Path = project, sid: str = sid) -> None:
                with Runtime(home, project) as rt:
                    rebuild(rt.store.iter_events(sid), sid)

            with Runtime(home, project) as rt:
                events = rt.store.count_events(sid)
                ends = sum(1 for e in rt.store.iter_events(sid) if isinstance(e.event, RunEnded))
            t_ready, _ = best_of(args.repeats, ready)
            t_full, _ = best_of(args.repeats, full_log)
            rows.append((label, events, ends, t_full, t_ready))

        print(f"demo sessions, {args.workers} workers per main run, best of {args.repeats}\n")
        print(
            "| session | events | runs | resume-ready s | × 0.5 s target |"
            " whole log read + rebuild s | events/s |"
        )
        print("|---|---|---|---|---|---|---|")
        for label, events, ends, t_full, t in rows:
            print(
                f"| {label} | {events:,} | {ends:,} | {t:.3f} | {t / 0.5:.2f} |"
                f" {t_full:.3f} | {events / t_full:,.0f} |"
            )
        print()
        print("| session | live s (zero-latency model) | replay s | replay / live (target ≤ 1.2) |")
        print("|---|---|---|---|")
        for label, live, t_replay in replay_rows:
            print(f"| {label} | {live:.3f} | {t_replay:.3f} | {t_replay / live:.2f} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
