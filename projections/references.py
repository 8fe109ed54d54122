"""Prompt references (seed 000): ``@path`` inlines a text file, ``@@<session_id>`` a snapshot.

``expand_references`` keeps the prompt as written and appends one section per
distinct reference. A reference that cannot be honoured becomes a
:class:`MissingReference` with the reason — never an exception — so the model knows
something was meant but not delivered:

- ``@path`` is resolved against the project root, following ``..`` and symlinks; it
  must stay inside the root, exist, be a regular file, contain no NUL byte, be valid
  UTF-8 and be at most :data:`MAX_FILE_BYTES` (65 536, inclusive) bytes long.
- ``@@<session_id>`` is the snapshot of :mod:`projections.snapshot` (24 KiB total,
  6 KiB per field) built from the events ``load_session_events`` returns; a loader
  that raises a ``ClewError`` (unknown session, unreadable store) gives a missing
  reference with its message.

A marker is recognised at the start of the prompt or after whitespace or an opening
bracket/quote (so ``user@example.com`` is not one). ``@"a path with spaces"`` is
accepted; trailing sentence punctuation (``.,;:!?)]}>'"``) is not part of a path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import msgspec

from eventlog.errors import ClewError
from eventlog.records import StoredEvent
from projections.snapshot import format_snapshot, session_snapshot

MAX_FILE_BYTES: Final = 64 * 1024

_MARKER = re.compile(
    r"""(?:^|(?<=[\s(\[{<'"]))"""  # start, or after whitespace / an opener
    r"""(?:@@(?P<session>[A-Za-z0-9_]+)|@"(?P<quoted>[^"\n]+)"|@(?P<path>[^\s@"][^\s]*))"""
)
_TRAILING = ".,;:!?)]}>'\""


class FileReference(msgspec.Struct, frozen=True, kw_only=True, tag="file"):
    """An inlined text file."""

    token: str
    path: str
    text: str
    size_bytes: int


class SessionReference(msgspec.Struct, frozen=True, kw_only=True, tag="session"):
    """An inlined snapshot of another session."""

    token: str
    session_id: str
    snapshot: str


class MissingReference(msgspec.Struct, frozen=True, kw_only=True, tag="missing"):
    """A reference that was meant but not delivered, and why."""

    token: str
    target: str
    reason: str


Reference = FileReference | SessionReference | MissingReference
SessionLoader = Callable[[str], Sequence[StoredEvent]]


class ExpandedPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """The prompt with its reference sections appended, and the references themselves."""

    prompt: str
    references: list[Reference]


def find_references(prompt: str) -> list[tuple[str, str, str]]:
    """Return ``(token, kind, target)`` for each distinct marker, in order of appearance.

    ``kind`` is ``"file"`` or ``"session"``.
    """
    seen: set[str] = set()
    out: list[tuple[str, str, str]] = []
    for m in _MARKER.finditer(prompt):
        if m.group("session") is not None:
            kind, target = "session", m.group("session")
            token = f"@@{target}"
        elif m.group("quoted") is not None:
            kind, target = "file", m.group("quoted")
            token = f'@"{target}"'
        else:
            kind, target = "file", m.group("path").rstrip(_TRAILING)
            if not target:
                continue
            token = f"@{target}"
        if token not in seen:
            seen.add(token)
            out.append((token, kind, target))
    return out


# Each check refuses with its own reason: a flat list of early returns reads best.
def read_file_reference(  # noqa: C901, PLR0911
    token: str, target: str, project_root: Path
) -> Reference:
    """Resolve and read one ``@path`` reference; every failure is a missing reference."""

    def missing(reason: str) -> MissingReference:
        return MissingReference(token=token, target=target, reason=reason)

    try:
        root = project_root.resolve()
        # resolve() follows every symlink and ``..``; the check is on the real path.
        path = (root / target).resolve()
    except (OSError, RuntimeError, ValueError) as e:
        # RuntimeError: a symlink loop (Python 3.11); ValueError: an embedded NUL byte.
        return missing(f"cannot resolve the path: {e}")
    if path != root and root not in path.parents:
        return missing("outside the project root")
    try:
        if not path.exists():
            return missing("no such file")
        if path.is_dir():
            return missing("is a directory")
        if not path.is_file():
            return missing("not a regular file")
        with path.open("rb") as f:
            # Read one byte past the budget: a file that grows after a stat() is caught too.
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        return missing(f"cannot read: {e.strerror or e}")
    if len(data) > MAX_FILE_BYTES:
        size = _size_or(path, len(data))
        return missing(f"larger than {MAX_FILE_BYTES} bytes ({size} bytes)")
    if b"\x00" in data:
        return missing("binary file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return missing("not UTF-8 text")
    rel = path.relative_to(root).as_posix()
    return FileReference(token=token, path=rel, text=text, size_bytes=len(data))


def _size_or(path: Path, default: int) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return default


def read_session_reference(token: str, session_id: str, load: SessionLoader) -> Reference:
    """Build one ``@@session`` reference; a loader ``ClewError`` is a missing reference."""
    try:
        events = load(session_id)
    except ClewError as e:
        return MissingReference(token=token, target=session_id, reason=str(e))
    if not events:
        return MissingReference(token=token, target=session_id, reason="no such session")
    text = format_snapshot(session_snapshot(events, session_id))
    return SessionReference(token=token, session_id=session_id, snapshot=text)


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    return "`" * max(3, longest + 1)


def render_reference(ref: Reference) -> str:
    """Return the prompt section of one reference."""
    match ref:
        case FileReference():
            fence = _fence(ref.text)
            body = ref.text if ref.text.endswith("\n") or not ref.text else ref.text + "\n"
            return f"[{ref.token}] file {ref.path} ({ref.size_bytes} bytes)\n{fence}\n{body}{fence}"
        case SessionReference():
            return f"[{ref.token}] session snapshot\n{ref.snapshot}"
        case MissingReference():
            return f"[{ref.token}] missing: {ref.reason}"


def expand_references(
    prompt: str, project_root: Path | str, load_session_events: SessionLoader
) -> ExpandedPrompt:
    """Expand the ``@path`` and ``@@session`` markers of ``prompt``.

    Args:
        prompt: the user's prompt; it is kept verbatim at the top of the result.
        project_root: ``@path`` references must resolve inside this directory.
        load_session_events: returns another session's stored events (e.g.
            ``store.read_events``); may raise a ``ClewError``.

    Returns:
        the prompt followed by one section per distinct reference, and the references.
    """
    root = Path(project_root)
    refs: list[Reference] = []
    for token, kind, target in find_references(prompt):
        if kind == "session":
            refs.append(read_session_reference(token, target, load_session_events))
        else:
            refs.append(read_file_reference(token, target, root))
    if not refs:
        return ExpandedPrompt(prompt=prompt, references=[])
    sections = "\n\n".join(render_reference(r) for r in refs)
    return ExpandedPrompt(prompt=f"{prompt}\n\n{sections}", references=refs)
