"""``clew calls`` and ``clew call``: the list, one call whole, its wire body (what the
provider adapter sends), the diff to the agent's previous call, and the ways to name one."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from _cli_helpers import Where, invoke
from fake_server import FakeServer

from actors import Runtime
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.providers.anthropic import AnthropicModel
from actors.models.providers.openai import OpenAIChatModel
from actors.replay.calls import ModelCall


def of_w1(calls: list[ModelCall]) -> tuple[ModelCall, ModelCall]:
    """Worker w1's two calls (the workers run at once: their calls interleave)."""
    first, second = [c for c in calls if (c.agent_id or "").endswith(":brain:r1/w1")]
    return first, second


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str, list[ModelCall]]:
    root = tmp_path_factory.mktemp("calls")
    where = Where(root / "home", root / "project")
    where.project.mkdir()
    with Runtime(where.home, where.project) as rt:
        s = rt.new_session()
        s.run(DEMO_PROMPT, model=demo_model(3), tools=demo_tools(where.project))
        return where, s.id, s.model_calls()


def test_calls_lists_every_call_with_its_agent_model_tokens_and_latency(demo: tuple) -> None:
    where, sid, calls = demo
    out = invoke(where, "calls", sid)
    assert 0 == out.code, out.err
    lines = out.out.splitlines()
    assert lines[0].split()[:3] == ["#", "id", "agent"]
    assert f"{len(calls)} model calls" == lines[-1]
    assert "brain [router]" in lines[1] and "scripted:demo" in lines[1]
    doc = json.loads(invoke(where, "calls", sid, "--json").out)
    assert [c.index for c in calls] == [r["index"] for r in doc["calls"]]
    assert [c.usage.input_tokens for c in calls] == [r["input_tokens"] for r in doc["calls"]]
    assert all(r["hash_matches"] for r in doc["calls"])
    assert ["researcher", "researcher"] == [
        r["role"]
        for r in json.loads(invoke(where, "calls", sid, "--role", "researcher", "--json").out)[
            "calls"
        ]
    ]
    only = json.loads(invoke(where, "calls", sid, "--agent", "brain:r1/w2", "--json").out)
    assert {"brain:r1/w2"} == {r["agent"] for r in only["calls"]}
    # A call keeps its number in a filtered list: `clew call N` names the same call.
    run = json.loads(invoke(where, "calls", sid, "--run", "brain:r1/w1:r1", "--json").out)
    assert [c.index for c in of_w1(calls)] == [r["index"] for r in run["calls"]]


def test_calls_prices_each_call_from_a_price_list(demo: tuple, tmp_path: Path) -> None:
    where, sid, calls = demo
    prices = tmp_path / "prices.toml"
    prices.write_text('currency = "EUR"\n[models."scripted:demo"]\ninput = 1.0\noutput = 2.0\n')
    doc = json.loads(invoke(where, "calls", sid, "--prices", str(prices), "--json").out)
    first = calls[0].usage
    assert "EUR" == doc["currency"]
    assert round((first.input_tokens + 2 * first.output_tokens) / 1e6, 6) == doc["calls"][0]["cost"]


def test_call_shows_the_request_as_sent_and_the_reply(demo: tuple) -> None:
    where, sid, calls = demo
    _, call = of_w1(calls)
    n = str(call.index)
    out = invoke(where, "call", sid, n)
    assert 0 == out.code, out.err
    assert "rebuilt exact" in out.out
    assert "── system ──" in out.out and call.request.system in out.out
    assert "lookup, save_note" in out.out
    assert "→ tool call lookup" in out.out and "← tool result lookup" in out.out
    assert "researcher fact 1" in out.out
    full = invoke(where, "call", sid, n, "--tools").out
    assert '"topic"' in full  # the parameters' schema
    doc = json.loads(invoke(where, "call", sid, n, "--json").out)
    assert msgspec.to_builtins(call.request.messages) == doc["request"]["messages"]
    assert msgspec.to_builtins(call.content) == doc["response"]["content"]
    assert call.request_hash == doc["request_hash"] and doc["hash_matches"]


def test_a_call_is_named_by_number_last_agent_n_role_n_or_id_prefix(demo: tuple) -> None:
    where, sid, calls = demo

    def index(which: str) -> int:
        out = invoke(where, "call", sid, which, "--json")
        assert 0 == out.code, out.err
        return int(json.loads(out.out)["index"])

    _, call = of_w1(calls)
    n = call.index
    assert len(calls) == index("last")
    assert n == index("brain:r1/w1:2") == index("researcher:2") == index(str(n))
    assert 1 == index("brain:1")
    assert n == index(call.event_id.removeprefix(f"{sid}:"))
    bad = invoke(where, "call", sid, "brain:r1/w1:3")
    assert 2 == bad.code and "made 2 model calls" in bad.err
    assert 2 == invoke(where, "call", sid, "99").code
    assert 2 == invoke(where, "call", sid, "brain:r1/w").code  # a prefix of several ids


def test_diff_of_a_worker_s_second_call_shows_exactly_the_messages_added(demo: tuple) -> None:
    where, sid, calls = demo
    first, second = of_w1(calls)
    doc = json.loads(invoke(where, "call", sid, "brain:r1/w1:2", "--json").out)
    added = second.request.messages[len(first.request.messages) :]
    assert second.request.messages[: len(first.request.messages)] == first.request.messages
    assert msgspec.to_builtins(added) == doc["diff"]["added"]
    assert (2, len(first.request.messages), 0, False) == (
        doc["diff"]["previous"],
        doc["diff"]["kept"],
        doc["diff"]["dropped"],
        doc["diff"]["system_changed"],
    )
    text = invoke(where, "call", sid, "brain:r1/w1:2", "--diff").out
    shown = [line for line in text.splitlines() if line.startswith("+ [")]
    assert [f"+ [{i}] {m.role}" for i, m in enumerate(added, 2)] == shown
    assert "every message is new" in invoke(where, "call", sid, "brain:r1/w1:1", "--diff").out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_as_a_provider_is_the_body_its_adapter_sends(demo: tuple, provider: str) -> None:
    where, sid, calls = demo
    _, call = of_w1(calls)
    out = invoke(where, "call", sid, str(call.index), "--as", provider)
    assert 0 == out.code, out.err
    body = json.loads(out.out)
    with FakeServer() as server:
        adapter = (
            OpenAIChatModel("demo", base_url=server.url + "/v1")
            if provider == "openai"
            else AnthropicModel("demo", base_url=server.url)
        )
        reply = adapter.complete(call.request)
        sent = server.requests[0].json()
    assert sent == body  # byte for byte what the adapter sends, and the server took it
    assert reply.content
    if provider == "openai":
        assert call.request.system == body["messages"][0]["content"]
        assert [t.name for t in call.request.tools] == [
            t["function"]["name"] for t in body["tools"]
        ]
    assert 2 == invoke(where, "call", sid, "1", "--as", "gemini").code


def test_a_session_without_calls_says_so(empty: Where) -> None:
    with Runtime(empty.home, empty.project) as rt:
        sid = rt.new_session().id
    out = invoke(empty, "call", sid, "last")
    assert 2 == out.code and "has no model call" in out.err
    assert "0 model calls" in invoke(empty, "calls", sid).out
