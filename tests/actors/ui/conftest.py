"""Fixtures of the web inspector's tests: a home with sessions, the app, the browser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _ui_helpers import CHROMIUM, CHROMIUM_ARGS, CSRF, Home, chromium_missing, in_ci
from playwright.sync_api import sync_playwright
from starlette.testclient import TestClient

from actors import Runtime
from actors.ui import create_app


@pytest.fixture(scope="package")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return Home(tmp_path_factory.mktemp("ui"))


@pytest.fixture(scope="package")
def shared_rt(shared: Home) -> Iterator[Runtime]:
    rt = Runtime(shared.home, shared.project, read_only=True)
    yield rt
    rt.close()


@pytest.fixture
def client(shared_rt: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(shared_rt, csrf=CSRF, hosts=["testserver"])) as c:
        yield c


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Headless Chromium (Debian's), one per test package; fails in CI when it is absent."""
    why = chromium_missing()
    if why is not None:
        if in_ci():
            pytest.fail(f"the browser tests need chromium in CI: {why}")
        pytest.skip(why)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()
