"""One durable step on PostgreSQL: clew's Writer beside LangGraph, DBOS and eventsourcing.

Run from the checkout::

    python3 -m pip install '.[bench,postgres]'
    PYTHONPATH=. python3 benchmarks/peers/postgres_steps.py [--steps 200] [--rounds 5]
    PYTHONPATH=. python3 benchmarks/peers/run.py --postgres        # the same

It starts one throwaway PostgreSQL server (``tests/helpers/_postgres.py``: ``fsync=on``,
``synchronous_commit=on``, loopback TCP; ``--url`` to use another), gives every system a
database of its own on it, and runs ``--rounds`` lockstep rounds of ``--steps`` steps each
(the order rotated every round, so the machine's noise hits all alike). No side changes
``synchronous_commit`` (each was read from its connection: ``on``). A step:

- clew: ``Writer.append`` of a ``node_appended`` (the node row, the active node, the event);
- LangGraph: ``PostgresSaver.put`` of a checkpoint holding one message (its blob row too);
- DBOS: one ``@DBOS.step`` in workflows of 40 steps (the workflow's own rows amortised);
- eventsourcing: one aggregate event per ``save`` (``eventsourcing.postgres``);
- the floor: one ``INSERT`` of the text on an autocommit psycopg connection (one
  statement, one commit, one round trip).

Round trips per step are counted after the timed rounds, in an untimed pass of 40 steps:
the answers that end a wait (``ReadyForQuery``, ``CopyInResponse``) in libpq's protocol
trace of every psycopg connection the side uses (DBOS's background threads may add a few).
Prints steps/s, clew ÷ each system, round trips per step. Not a test: only ratios travel.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT), str(ROOT / "tests" / "helpers")]

import psycopg  # noqa: E402
from _clew import ClewSteps  # noqa: E402
from _common import Unavailable, user_text  # noqa: E402
from _postgres import bin_dir, fresh_database, start_server  # noqa: E402
from psycopg import pq  # noqa: E402

from eventlog.events import SessionCreated  # noqa: E402
from eventlog.postgres import PostgresStore  # noqa: E402
from eventlog.records import AppendRequest  # noqa: E402

SID = "peers"
DBOS_WORKFLOW = 40


class RoundTrips:
    """Count the server's answers that end a wait of the client, on every psycopg
    connection used in the block: each ``ReadyForQuery`` (the end of a sync) and each
    ``CopyInResponse`` (a ``COPY`` waits for it before it sends its rows), read from
    libpq's protocol trace (the client's own wake-ups would count a reply that arrives in
    two packets twice)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0
        self._wait = psycopg.Connection.wait
        self._traced: dict[int, tuple[psycopg.Connection[Any], Path]] = {}

    def __enter__(self) -> RoundTrips:
        wait, traced, folder = self._wait, self._traced, self.folder

        def tracing(conn: psycopg.Connection[Any], gen: Any, *a: Any, **k: Any) -> Any:
            if id(conn) not in traced:
                path = folder / f"trace_{len(traced)}.txt"
                path.touch()
                conn.pgconn.trace(os.open(path, os.O_WRONLY))  # libpq keeps the descriptor
                conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
                traced[id(conn)] = (conn, path)
            return wait(conn, gen, *a, **k)

        psycopg.Connection.wait = tracing  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        psycopg.Connection.wait = self._wait  # type: ignore[method-assign]
        for conn, path in self._traced.values():
            with contextlib.suppress(Exception):
                conn.pgconn.untrace()  # flushes the trace
            for line in path.read_text().splitlines():
                fields = line.split("\t")
                if len(fields) > 2 and fields[0] == "B" and fields[2] in _ENDS_A_WAIT:
                    self.count += 1


_ENDS_A_WAIT = {"ReadyForQuery", "CopyInResponse"}


def _synchronous_commit(conn: Any) -> str:
    row = conn.execute("SHOW synchronous_commit").fetchone()
    return str(row[0] if not isinstance(row, dict) else row["synchronous_commit"])


class ClewPostgresSteps(ClewSteps):
    """clew: the Writer actor on a PostgresStore, one ``node_appended`` per step (case 1's
    :class:`_clew.ClewSteps` on this server)."""

    def __init__(self, url: str) -> None:
        super().__init__(Path(), PostgresStore(url))

    def durability(self) -> str:
        with psycopg.connect(self.writer.store.url) as conn:  # type: ignore[attr-defined]
            return _synchronous_commit(conn)

    def close(self) -> None:
        super().close()
        self.writer.store.close()


class ClewStoreSteps(ClewSteps):
    """clew without the Writer actor: the same step's ``PostgresStore.append_batch`` called
    on the caller's thread, so the Writer's hand-off (a queue, a wake-up of its thread, a
    future) is what this row and the one above differ by."""

    def __init__(self, url: str) -> None:  # no Writer: ClewSteps.__init__ would start one
        self.store = PostgresStore(url)
        self.tip: str | None = None
        self.t = 0
        self._append(SessionCreated(session_id=SID, cwd="/", root_agent_id="main"))

    def _commit(self, request: AppendRequest) -> None:
        (result,) = self.store.append_batch([request])
        if not isinstance(result, list):
            raise result

    def durability(self) -> str:
        with psycopg.connect(self.store.url) as conn:
            return _synchronous_commit(conn)

    def close(self) -> None:
        self.store.close()


class FloorSteps:
    """The floor: one ``INSERT`` and its commit, autocommit, on the caller's thread."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute("CREATE TABLE steps (seq BIGINT PRIMARY KEY, text TEXT NOT NULL)")

    def step(self, i: int) -> None:
        self.conn.execute("INSERT INTO steps VALUES (%s, %s)", (i, user_text(i)))

    def durability(self) -> str:
        return _synchronous_commit(self.conn)

    def close(self) -> None:
        self.conn.close()


class LangGraphSteps:
    """LangGraph: ``PostgresSaver.put`` on the connection ``from_conn_string`` would open."""

    def __init__(self, url: str) -> None:
        try:
            from langgraph.checkpoint.base import empty_checkpoint  # noqa: PLC0415
            from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415
            from psycopg.rows import dict_row  # noqa: PLC0415
        except ImportError as e:
            raise Unavailable(f"langgraph-checkpoint-postgres: {e}") from e
        self._empty = empty_checkpoint
        self.conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        self.saver = PostgresSaver(self.conn)  # type: ignore[arg-type]
        self.saver.setup()
        self.config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}

    def step(self, i: int) -> None:
        cp = self._empty()
        cp["channel_values"] = {"messages": [{"role": "user", "content": user_text(i)}]}
        cp["channel_versions"] = {"messages": i + 1}
        self.config = self.saver.put(self.config, cp, {"step": i}, {"messages": i + 1})

    def durability(self) -> str:
        return _synchronous_commit(self.conn)

    def close(self) -> None:
        self.conn.close()


class DbosSteps:
    """DBOS: one ``@DBOS.step`` per step, in workflows of :data:`DBOS_WORKFLOW` steps, on a
    PostgreSQL system database."""

    def __init__(self, url: str) -> None:
        try:
            import _dbos  # noqa: PLC0415 - registers the workflow and its step
            from dbos import DBOS  # noqa: PLC0415
        except (ImportError, Unavailable) as e:
            raise Unavailable(f"dbos: {e}") from e
        logging.getLogger("dbos").setLevel(logging.WARNING)
        self.dbos, self.steps = DBOS, _dbos.steps
        self.url = url
        DBOS(
            config={
                "name": "peers_pg",
                "system_database_url": url,
                "log_level": "WARNING",
                "run_admin_server": False,
            }
        )
        DBOS.launch()
        self.pending: list[int] = []

    def step(self, i: int) -> None:
        self.pending.append(i)
        if len(self.pending) == DBOS_WORKFLOW:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.steps(self.pending[0], len(self.pending))
            self.pending.clear()

    def durability(self) -> str:
        with psycopg.connect(self.url) as conn:
            return _synchronous_commit(conn)

    def close(self) -> None:
        self.flush()
        self.dbos.destroy(destroy_registry=False)


class EventsourcingSteps:
    """eventsourcing: one aggregate event per ``save``, on its PostgreSQL recorder."""

    def __init__(self, url: str) -> None:
        try:
            import _eventsourcing  # noqa: PLC0415
            from eventsourcing.application import Application  # noqa: PLC0415
        except (ImportError, Unavailable) as e:
            raise Unavailable(f"eventsourcing: {e}") from e
        parts = urlsplit(url)
        self.app = Application(
            env={
                "PERSISTENCE_MODULE": "eventsourcing.postgres",
                "POSTGRES_DBNAME": parts.path.lstrip("/"),
                "POSTGRES_HOST": parts.hostname or "127.0.0.1",
                "POSTGRES_PORT": str(parts.port or 5432),
                "POSTGRES_USER": parts.username or "postgres",
                "POSTGRES_PASSWORD": parts.password or "",
                "IS_SNAPSHOTTING_ENABLED": "n",
            }
        )
        self.url = url
        self.conv = _eventsourcing.Conversation()
        self.app.save(self.conv)

    def step(self, i: int) -> None:
        self.conv.add("user" if i % 2 else "assistant", user_text(i))
        self.app.save(self.conv)

    def durability(self) -> str:
        with psycopg.connect(self.url) as conn:
            return _synchronous_commit(conn)

    def close(self) -> None:
        self.app.close()


SIDES: dict[str, Callable[[str], Any]] = {
    "clew Writer": ClewPostgresSteps,
    "clew append_batch, no Writer thread": ClewStoreSteps,
    "LangGraph PostgresSaver.put": LangGraphSteps,
    "DBOS step": DbosSteps,
    "eventsourcing (PostgreSQL recorder)": EventsourcingSteps,
    "INSERT + commit (floor)": FloorSteps,
}


def _step(side: Any, first: int, count: int) -> None:
    for i in range(first, first + count):
        side.step(i)
    if hasattr(side, "flush"):
        side.flush()  # DBOS: the workflow of the last steps


def measure(server: str, steps: int, rounds: int) -> None:
    """Run the lockstep rounds, count the round trips, and print the table."""
    sides: dict[str, Any] = {}
    for name, make in SIDES.items():
        try:
            sides[name] = make(fresh_database(server))
        except Unavailable as e:
            print(f"{name}: peer unavailable ({e})")
    names = list(sides)
    spent = dict.fromkeys(names, 0.0)
    cpu = dict.fromkeys(names, 0.0)
    for r in range(rounds):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            _step(sides[n], r * steps, steps)
            spent[n] += time.perf_counter() - t0
            cpu[n] += time.process_time() - c0
    trips: dict[str, float] = {}
    durability: dict[str, str] = {}
    # DBOS first, then closed: its background threads' queries would count for the others.
    for n in sorted(names, key=lambda n: not n.startswith("DBOS")):
        with tempfile.TemporaryDirectory() as tmp, RoundTrips(Path(tmp)) as counted:
            _step(sides[n], rounds * steps, DBOS_WORKFLOW)
        trips[n] = counted.count / DBOS_WORKFLOW
        durability[n] = sides[n].durability()
        sides[n].close()
    rate = {n: steps * rounds / spent[n] for n in names}
    clew = rate.get("clew Writer", 0.0)
    print(
        f"\n## One durable step on PostgreSQL: {steps} steps × {rounds} lockstep rounds each,"
        " one server (fsync=on, synchronous_commit=on, loopback TCP)\n"
    )
    print(
        "| system | steps/s | clew ÷ system | process CPU ms/step | wall − CPU ms/step"
        " | round trips per step | synchronous_commit |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in names:
        ms, wall = 1000 * cpu[n] / (steps * rounds), 1000 / rate[n]
        print(
            f"| {n} | {rate[n]:,.0f} | {clew / rate[n]:.2f} | {ms:.3f} | {wall - ms:.3f}"
            f" | {trips[n]:.2f} | {durability[n]} |"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--url", help="a server to use instead of a throwaway one")
    args = parser.parse_args(argv)
    server = args.url
    if server is None:
        found = bin_dir()
        if found is None:
            raise SystemExit("PostgreSQL is not installed (initdb not found)")
        server = start_server(found, fsync=True)
    measure(server, args.steps, args.rounds)


if __name__ == "__main__":
    main()
