"""The read model (``actors/documents``): where the CLI and the web inspector show one
thing in two shapes, the inspector's is the CLI's document re-shaped."""

from __future__ import annotations

import shutil
from pathlib import Path

from _ui_helpers import demo_session

from actors import Runtime
from actors.documents.tasks import dag_doc, tasks_doc
from actors.documents.tree import fork_points, tree_shape_doc
from actors.documents.usage import BREAKDOWNS, tokens_doc, usage_doc
from eventlog.ids import relative
from projections.costs import usage_cells


def test_the_inspectors_dags_are_clew_tasks_grouped_by_wal_with_relative_ids(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = demo_session(rt)
        full = tasks_doc(rt, sid)
        dags = dag_doc(rt, sid)

    expected = [
        (
            t["wal"],
            {
                "id": relative(sid, t["id"]),
                "title": t["title"],
                "status": t["status"],
                "deps": [relative(sid, d) for d in t["deps"]],
                "owner": relative(sid, t["owner"]) if t["owner"] else None,
                "result_summary": t["result_summary"],
            },
        )
        for t in full["tasks"]
    ]
    assert None is dags["error"]
    assert [w["name"] for w in full["wals"]] == [d["wal"] for d in dags["dags"]]
    assert expected == [(d["wal"], t) for d in dags["dags"] for t in d["tasks"]]
    assert expected  # the demo plans tasks


def test_a_session_whose_project_directory_is_gone_has_no_dags_and_says_why(
    tmp_path: Path,
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    with Runtime(tmp_path / "home", project) as rt:
        sid = demo_session(rt)
    shutil.rmtree(project)

    with Runtime(tmp_path / "home", tmp_path, read_only=True) as rt:
        doc = dag_doc(rt, sid)

    assert [] == doc["dags"]
    assert str(project) in doc["error"]


def test_the_inspectors_usage_is_clew_usage_without_prices(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = demo_session(rt)
        full = usage_doc(sid, usage_cells(rt.store.iter_events(sid)), "USD", {})
        brief = tokens_doc(rt, sid)

    for key, _, _ in BREAKDOWNS:
        assert [
            {
                "name": g["name"] or "-",
                "calls": g["calls"],
                "input_tokens": g["input_tokens"],
                "output_tokens": g["output_tokens"],
                "total_tokens": g["total_tokens"],
            }
            for g in full[key]
        ] == brief[key]
    assert brief["by_model"]


def test_a_fork_point_is_one_finding_shown_in_full_by_the_cli_and_relative_by_the_inspector(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = demo_session(rt)
        node = rt.store.read_session(sid).active_node_id
        assert node is not None
        forked = rt.fork(sid, at=node)
        points = fork_points(rt, sid)
        shape = tree_shape_doc(rt, sid)

    assert {node: f"session {forked.id}"} == points
    assert {relative(sid, node): f"session {forked.id}"} == shape["forks"]
