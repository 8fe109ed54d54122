"""The inspector's JSON endpoints (Starlette's TestClient over a real SQLite home): what
they return, how they refuse, and that every one is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pydantic
from _ui_helpers import CSRF, Home
from starlette.testclient import TestClient

from actors import Runtime, ScriptedModel, tool
from actors.ui import ROUTES, create_app

DOCS = Path(__file__).parents[3] / "docs" / "ui.md"


def test_the_sessions_list_has_status_title_runs_tokens_and_activity(
    client: TestClient, shared: Home
) -> None:
    doc = client.get("/api/sessions").json()
    by_id = {s["session_id"]: s for s in doc["sessions"]}
    demo = by_id[shared.demo]
    assert ("completed", 1, 5) == (demo["status"], demo["runs"], demo["all_runs"])
    assert demo["title"].startswith("Plan a small offline-first notes app")
    assert demo["tokens"] > 0
    assert demo["updated_at"] >= demo["created_at"]


def test_the_sessions_list_is_searched_by_id_prefix_or_title(
    client: TestClient, shared: Home
) -> None:
    def found(q: str) -> set[str]:
        return {
            s["session_id"] for s in client.get("/api/sessions", params={"q": q}).json()["sessions"]
        }

    assert {shared.demo} == found("offline-FIRST")
    assert {shared.markup} == found("say something")
    assert {shared.demo, shared.markup} == found("sess_")
    assert set() == found("nothing like this")


def test_the_tree_holds_every_node_the_active_path_and_kinds(
    client: TestClient, shared: Home, shared_rt: Runtime
) -> None:
    doc = client.get(f"/api/sessions/{shared.demo}/tree").json()
    nodes = shared_rt.store.read_nodes(shared.demo)
    assert len(nodes) == len(doc["nodes"])
    assert "brain:r1:n6" == doc["active_node_id"] == doc["active_path"][-1]
    # flow 2: the request, the plan, the board, the board after the workers, their
    # results, the answer
    assert [f"brain:r1:n{i}" for i in range(1, 7)] == doc["active_path"]
    assert ["brain:r1:n2", "brain:r1:n1", "brain", "assistant", "plan_instruction"] == next(
        row for row in doc["nodes"] if row[0] == "brain:r1:n2"
    )
    ids = "brain:r1/w1:r1:n2,brain:r1/w1:r1:n3,brain:r9:n9"
    excerpts = client.get(f"/api/sessions/{shared.demo}/excerpts", params={"ids": ids}).json()
    calls, results = (
        excerpts["excerpts"]["brain:r1/w1:r1:n2"],
        excerpts["excerpts"]["brain:r1/w1:r1:n3"],
    )
    assert ("c", "r") == (calls[1], results[1])  # two tool calls, then their results
    assert "→ lookup(" in calls[0]
    assert "brain:r9:n9" not in excerpts["excerpts"]


def test_a_node_is_read_in_full_with_its_blocks(client: TestClient, shared: Home) -> None:
    doc = client.get(f"/api/sessions/{shared.demo}/node", params={"id": "brain:r1/w1:r1:n2"}).json()
    assert ["text", "tool_call", "tool_call"] == [b["type"] for b in doc["content"]]
    assert ["brain:r1/w1:r1:n3"] == doc["children"]
    missing = client.get(f"/api/sessions/{shared.demo}/node", params={"id": "brain:r9:n1"})
    assert 404 == missing.status_code


def test_the_timeline_pages_forward_and_filters(client: TestClient, shared: Home) -> None:
    url = f"/api/sessions/{shared.demo}/timeline"
    first = client.get(url, params={"limit": 40}).json()
    assert list(range(1, 41)) == [e["seq"] for e in first["events"]]
    assert 40 == first["next"]
    seen = [e["seq"] for e in first["events"]]
    after = first["next"]
    while after is not None:
        page = client.get(url, params={"limit": 40, "after": after}).json()
        seen += [e["seq"] for e in page["events"]]
        after = page["next"]
    assert list(range(1, first["last_seq"] + 1)) == seen
    tools = client.get(url, params={"type": "tool_call_finished", "agent": "brain:r1/w2"}).json()
    assert 2 == len(tools["events"])
    assert {("tool_call_finished", "brain:r1/w2")} == {
        (e["type"], e["agent"]) for e in tools["events"]
    }
    run = client.get(url, params={"run": "brain:r1/review:r1"}).json()
    assert run["events"] and {"brain:r1/review:r1"} == {e["run"] for e in run["events"]}
    assert 400 == client.get(url, params={"after": "x"}).status_code


def test_the_dag_and_usage_are_served(client: TestClient, shared: Home) -> None:
    dag = client.get(f"/api/sessions/{shared.demo}/dag").json()
    (wal,) = [d for d in dag["dags"] if d["tasks"]]
    statuses = {t["id"]: t["status"] for t in wal["tasks"]}
    assert {"completed"} == set(statuses.values())
    deps = {t["id"]: t["deps"] for t in wal["tasks"]}
    assert (["w1"], ["primary"]) == (deps["w2"], deps["review"])
    usage = client.get(f"/api/sessions/{shared.demo}/usage").json()
    assert {"scripted:demo"} == {g["name"] for g in usage["by_model"]}
    assert {"route", "worker", "primary", "review"} <= {g["name"] for g in usage["by_phase"]}


def test_bad_and_unknown_sessions_are_refused_in_one_line(client: TestClient) -> None:
    bad = client.get("/api/sessions/no-such!/tree")
    assert 400 == bad.status_code and "error" in bad.json()
    unknown = client.get("/api/sessions/sess_20200101_000000_0000/tree")
    assert 404 == unknown.status_code
    assert "sess_20200101_000000_0000" in unknown.json()["error"]


def test_the_page_carries_the_csrf_token_and_a_strict_policy(client: TestClient) -> None:
    page = client.get("/")
    assert f'content="{CSRF}"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "nosniff" == page.headers["x-content-type-options"]
    assert client.get("/static/app.js").status_code == 200


def test_a_token_is_required_on_every_request_when_set(shared_rt: Runtime, shared: Home) -> None:
    token = "a-long-enough-token-123"
    with TestClient(create_app(shared_rt, token=token, csrf=CSRF, hosts=["testserver"])) as c:
        for path in ("/", "/static/app.js", "/api/sessions", f"/api/sessions/{shared.demo}/stream"):
            refused = c.get(path)
            assert 401 == refused.status_code, path
            assert "token" in refused.text
        assert 401 == c.get("/api/sessions", headers={"Authorization": "Bearer wrong"}).status_code
        ok = c.get("/api/sessions", headers={"Authorization": f"Bearer {token}"})
        assert 200 == ok.status_code
        opened = c.get("/", params={"token": token})
        assert 200 == opened.status_code and "HttpOnly" in opened.headers["set-cookie"]
        # The cookie the page set carries the token from then on.
        assert 200 == c.get("/api/sessions").status_code


def test_actions_need_the_csrf_header_the_origin_and_json(client: TestClient, shared: Home) -> None:
    url = f"/api/sessions/{shared.demo}/replay"
    assert 403 == client.post(url, json={}).status_code
    wrong = {"X-Clew-CSRF": "guess"}
    assert 403 == client.post(url, json={}, headers=wrong).status_code
    good = {"X-Clew-CSRF": CSRF}
    other = client.post(url, json={}, headers={**good, "Origin": "http://evil.example"})
    assert 403 == other.status_code
    form = client.post(url, content=b"a=1", headers={**good, "Content-Type": "text/plain"})
    assert 415 == form.status_code
    assert 405 == client.put(url, json={}, headers=good).status_code


def test_replay_from_the_page_returns_the_report(client: TestClient, shared: Home) -> None:
    out = client.post(
        f"/api/sessions/{shared.demo}/replay",
        json={},
        headers={"X-Clew-CSRF": CSRF, "Origin": "http://testserver"},
    )
    assert 200 == out.status_code
    doc = out.json()
    assert doc["identical"] and [] == doc["divergences"]
    assert "reproduced identically" in doc["summary"]


def test_a_read_only_runtime_refuses_writes_with_the_reason(
    client: TestClient, shared: Home
) -> None:
    out = client.post(
        f"/api/sessions/{shared.demo}/switch",
        json={"node_id": "brain:r1:n1"},
        headers={"X-Clew-CSRF": CSRF},
    )
    assert 400 == out.status_code
    assert "read-only" in out.json()["error"]


def test_the_openapi_document_and_docs_list_every_route(client: TestClient) -> None:
    spec = client.get("/api/openapi.json").json()
    assert {(m, p) for m, p, _ in ROUTES} == {
        (m.upper(), p) for p, ops in spec["paths"].items() for m in ops
    }
    table = DOCS.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(GET|POST) ([^`]+)` \|", table, flags=re.M))
    assert {(m, p) for m, p, _ in ROUTES} == documented


class NoArgs(pydantic.BaseModel):
    pass


def test_a_large_tool_result_is_an_artifact_with_a_preview(tmp_path: Path) -> None:
    big = "line of the report\n" * 2000  # 38 KB: stored as an artifact, not inline

    @tool(NoArgs, idempotent=True)
    def report(args: NoArgs) -> str:
        """Return a long report."""
        return big

    script = {
        "rules": [
            {
                "role": "router",
                "phase": "route",
                "replies": [
                    {
                        "json": {
                            "primary_role": "lead",
                            "workers": [{"id": "w1", "role": "reader", "goal": "Read it"}],
                        }
                    }
                ],
            },
            {
                "role": "reader",
                "phase": "worker",
                "replies": [
                    {"tool_calls": [{"name": "report", "arguments": {}}]},
                    {"json": {"summary": "Read."}},
                ],
            },
            {"role": "lead", "replies": [{"text": "Done."}]},
        ]
    }
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        assert "completed" == session.run("Go.", model=ScriptedModel(script), tools=[report]).status
        with TestClient(create_app(rt, csrf=CSRF, hosts=["testserver"])) as c:
            base = f"/api/sessions/{session.id}"
            ids = ",".join(row[0] for row in c.get(f"{base}/tree").json()["nodes"])
            excerpts = c.get(f"{base}/excerpts", params={"ids": ids}).json()["excerpts"]
            (holder,) = [n for n, (_, kinds) in excerpts.items() if "a" in kinds]
            node = c.get(f"{base}/node", params={"id": holder}).json()
            (artifact,) = node["artifacts"]
            preview = c.get(f"{base}/artifact", params={"id": artifact["artifact_id"]}).json()
            assert preview["text"].startswith("line of the report\n")
            assert len(big.encode()) <= preview["size"]
            assert 404 == c.get(f"{base}/artifact", params={"id": "art_nope"}).status_code


def test_item21_an_after_beyond_any_seq_is_refused_400_not_500(
    client: TestClient, shared: Home
) -> None:
    for path in ("timeline", "stream"):
        url = f"/api/sessions/{shared.demo}/{path}"
        for after in ("1" + "0" * 30, "9" * 400):
            out = client.get(url, params={"after": after})
            assert 400 == out.status_code, (path, out.text)
            assert "?after= must be at most 9223372036854775807" == out.json()["error"]
    last = client.get(f"/api/sessions/{shared.demo}/timeline").json()["last_seq"]
    assert 200 == client.get(url.replace("stream", "timeline"), params={"after": last}).status_code


def test_item21_a_huge_call_id_is_clipped_in_the_error(tmp_path: Path) -> None:
    from _ui_helpers import waiting_session  # noqa: PLC0415

    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, [])
        with TestClient(create_app(rt, csrf=CSRF, hosts=["testserver"])) as c:
            out = c.post(
                f"/api/sessions/{sid}/decide",
                json={"call_id": "c" * 5_000_000, "decision": "approve"},
                headers={"X-Clew-CSRF": CSRF},
            )
    assert 400 == out.status_code
    error = out.json()["error"]
    assert len(error) < 500 and "(5,000,000 characters)" in error
