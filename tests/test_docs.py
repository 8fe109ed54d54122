"""Every ```python block of README.md and docs/*.md runs as written.

Each block is its own script, run in a fresh interpreter (cwd and ``CLEW_HOME`` are
empty temporary directories, no provider keys in the environment) with a timeout: a
block fails when it exits non-zero or does not exit — a block that leaves an actor
thread running never exits, and only a real process with a timeout catches that.

The script pads the block with blank lines so that a traceback's line numbers are the
markdown file's. Two markers, an HTML comment on the line right before a fence, change
how a block runs:

- ``<!-- docs-test: skip (reason) -->`` — the block cannot run offline (a live provider,
  a server); the reason is required and shows in the test report;
- ``<!-- docs-test: continue -->`` — the block is a fragment of the previous ``python``
  block of the same file: it runs appended to it, as one script;
- ``<!-- docs-test: needs (module, …) -->`` — the block uses an optional extra: it is
  skipped where one of the modules cannot be imported (CI installs the extras and runs it).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Seconds a block may run. The slowest block (an embedded session plus its replay)
#: takes about 2 s; a block that hangs on a live thread hits this instead.
TIMEOUT = 60

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<what>.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*\((?P<reason>.+)\)$")
NEEDS = re.compile(r"^needs\s*\((?P<modules>.+)\)$")
#: Variables that would let a block reach a real provider, or point it at a real home.
PRIVATE_ENV = re.compile(r"^(CLEW_|OPENAI_|ANTHROPIC_)")


@dataclass
class Block:
    """One runnable script: a ```python block, plus the fragments that continue it."""

    doc: str  # the markdown file, relative to the repository root
    line: int  # 1-based line of the block's first code line
    code: list[tuple[int, str]] = field(default_factory=list, repr=False)  # (line, text)
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    def script(self) -> str:
        """Return the code with blank lines in between, so line N is the doc's line N."""
        lines = [""] * max((n for n, _ in self.code), default=0)
        for n, text in self.code:
            lines[n - 1] = text
        return "\n".join(lines) + "\n"


def _missing(modules: str) -> str | None:
    """The skip reason of a block needing ``modules`` (comma-separated), or None."""
    absent = [m.strip() for m in modules.split(",") if importlib.util.find_spec(m.strip()) is None]
    return f"needs {', '.join(absent)} (an optional extra)" if absent else None


# A line-by-line markdown scanner: one loop with a case per kind of line.
def parse(doc: str, text: str) -> tuple[list[Block], list[str]]:  # noqa: C901, PLR0912
    """Return the runnable python blocks of the markdown ``text`` of ``doc``, and the
    problems with its markers."""
    blocks: list[Block] = []
    problems: list[str] = []
    lines = text.splitlines()
    marker: tuple[int, str] | None = None  # the marker on the line before, if any
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            found = MARKER.match(lines[i])
            if marker is not None:
                problems.append(f"{doc}:{marker[0]}: marker not followed by a fence")
            marker = (i + 1, found["what"]) if found else None
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        language = m["info"].strip().split(" ")[0]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            j += 1
        code = [(n + 1, lines[n].removeprefix(indent)) for n in range(i + 1, j)]
        what = marker[1] if marker else None
        if language != "python":
            if what is not None:
                problems.append(f"{doc}:{marker[0]}: marker before a {language!r} block")
        elif what is None:
            blocks.append(Block(doc, i + 2, code))
        elif what == "continue":
            if blocks:
                blocks[-1].code += code
            else:
                problems.append(f"{doc}:{i + 1}: 'continue' with no python block before it")
        elif (skip := SKIP.match(what)) is not None:
            blocks.append(Block(doc, i + 2, code, skip=skip["reason"].strip()))
        elif (needs := NEEDS.match(what)) is not None:
            blocks.append(Block(doc, i + 2, code, skip=_missing(needs["modules"])))
        else:
            problems.append(f"{doc}:{marker[0]}: unknown marker {what!r}")
        marker = None
        i = j + 1
    return blocks, problems


def collect() -> tuple[list[Block], list[str]]:
    blocks: list[Block] = []
    problems: list[str] = []
    for path in DOCS:
        b, p = parse(path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))
        blocks += b
        problems += p
    return blocks, problems


BLOCKS, PROBLEMS = collect()


def test_every_docs_test_marker_stands_right_before_a_python_block() -> None:
    assert [] == PROBLEMS


def test_markers_skip_a_block_and_append_a_fragment_to_the_one_before() -> None:
    text = "\n".join(
        [
            "<!-- docs-test: skip (needs a live provider) -->",  # 1
            "```python",
            "call_the_network()",
            "```",
            "```python",  # 5
            "x = 1",
            "```",
            "<!-- docs-test: continue -->",
            "```python",
            "print(x)",  # 10
            "```",
        ]
    )

    blocks, problems = parse("doc.md", text)

    assert [] == problems
    assert [("doc.md:3", "needs a live provider"), ("doc.md:6", None)] == [
        (b.id, b.skip) for b in blocks
    ]
    assert "x = 1\n\n\n\nprint(x)\n" == blocks[1].script().lstrip("\n")
    assert 10 == blocks[1].script().count("\n")


def test_a_needs_marker_skips_a_block_only_where_a_module_is_missing() -> None:
    text = "\n".join(
        [
            "<!-- docs-test: needs (json, no_such_module_h23) -->",
            "```python",
            "import no_such_module_h23",
            "```",
            "<!-- docs-test: needs (json) -->",
            "```python",
            "import json",
            "```",
        ]
    )

    blocks, problems = parse("doc.md", text)

    assert [] == problems
    assert [
        ("doc.md:3", "needs no_such_module_h23 (an optional extra)"),
        ("doc.md:7", None),
    ] == [(b.id, b.skip) for b in blocks]


def test_a_misplaced_or_unknown_marker_is_a_problem() -> None:
    text = "\n".join(
        [
            "<!-- docs-test: skip -->",
            "```python",
            "pass",
            "```",
            "<!-- docs-test: continue -->",
            "",
            "```python",
            "pass",
            "```",
            "<!-- docs-test: skip (no reason to) -->",
            "```json",
            "{}",
            "```",
        ]
    )

    _, problems = parse("doc.md", text)

    assert [
        "doc.md:1: unknown marker 'skip'",
        "doc.md:5: marker not followed by a fence",
        "doc.md:10: marker before a 'json' block",
    ] == problems


def test_no_python_block_writes_to_a_fixed_tmp_path() -> None:
    # Run as written, a block naming /tmp/… writes outside its test's directories, and two
    # checkouts on one machine break each other's doc tests (issue 32, item 14).
    fixed = [b.id for b in BLOCKS if re.search(r"[\"']/tmp\b", b.script())]
    assert [] == fixed


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b, id=b.id, marks=[pytest.mark.skip(reason=b.skip)] if b.skip else [])
        for b in BLOCKS
    ],
)
def test_python_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    work = tmp_path / "cwd"
    home = tmp_path / "clew-home"
    work.mkdir()
    # Named after the doc, so tracebacks point at it; the dots keep it unimportable.
    script = tmp_path / (Path(block.doc).name + ".py")
    script.write_text(block.script(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not PRIVATE_ENV.match(k)}
    env["CLEW_HOME"] = str(home)
    # A block's temporary directories (tempfile.mkdtemp) stay inside this test's.
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    # This checkout's packages, not whatever clew is installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))

    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        out, err = (x.decode() if isinstance(x, bytes) else x or "" for x in (e.stdout, e.stderr))
        pytest.fail(
            f"{block.id}: did not exit within {TIMEOUT} s (a thread or actor left running?)"
            f"\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
        )

    code = done.returncode
    assert 0 == code, f"{block.id}\n--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}"
