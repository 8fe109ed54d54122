"""Running a model or tool call off the actor's thread: bounded by a timeout, stoppable.

Python cannot interrupt a thread blocked in a call, so the call runs on a helper thread
and the actor waits for it, for its timeout, or for its run's :class:`CancelScope` —
whichever comes first. A call given up on keeps running in the background until it
returns (its result is dropped); its thread is a daemon and never keeps the
interpreter alive. Helper threads are reused: a model call with a zero-latency model
costs a queue hand-off, not a thread start.
"""

from __future__ import annotations

import _thread
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from actors.errors import CallCancelled, CallTimedOut

T = TypeVar("T")


class CancelScope:
    """The cancellation of a run (or of one worker's run): set once, the first reason wins.

    A worker's scope is a child of its main run's: cancelling the run cancels it, while
    its own timeout cancels only the worker. Callbacks registered with
    :meth:`on_cancel` run on the cancelling thread (they must be quick).
    """

    def __init__(self, parent: CancelScope | None = None, *, kind: str = "run") -> None:
        #: ``run`` (a main run's), ``worker`` (one worker's run, under its main run's) or
        #: ``call`` (one helper-thread call, cancelled when its caller gives up on it).
        self.kind = kind
        self._lock = threading.Lock()
        self._set = False
        self._callbacks: list[Callable[[], object]] = []
        self.reason = ""
        self.source = ""
        #: True when this scope was cancelled through its parent (not on its own).
        self.inherited = False
        self.parent = parent
        #: A cancel that takes effect at the first live step (:meth:`cancel_when_live`).
        self._when_live: tuple[str, str] | None = None
        if parent is not None:

            def inherit() -> None:
                self.cancel(parent.reason, parent.source, inherited=True)

            parent.on_cancel(inherit)

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called (here or on a parent)."""
        return self._set

    def cancel(self, reason: str, source: str, *, inherited: bool = False) -> bool:
        """Cancel the scope; return False if it was already cancelled (nothing changes)."""
        with self._lock:
            if self._set:
                return False
            self._set = True
            self.reason, self.source, self.inherited = reason, source, inherited
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()
        return True

    def cancel_when_live(self, reason: str, source: str) -> None:
        """Cancel the scope once one of its runs takes its first live step (:meth:`live`).

        What cancelling a crash-interrupted run needs: its re-execution matches the whole
        recorded prefix first (a cancel seen inside it would be recorded where the
        recording has something else), and stops where it would go on live.
        """
        self._when_live = (reason, source)

    def live(self) -> None:
        """A run under this scope goes live: a cancel deferred here or above takes effect."""
        deferred, self._when_live = self._when_live, None
        if deferred is not None:
            self.cancel(*deferred)
        if self.parent is not None:
            self.parent.live()

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback`` once when the scope is cancelled (at once if it already is);
        return the function that removes it."""
        with self._lock:
            if not self._set:
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], object]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)


class _Signal:
    """A one-way flag a thread can wait for: ``threading.Event`` without its condition
    (a raw lock, locked until set), so setting and waiting are one C call each — a model
    or tool call with a zero-latency callee costs two of them (docs/performance.md)."""

    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()
        self._set = False

    def set(self) -> None:
        """Set the flag (again: nothing changes) and wake whoever waits for it."""
        self._set = True
        with contextlib.suppress(RuntimeError):  # already open
            self._lock.release()

    def is_set(self) -> bool:
        """True once :meth:`set` was called."""
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the flag is set or ``timeout`` seconds passed; return whether it is."""
        if self._set:
            return True
        if self._lock.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
            with contextlib.suppress(RuntimeError):  # a second set opened it meanwhile
                self._lock.release()  # open again: the flag stays set for every waiter
        return self._set


class _Box:
    """One call's outcome; ``wake`` is set when it is there or waiting must end;
    ``given_up`` is cancelled when its caller stops waiting for it."""

    __slots__ = ("error", "finished", "given_up", "value", "wake")

    def __init__(self) -> None:
        self.wake = _Signal()
        self.finished = _Signal()
        self.given_up = CancelScope(kind="call")
        self.value: Any = None
        self.error: BaseException | None = None


_Job = tuple[Callable[[], Any], _Box, str]
_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
#: How many helper threads are done with their call and going back for the next (the
#: one item, changed under ``_spawn_lock``).
_idle = [0]
_spawn_lock = threading.Lock()
_current = threading.local()


def on_give_up(callback: Callable[[], object]) -> Callable[[], None]:
    """Call ``callback`` when the caller of the call running on this helper thread stops
    waiting for it (its timeout passed, its run was cancelled) — at once if it already
    has; return the function that removes it. Outside a helper thread: never called.

    The call goes on regardless (Python cannot stop a thread); this is how a call that
    *can* be stopped — an async model's task on its event loop — learns it should be.
    """
    scope: CancelScope | None = getattr(_current, "given_up", None)
    if scope is None:
        return lambda: None
    return scope.on_cancel(callback)


def _helper() -> None:
    me = threading.current_thread()
    while True:
        fn, box, name = _jobs.get()
        me.name = f"clew-call-{name}"  # what a thread dump shows it is busy with
        _current.given_up = box.given_up
        try:
            box.value = fn()
        except BaseException as e:  # handed to the waiting actor, whatever it is
            box.error = e
        _current.given_up = None
        box.finished.set()
        box.wake.set()
        del fn, box
        me.name = "clew-call-idle"
        _now_idle()


def _now_idle() -> None:
    with _spawn_lock:
        _idle[0] += 1


def _start(fn: Callable[[], Any], box: _Box, name: str) -> None:
    """Hand ``fn`` to an idle helper thread, starting one if none is idle."""
    with _spawn_lock:
        spawn = not _idle[0]
        if not spawn:
            _idle[0] -= 1
    if spawn:
        threading.Thread(target=_helper, name="clew-call-idle", daemon=True).start()
    _jobs.put((fn, box, name))


def call_off_thread(
    fn: Callable[[], T],
    *,
    name: str,
    timeout: float | None = None,
    cancel: CancelScope | None = None,
    grace: float = 0.0,
) -> T:
    """Run ``fn`` on a helper thread and return its result (or raise its exception).

    ``grace``: once ``cancel`` is cancelled, how long ``fn`` still has to return (a tool
    asked to stop through its context gets to finish and have its outcome recorded).

    Raises:
        CallTimedOut: ``fn`` did not return within ``timeout`` seconds.
        CallCancelled: ``cancel`` was cancelled first (or already was) and ``fn`` did not
            return within the grace period.
        BaseException: whatever ``fn`` raised, as it raised it.
    """
    if cancel is not None and cancel.cancelled:
        raise CallCancelled(cancel.reason)
    box = _Box()
    started = time.monotonic()
    _start(fn, box, name)
    remove = cancel.on_cancel(box.wake.set) if cancel is not None else None
    try:
        box.wake.wait(timeout)
        if not box.finished.is_set() and cancel is not None and cancel.cancelled and grace > 0:
            left = grace if timeout is None else min(grace, timeout - (time.monotonic() - started))
            box.finished.wait(max(0.0, left))
    finally:
        if remove is not None:
            remove()
    if not box.finished.is_set():
        if cancel is not None and cancel.cancelled:
            box.given_up.cancel(cancel.reason, "cancel")
            raise CallCancelled(cancel.reason)
        box.given_up.cancel("timed out", "timeout")
        raise CallTimedOut(f"no return within {timeout:g} s")
    if box.error is not None:
        raise box.error
    result: T = box.value
    return result
