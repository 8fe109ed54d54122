"""``clew``'s exit codes come from the error tree: any ``Refused`` is 2, any other
``ClewError`` is 1 — with no list of classes kept anywhere.

Each error class is raised from the app ``main`` runs (monkeypatched), so the test goes
through ``main``'s own mapping, for every class the three packages define.
"""

from __future__ import annotations

import importlib
from typing import Any, NoReturn

import pytest

# Imported for their error classes: a class exists once its module is imported.
import actors.cli  # noqa: F401
import projections  # noqa: F401
from actors.errors import NeedsResume, PlanError, UsageError
from eventlog.errors import ClewError, InvalidSessionId, Refused, StoreError, TaskWalCorrupt

# ``actors.cli`` re-exports the function ``main`` under the module's own name.
cli_main = importlib.import_module("actors.cli.main")
LAYERS = {"eventlog", "projections", "actors"}


def _error_classes(root: type[ClewError]) -> list[type[ClewError]]:
    """``root`` and every subclass the three packages define (not those tests define)."""
    found, stack = {root}, [root]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found and sub.__module__.partition(".")[0] in LAYERS:
                found.add(sub)
                stack.append(sub)
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


REFUSALS = _error_classes(Refused)
FAILURES = [c for c in _error_classes(ClewError) if not issubclass(c, Refused)]


def _name(cls: type[Exception]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _raise_from_the_app(monkeypatch: pytest.MonkeyPatch, cls: type[ClewError]) -> str:
    """Make the app ``main`` runs raise an instance of ``cls``; return its message."""
    message = f"{cls.__name__} raised by a command"
    # ``__new__`` gives an instance whatever ``__init__`` takes: main only reads str(error).
    error = cls.__new__(cls, message)

    def app(**_kwargs: Any) -> NoReturn:
        raise error

    monkeypatch.setattr(cli_main, "app", app)
    return message


def test_the_tree_holds_the_refusals_and_failures_of_every_layer() -> None:
    assert {Refused, InvalidSessionId, UsageError, NeedsResume} <= set(REFUSALS)
    assert {ClewError, StoreError, TaskWalCorrupt, PlanError} <= set(FAILURES)


#: Every error class with the exit code it must give: 2 for a refusal, 1 for the rest.
EXIT_CODES = [pytest.param(cls, 2, id=f"2-{_name(cls)}") for cls in REFUSALS] + [
    pytest.param(cls, 1, id=f"1-{_name(cls)}") for cls in FAILURES
]


@pytest.mark.parametrize(("cls", "code"), EXIT_CODES)
def test_a_refusal_exits_2_and_any_other_clew_error_1_with_one_error_line(
    cls: type[ClewError],
    code: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    message = _raise_from_the_app(monkeypatch, cls)

    actual = cli_main.main(["sessions"])

    assert (code, "", f"error: {message}\n") == (actual, *capsys.readouterr())
