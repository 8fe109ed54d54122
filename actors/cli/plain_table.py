"""``clew sessions``'s table written as plain text off a terminal, without rich.

Off a terminal (a pipe, a file, a test's capture) rich draws the table with no colour,
200 columns wide (:func:`actors.cli.render.make_console`); for the usual list — ASCII
text, scenario names that fit their column, a table within the 200 columns — that is a
box of fixed characters around columns as wide as their widest cell, which this module
writes byte for byte as rich does (``tests/actors/cli/test_plain_table.py`` compares the
two). Importing rich and laying out its table was ~30% of ``clew sessions``'s start
(docs/performance.md, "The CLI's start"). Anything else — a terminal, colour forced
(``FORCE_COLOR``, ``TTY_COMPATIBLE``), an encoding other than UTF-8, text rich would
measure or cut — returns None, and rich draws it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Final

from actors.runtime.status import SessionInfo

#: The width of rich's console off a terminal (actors/cli/render.py ``make_console``).
WIDTH: Final = 200
#: The scenario column's widest cell before rich cuts it with an ellipsis.
SCENARIO_MAX: Final = 16
_HEADERS: Final = ("session", "status", "scenario", "runs", "events", "last activity", "created")
#: The right-justified columns (the counts).
_RIGHT: Final = frozenset({3, 4})


def plain_output(stream: IO[str] | None = None) -> bool:
    """True when rich would draw to ``stream`` (stdout) with no colour, 200 columns wide,
    in UTF-8: not a terminal, colour not forced, not a notebook."""
    stream = sys.stdout if stream is None else stream
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ or "IPython" in sys.modules:
        return False
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower()
    try:
        tty = stream.isatty()
    except ValueError:  # closed
        return False
    return not tty and encoding.startswith("utf")


def _plain_text(text: str) -> bool:
    """True when rich measures ``text`` as its length: printable ASCII (no wide or
    combining characters, no control characters)."""
    return text.isascii() and text.isprintable()


def sessions_text(infos: Sequence[SessionInfo], scenarios: Mapping[str, str]) -> str | None:
    """Return ``clew sessions``'s table as rich draws it off a terminal (lines ending in a
    newline), or None when rich must draw it (see the module docstring)."""
    if not infos:
        return None
    rows = [
        (
            i.session_id,
            i.status + (" (archived)" if i.lifecycle == "archived" else ""),
            scenarios.get(i.session_id, ""),
            str(i.main_runs),
            str(i.events),
            i.updated_at[:19].replace("T", " "),
            i.created_at[:19].replace("T", " "),
        )
        for i in infos
    ]
    if not all(_plain_text(cell) for row in rows for cell in row):
        return None
    widths = [max(len(h), *(len(r[c]) for r in rows)) for c, h in enumerate(_HEADERS)]
    if widths[2] > SCENARIO_MAX or sum(widths) + 3 * len(widths) + 1 > WIDTH:
        return None

    def line(cells: Sequence[str], bar: str) -> str:
        shown = [
            cell.rjust(w) if c in _RIGHT else cell.ljust(w)
            for c, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return f"{bar} " + f" {bar} ".join(shown) + f" {bar}\n"

    def rule(left: str, fill: str, cross: str, right: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + right + "\n"

    title = f"{len(infos)} session{'' if len(infos) == 1 else 's'} (times in UTC)\n"
    return "".join(
        [
            title,
            rule("┏", "━", "┳", "┓"),
            line(_HEADERS, "┃"),
            rule("┡", "━", "╇", "┩"),
            *(line(r, "│") for r in rows),
            rule("└", "─", "┴", "┘"),
        ]
    )
