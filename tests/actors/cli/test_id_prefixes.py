"""Ids as a person types them (``actors/cli/ids.py``): unique prefixes, ``last``, ids
relative to the session, and an ambiguous prefix refused with its candidates (exit 2)."""

from __future__ import annotations

import pytest
from _cli_helpers import Where, copy_where, invoke, total_rows
from hypothesis import given
from hypothesis import strategies as st

from actors.cli.ids import pick
from actors.errors import AmbiguousId
from actors.runtime.runtime import Runtime


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, list[str]]:
    """A home with two demo sessions (oldest first)."""
    base = tmp_path_factory.mktemp("two")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    sids = []
    for _ in range(2):
        result = invoke(where, "demo", "--workers", "1", "--json")
        assert 0 == result.code, result.err
        sids.append(result.json()["session_id"])
    return where, sids


def test_a_unique_prefix_and_last_name_a_session(two: tuple[Where, list[str]]) -> None:
    where, (first, second) = two
    differs = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
    for typed, expected in ((first[: differs + 1], first), ("last", second), (second, second)):
        result = invoke(where, "show", typed, "--json")
        assert (0, expected) == (result.code, result.json()["session_id"]), typed
    assert second == invoke(where, "timeline", "last", "--json").json()["session_id"]


def test_an_ambiguous_prefix_lists_the_candidates_and_changes_nothing(
    two: tuple[Where, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    where, sids = two
    where = copy_where(where, tmp_path_factory.mktemp("ambiguous"))
    before = total_rows(where.home)
    for command in (["show", "sess_"], ["switch-node", "sess_", "brain:r1:n1"]):
        result = invoke(where, *command)
        assert 2 == result.code
        [line] = result.err_lines()
        assert line.startswith("error: session 'sess_' is ambiguous: it starts 2 session ids (")
        assert all(sid in line for sid in sids)
        assert "" == result.out
    assert before == total_rows(where.home)


def test_run_node_and_agent_take_prefixes_and_refuse_ambiguous_ones(
    two: tuple[Where, list[str]],
) -> None:
    where, (sid, _) = two
    runs = invoke(where, "timeline", sid, "--run", "brain:r1/w", "--type", "run_started", "--json")
    assert [f"{sid}:brain:r1/w1:r1"] == [e["run_id"] for e in runs.json()["events"]]
    # An exact id wins over the longer ids it is a prefix of.
    exact = invoke(where, "timeline", sid, "--run", "brain:r1", "--type", "run_started", "--json")
    assert [f"{sid}:brain:r1"] == [e["run_id"] for e in exact.json()["events"]]
    ambiguous = invoke(where, "timeline", sid, "--run", "brain:r1/")
    assert 2 == ambiguous.code
    assert ambiguous.err.startswith("error: run 'brain:r1/' is ambiguous: it starts 2 run ids")
    agent = invoke(where, "timeline", sid, "--agent", "brain:r1/w", "--json").json()["events"]
    assert {f"{sid}:brain:r1/w1"} == {e["agent_id"] for e in agent}
    unknown = invoke(where, "timeline", sid, "--agent", "nobody")
    assert (2, [f"error: session {sid} has no agent 'nobody'"]) == (
        unknown.code,
        unknown.err_lines(),
    )


def test_switch_node_takes_a_node_prefix(
    two: tuple[Where, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    where, (_, sid) = two
    where = copy_where(where, tmp_path_factory.mktemp("switch"))
    result = invoke(where, "switch-node", "last", "brain:r1:n2", "--json")
    assert (0, f"{sid}:brain:r1:n2") == (result.code, result.json()["to_node_id"])
    ambiguous = invoke(where, "switch-node", "last", "brain:r1/w1:r1:n")
    assert 2 == ambiguous.code
    assert "is ambiguous: it starts 4 node ids (brain:r1/w1:r1:n1," in ambiguous.err


def test_last_in_a_home_without_sessions_is_refused(empty: Where) -> None:
    Runtime(empty.home, empty.project).close()  # a home, no session
    result = invoke(empty, "show", "last")
    assert (2, ["error: no session to call 'last': the home holds no sessions"]) == (
        result.code,
        result.err_lines(),
    )


IDS = st.lists(
    st.text(alphabet="ab:/1", min_size=1, max_size=6), min_size=1, max_size=8, unique=True
)


@given(IDS, st.data())
def test_pick_names_an_id_by_any_prefix_no_other_id_starts_with(
    ids: list[str], data: st.DataObject
) -> None:
    chosen = data.draw(st.sampled_from(ids))
    typed = chosen[: data.draw(st.integers(1, len(chosen)))]
    others = [i for i in ids if i != chosen and i.startswith(typed)]
    if typed in ids:  # an exact id wins
        assert typed == pick("id", typed, ids)
    elif not others:
        assert chosen == pick("id", typed, ids)
    else:
        with pytest.raises(AmbiguousId):
            pick("id", typed, ids)
