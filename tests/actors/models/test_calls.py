"""Helper-thread calls: the ``_Signal`` a caller waits on, and helper threads reused."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from actors.errors import CallCancelled, CallTimedOut
from actors.models import calls
from actors.models.calls import CancelScope, _Signal, call_off_thread


def _joined(threads: list[threading.Thread], within: float = 10) -> None:
    """Join ``threads`` within ``within`` seconds in all (a waiter never woken fails the
    test instead of hanging it: the threads are daemons)."""
    deadline = time.monotonic() + within
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


def _in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


def test_an_unset_signal_waits_out_its_timeout_and_says_false() -> None:
    signal = _Signal()
    started = time.monotonic()

    assert [False, False] == [signal.wait(0.05), signal.is_set()]
    assert time.monotonic() - started >= 0.04  # the lock's clock may round a little down


@pytest.mark.parametrize("timeout", [0, 0.0, -1.0])
def test_waiting_no_time_on_an_unset_signal_says_false_at_once(timeout: float) -> None:
    signal = _Signal()
    started = time.monotonic()

    assert [False, False] == [signal.wait(timeout), signal.wait(timeout)]
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("timeout", [None, 0, 5.0])
def test_a_set_signal_is_waited_for_at_once_as_often_as_asked(timeout: float | None) -> None:
    signal = _Signal()
    signal.set()
    started = time.monotonic()

    assert [True, True, True, True] == [
        signal.is_set(),
        signal.wait(timeout),
        signal.wait(timeout),
        signal.is_set(),
    ]
    assert time.monotonic() - started < 1


def test_a_set_from_another_thread_wakes_a_waiter() -> None:
    signal = _Signal()
    waiter, woke = _in_thread(lambda: signal.wait(30))
    time.sleep(0.02)  # let it block (if it has not yet, it finds the flag set: same result)
    started = time.monotonic()

    signal.set()
    _joined([waiter])

    assert [True] == woke
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("timeout", [None, 30.0])
def test_every_waiter_wakes_when_the_signal_is_set(timeout: float | None) -> None:
    signal = _Signal()
    waiters = [_in_thread(lambda: signal.wait(timeout)) for _ in range(6)]
    time.sleep(0.02)

    signal.set()
    _joined([t for t, _ in waiters])

    assert [[True]] * 6 == [woke for _, woke in waiters]
    # Waiting again, after the others woke, still finds it set.
    assert [True, True] == [signal.wait(0), signal.wait(None)]


def test_setting_a_signal_twice_is_harmless_even_while_threads_wait() -> None:
    signal = _Signal()
    waiters = [_in_thread(lambda: signal.wait(30)) for _ in range(3)]
    setters = [threading.Thread(target=signal.set) for _ in range(4)]
    for t in setters:
        t.start()
    for t in setters:
        t.join(30)
    signal.set()
    _joined([t for t, _ in waiters])

    assert [[True]] * 3 == [woke for _, woke in waiters]
    assert [True, True, True] == [signal.is_set(), signal.wait(0), signal.wait(0.01)]


def test_a_call_timeout_and_a_cancel_still_end_the_wait() -> None:
    release = threading.Event()
    with pytest.raises(CallTimedOut):
        call_off_thread(lambda: release.wait(30), name="t", timeout=0.02)
    scope = CancelScope()
    threading.Timer(0.02, lambda: scope.cancel("stop", "test")).start()
    with pytest.raises(CallCancelled, match="stop"):
        call_off_thread(lambda: release.wait(30), name="t", cancel=scope)
    release.set()


def _helpers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("clew-call-")]


def test_concurrent_calls_get_their_own_values_on_reused_helper_threads() -> None:
    callers, per_caller = 8, 50
    before = len(_helpers())
    start = threading.Barrier(callers)
    got: dict[int, list[tuple[int, int]]] = {}
    most = [0]

    def caller(n: int) -> None:
        start.wait()
        mine = []
        for i in range(per_caller):
            mine.append(call_off_thread(lambda i=i: (n, i), name=f"c{n}", timeout=30))
            most[0] = max(most[0], len(_helpers()))
        got[n] = mine

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    assert {n: [(n, i) for i in range(per_caller)] for n in range(callers)} == got
    # 400 calls: a helper thread each would be 400; a caller waits for its call, so one
    # helper per caller is busy at a time (8 in 5 runs of 400 calls). The margin is for a
    # helper still on its way back to the queue when its caller asks again.
    assert most[0] <= max(before, callers + 4), (before, most[0])


def test_the_idle_count_matches_the_idle_helpers_once_calls_are_done() -> None:
    callers = 8
    threads = [
        threading.Thread(
            target=lambda: [call_off_thread(lambda: None, name="t") for _ in range(30)]
        )
        for _ in range(callers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    deadline = time.monotonic() + 10
    while True:  # a helper counts itself idle just after its caller got its value
        idle = [t for t in _helpers() if t.name == "clew-call-idle"]
        with calls._spawn_lock:
            counted = calls._idle[0]
        if counted == len(idle) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert len(idle) == counted
    # And the next calls reuse them: no new thread while enough are idle.
    ids = {t.ident for t in _helpers()}
    for _ in range(20):
        call_off_thread(lambda: None, name="t")
    time.sleep(0.05)
    assert ids >= {t.ident for t in _helpers()}
