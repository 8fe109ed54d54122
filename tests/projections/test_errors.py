"""The projections layer's errors: refusals under clew's root, and their builtin bases."""

from __future__ import annotations

import pytest

from eventlog.errors import ClewError, Refused
from projections.errors import BranchRefused, UnknownNode


@pytest.mark.parametrize(
    ("error", "builtin"), [(UnknownNode, LookupError), (BranchRefused, ValueError)]
)
def test_a_projection_refusal_is_a_refused_clew_error_and_its_builtin(
    error: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(error, Refused)
    assert issubclass(error, ClewError)
    assert issubclass(error, builtin)
