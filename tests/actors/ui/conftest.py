"""Fixtures of the web inspector's tests: a home with sessions, the app, the browser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _ui_helpers import CHROMIUM, CHROMIUM_ARGS, CSRF, Home, chromium_missing, in_ci
from playwright.sync_api import sync_playwright
from starlette.testclient import TestClient

from actors import Runtime
from actors.ui import UiServer, create_app

#: How long a page waits for what a test expects (ms).
WAIT = 60_000


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


@pytest.fixture(scope="module")
def shared_url(shared_rt: Runtime) -> Iterator[str]:
    """The shared home served read-only, one server per test module."""
    server = UiServer(shared_rt, port=0).start()
    yield server.url
    server.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser page; a script error on it fails the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(WAIT)
    yield page
    context.close()
    assert [] == errors
