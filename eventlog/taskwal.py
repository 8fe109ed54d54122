"""The Task WAL: the durable source of truth of one task DAG.

A Task WAL is a JSON-lines file, ``<project>/.clew/tasks/<session_id>/<name>.wal.jsonl``,
appended by one writer (the session's task manager). Each line is one record::

    {"seq":1,"v":1,"at":"2026-06-12T15:30:22.000000+00:00","event":{"event_type":"task_created",…}}

- ``seq``: per-file sequence number, 1, 2, 3, … without gaps, so line *n* holds seq *n*
  and every error can be reported as ``file:line``;
- ``v``: the record format version (:data:`WAL_FORMAT_VERSION`); a line written by newer
  code is refused, never guessed at;
- ``at``: the writer's ``Clock.now()`` when the line was appended;
- ``event``: one task event, tagged by ``event_type``.

Task events evolve like store events: new fields get defaults, a field's type never
changes; an incompatible change bumps ``v`` and gets an upcaster in :func:`replay_wal`.

Recovery rule (see ``docs/tasks.md``): a line counts only if it ends with ``\\n`` and
decodes. A bad *last* line is the artefact of a crash during an append that was never
acknowledged: it is cut off and reported. A bad line anywhere else, or a gap in ``seq``,
is corruption: the WAL is unavailable and the error names ``file:line``.

Only a regular file is a Task WAL: the file and the directories between the project and
it are opened without following symlinks, a FIFO or device is refused, and so is a file
over :data:`MAX_WAL_BYTES` (``eventlog/regular_files.py``). Such a WAL is unavailable
with the reason; nothing outside the project is read, cut or written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from eventlog.clock import Clock
from eventlog.errors import InvalidName, TaskWalCorrupt, TaskWalError, UnsafeFile
from eventlog.ids import validate_session_id
from eventlog.logs import get_logger
from eventlog.regular_files import MIB, open_dir_under, open_under, read_fd

WAL_FORMAT_VERSION = 1
WAL_SUFFIX = ".wal.jsonl"
MAX_NAME_LEN = 100
_NAME_RE = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_NAME_LEN}}}")
#: The largest Task WAL replayed or grown. Replay reads the whole file at once (one read
#: and one split are ~10× faster than line by line) and holds it with its lines, ~2× its
#: size. 100k changes are 18.5 MB, so 256 MiB is ~1.4M changes — far past any DAG a
#: session builds — while a runaway or hostile file cannot take the memory.
MAX_WAL_BYTES = 256 * MIB
_WHAT = "a Task WAL"

TaskStatus = Literal["pending", "ready", "running", "completed", "failed", "cancelled", "blocked"]

_log = get_logger("clew.taskwal")


# --- the task event vocabulary ------------------------------------------------------------


class _TaskEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="event_type"):
    """Base of every task event: a past-tense fact about one task DAG."""


class WalStarted(_TaskEvent, frozen=True, kw_only=True, tag="wal_started"):
    """The header of a main run's WAL (its first line): which run and plan it holds.

    The file is named after the plan's task name; the run id stays here. No DAG change.
    """

    run_id: str
    task_name: str = ""


class TaskCreated(_TaskEvent, frozen=True, kw_only=True, tag="task_created"):
    """A task was added; ``owner`` is an agent id or a role name.

    ``deps`` must complete first (a failed one blocks the task); ``after`` must only have
    settled (completed, failed, cancelled or blocked): an ordering that a failure does not
    turn into a block.
    """

    task_id: str
    title: str
    owner: str
    deps: list[str] = msgspec.field(default_factory=list)
    after: list[str] = msgspec.field(default_factory=list)


class TaskDependencyAdded(_TaskEvent, frozen=True, kw_only=True, tag="task_dependency_added"):
    """``task_id`` now waits for ``depends_on`` to complete."""

    task_id: str
    depends_on: str


class TaskStatusChanged(_TaskEvent, frozen=True, kw_only=True, tag="task_status_changed"):
    """A task moved from ``from_status`` (as observed) to ``to_status``."""

    task_id: str
    from_status: TaskStatus
    to_status: TaskStatus
    result_summary: str = ""


class TaskRemoved(_TaskEvent, frozen=True, kw_only=True, tag="task_removed"):
    """A task (with no dependents) was dropped from the DAG."""

    task_id: str


TaskEvent = WalStarted | TaskCreated | TaskDependencyAdded | TaskStatusChanged | TaskRemoved


class WalRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a Task WAL: the envelope the writer adds around an event."""

    seq: int
    v: int
    at: str
    event: TaskEvent


# One encoder and one decoder, reused: building a msgspec Decoder per line would cost
# more than decoding the line.
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(WalRecord)


def encode_record(record: WalRecord) -> bytes:
    """Encode ``record`` as one WAL line, newline included."""
    return _encoder.encode(record) + b"\n"


# --- names and paths ------------------------------------------------------------------------


def validate_wal_name(name: object) -> str:
    """Return ``name`` if it is safe as a file name stem, else raise.

    Raises:
        InvalidName: not a str, empty, longer than 100 chars, or any char outside
            ``[a-zA-Z0-9_-]`` (so ``/``, ``..``, NUL and the like never reach a path).
    """
    if not isinstance(name, str):
        raise InvalidName(f"invalid task WAL name {name!r}: must be a string")
    if not _NAME_RE.fullmatch(name):
        shown = repr(name[:40]) + ("…" if len(name) > 40 else "")
        raise InvalidName(
            f"invalid task WAL name {shown}: use 1 to {MAX_NAME_LEN} letters, digits, '_' or '-'"
        )
    return name


def wal_dir(project_dir: str | os.PathLike[str], session_id: str) -> Path:
    """Return ``<project>/.clew/tasks/<session_id>`` after validating the session id."""
    return Path(project_dir) / ".clew" / "tasks" / validate_session_id(session_id)


def wal_path(project_dir: str | os.PathLike[str], session_id: str, name: str) -> Path:
    """Return the path of the Task WAL ``name`` of ``session_id`` under ``project_dir``.

    Raises:
        InvalidSessionId: the session id is unsafe.
        InvalidName: the WAL name is unsafe.
    """
    return wal_dir(project_dir, session_id) / (validate_wal_name(name) + WAL_SUFFIX)


def list_wal_names(project_dir: str | os.PathLike[str], session_id: str) -> list[str]:
    """Return the names of the session's Task WALs on disk, sorted, following no symlink.

    Raises:
        TaskWalError: ``.clew``, ``tasks`` or the session directory is a symlink or not a
            directory, or cannot be listed.
    """
    root = Path(project_dir)
    directory = wal_dir(root, session_id)
    try:
        fd = open_dir_under(root, directory)
        if fd is None:
            return []
        try:
            entries = os.listdir(fd)  # noqa: PTH208 - an open dir fd: pathlib has no such call
        finally:
            os.close(fd)
    except UnsafeFile as e:
        raise TaskWalError(str(e)) from e
    except OSError as e:
        raise TaskWalError(f"{directory}: cannot list the task WALs: {e}") from e
    return sorted(n.removesuffix(WAL_SUFFIX) for n in entries if n.endswith(WAL_SUFFIX))


# --- replay ---------------------------------------------------------------------------------


class ReplayResult(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`replay_wal` read: the committed records and what it cut off."""

    path: str
    records: list[WalRecord]
    truncated_tail: bool = False
    truncated_bytes: int = 0

    @property
    def lines(self) -> int:
        """Return the number of committed lines (== the last seq)."""
        return len(self.records)


def _decode_line(path: str, lineno: int, line: bytes) -> WalRecord:
    try:
        record = _decoder.decode(line)
    except msgspec.DecodeError as e:  # ValidationError is a subclass
        raise TaskWalCorrupt(path, lineno, f"undecodable line: {e}") from e
    if record.seq != lineno:
        raise TaskWalCorrupt(path, lineno, f"seq {record.seq} where {lineno} was expected")
    if record.v != WAL_FORMAT_VERSION:
        raise TaskWalCorrupt(
            path, lineno, f"record format v{record.v}, this code reads v{WAL_FORMAT_VERSION}"
        )
    return record


def replay_wal(
    path: str | os.PathLike[str],
    *,
    repair: bool = True,
    log: Any = None,
    root: str | os.PathLike[str] | None = None,
) -> ReplayResult:
    """Read every committed record of the WAL at ``path``, cutting a torn last line.

    A missing file is an empty WAL. With ``repair`` (the default) a torn last line is
    truncated away on disk (and fsynced); with ``repair=False`` it is only reported,
    so a read-only inspector never changes the file. ``log`` is a structlog logger
    (bound with the session id by the caller) for the torn-tail warning. No symlink is
    followed below ``root`` (the project directory; default: the WAL's own directory).

    Raises:
        TaskWalCorrupt: a bad line before the last one, a seq gap, or a future format.
        TaskWalError: the file cannot be read or repaired, is not a regular file, sits
            behind a symlink below ``root`` or is over :data:`MAX_WAL_BYTES`.
    """
    p = os.fspath(path)
    top = Path(p).parent if root is None else Path(root)
    read = _read_wal(top, Path(p))
    if read is None:
        return ReplayResult(path=p, records=[])
    data, identity = read
    # One read and one split: ~10× faster than iterating the file object line by line.
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline, else a torn fragment
    records: list[WalRecord] = []
    append = records.append
    decode = _decoder.decode
    last = len(lines)
    for lineno, line in enumerate(lines, 1):
        # Fast path inline; anything unusual goes to _decode_line for the precise error.
        try:
            record = decode(line)
        except msgspec.DecodeError:
            if lineno == last and not tail:
                tail = line + b"\n"  # an undecodable last line is a torn write too
                break
            raise _decode_error(p, lineno, line) from None
        if record.seq != lineno or record.v != WAL_FORMAT_VERSION:
            _decode_line(p, lineno, line)  # raises with the precise reason
        append(record)

    if not tail:
        return ReplayResult(path=p, records=records)
    good = len(data) - len(tail)
    (log if log is not None else _log).warning(
        "task_wal_torn_tail",
        path=p,
        line=len(records) + 1,
        truncated_bytes=len(tail),
        repaired=repair,
    )
    if repair:
        _cut(top, Path(p), good, identity)
    return ReplayResult(path=p, records=records, truncated_tail=True, truncated_bytes=len(tail))


def _read_wal(root: Path, path: Path) -> tuple[bytes, tuple[int, int]] | None:
    """Return the bytes of the WAL and the identity of its inode; None when it is missing.

    Raises:
        TaskWalError: not a regular file reached from ``root`` without a symlink, over
            :data:`MAX_WAL_BYTES`, or unreadable.
    """
    try:
        fd = open_under(root, path, os.O_RDONLY)
        if fd is None:
            return None
        try:
            return read_fd(fd, MAX_WAL_BYTES, path, _WHAT), _identity(fd)
        finally:
            os.close(fd)
    except UnsafeFile as e:
        raise TaskWalError(str(e)) from e
    except OSError as e:
        raise TaskWalError(f"{path}: cannot read the task WAL: {e}") from e


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _cut(root: Path, path: Path, size: int, identity: tuple[int, int]) -> None:
    """Truncate the WAL at ``path`` to its ``size`` good bytes, durably.

    Only the very file that was read is cut: it is reopened without following a link and
    must be the same inode, or nothing is changed.
    """
    try:
        fd = open_under(root, path, os.O_WRONLY)
        if fd is None:
            raise FileNotFoundError(f"{path} vanished after it was read")
        try:
            if _identity(fd) != identity:
                raise TaskWalError(f"{path}: replaced while it was read; not cut")
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)
    except UnsafeFile as e:
        raise TaskWalError(str(e)) from e
    except OSError as e:
        raise TaskWalError(f"{path}: cannot cut the torn last line: {e}") from e


def _decode_error(path: str, lineno: int, line: bytes) -> TaskWalCorrupt:
    try:
        _decode_line(path, lineno, line)
    except TaskWalCorrupt as e:
        return e
    raise AssertionError("unreachable: the line failed to decode once")  # pragma: no cover


# --- append ---------------------------------------------------------------------------------


class TaskWal:
    """The append side of one Task WAL file; owned by exactly one writer.

    Not thread-safe on purpose: the task manager actor is its only caller.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        last_seq: int,
        clock: Clock,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        """Open ``path`` for appending after ``last_seq`` committed lines (from a replay).

        No symlink is followed below ``root`` (the project directory; default: the WAL's
        own directory); directories and the file are created 0700 / 0600.
        """
        self.path = Path(path)
        self._root = self.path.parent if root is None else Path(root)
        self._last_seq = last_seq
        self._clock = clock
        self._fd: int | None = None
        self._broken: str | None = None

    @property
    def last_seq(self) -> int:
        """Return the seq of the last acknowledged line (0 for an empty WAL)."""
        return self._last_seq

    def _open_fd(self) -> int:
        if self._fd is None:
            # New directories (``.clew/tasks/<sid>``) and a new file are fsynced into
            # their parents, or a crash could lose a file whose lines were all fsynced.
            try:
                fd = open_under(self._root, self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            except UnsafeFile as e:
                raise TaskWalError(str(e)) from e
            assert fd is not None  # O_CREAT: a missing file is created, never None
            self._fd = fd
        return self._fd

    def append(self, events: Sequence[TaskEvent]) -> list[WalRecord]:
        """Append ``events`` as consecutive lines with one write and one fsync.

        Returns the records written, once they are durable. On failure the file is cut
        back to its size before the call, so no partial line stays in the middle.

        Raises:
            TaskWalError: the write or fsync failed (the WAL is unchanged), or an earlier
                failure could not be rolled back (the WAL refuses writes until reopened).
        """
        if self._broken is not None:
            raise TaskWalError(f"{self.path}: refusing to append: {self._broken}")
        if not events:
            return []
        records = [
            WalRecord(seq=self._last_seq + i, v=WAL_FORMAT_VERSION, at=self._clock.now(), event=e)
            for i, e in enumerate(events, 1)
        ]
        data = b"".join(encode_record(r) for r in records)
        size_before: int | None = None
        try:
            fd = self._open_fd()
            size = os.fstat(fd).st_size
            if size + len(data) > MAX_WAL_BYTES:
                # A WAL past the cap could never be replayed: refuse to grow it instead.
                raise TaskWalError(
                    f"{self.path}: refusing to append: the task WAL would pass its"
                    f" {MAX_WAL_BYTES // MIB} MiB limit; nothing was committed"
                )
            size_before = size
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except OSError as e:
            self._roll_back(size_before, e)
            raise TaskWalError(f"{self.path}: append failed, nothing was committed: {e}") from e
        self._last_seq += len(records)
        return records

    def _roll_back(self, size_before: int | None, cause: OSError) -> None:
        if size_before is None or self._fd is None:
            return
        try:
            os.ftruncate(self._fd, size_before)
            os.fsync(self._fd)
        except OSError as e:
            # The torn bytes stay at the end of the file: a later replay cuts them as a
            # torn tail. Appending after them would bury them mid-file, so stop here.
            self._broken = f"rollback after {cause!r} failed: {e!r}"

    def close(self) -> None:
        """Close the file descriptor; a later append reopens it."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
