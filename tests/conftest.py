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
