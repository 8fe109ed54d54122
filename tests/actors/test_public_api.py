"""Every name ``actors.__all__`` promises is importable (``SessionCheck`` and
``VerifyReport`` once were listed but not imported: ``from actors import *`` failed)."""

from __future__ import annotations

import actors


def test_every_name_of_all_is_an_attribute_of_the_package() -> None:
    assert [] == [name for name in actors.__all__ if not hasattr(actors, name)]


def test_star_import_works() -> None:
    namespace: dict[str, object] = {}
    exec("from actors import *", namespace)  # the statement under test
    assert set(actors.__all__) <= set(namespace)
