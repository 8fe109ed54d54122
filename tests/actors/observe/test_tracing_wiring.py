"""When a runtime traces: the app's tracer provider, ``tracing=``, and a missing extra.

The global tracer provider can be set once per process, so the test that sets one runs
in a child process; this process never sets it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _processes import child_env
from opentelemetry.sdk.trace import TracerProvider

import actors.observe
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.errors import UsageError
from actors.observe.otel import provider_is_set
from actors.runtime.runtime import Runtime

CHILD = """
import json, sys
from pathlib import Path
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime

root = Path(sys.argv[1])
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # what an app does at start-up
seen = {}
for mode, kw in (("auto", {}), ("off", {"tracing": False})):
    with Runtime(root / mode, root / "project", **kw) as rt:
        rt.new_session().run(DEMO_PROMPT, model=demo_model(2), tools=demo_tools(root / "project"))
        seen[mode] = [rt.tracing, sorted({s.name for s in exporter.get_finished_spans()})]
    exporter.clear()
print(json.dumps(seen))
"""


def test_an_app_that_set_a_tracer_provider_gets_spans_unless_it_turns_them_off(
    tmp_path: Path,
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")

    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert 0 == done.returncode, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert [False, []] == seen["off"]
    assert True is seen["auto"][0]
    assert {"clew.run", "invoke_agent brain", "execute_tool lookup", "chat scripted:demo"} <= set(
        seen["auto"][1]
    )


def test_an_app_that_never_imported_opentelemetry_does_not_pay_for_importing_it(
    tmp_path: Path,
) -> None:
    code = (
        "import sys; from actors.runtime.runtime import Runtime\n"
        "with Runtime(sys.argv[1], sys.argv[2]) as rt:\n"
        "    print(rt.tracing, 'opentelemetry' in sys.modules)"
    )
    env = child_env()
    env.pop("OTEL_PYTHON_TRACER_PROVIDER", None)

    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "home"), str(tmp_path / "project")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert (0, "False False") == (done.returncode, done.stdout.strip()), done.stderr


def test_without_a_tracer_provider_nothing_is_subscribed_to_the_writer(tmp_path: Path) -> None:
    assert not provider_is_set()  # this process never sets one (see the module docstring)
    project = tmp_path / "project"
    for tracing in (None, False):
        with Runtime(tmp_path / "home", project, tracing=tracing) as rt:
            session = rt.new_session()
            out = session.run(DEMO_PROMPT, model=demo_model(1), tools=demo_tools(project))

            assert (False, (), "completed") == (rt.tracing, rt.writer._listeners.active, out.status)


def test_a_tracing_runtime_unsubscribes_when_it_closes(tmp_path: Path) -> None:
    provider = TracerProvider()
    with Runtime(tmp_path / "home", tmp_path / "project", tracing=provider) as rt:
        assert (True, 1) == (rt.tracing, len(rt.writer._listeners.active))
    assert () == rt.writer._listeners.active
    provider.shutdown()


def test_a_read_only_runtime_writes_nothing_and_traces_nothing(tmp_path: Path) -> None:
    Runtime(tmp_path / "home", tmp_path / "project").close()
    provider = TracerProvider()
    with Runtime(tmp_path / "home", tmp_path / "project", read_only=True, tracing=provider) as rt:
        assert (False, ()) == (rt.tracing, rt.writer._listeners.active)
    provider.shutdown()


def test_asking_for_traces_without_opentelemetry_is_refused_before_anything_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the clew[otel] extra were not installed: importing the spans module fails.
    monkeypatch.setitem(sys.modules, "actors.observe.otel", None)
    monkeypatch.delattr(actors.observe, "otel", raising=False)

    with pytest.raises(UsageError, match=r"install clew\[otel\]"):
        Runtime(tmp_path / "home", tmp_path / "project", tracing=True)
    assert not (tmp_path / "home").exists()

    with Runtime(tmp_path / "home", tmp_path / "project") as rt:  # the default: no traces
        assert False is rt.tracing
