"""A real PostgreSQL server for the tests: the one CI started, or a throwaway one.

``CLEW_TEST_PG`` decides:
- a ``postgresql://`` URL: use that server (``.ci/run`` starts one and exports its URL);
- ``start``: start a throwaway server here, and fail if that is impossible;
- unset: start a throwaway server if PostgreSQL is installed, else skip the test.

A throwaway server lives in a temporary directory for the pytest process (``initdb`` as
the ``postgres`` user when run as root, trust authentication, loopback only, a free
port, ``fsync=off``: the tests check semantics, the benchmarks check durability) and is
stopped when the process exits. Each test gets a fresh database (:func:`fresh_database`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

ENV = "CLEW_TEST_PG"
_server_url: str | None = None


def _bin_dir() -> Path | None:
    """The directory of ``initdb``/``pg_ctl``, or None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
    return candidates[0].parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(argv: list[str]) -> list[str]:
    """Run ``argv`` as the ``postgres`` user when we are root (initdb refuses root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


def start_server(bin_dir: Path, *, fsync: bool = False, max_connections: int = 200) -> str:
    """Start a throwaway server and return its URL; it stops when this process exits.

    ``fsync=True`` (the benchmarks): a durable server, ``fsync=on`` and
    ``synchronous_commit=on``, so a commit waits for its WAL flush as in production.
    """
    root = Path(tempfile.mkdtemp(prefix="clew-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres")
    port = _free_port()
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]
    subprocess.run(_as_postgres([*initdb, "-E", "UTF8"]), check=True, capture_output=True)
    durable = "-c fsync=on -c synchronous_commit=on" if fsync else "-c fsync=off"
    options = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 {durable}"
        f" -c max_connections={max_connections}"
    )
    ctl = str(bin_dir / "pg_ctl")
    log = str(root / "server.log")
    subprocess.run(
        _as_postgres([ctl, "-D", str(data), "-l", log, "-o", options, "-w", "start"]),
        check=True,
        capture_output=True,
    )

    def stop() -> None:
        with contextlib.suppress(Exception):
            subprocess.run(
                _as_postgres([ctl, "-D", str(data), "-m", "immediate", "stop"]),
                check=False,
                capture_output=True,
            )
        shutil.rmtree(root, ignore_errors=True)

    atexit.register(stop)
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def bin_dir() -> Path | None:
    """The directory of ``initdb``/``pg_ctl`` (None: PostgreSQL is not installed)."""
    return _bin_dir()


def server_url() -> str:
    """The URL of the test server (see the module doc); skips or fails when there is none."""
    global _server_url  # noqa: PLW0603 - one server per pytest process
    if _server_url is not None:
        return _server_url
    wanted = os.environ.get(ENV, "")
    if wanted.startswith("postgresql://") or wanted.startswith("postgres://"):
        _server_url = wanted
        return wanted
    bin_dir = _bin_dir()
    if bin_dir is None:
        if wanted:
            pytest.fail(f"{ENV}={wanted!r} but PostgreSQL is not installed (initdb not found)")
        pytest.skip("PostgreSQL is not installed (set CLEW_TEST_PG to require it)")
    _server_url = start_server(bin_dir)
    return _server_url


def fresh_database(url: str) -> str:
    """Create an empty database on the server at ``url`` and return its URL."""
    import psycopg  # noqa: PLC0415 - the postgres extra is only needed by these tests

    name = f"clew_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


def drop_database(url: str, database_url: str) -> None:
    """Drop a database made by :func:`fresh_database` (its connections are closed first)."""
    import psycopg  # noqa: PLC0415

    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
