"""Test-suite configuration shared by every test module."""

from __future__ import annotations

import os

from hypothesis import settings

# In CI (CI=true) Hypothesis replays the same examples every run, so a green main stays
# green; locally it keeps exploring new ones. The property tests set their own sizes.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
