"""Session bundles: one session as one self-contained, versioned file.

``clew export SESSION --bundle FILE`` (:func:`export_bundle`) writes a session with
everything it needs to be read, verified and replayed elsewhere; ``clew import FILE``
(:func:`import_bundle`) loads it into any clew home or PostgreSQL store. What a bundle
holds, per session: every event with its stored columns (``seq``, ``run_seq``, ids,
``created_at``) and its payload as the codec wrote it, the bundle's own hash chain over
those events, and the lines of its Task WALs with their recorded times; once for the
file: the bytes of every artifact the events created. A fork carries its ancestors
first (the parent's history it was forked from, whose artifacts its copied nodes read).

The file is gzip-compressed: one JSON header line (``format``, ``version``, the
session's id, the ids it holds and the SHA-256 ``digest`` of the body), then the body
(msgspec JSON). Reading checks the header, the digest and each session's chain before
anything is written: a file altered since it was written is refused in one line
(:class:`~actors.errors.BundleRefused`, exit 2).

Importing lands each session the way ``clew copy`` does
(:func:`~actors.runtime.upkeep.land_image`): artifacts first, then the events in one
``append_batch``, then the Task WALs, read back and verified. The target's rows are
then the recorded rows, and its hash chain (a function of those rows) the source's.
A session the target holds already is left alone when it is identical — importing the
same bundle twice is a no-op — and refused when it differs; an ancestor the target
holds is accepted when its history starts with the bundle's (it went on since).
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Sequence
from pathlib import Path

import msgspec
from msgspec.structs import astuple

from actors.errors import BundleRefused, CopyRefused
from actors.runtime.upkeep import CopyResult, Endpoint, SessionImage, land_image, read_image
from eventlog.codec import decode_event, encode_event
from eventlog.ids import validate_session_id
from eventlog.records import StoredEvent
from eventlog.taskwal import WalRecord

#: What the header's ``format`` says; ``version`` is :data:`VERSION`.
FORMAT = "clew-bundle"
#: The bundle format this clew writes (and the newest it reads).
VERSION = 1
#: The name a bundle file usually ends with (what ``pytest --clew-replay`` collects).
SUFFIX = ".clew"
_GENESIS = "0" * 64


class Header(msgspec.Struct, frozen=True, kw_only=True):
    """The bundle's first line: what it is and the digest of what follows."""

    format: str
    version: int
    session_id: str
    sessions: list[str]
    digest: str


class BundledEvent(msgspec.Struct, frozen=True, array_like=True):
    """One stored event: its columns and its payload as the codec encodes it."""

    event_id: str
    seq: int
    run_seq: int | None
    agent_id: str | None
    run_id: str | None
    level: str
    event_type: str
    node_id: str | None
    tool_call_id: str | None
    created_at: str
    payload: msgspec.Raw


class BundledSession(msgspec.Struct, frozen=True, kw_only=True):
    """One session of a bundle (the bundle's own, or an ancestor of it)."""

    session_id: str
    cwd: str
    parent_session_id: str | None
    events: list[BundledEvent]
    #: The hash of the last event after each one before it (``sha256(prev + event)``).
    chain_head: str
    wals: dict[str, list[WalRecord]]


class Body(msgspec.Struct, frozen=True, kw_only=True):
    sessions: list[BundledSession]
    artifacts: dict[str, bytes]


class Bundle(msgspec.Struct, frozen=True, kw_only=True):
    """A bundle as read back: its header and its sessions (ancestors first)."""

    header: Header
    body: Body

    @property
    def session_id(self) -> str:
        return self.header.session_id

    def images(self) -> list[SessionImage]:
        """Each session of the bundle as ``land_image`` writes it (ancestors first)."""
        return [_image(s) for s in self.body.sessions]


class ImportResult(msgspec.Struct, frozen=True, kw_only=True):
    """What importing a bundle did: one :class:`CopyResult` a session (ancestors first:
    ``copied``, ``identical``, or ``present`` for an ancestor the target holds, gone on)."""

    session_id: str
    sessions: list[CopyResult]

    @property
    def written(self) -> bool:
        return any(r.outcome == "copied" for r in self.sessions)


def _chain(events: Sequence[BundledEvent]) -> str:
    encode = msgspec.json.encode
    head = _GENESIS
    for e in events:
        head = hashlib.sha256(head.encode() + encode(e)).hexdigest()
    return head


def _bundled(image: SessionImage, parent: str | None) -> BundledSession:
    events = [
        BundledEvent(*(*astuple(e)[:-1], msgspec.Raw(encode_event(e.event)))) for e in image.events
    ]
    return BundledSession(
        session_id=image.session_id,
        cwd=image.cwd,
        parent_session_id=parent,
        events=events,
        chain_head=_chain(events),
        wals=image.wals,
    )


def _image(s: BundledSession) -> SessionImage:
    events = [StoredEvent(*(*astuple(e)[:-1], decode_event(bytes(e.payload)))) for e in s.events]
    return SessionImage(session_id=s.session_id, cwd=s.cwd, events=events, wals=s.wals)


# --- writing ------------------------------------------------------------------------------


def export_bundle(
    location: str | Path, session_id: str, file: str | Path, project_dir: Path
) -> Header:
    """Write the session ``session_id`` of the store at ``location`` (a clew home or a
    ``postgresql://`` URL) to the bundle ``file``, with its ancestors if it is a fork.

    Raises:
        UnknownSession: no such session.
        StoreError: the store cannot be read.
        BundleRefused: ``file`` cannot be written (nothing is left behind).
    """
    sid = validate_session_id(session_id)
    src = Endpoint(location, project_dir, read_only=True)
    try:
        chain: list[str] = []
        at: str | None = sid
        while at is not None and at not in chain:
            chain.append(at)
            at = src.store.read_session(at).parent_session_id
        sessions: list[BundledSession] = []
        artifacts: dict[str, bytes] = {}
        for one in reversed(chain):  # ancestors first
            image = read_image(src, one)
            sessions.append(_bundled(image, src.store.read_session(one).parent_session_id))
            for art in image.artifacts():
                artifacts.setdefault(art.path, src.store.artifacts.read(art.path))
    finally:
        src.close()
    body = msgspec.json.encode(Body(sessions=sessions, artifacts=artifacts))
    header = Header(
        format=FORMAT,
        version=VERSION,
        session_id=sid,
        sessions=[s.session_id for s in sessions],
        digest="sha256:" + hashlib.sha256(body).hexdigest(),
    )
    path = Path(file)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with gzip.GzipFile(tmp, "wb", mtime=0) as out:
            out.write(msgspec.json.encode(header) + b"\n" + body)
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise BundleRefused(f"cannot write the bundle {path}: {e.strerror or e}") from None
    return header


# --- reading ------------------------------------------------------------------------------


def read_bundle(file: str | Path) -> Bundle:
    """Read and check the bundle ``file``: its header, its digest, each session's chain.

    Raises:
        BundleRefused: not a bundle, a newer format, or altered since it was written.
    """
    path = Path(file)
    header, body = _header(path)
    if "sha256:" + hashlib.sha256(body).hexdigest() != header.digest:
        raise BundleRefused(f"bundle {path} was altered since it was written (digest differs)")
    try:
        parsed = msgspec.json.decode(body, type=Body)
    except msgspec.DecodeError as e:
        raise BundleRefused(f"bundle {path} cannot be read: {e}") from None
    for s in parsed.sessions:
        if _chain(s.events) != s.chain_head:
            raise BundleRefused(f"bundle {path}: the hash chain of {s.session_id} is broken")
    if [s.session_id for s in parsed.sessions] != header.sessions:
        raise BundleRefused(f"bundle {path}: its sessions are not the ones its header names")
    return Bundle(header=header, body=parsed)


def _header(path: Path) -> tuple[Header, bytes]:
    """The bundle's header, checked, and its body's bytes."""
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise BundleRefused(f"no bundle file {path}") from None
    except (OSError, EOFError) as e:
        raise BundleRefused(f"{path} is not a clew session bundle ({e})") from None
    first, _, body = data.partition(b"\n")
    try:
        header = msgspec.json.decode(first, type=Header)
    except msgspec.DecodeError:
        raise BundleRefused(f"{path} is not a clew session bundle (no bundle header)") from None
    if header.format != FORMAT:
        raise BundleRefused(f"{path} is not a clew session bundle (format {header.format!r})")
    if header.version > VERSION:
        raise BundleRefused(
            f"{path} is a version {header.version} bundle; this clew reads up to {VERSION}"
        )
    return header, body


def import_bundle(location: str | Path, file: str | Path, project_dir: Path) -> ImportResult:
    """Load the bundle ``file`` into the store at ``location`` (made if it is a new home),
    verified; a session the store holds already, identical, is left alone.

    Raises:
        BundleRefused: the file is not a readable, unaltered bundle, or the store holds a
            different session of one of its ids (nothing of that session is written).
    """
    bundle = read_bundle(file)
    artifacts = bundle.body.artifacts
    dst = Endpoint(location, project_dir, read_only=False)
    try:
        images = bundle.images()
        results: list[CopyResult] = []
        for i, image in enumerate(images):
            if i < len(images) - 1 and _holds_prefix(dst, image):
                results.append(image.result("present"))
                continue
            try:
                results.append(land_image(dst, image, lambda p: _artifact(artifacts, p, file)))
            except CopyRefused as e:
                raise BundleRefused(f"importing {Path(file).name}: {e}") from e
    finally:
        dst.close()
    return ImportResult(session_id=bundle.session_id, sessions=results)


def _holds_prefix(dst: Endpoint, image: SessionImage) -> bool:
    """True when ``dst`` holds the ancestor ``image`` and went on from it (or not)."""
    if not dst.store.session_exists(image.session_id):
        return False
    there = list(dst.store.iter_events(image.session_id))
    return there[: len(image.events)] == image.events and len(there) > len(image.events)


def _artifact(artifacts: dict[str, bytes], rel: str, file: str | Path) -> bytes:
    data = artifacts.get(rel)
    if data is None:
        raise BundleRefused(f"bundle {file} lacks the artifact {rel} its events name")
    return data
