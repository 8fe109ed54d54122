"""``clew show`` on long sessions (``actors/cli/show.py``): chains flat, indentation only
at branch points, runs folded, and the active node on the first screen — checked on a
real terminal (a pseudo-terminal, and tmux when it is installed) at 120 columns."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import structlog
from _cli_helpers import Where, copy_where, invoke
from _processes import child_env
from _terminal import run_in_pty
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from actors.cli.show import Line, ShowOptions, TreeView, fit
from actors.cli.team_file import DEMO_TEAM, load_team
from actors.demo import demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.blocks import TextBlock
from eventlog.events import Node
from projections.tree import NodeTree

SID = "sess_20260101_000000_5ee5"
ROWS, COLUMNS = 40, 120
QUESTIONS = 60


# --- the layout, on trees made by hand ---------------------------------------------------


def _tree(
    spec: Sequence[tuple[str, str | None, str]],
    active: str,
    kinds: dict[str, str] | None = None,
    metadata: dict[str, dict[str, object]] | None = None,
) -> NodeTree:
    """A tree of ``(node, parent, run)`` (ids relative to the session); a run's first
    node is its user message."""
    tree = NodeTree()
    seen_runs: set[str] = set()
    for nid, parent, run in spec:
        first = run not in seen_runs
        seen_runs.add(run)
        kind = (kinds or {}).get(nid, "message")
        tree.add(
            Node(
                node_id=f"{SID}:{nid}",
                parent_id=None if parent is None else f"{SID}:{parent}",
                agent_id=f"{SID}:{run.rsplit(':', 1)[0]}",
                run_id=f"{SID}:{run}",
                role="user" if first else "assistant",
                node_type=kind,  # type: ignore[arg-type]
                content=[TextBlock(text=f"text of {nid}")],
                metadata=(metadata or {}).get(nid, {}),
            ),
            "2026-01-01T00:00:00",
        )
    tree.switch(f"{SID}:{active}")
    return tree


def _plain(lines: Sequence[Line]) -> list[str]:
    return [Text.from_markup(line.text).plain for line in lines]


def _layout(tree: NodeTree, **options: object) -> list[str]:
    view = TreeView(SID, tree, lambda r: r.content[0].text, ShowOptions(**options))  # type: ignore[arg-type, union-attr]
    return _plain(view.layout())


#: r1, then r2 after it, then r3 re-asked from r1's answer: r1:n2 is a branch point.
BRANCHED = [
    ("brain:r1:n1", None, "brain:r1"),
    ("brain:r1:n2", "brain:r1:n1", "brain:r1"),
    ("brain:r2:n1", "brain:r1:n2", "brain:r2"),
    ("brain:r2:n2", "brain:r2:n1", "brain:r2"),
    ("brain:r3:n1", "brain:r1:n2", "brain:r3"),
    ("brain:r3:n2", "brain:r3:n1", "brain:r3"),
]


def test_a_chain_is_flat_and_only_a_branch_point_indents() -> None:
    lines = _layout(_tree(BRANCHED, "brain:r3:n2"), expand_all=True)
    assert [
        "▶ brain:r1:n1 user/message text of brain:r1:n1",
        "▶ brain:r1:n2 assistant/message ⑂ text of brain:r1:n2",
        "  ⑂   brain:r2:n1 user/message text of brain:r2:n1",
        "    brain:r2:n2 assistant/message text of brain:r2:n2",
        "▶ brain:r3:n1 user/message text of brain:r3:n1",
        "▶ brain:r3:n2 assistant/message text of brain:r3:n2 (active)",
    ] == lines


def test_runs_are_folded_but_the_active_one() -> None:
    lines = _layout(_tree(BRANCHED, "brain:r3:n2"))
    assert [
        "▸ brain:r1 · 2 nodes ⑂ text of brain:r1:n1 → text of brain:r1:n2",
        "  ⑂ ▸ brain:r2 · 2 nodes text of brain:r2:n1 → text of brain:r2:n2",
        "▶ brain:r3:n1 user/message text of brain:r3:n1",
        "▶ brain:r3:n2 assistant/message text of brain:r3:n2 (active)",
    ] == lines


def test_depth_folds_deeper_branches_and_run_shows_one_run() -> None:
    tree = _tree(BRANCHED, "brain:r3:n2")
    assert "  ⑂ branch from brain:r2:n1: 2 nodes (a larger --depth shows it)" in _layout(
        tree, depth=0
    )
    only = _layout(tree, run=f"{SID}:brain:r2")
    assert ["brain:r2:n1", "brain:r2:n2"] == [
        re.findall(r"brain:\S+:n\d", line)[0] for line in only
    ]


def test_workers_are_listed_under_their_run_and_compaction_is_marked() -> None:
    spec = [
        ("brain:r1:n1", None, "brain:r1"),
        ("brain:r1:n2", "brain:r1:n1", "brain:r1"),
        ("brain:r1/w1:r1:n1", None, "brain:r1/w1:r1"),
        ("brain:r1/w1:r1:n2", "brain:r1/w1:r1:n1", "brain:r1/w1:r1"),
        ("brain:r1:n3", "brain:r1:n2", "brain:r1"),
    ]
    tree = _tree(
        spec,
        "brain:r1:n3",
        {
            "brain:r1:n2": "plan_instruction",
            "brain:r1:n3": "compaction",
            "brain:r1/w1:r1:n1": "task_instruction",
        },
    )
    lines = _layout(tree)
    assert "  ▸ brain:r1/w1:r1 · 2 nodes text of brain:r1/w1:r1:n2" == lines[2]
    assert lines[3].startswith("▶ brain:r1:n3 assistant/compaction ✂ compaction")
    compacted = {"from": f"{SID}:brain:r1:n1", "through": f"{SID}:brain:r1:n2", "nodes": 2}
    tree = _tree(
        spec,
        "brain:r1:n3",
        {"brain:r1:n3": "compaction"},
        {"brain:r1:n3": {"compacted": compacted}},
    )
    marked = "✂ compacted 2 nodes (brain:r1:n1…brain:r1:n2)"
    assert any(
        line.startswith(f"▶ brain:r1:n3 assistant/compaction {marked}") for line in _layout(tree)
    )


def test_fitting_collapses_the_oldest_runs_and_keeps_the_active_node() -> None:
    spec: list[tuple[str, str | None, str]] = []
    parent = None
    for r in range(1, 51):
        for n in (1, 2):
            nid = f"brain:r{r}:n{n}"
            spec.append((nid, parent, f"brain:r{r}"))
            parent = nid
    lines = _layout(_tree(spec, "brain:r50:n2"), height=10)
    assert 10 == len(lines)
    assert lines[0].startswith("⋯ 42 earlier runs folded (brain:r1 … brain:r42)")
    assert lines[-1].endswith("(active)")


@st.composite
def trees(draw: st.DrawFn) -> tuple[NodeTree, str]:
    """Random session-like trees: Brain chains that branch, and worker roots."""
    spec: list[tuple[str, str | None, str]] = []
    for i in range(draw(st.integers(1, 25))):
        run = draw(st.sampled_from(["brain:r1", "brain:r2", "brain:r3", "brain:r1/w1:r1"]))
        roots = (
            [n for n, _, r in spec if r == run]
            if "/" in run
            else [n for n, _, r in spec if "/" not in r]
        )
        parent = draw(st.sampled_from([None, *roots])) if roots else None
        spec.append((f"{run}:n{i}", parent, run))
    active = draw(st.sampled_from([n for n, _, _ in spec]))
    return _tree(spec, active), f"{SID}:{active}"


@settings(max_examples=60, deadline=None)
@given(trees(), st.integers(3, 12))
def test_every_node_shows_once_expanded_and_the_active_one_always(
    drawn: tuple[NodeTree, str], height: int
) -> None:
    tree, _ = drawn
    expanded = _layout(tree, expand_all=True)
    shown = [m.group(0) for line in expanded for m in [re.search(r"brain:\S+:n\d+", line)] if m]
    assert sorted(n.node_id.removeprefix(f"{SID}:") for n in tree.rows()) == sorted(shown)
    for lines in (_layout(tree), _layout(tree, height=height), _layout(tree, depth=0)):
        assert 1 == sum(line.endswith("(active)") for line in lines)
    fitted = _layout(tree, height=height)
    assert next(i for i, line in enumerate(fitted) if line.endswith("(active)")) < height


def test_a_run_taller_than_the_screen_still_shows_its_active_node() -> None:
    spec: list[tuple[str, str | None, str]] = [("brain:r1:n1", None, "brain:r1")]
    spec += [(f"brain:r1:n{n}", f"brain:r1:n{n - 1}", "brain:r1") for n in range(2, 30)]
    lines = _layout(_tree(spec, "brain:r1:n29"), height=10)
    assert lines[0].startswith("⋯ 20 lines above")
    assert (10, True) == (len(lines), lines[9].endswith("(active)"))


def test_fit_leaves_lines_that_fit_alone() -> None:
    lines = [Line("a", collapsible="r1"), Line("b", collapsible="r2")]
    assert lines == fit(lines, 2) == fit(lines, None)


# --- a 60-question session on a real terminal --------------------------------------------


@pytest.fixture(scope="module")
def sixty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Where, str]]:
    """60 questions in one session (the demo team and its scripted model): ~6,000 events,
    1,200 nodes, 300 runs."""
    base = tmp_path_factory.mktemp("sixty")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    with Runtime(where.home, where.project, durability="normal") as rt:
        tools = demo_tools(where.project)
        team = load_team(
            str(DEMO_TEAM), tools={t.name: t for t in tools}, build_model=lambda spec: demo_model()
        )
        session = rt.new_session(metadata={"scenario": "demo", "workers": 3})
        for i in range(1, QUESTIONS + 1):
            outcome = session.run(
                f"Question {i}: part {i} of the notes app", model=demo_model(3), team=team
            )
            assert "completed" == outcome.status, outcome
    structlog.reset_defaults()
    yield where, session.id


def _screen_lines(output: str) -> list[str]:
    """The rows a terminal shows for ``output``: escape sequences dropped."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", output)
    return plain.replace("\r\n", "\n").rstrip("\n").split("\n")


def _active(where: Where, sid: str) -> str:
    [info] = invoke(where, "sessions", "--json").json()
    return str(info["active_node_id"]).removeprefix(f"{sid}:")


def _assert_active_on_first_screen(rows: list[str], active: str) -> None:
    assert len(rows) <= ROWS, "the output is taller than one screen"
    [line] = [row for row in rows if row.lstrip().startswith(f"▶ {active} ")]
    assert line.endswith("(active)") or "…" in line
    assert all(len(row) <= COLUMNS for row in rows)


def test_show_puts_the_active_node_on_the_first_screen_of_a_pty(sixty: tuple[Where, str]) -> None:
    where, sid = sixty
    output, code = run_in_pty(
        [sys.executable, "-m", "actors", "show", sid, *where.flags()], ROWS, COLUMNS, child_env()
    )
    assert 0 == code, output
    rows = _screen_lines(output)
    _assert_active_on_first_screen(rows, _active(where, sid))
    assert rows[2].startswith("⋯ ") and "earlier runs folded (brain:r1 … " in rows[2]
    assert f"{sid} · 1,200 nodes · {QUESTIONS} runs · active brain:r60:n6" in rows[0]


def test_show_after_switching_to_an_early_node_still_shows_it_first(
    sixty: tuple[Where, str], tmp_path: Path
) -> None:
    where, sid = sixty
    where = copy_where(where, tmp_path)
    assert 0 == invoke(where, "switch-node", sid, "brain:r30:n4").code
    output, code = run_in_pty(
        [sys.executable, "-m", "actors", "show", "last", *where.flags()], ROWS, COLUMNS, child_env()
    )
    assert 0 == code, output
    _assert_active_on_first_screen(_screen_lines(output), "brain:r30:n4")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_show_in_tmux_at_120_columns_has_the_active_node_on_screen(
    sixty: tuple[Where, str],
) -> None:
    where, sid = sixty
    socket = f"clew-test-{uuid.uuid4().hex[:8]}"
    env = child_env()
    done = "__clew_show_done__"
    command = " ".join(
        [
            f"env PYTHONPATH={env['PYTHONPATH']} TERM=xterm-256color",
            sys.executable,
            "-m actors show",
            sid,
            *where.flags(),
            f"; echo {done}; sleep 600",
        ]
    )
    tmux = ["tmux", "-L", socket, "-f", os.devnull]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", str(COLUMNS), "-y", str(ROWS), command], check=True
    )
    try:
        pane = ""
        for _ in range(1200):  # until the command has finished (not a timing assertion)
            pane = subprocess.run(
                [*tmux, "capture-pane", "-p"], capture_output=True, text=True, check=True
            ).stdout
            if done in pane:
                break
            time.sleep(0.1)
        rows = pane.rstrip("\n").split("\n")
        rows = rows[: rows.index(done)]
        _assert_active_on_first_screen(rows, _active(where, sid))
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
