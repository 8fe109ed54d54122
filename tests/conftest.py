"""Test-suite configuration shared by every test module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import structlog
from hypothesis import HealthCheck, settings

from eventlog.logs import set_output

# In CI (CI=true) Hypothesis replays the same examples every run, so a green main stays
# green; locally it keeps exploring new ones. The property tests set their own sizes.
# These machines are shared and noisy, so no profile times a draw or an example.
_UNTIMED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", _UNTIMED, derandomize=True, print_blob=True)
settings.register_profile("local", _UNTIMED)
settings.load_profile("ci" if os.environ.get("CI") else "local")


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
    from _postgres import server_url  # type: ignore[import-not-found]  # noqa: PLC0415

    return str(server_url())


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    from _postgres import (  # noqa: PLC0415
        drop_database,
        fresh_database,
    )

    url = fresh_database(pg_server)
    yield url
    drop_database(pg_server, url)
