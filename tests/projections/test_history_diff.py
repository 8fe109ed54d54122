"""The alignment of two histories (``projections.history_diff``), as properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from projections.costs import Group
from projections.history_diff import Side, Step, aligned, diff_sides

steps = st.lists(
    st.builds(
        Step,
        kind=st.sampled_from(["node", "reply", "tool"]),
        what=st.sampled_from(["lead", "lookup"]),
        text=st.sampled_from(["a", "b"]),
        ref=st.text(max_size=3),  # never compared
    ),
    max_size=8,
)


def side(nodes: list[Step], done: list[Step]) -> Side:
    return Side(
        session_id="s", end_node_id=None, nodes=nodes, steps=done, runs=[], usage=Group(name="t")
    )


@given(steps, steps, steps, steps)
def test_the_alignment_is_the_common_prefix_then_every_differing_pair(
    nodes_a: list[Step], nodes_b: list[Step], a: list[Step], b: list[Step]
) -> None:
    diff = diff_sides(side(nodes_a, a), side(nodes_b, b))

    n = diff.common_steps
    assert [s.key() for s in a[:n]] == [s.key() for s in b[:n]]
    assert n == min(len(a), len(b)) or a[n].key() != b[n].key()
    # after the prefix every step of each side is in exactly one pair, in order
    pairs = aligned(a[n:], b[n:])
    assert [s.key() for s in a[n:]] == [x.key() for x, _ in pairs if x is not None]
    assert [s.key() for s in b[n:]] == [y.key() for _, y in pairs if y is not None]
    assert len(diff.differing) + diff.alike_after == len(pairs)
    assert diff.identical == (
        [s.key() for s in nodes_a] == [s.key() for s in nodes_b]
        and [s.key() for s in a] == [s.key() for s in b]
    )
    if diff.differing:
        first_a, first_b = diff.differing[0]
        assert first_a is None or first_b is None or first_a.key() != first_b.key()


@given(steps, steps)
def test_a_history_is_identical_to_itself_whatever_its_ids(
    nodes: list[Step], done: list[Step]
) -> None:
    renamed = [Step(kind=s.kind, what=s.what, text=s.text, ref=s.ref + "x") for s in done]
    assert diff_sides(side(nodes, done), side(nodes, renamed)).identical
