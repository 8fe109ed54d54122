"""Where a case-2 conversation turn spends its time, at 100 and at 800 messages.

Run: ``PYTHONPATH=. python benchmarks/profile_conversation_turn.py [--turns 20]``.
Builds the peers benchmark's case-2 conversation (``session.run`` per user message:
router + lead, scripted model, ``durability="full"``) and, over ``--turns`` turns at 100
messages and again at 800, samples every thread's stack each millisecond. ``cProfile``
would see only the main thread, which waits: a run's work happens in actor threads. A
thread idle in a queue or a lock is skipped; a C call (an fsync, a lock wait) shows as
its Python caller. Prints the share of samples by top of stack and by presence on the
stack. The tables of docs/performance.md ("A conversation turn's profile") come from it.

``--calls``: instead, a ``cProfile`` in every thread (started before the runtime, so
each actor thread gets its own) and the difference of their counts over each window:
the Python functions whose calls per turn grow most from 100 to 800 messages. Counts do
not depend on the machine's load; a flat turn's counts do not grow.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import CodeType, FrameType

sys.path.insert(0, str(Path(__file__).parent / "peers"))

import _clew
from _common import user_text

from actors.models.scripted import ScriptedModel
from actors.runtime.session import Session

ROOT = str(Path(__file__).resolve().parents[1]) + "/"
#: Top frames of a thread waiting for work: not counted.
IDLE = {"wait", "_wait_for_tstate_lock", "get", "acquire", "select", "poll", "sleep"}
IDLE_FILES = ("threading", "queue", "pykka")


def _label(frame: FrameType) -> str:
    return _code_label(frame.f_code)


def _code_label(code: CodeType) -> str:
    return f"{code.co_filename.removeprefix(ROOT)}:{code.co_firstlineno}({code.co_name})"


class Sampler:
    """Counts, every millisecond, the top frame and every frame of each busy thread."""

    def __init__(self) -> None:
        self.top: collections.Counter[str] = collections.Counter()
        self.on_stack: collections.Counter[str] = collections.Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.is_set():
            for ident, frame in sys._current_frames().items():
                code = frame.f_code
                idle = code.co_name in IDLE and any(f in code.co_filename for f in IDLE_FILES)
                if ident == me or idle:
                    continue
                self.samples += 1
                self.top[_label(frame)] += 1
                seen: set[str] = set()
                walk: FrameType | None = frame
                while walk is not None:
                    seen.add(_label(walk))
                    walk = walk.f_back
                self.on_stack.update(seen)
            time.sleep(0.001)


def profile(session: Session, model: ScriptedModel, start: int, turns: int) -> None:
    with Sampler() as sampler:
        t0 = time.perf_counter()
        for t in range(start, start + turns):
            session.run(user_text(t), model=model, tools=[])
        per_turn = (time.perf_counter() - t0) / turns
    n = max(sampler.samples, 1)
    print(f"## at {2 * start} messages: {per_turn * 1e3:.1f} ms per turn, {n} busy samples\n")
    for title, counts, rows in (
        ("top of stack", sampler.top, 25),
        ("on the stack", sampler.on_stack, 50),
    ):
        print(f"| {title} | % |\n|---|---|")
        for label, count in counts.most_common(rows):
            print(f"| `{label}` | {100 * count / n:.1f} |")
        print()


#: (calls, seconds inline) by function, summed over every thread's profiler.
Counts = dict[str, tuple[float, float]]


class ThreadProfiles:
    """A ``cProfile`` per thread started from now on (and this one); counts on demand."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        threading.setprofile(self._start)
        self.mine = cProfile.Profile()
        self.profiles.append(self.mine)
        self.mine.enable()

    def _start(self, *_: object) -> None:
        profile = cProfile.Profile()
        self.profiles.append(profile)
        profile.enable()  # replaces this hook in the new thread

    def counts(self) -> Counts:
        self.mine.disable()  # counting is not counted
        out: Counts = {}
        for profile in list(self.profiles):
            for entry in profile.getstats():
                code = entry.code
                name = code if isinstance(code, str) else _code_label(code)
                calls, inline = out.get(name, (0, 0.0))
                out[name] = (calls + entry.callcount, inline + entry.inlinetime)
        self.mine.enable()
        return out


def _window(profiles: ThreadProfiles, session: Session, model: ScriptedModel, start: int,
            turns: int) -> Counts:  # fmt: skip
    before = profiles.counts()
    for t in range(start, start + turns):
        session.run(user_text(t), model=model, tools=[])
    after = profiles.counts()
    zero = (0, 0.0)
    return {
        k: ((v[0] - before.get(k, zero)[0]) / turns, (v[1] - before.get(k, zero)[1]) / turns)
        for k, v in after.items()
    }


def calls_growth(turns: int) -> None:
    """Print the functions whose calls per turn grow most from 100 to 800 messages."""
    profiles = ThreadProfiles()
    small, large = 50, 400
    model = _clew.conversation_model(large + 2 * turns + 2)
    with tempfile.TemporaryDirectory() as tmp, _clew.open_runtime(Path(tmp)) as rt:
        session = rt.new_session()
        for t in range(small):
            session.run(user_text(t), model=model, tools=[])
        at_small = _window(profiles, session, model, small, turns)
        for t in range(small + turns, large):
            session.run(user_text(t), model=model, tools=[])
        at_large = _window(profiles, session, model, large, turns)
    threading.setprofile(None)
    total = [sum(c for c, _ in w.values()) for w in (at_small, at_large)]
    print(f"Python calls per turn: {total[0]:,.0f} at 100 messages, {total[1]:,.0f} at 800\n")
    print("| function | calls per turn at 100 | at 800 | inline ms at 100 | at 800 |")
    print("|---|---|---|---|---|")
    zero = (0.0, 0.0)
    grown = sorted(at_large, key=lambda k: at_small.get(k, zero)[0] - at_large[k][0])
    for name in grown[:25]:
        a, b = at_small.get(name, zero), at_large[name]
        print(f"| `{name}` | {a[0]:,.0f} | {b[0]:,.0f} | {a[1] * 1e3:.2f} | {b[1] * 1e3:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--calls", action="store_true", help="count calls per thread instead")
    args = parser.parse_args()
    if args.calls:
        calls_growth(args.turns)
        return
    small, large, k = 50, 400, args.turns
    model = _clew.conversation_model(large + 2 * k + 2)
    with tempfile.TemporaryDirectory() as tmp, _clew.open_runtime(Path(tmp)) as rt:
        session = rt.new_session()
        for t in range(small):
            session.run(user_text(t), model=model, tools=[])
        profile(session, model, small, k)
        for t in range(small + k, large):
            session.run(user_text(t), model=model, tools=[])
        profile(session, model, large, k)


if __name__ == "__main__":
    main()
