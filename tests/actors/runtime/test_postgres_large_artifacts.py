"""A tool result too big for one PostgreSQL parameter: stored in chunks, read back whole
(its sha256 checked), the session resumes, verifies and replays, and ``clew copy`` moves
it to SQLite and back in chunks (issue 32 item 20)."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pydantic
import pytest
from _postgres import drop_database, fresh_database
from _runtime_helpers import route, rule, scripted, worker

from actors import Approve, RunSettings, Runtime, ScriptedModel
from actors.models.tools import FunctionTool
from actors.runtime.upkeep import copy_sessions
from eventlog.events import ArtifactCreated
from eventlog.postgres import blobs
from projections import verify

#: A small chunk for the test: the result below needs several, without a 1 GiB result.
CHUNK = 64 * 1024
LINE = "row {i:06d}: the quick brown fox jumps over the lazy dog\n"
BIG = "".join(LINE.format(i=i) for i in range(6000))  # ~354 KB: six chunks of 64 KiB


class NoArgs(pydantic.BaseModel):
    pass


def _tools(text: list[str]) -> list[FunctionTool]:
    dump = FunctionTool("dump", lambda args: text[0], NoArgs, description="Dump the table.")
    done = FunctionTool("file_it", lambda args: "filed", NoArgs, description="File it.")
    return [dump, done]


def _model() -> ScriptedModel:
    return scripted(
        route([worker("w1", "reader", "Read the table")]),
        rule(
            "reader",
            {"tool_calls": [{"name": "dump"}]},
            {"tool_calls": [{"name": "file_it"}]},
            {"text": "Read and filed."},
        ),
    )


def _parts(url: str, path: str) -> list[int]:
    """The sizes of the rows holding the artifact at ``path``: its blob row, then chunks."""
    with psycopg.connect(url) as conn:
        head = conn.execute(
            "SELECT octet_length(data) FROM artifact_blobs WHERE path = %s", (path,)
        ).fetchall()
        rest = conn.execute(
            "SELECT octet_length(data) FROM artifact_chunks WHERE path = %s ORDER BY chunk_no",
            (path,),
        ).fetchall()
    return [int(r[0]) for r in [*head, *rest]]


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blobs, "CHUNK_BYTES", CHUNK)


@pytest.fixture
def second_db(pg_server: str) -> Iterator[str]:
    url = fresh_database(pg_server)
    yield url
    drop_database(pg_server, url)


def _run_waiting_then_resume(rt: Runtime, text: list[str]) -> str:
    """The reader stores the big result, then waits for approval of its next call;
    approved, the run resumes (re-executing its log past the artifact) and completes."""
    settings = RunSettings(approval_required=["file_it"])
    session = rt.new_session()
    out = session.run("Read the table.", model=_model(), tools=_tools(text), settings=settings)
    assert "waiting" == out.status, out
    (pending,) = out.pending
    session.decide(pending.tool_call_id, Approve())
    out = session.resume_waiting(model=_model(), tools=_tools(text), settings=settings)
    assert "completed" == out.status, out
    return session.id


def _check(rt: Runtime, sid: str, size: int, tools: list[FunctionTool]) -> str:
    """The session verifies and replays; return its one artifact's path."""
    assert verify(rt.store, sid).ok, verify(rt.store, sid).lines()
    assert rt.verify(sid).ok, rt.verify(sid).sessions[0].problems
    report = rt.replay(sid, tools=tools)
    assert report.identical, report.summary()
    (created,) = [
        e.event for e in rt.store.iter_events(sid) if isinstance(e.event, ArtifactCreated)
    ]
    assert size == created.size_bytes
    return created.path


def test_item20_large_artifact_chunks_postgres(
    pg_url: str, second_db: str, tmp_path: Path, small_chunks: None
) -> None:
    text, data = [BIG], BIG.encode()
    (tmp_path / "proj").mkdir()
    where: dict[str, Any] = {"home": tmp_path / "home", "project_dir": tmp_path / "proj"}
    with Runtime(**where, store=pg_url) as rt:
        sid = _run_waiting_then_resume(rt, text)
        path = _check(rt, sid, len(data), _tools(text))
        assert data == rt.store.artifacts.read(path)
        # A range across a chunk boundary ships only its bytes.
        assert data[CHUNK - 5 : CHUNK + 7] == rt.store.artifacts.read_range(path, CHUNK - 5, 12)
    parts = _parts(pg_url, path)
    assert (len(data) + CHUNK - 1) // CHUNK == len(parts) > 1
    assert [CHUNK] * (len(parts) - 1) == parts[:-1] and sum(parts) == len(data)

    # PostgreSQL → SQLite → another PostgreSQL database: chunked again, never one parameter.
    back = tmp_path / "back"
    assert ["copied"] == [r.outcome for r in copy_sessions(pg_url, back, [sid], tmp_path)]
    assert data == (back / "artifacts" / path).read_bytes()
    assert ["copied"] == [r.outcome for r in copy_sessions(back, second_db, [sid], tmp_path)]
    assert parts == _parts(second_db, path)
    with Runtime(**where, store=second_db, read_only=True) as rt:
        assert path == _check(rt, sid, len(data), _tools(text))
        assert data == rt.store.artifacts.read(path)


def test_item20_a_blob_stored_in_one_row_before_chunks_still_reads(
    pg_url: str, small_chunks: None
) -> None:
    from eventlog.postgres import PostgresStore  # noqa: PLC0415
    from eventlog.postgres.schema import CHUNKED_ARTIFACTS  # noqa: PLC0415

    data = BIG.encode()
    store = PostgresStore(pg_url)
    path, _, _ = store.artifacts.write("s1", data, ext="txt")
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as clew before schema 5 left it
        conn.execute("UPDATE artifact_blobs SET data = %s WHERE path = %s", (data, path))
        conn.execute("DROP TABLE artifact_chunks")
        conn.execute("UPDATE clew_schema SET version = %s", (CHUNKED_ARTIFACTS - 1,))
    old = PostgresStore(pg_url, read_only=True)
    assert data == old.artifacts.read(path)
    assert data[CHUNK : CHUNK + 10] == old.artifacts.read_range(path, CHUNK, 10)
    old.close()
    migrated = PostgresStore(pg_url)  # adds artifact_chunks; the one-row blob reads as it is
    assert data == migrated.artifacts.read(path)
    assert data[-10:] == migrated.artifacts.read_range(path, len(data) - 10, 99)
    again, _, _ = migrated.artifacts.write("s1", data, ext="txt")  # stored already: kept
    assert (path, [len(data)]) == (again, _parts(pg_url, path))
    migrated.close()


def test_item20_a_changed_chunk_is_an_integrity_error_naming_the_artifact(
    pg_url: str, small_chunks: None
) -> None:
    from eventlog.errors import IntegrityError  # noqa: PLC0415
    from eventlog.postgres import PostgresStore  # noqa: PLC0415

    store = PostgresStore(pg_url)
    path, _, _ = store.artifacts.write("s1", BIG.encode(), ext="txt")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE artifact_chunks SET data = 'x'::bytea || data WHERE chunk_no = 2")
    with pytest.raises(IntegrityError, match=f"artifact {path} does not hold the bytes"):
        store.artifacts.read(path)
    store.close()


def _rss_mb() -> float:
    """The current resident set size in MB (Linux ``/proc``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


@pytest.mark.slow
def test_item20_a_real_1_1_gib_tool_result_is_stored_on_postgres(
    pg_url: str, tmp_path: Path
) -> None:
    line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?\n"
    text = [line * (1_200_000_000 // len(line))]  # 1.12 GiB: over the server's 1 GB limit
    size = len(text[0])
    before = _rss_mb()
    (tmp_path / "proj").mkdir()
    model = scripted(
        route([worker("w1", "reader", "Read the dump")]),
        rule("reader", {"tool_calls": [{"name": "dump"}]}, {"text": "Read."}),
    )
    with Runtime(tmp_path / "home", tmp_path / "proj", store=pg_url) as rt:
        session = rt.new_session()
        out = session.run("Read the dump.", model=model, tools=_tools(text))
        assert "completed" == out.status, out
        (created,) = [
            e.event
            for e in rt.store.iter_events(session.id)
            if isinstance(e.event, ArtifactCreated)
        ]
        assert size == created.size_bytes
        assert verify(rt.store, session.id).ok
        assert rt.verify(session.id).ok  # reads the 1.1 GiB back, its sha256 checked
        tail = rt.store.artifacts.read_range(created.path, size - 100, 100)
        assert text[0][-100:].encode() == tail
    parts = _parts(pg_url, created.path)
    assert max(parts) == blobs.CHUNK_BYTES and sum(parts) == size
    # Beyond the tool's own text: its UTF-8 copy while it is stored, then the one buffer
    # a whole read assembles (never both at once, never a copy per chunk).
    grew = _peak_rss_mb() - before
    assert grew < 1.5 * size / 1e6, f"peak RSS grew {grew:.0f} MB for {size / 1e6:.0f} MB"
    if os.environ.get("CLEW_PRINT_MEASURES"):
        print(f"peak RSS grew {grew:.0f} MB for a {size / 1e6:.0f} MB result")
