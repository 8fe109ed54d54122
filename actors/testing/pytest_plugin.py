"""The pytest plugin: recorded sessions as regression tests (docs/ci.md).

Shipped with clew under the ``pytest11`` entry point ``clew``, and inert until asked:

- ``pytest --clew-replay tests/sessions/`` collects every session bundle (``*.clew``,
  written by ``clew export SESSION --bundle FILE``) under the paths as one test item per
  session, which replays the session against the application's code and fails with the
  divergence report (the first divergence, a changed text as a unified diff). JUnit XML
  comes from pytest's own ``--junitxml``.
- The application's code — its team, tools and models — comes from the
  ``pytest_clew_app(config, path)`` hook, defined in a ``conftest.py``; it returns an
  :class:`~actors.runtime.bundles.replay.App` (None, or no hook: the recorded code).
- ``--clew-rerecord``: a diverging bundle is re-recorded with today's code instead of
  failing (:func:`~actors.runtime.bundles.replay.rerecord_bundle`: unchanged model calls
  served from the recording, changed ones asked of the app's models) and rewritten in
  place; the item passes and says what it re-recorded.
- The ``clew_replay`` fixture replays one bundle in a custom test:
  ``report = clew_replay(path)`` (the hook's app by default, or ``app=App(...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.cli.render import replay_lines
from actors.errors import BundleRefused
from actors.replay.report import ReplayReport
from actors.runtime.bundles.files import SUFFIX, read_bundle
from actors.runtime.bundles.replay import App, replay_bundle, rerecord_bundle


class Hooks:
    """The hook a ``conftest.py`` implements to give the app's code."""

    @pytest.hookspec(firstresult=True)
    def pytest_clew_app(self, config: pytest.Config, path: Path) -> App | None:
        """Return the application's code to replay the bundle at ``path`` against."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(Hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("clew", "clew session bundles")
    group.addoption(
        "--clew-replay",
        action="store_true",
        help=f"replay every session bundle (*{SUFFIX}) under the paths, one test each",
    )
    group.addoption(
        "--clew-rerecord",
        action="store_true",
        help="re-record a diverging bundle with today's code (served from its recording)",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == SUFFIX and parent.config.getoption("clew_replay"):
        return BundleFile.from_parent(parent, path=file_path)
    return None


def _app(config: pytest.Config, path: Path) -> App:
    app: App | None = config.hook.pytest_clew_app(config=config, path=path)
    return app or App()


class BundleFile(pytest.File):
    """A session bundle: one item, named by its session."""

    def collect(self) -> Iterator[pytest.Item]:
        try:
            sid = read_bundle(self.path).session_id
        except BundleRefused as e:  # an altered bundle: one line, not a traceback
            raise self.CollectError(str(e)) from None
        yield BundleItem.from_parent(self, name=sid)


class _Diverged(Exception):
    def __init__(self, report: ReplayReport) -> None:
        super().__init__(report.summary())
        self.report = report


class BundleItem(pytest.Item):
    """Replay one bundle's session against the app's code."""

    def runtest(self) -> None:
        app = _app(self.config, self.path)
        if self.config.getoption("clew_rerecord"):
            done = rerecord_bundle(self.path, app)
            if done.rerun is not None:
                self.add_report_section(
                    "call",
                    "clew",
                    f"re-recorded {self.path.name}: {done.rerun.served_calls} model calls"
                    f" served, {done.rerun.live_calls} asked live\n"
                    + "\n".join(replay_lines(done.before)),
                )
            return
        report = replay_bundle(self.path, app)
        if not report.identical:
            raise _Diverged(report)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        if isinstance(excinfo.value, _Diverged):
            return "\n".join(replay_lines(excinfo.value.report))
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"clew replay {self.name}"


@pytest.fixture
def clew_replay(pytestconfig: pytest.Config) -> Callable[..., ReplayReport]:
    """Replay one bundle: ``clew_replay(path, app=None)`` returns the replay report."""

    def replay(path: str | Path, app: App | None = None) -> ReplayReport:
        return replay_bundle(path, app or _app(pytestconfig, Path(path)))

    return replay
