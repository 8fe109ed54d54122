"""The runtime's errors: one module (``actors/errors.py``), one root (``ClewError``)."""

from __future__ import annotations

import importlib
import inspect

from _modules import module_names

import actors.errors
from eventlog.errors import ClewError


def test_every_public_error_class_of_actors_is_defined_in_actors_errors() -> None:
    elsewhere = [
        f"{name}.{cls.__name__}"
        for name in module_names("actors")
        for cls in vars(importlib.import_module(name)).values()
        if inspect.isclass(cls)
        and issubclass(cls, BaseException)
        and cls.__module__ == name
        and name != "actors.errors"
        and not cls.__name__.startswith("_")
    ]

    assert [] == elsewhere, "move these error classes into actors/errors.py"


def test_every_error_class_of_actors_errors_derives_from_clew_error() -> None:
    defined = [
        cls
        for cls in vars(actors.errors).values()
        if inspect.isclass(cls) and cls.__module__ == "actors.errors"
    ]

    assert [] != defined
    assert [] == [c.__name__ for c in defined if not issubclass(c, ClewError)]
