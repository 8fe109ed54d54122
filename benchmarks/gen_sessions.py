"""Fill a clew home (SQLite) or a PostgreSQL database with N sessions of realistic shapes.

Usage::

    python3 benchmarks/gen_sessions.py --home /tmp/big -n 100000
    python3 benchmarks/gen_sessions.py --store postgresql://postgres@127.0.0.1:55432/big -n 100000

The runtime records a few template sessions once, with scripted models, in a scratch
home: a conversation of two requests with tool calls (``chat``), a routed plan with two
workers (``team``), a run whose model fails (``failed``), a run parked on an approval
(``waiting``) and a run killed mid-way (``interrupted``: a prefix of ``chat``'s events, what
a SIGKILL leaves). Each generated session is a copy of one template under a new session
id: its events, the ids in them renamed, go through the store's own ``append_batch`` (the
path the writer actor takes), ``--batch`` requests a transaction, so every row — the
per-session tables, ``sessions``, ``agents``, ``runs`` — is what the runtime writes, and
``clew verify SESSION`` passes on any of them (``--verify K`` checks K at random after).

The mix (out of 100): 60 chat, 15 team, 12 failed, 8 waiting, 5 interrupted. Session ids
are ``sess_<date>_<time>_<4 hex>`` like the runtime's, one second apart, so the list's
order is their creation order.

SQLite note: a new table costs SQLite a scan of its whole schema (``CREATE TABLE`` re-reads
``sqlite_schema`` for the new name), so filling one file with N table pairs is quadratic in
N; see docs/postgres.md ("Size") for what that means past 10^4 sessions. ``--cold F``
(SQLite) makes the oldest fraction F of the sessions archived, each written as ``clew
archive`` leaves it: its table pair in ``cold/<sid>.sqlite``, its rows of ``sessions``,
``agents``, ``runs``, ``artifacts`` and ``clew_cold_sessions`` in the main file
(:mod:`eventlog.sqlite.cold`). They go through a scratch file beside the main one
(``append_batch``, a ``session_archived`` event, the store's own move to a cold file —
without its two fsyncs a session: one ``sync`` at the end — then the global rows copied
over), so the main file's schema never grows with them and the fill is linear:
``--cold 0.99 -n 100000`` leaves 1,000 live sessions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import msgspec
import psycopg
import pydantic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors import Runtime, ScriptedModel, tool
from eventlog.chain import GENESIS, link
from eventlog.codec import decode_event
from eventlog.events import SessionArchived
from eventlog.locations import is_postgres_url, open_store
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.cold import LOCATIONS_DDL, move_to_cold
from eventlog.store import EventStore
from eventlog.wals import FileWals

#: (shape, weight out of 100).
MIX = (("chat", 60), ("team", 15), ("failed", 12), ("waiting", 8), ("interrupted", 5))
#: The shapes an archived session can have (``clew archive`` refuses a run left open).
ARCHIVABLE = ("chat", "team", "failed")
#: Sessions a transaction of the scratch file at most: its schema holds them until they
#: move, and each new table scans it (1,000 sessions: 127/s at 50, 91/s at 200).
COLD_BATCH = 50
#: The tables whose rows a cold session keeps in the main file.
_GLOBAL_TABLES = ("sessions", "agents", "runs", "artifacts", "clew_cold_sessions")
#: Events of ``chat`` kept by an ``interrupted`` session (its first run cut mid-way).
INTERRUPTED_KEEP = 0.6

_ROUTE_LEAD = {"json": {"primary_role": "lead", "workers": []}}


def _chat_script() -> dict[str, Any]:
    return {
        "rules": [
            {"role": "router", "replies": [_ROUTE_LEAD]},
            {
                "role": "lead",
                "replies": [
                    {"tool_calls": [{"name": "lookup", "arguments": {"q": "notes apps"}}]},
                    {"tool_calls": [{"name": "lookup", "arguments": {"q": "sync"}}]},
                    {"text": "Three options: local-first with CRDT sync is the simplest."},
                ],
            },
        ]
    }


def _team_script() -> dict[str, Any]:
    workers = [
        {"id": "w1", "role": "researcher", "goal": "Find prior art"},
        {"id": "w2", "role": "analyst", "goal": "Compare them", "deps": ["w1"]},
    ]
    return {
        "rules": [
            {"role": "router", "replies": [{"json": {"primary_role": "lead", "workers": workers}}]},
            {
                "role": "researcher",
                "phase": "worker",
                "replies": [
                    {"tool_calls": [{"name": "lookup", "arguments": {"q": "prior art"}}]},
                    {"json": {"summary": "Found three."}},
                ],
            },
            {"role": "analyst", "phase": "worker", "replies": [{"json": {"summary": "B wins."}}]},
            {"role": "lead", "replies": [{"text": "Go with B."}]},
        ]
    }


def _failed_script() -> dict[str, Any]:
    return {
        "rules": [
            {"role": "router", "replies": [_ROUTE_LEAD]},
            {"role": "lead", "replies": [{"error": "the provider is overloaded"}]},
        ]
    }


def _waiting_script() -> dict[str, Any]:
    return {
        "rules": [
            {"role": "router", "replies": [_ROUTE_LEAD]},
            {
                "role": "lead",
                "replies": [{"tool_calls": [{"name": "refund", "arguments": {"amount_eur": 30}}]}],
            },
        ]
    }


class LookupArgs(pydantic.BaseModel):
    q: str


class RefundArgs(pydantic.BaseModel):
    amount_eur: int


class Template(msgspec.Struct, frozen=True):
    """One recorded session: its id, its events as the writer was asked to append them, and
    its Task WALs (name → lines)."""

    shape: str
    session_id: str
    #: ``(payload JSON, agent_id, run_id, created_at)`` per event, in seq order.
    events: list[tuple[str, str | None, str | None, str]]
    wals: dict[str, list[bytes]]


def record_templates(location: str | Path, project: Path) -> dict[str, Template]:
    """Run the runtime once per shape on the target (``location``: a home or a PostgreSQL
    URL, whose Task WALs are files under ``project`` or its ``task_wal`` table) and read
    back what it recorded; the template sessions stay there (a few among N)."""

    @tool(LookupArgs)
    def lookup(args: LookupArgs) -> str:
        """Look something up."""
        return f"3 results for {args.q}"

    @tool(RefundArgs, needs_approval=True)
    def refund(args: RefundArgs) -> str:
        """Refund an amount."""
        return f"refunded {args.amount_eur}"

    project.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}
    where: dict[str, Any] = {"home": Path(location)}
    if is_postgres_url(location):  # the home keeps only this host's locks then
        where = {"home": project / ".clew-home", "store": str(location)}
    with Runtime(project_dir=project, **where) as rt:
        chat = rt.new_session()
        chat.run("Which notes app design?", model=ScriptedModel(_chat_script()), tools=[lookup])
        chat.run("And the sync?", model=ScriptedModel(_chat_script()), tools=[lookup])
        made["chat"] = chat.id
        for shape, script, tools in (
            ("team", _team_script(), [lookup]),
            ("failed", _failed_script(), []),
            ("waiting", _waiting_script(), [refund]),
        ):
            s = rt.new_session()
            s.run(f"A {shape} request.", model=ScriptedModel(script), tools=tools)
            made[shape] = s.id
        out: dict[str, Template] = {}
        for shape, sid in made.items():
            rows = [
                (msgspec.json.encode(e.event).decode(), e.agent_id, e.run_id, e.created_at)
                for e in rt.store.iter_events(sid)
            ]
            wals = rt.session(sid).task_wals()
            lines = {name: _wal_lines(wals, sid, name) for name in wals.names(sid)}
            out[shape] = Template(shape, sid, rows, lines)
    chat_rows = out["chat"].events
    out["interrupted"] = Template("interrupted", made["chat"], _cut_first_run(chat_rows), {})
    return out


def _wal_lines(wals: Any, sid: str, name: str) -> list[bytes]:
    """The raw lines of one Task WAL: a file's lines, or the ``task_wal`` table's rows."""
    if isinstance(wals, FileWals):
        return Path(wals.location(sid, name)).read_bytes().splitlines(keepends=True)
    with psycopg.connect(wals.url) as conn:
        rows = conn.execute(
            "SELECT line FROM task_wal WHERE session_id = %s AND name = %s ORDER BY seq",
            (sid, name),
        ).fetchall()
    return [bytes(r[0]) for r in rows]


def _cut_first_run(rows: list[tuple[str, str | None, str | None, str]]) -> list[Any]:
    """The first part of ``rows`` a SIGKILL in the first run leaves: up to an event of that
    run ~:data:`INTERRUPTED_KEEP` of the way through it, its end never written."""
    first_run = next(r[2] for r in rows if r[2] is not None)
    in_run = [i for i, r in enumerate(rows) if r[2] is not None and r[2].startswith(first_run)]
    cut = in_run[int(len(in_run) * INTERRUPTED_KEEP)]
    return rows[:cut]


def _session_ids(n: int, start: datetime, seed: int) -> Iterator[tuple[str, datetime]]:
    rng = random.Random(seed)
    for i in range(n):
        at = start + timedelta(seconds=i)
        yield f"sess_{at:%Y%m%d_%H%M%S}_{rng.getrandbits(16):04x}", at


def copy_requests(template: Template, sid: str, at: datetime) -> list[AppendRequest]:
    """The append requests of ``template`` renamed to the session ``sid``, starting at ``at``."""
    old = template.session_id
    first = datetime.fromisoformat(template.events[0][3])
    rename = re.compile(re.escape(old)).sub
    out = []
    for payload, agent, run, created in template.events:
        when = at + (datetime.fromisoformat(created) - first)
        out.append(
            AppendRequest(
                session_id=sid,
                event=decode_event(rename(sid, payload)),
                created_at=when.isoformat(),
                agent_id=None if agent is None else rename(sid, agent),
                run_id=None if run is None else rename(sid, run),
            )
        )
    return out


class WalCopies:
    """Writes the Task WALs of the copies: files under the project, or ``task_wal`` rows."""

    def __init__(self, location: str | Path, project: Path) -> None:
        self._files = None if is_postgres_url(location) else FileWals(project)
        self._conn = psycopg.connect(str(location)) if self._files is None else None
        self._rows: list[tuple[str, str, int, bytes]] = []

    def add(self, template: Template, sid: str) -> None:
        old, new = template.session_id.encode(), sid.encode()
        for name, lines in template.wals.items():
            renamed = [line.replace(old, new) for line in lines]
            if self._files is None:
                self._rows += [(sid, name, i, line) for i, line in enumerate(renamed, 1)]
                continue
            path = Path(self._files.location(sid, name))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"".join(renamed))

    def flush(self) -> None:
        if self._conn is not None and self._rows:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO task_wal VALUES (%s, %s, %s, %s)", self._rows)
            self._conn.commit()
        self._rows = []

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def fill(
    store: EventStore,
    templates: dict[str, Template],
    n: int,
    *,
    wals: WalCopies | None = None,
    batch: int = 200,
    seed: int = 1,
    start: datetime | None = None,
    progress: bool = True,
) -> list[str]:
    """Append ``n`` sessions copied from ``templates`` (the :data:`MIX`), ``batch`` sessions a
    transaction, and their Task WALs to ``wals``; return their ids."""
    rng = random.Random(seed)
    shapes = [s for s, w in MIX for _ in range(w) if s in templates]
    begin = start or datetime(2026, 1, 1, tzinfo=UTC)
    ids: list[str] = []
    pending: list[AppendRequest] = []
    t0 = time.perf_counter()
    for i, (sid, at) in enumerate(_session_ids(n, begin, seed), 1):
        template = templates[rng.choice(shapes)]
        pending += copy_requests(template, sid, at)
        if wals is not None:
            wals.add(template, sid)
        ids.append(sid)
        if i % batch == 0 or i == n:
            if wals is not None:
                wals.flush()
            for result in store.append_batch(pending):
                if not isinstance(result, list):
                    raise result
            pending = []
            if progress and (i % (batch * 10) == 0 or i == n):
                rate = i / (time.perf_counter() - t0)
                print(f"  {i:>8} sessions ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    return ids


def fill_cold(
    home: Path,
    templates: dict[str, Template],
    n: int,
    *,
    wals: WalCopies,
    batch: int = 200,
    seed: int = 1,
    start: datetime | None = None,
) -> list[str]:
    """Write ``n`` archived sessions (of :data:`ARCHIVABLE` shapes) of the home straight to
    cold files, ``batch`` sessions at a time through a scratch file (the module docstring);
    return their ids."""
    rng = random.Random(seed)
    shapes = [s for s, w in MIX for _ in range(w) if s in ARCHIVABLE]
    scratch_path = home / ".gen-cold.sqlite"
    for stale in home.glob(".gen-cold.sqlite*"):
        stale.unlink()
    scratch = SQLiteStore(scratch_path, artifacts_dir=home / "artifacts")
    main = apsw.Connection(str(home / "sessions.sqlite"))
    main.set_busy_timeout(10_000)
    main.execute(LOCATIONS_DDL)
    main.execute("ATTACH ? AS scratch", (str(scratch_path),))
    mover = apsw.Connection(str(scratch_path))
    mover.pragma("synchronous", "OFF")  # a scratch file: synced once at the end
    ids: list[str] = []
    pending: dict[str, list[AppendRequest]] = {}
    t0 = time.perf_counter()
    try:
        sessions = _session_ids(n, start or datetime(2026, 1, 1, tzinfo=UTC), seed)
        for i, (sid, at) in enumerate(sessions, 1):
            template = templates[rng.choice(shapes)]
            copied = copy_requests(template, sid, at)
            last = datetime.fromisoformat(copied[-1].created_at)
            archived = (last + timedelta(seconds=1)).isoformat()
            pending[sid] = [
                *copied,
                AppendRequest(session_id=sid, event=SessionArchived(), created_at=archived),
            ]
            wals.add(template, sid)
            ids.append(sid)
            if i % batch == 0 or i == n:
                wals.flush()
                _write_cold(scratch, mover, main, pending)
                pending = {}
                if i % (batch * 10) == 0 or i == n:
                    rate = i / (time.perf_counter() - t0)
                    print(f"  {i:>8} cold sessions ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    finally:
        main.close()
        mover.close()
        scratch.close()
        for left in home.glob(".gen-cold.sqlite*"):
            left.unlink()
    os.sync()  # the cold files were written without their own fsyncs
    return ids


def _write_cold(
    scratch: SQLiteStore,
    mover: apsw.Connection,
    main: apsw.Connection,
    pending: dict[str, list[AppendRequest]],
) -> None:
    """Append the sessions of ``pending`` to the scratch file, move each to its cold file
    (on ``mover``, a connection to the scratch file), then their global rows to the main
    file."""
    for result in scratch.append_batch([r for requests in pending.values() for r in requests]):
        if not isinstance(result, list):
            raise result
    for sid in pending:
        move_to_cold(mover, scratch.path, sid, sync=False)
    _move_global_rows(main)


def _move_global_rows(main: apsw.Connection) -> None:
    """Move the scratch file's global rows (its sessions are cold now) to the main file."""
    main.execute("BEGIN IMMEDIATE")
    try:
        for table in _GLOBAL_TABLES:
            main.execute(f"INSERT INTO main.{table} SELECT * FROM scratch.{table}")
            main.execute(f"DELETE FROM scratch.{table}")
    except BaseException:
        main.execute("ROLLBACK")
        raise
    main.execute("COMMIT")


#: The PostgreSQL tables a session's rows are in, copied by :func:`copy_on_postgres`.
_PG_TABLES = ("sessions", "agents", "runs", "artifacts", "events", "nodes", "task_wal")


def copy_on_postgres(
    url: str, sources: dict[str, str], n: int, *, batch: int = 2000, seed: int = 1
) -> list[str]:
    """Make ``n`` sessions on PostgreSQL as copies of the stored sessions ``sources`` (shape →
    a session appended through the store), ``batch`` sessions a ``COPY`` transaction.

    The append path costs ~5 round trips a durable step (issue 35's first item): ~7
    sessions/s on this shared 2-core machine, 4 hours for 10^5. A copy takes every row of
    the source from every table, renames the session id in every text value and follows
    the hash chain again (:func:`eventlog.chain.link`: the hashes cover the ids), so each
    copy is what the writer would have stored for that session under that id, byte for
    byte but for the id; ``clew verify`` checks a sample (chain, tables against a rebuild
    from the events, Task WALs). Times are the source's.
    """
    rng = random.Random(seed)
    shapes = [s for s, w in MIX for _ in range(w)]
    with psycopg.connect(url) as conn:
        rows = {shape: _pg_rows(conn, sid) for shape, sid in sources.items()}
        # The foreign keys' per-row triggers (events, nodes → sessions) are skipped while
        # copying (superuser only; the copies' sessions rows are in the same COPY batch):
        # ~3× the rows/s here. Without the privilege the copy runs with them.
        with contextlib.suppress(psycopg.Error):
            conn.execute("SET session_replication_role = replica")
        conn.commit()
        ids: list[str] = []
        t0 = time.perf_counter()
        begin = datetime(2026, 1, 1, tzinfo=UTC)
        todo = list(_session_ids(n, begin, seed))
        for start in range(0, n, batch):
            chunk = todo[start : start + batch]
            out: dict[str, list[tuple[Any, ...]]] = {t: [] for t in _PG_TABLES}
            for sid, _ in chunk:
                shape = rng.choice(shapes)
                _pg_copy_one(rows[shape], sources[shape], sid, out)
                ids.append(sid)
            with conn.cursor() as cur:
                for table in _PG_TABLES:
                    columns = rows[shapes[0]][table][0]
                    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
                    with cur.copy(sql) as copy:
                        for row in out[table]:
                            copy.write_row(row)
            conn.commit()
            done = start + len(chunk)
            rate = done / (time.perf_counter() - t0)
            print(f"  {done:>8} sessions ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    return ids


def _pg_rows(conn: Any, sid: str) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """Every row of the session ``sid`` in each of :data:`_PG_TABLES`, with the columns."""
    out = {}
    for table in _PG_TABLES:
        order = " ORDER BY seq" if table in ("events", "task_wal") else ""
        cur = conn.execute(f"SELECT * FROM {table} WHERE session_id = %s{order}", (sid,))
        out[table] = ([d.name for d in cur.description], cur.fetchall())
    return out


def _pg_copy_one(
    source: dict[str, tuple[list[str], list[tuple[Any, ...]]]],
    old: str,
    sid: str,
    out: dict[str, list[tuple[Any, ...]]],
) -> None:
    """Append to ``out`` the rows of ``source`` renamed from ``old`` to ``sid``, the events'
    hash chain followed again and ``sessions.chain_head`` its last link."""
    old_b, new_b = old.encode(), sid.encode()

    def rename(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(old, sid)
        if isinstance(value, bytes | memoryview):
            return bytes(value).replace(old_b, new_b)
        return value

    columns, events = source["events"]
    at = columns.index("hash")
    head = GENESIS
    for row in events:
        renamed = [rename(v) for v in row]
        head = renamed[at] = link(head, renamed[:11])
        out["events"].append(tuple(renamed))
    for table in _PG_TABLES:
        if table == "events":
            continue
        columns, rows = source[table]
        for row in rows:
            renamed = [rename(v) for v in row]
            if table == "sessions":
                renamed[columns.index("chain_head")] = head
            out[table].append(tuple(renamed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--home", type=Path, help="a clew home (SQLite) to fill")
    where.add_argument("--store", help="a PostgreSQL URL (its database must exist)")
    parser.add_argument("-n", type=int, default=100_000, help="sessions (default 100,000)")
    parser.add_argument("--batch", type=int, default=200, help="sessions per transaction")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--verify", type=int, default=3, metavar="K", help="sessions to verify")
    parser.add_argument(
        "--via",
        choices=("append", "copy"),
        help="append: every session through append_batch (SQLite's default); copy: five"
        " through append_batch, the rest COPYied from them (PostgreSQL's default)",
    )
    parser.add_argument(
        "--cold",
        type=float,
        default=0.0,
        metavar="F",
        help="SQLite: the oldest fraction F of the sessions archived in cold files (default 0)",
    )
    parser.add_argument(
        "--project",
        type=Path,
        help="the sessions' project directory (their Task WAL files; default: HOME/project,"
        " or ./gen-project with --store)",
    )
    args = parser.parse_args(argv)
    project = args.project or (args.home / "project" if args.home else Path("gen-project"))
    args.project = project = project.resolve()
    target: str | Path = args.store or args.home
    location: str | Path = args.store or args.home / "sessions.sqlite"
    t0 = time.perf_counter()
    templates = record_templates(target, project)
    sizes = ", ".join(f"{k} {len(t.events)}" for k, t in templates.items())
    print(f"templates (events): {sizes}  [{time.perf_counter() - t0:.1f} s]", file=sys.stderr)
    via = args.via or ("copy" if args.store else "append")
    if via == "copy" and not args.store:
        parser.error("--via copy is for a PostgreSQL --store")
    if args.cold and (args.store or not 0 <= args.cold <= 1):
        parser.error("--cold is a fraction (0 to 1) of a SQLite --home's sessions")
    cold = round(args.n * args.cold)
    store = open_store(location)
    wals = WalCopies(location, project)
    t1 = time.perf_counter()
    try:
        if via == "append":
            ids = _fill_home(args, store, templates, wals, cold)
        else:
            sources = {}
            for i, (shape, template) in enumerate(templates.items()):
                one = {shape: template}
                at = datetime(2025, 12, 31, tzinfo=UTC) + timedelta(minutes=i)
                (sources[shape],) = fill(
                    store, one, 1, wals=wals, seed=args.seed + i, start=at, progress=False
                )
            wals.flush()
    finally:
        wals.close()
        store.close()
    if via == "copy":
        ids = copy_on_postgres(args.store, sources, args.n, seed=args.seed)
    took = time.perf_counter() - t1
    print(f"{len(ids)} sessions in {took:.1f} s ({len(ids) / took:,.0f}/s) -> {location}")
    if args.verify:
        _verify(args, random.Random(args.seed).sample(ids, min(args.verify, len(ids))))
    return 0


def _fill_home(
    args: argparse.Namespace,
    store: EventStore,
    templates: dict[str, Template],
    wals: WalCopies,
    cold: int,
) -> list[str]:
    """Fill the SQLite home: its ``cold`` oldest sessions archived in cold files, then the
    rest live (one second apart, all of them)."""
    ids = []
    if cold:
        batch = min(args.batch, COLD_BATCH)
        ids = fill_cold(args.home, templates, cold, wals=wals, batch=batch, seed=args.seed)
    begin = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=cold)
    live = args.n - cold
    return ids + fill(
        store, templates, live, wals=wals, batch=args.batch, seed=args.seed, start=begin
    )


def _verify(args: argparse.Namespace, sample: list[str]) -> None:
    """``clew verify`` on ``sample``, each in a process of its own (what a user runs)."""
    import subprocess  # noqa: PLC0415 - only here

    where = ["--store", args.store] if args.store else ["--home", str(args.home)]
    where += ["--project", str(args.project)]
    for sid in sample:
        p = subprocess.run(
            [sys.executable, "-m", "actors", "verify", sid, *where],
            capture_output=True,
            text=True,
            check=False,
        )
        line = (p.stdout.strip().splitlines() or [p.stderr.strip()])[-1]
        print(f"verify {sid}: exit {p.returncode}: {line}")


if __name__ == "__main__":
    sys.exit(main())
