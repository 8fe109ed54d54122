"""Echoing a caller's value in an error message: recognisable, never the whole 100 kB."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog.errors import ECHO_LIMIT, clipped, quoted
from eventlog.ids import validate_session_id


def test_a_short_value_is_echoed_whole() -> None:
    assert ("abc", "'abc'", "p/q") == (clipped("abc"), quoted("abc"), clipped(Path("p/q")))


def test_a_long_value_is_cut_to_the_limit_and_its_length_said() -> None:
    value = "x" * 5000
    assert f"{'x' * ECHO_LIMIT}… (5,000 characters)" == clipped(value)
    assert f"'{'x' * ECHO_LIMIT}…' (5,000 characters)" == quoted(value)


def test_escapes_count_toward_the_limit_of_a_quoted_value() -> None:
    shown = quoted("\udcff" * 1000)
    assert len(shown.partition("…")[0]) == ECHO_LIMIT + 1
    assert shown.endswith("…' (1,000 characters)")


def test_a_library_error_quoting_a_session_id_is_clipped() -> None:
    for bad in (["x" * 5000], "x" * 5000):
        with pytest.raises(ValueError, match="invalid session id") as caught:
            validate_session_id(bad)
        assert "x" * (ECHO_LIMIT + 1) not in str(caught.value)
