"""Test-suite configuration shared by every test module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import structlog
from hypothesis import settings

from eventlog.logs import set_output

# In CI (CI=true) Hypothesis replays the same examples every run, so a green main stays
# green; locally it keeps exploring new ones. The property tests set their own sizes.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _logging_as_a_fresh_process_has_it() -> Iterator[None]:
    """Undo what a test did to structlog (``capture_logs`` leaves it configured) or to
    clew's own log output, so the next test's clew logs go where a fresh process sends them."""
    yield
    structlog.reset_defaults()
    set_output(None)


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The URL of a real PostgreSQL server (``tests/helpers/_postgres.py`` says which)."""
    from _postgres import server_url  # noqa: PLC0415 - only PostgreSQL tests pay for it

    return server_url()


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    from _postgres import drop_database, fresh_database  # noqa: PLC0415

    url = fresh_database(pg_server)
    yield url
    drop_database(pg_server, url)
