"""Finding the field-level differences between a recorded event and the re-executed one.

The value, :class:`~actors.divergences.FieldDiff`, lives below ``errors.py``; this
module compares two values and builds them.

Two texts that differ (a system prompt after a role's instructions changed, a message)
also get ``lines``: a unified diff of the two, so the report shows *what* changed, not
only that a hash or a long string did.
"""

from __future__ import annotations

import difflib
from typing import Any

from actors.divergences import FieldDiff

#: Lines of context around each change in a text diff.
_CONTEXT = 1


def text_diff(expected: str, actual: str) -> list[str]:
    """Return the unified diff of two texts, without the ``---``/``+++`` file header."""
    diff = difflib.unified_diff(expected.splitlines(), actual.splitlines(), lineterm="", n=_CONTEXT)
    return [line for line in diff if not line.startswith(("---", "+++"))]


def _leaf(path: str, expected: Any, actual: Any) -> FieldDiff:
    lines: list[str] = []
    if isinstance(expected, str) and isinstance(actual, str) and "\n" in expected + actual:
        lines = text_diff(expected, actual)
    return FieldDiff(path=path or "(value)", expected=expected, actual=actual, lines=lines)


def diff_values(expected: Any, actual: Any, path: str = "") -> list[FieldDiff]:
    """Return the field-level differences between two builtin values (dicts, lists, scalars)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[FieldDiff] = []
        for key in list(expected) + [k for k in actual if k not in expected]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in actual:
                out.append(FieldDiff(path=sub, expected=expected[key], actual=None))
            elif key not in expected:
                out.append(FieldDiff(path=sub, expected=None, actual=actual[key]))
            else:
                out.extend(diff_values(expected[key], actual[key], sub))
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        out = []
        for i in range(max(len(expected), len(actual))):
            sub = f"{path}[{i}]"
            if i >= len(expected):
                out.append(FieldDiff(path=sub, expected=None, actual=actual[i]))
            elif i >= len(actual):
                out.append(FieldDiff(path=sub, expected=expected[i], actual=None))
            else:
                out.extend(diff_values(expected[i], actual[i], sub))
        return out
    if expected != actual:
        return [_leaf(path, expected, actual)]
    return []


def with_text_diffs(diffs: list[FieldDiff]) -> list[FieldDiff]:
    """Give every changed text a diff (:func:`diff_values` does so for several lines only)."""
    return [
        FieldDiff(
            path=d.path, expected=d.expected, actual=d.actual, lines=text_diff(d.expected, d.actual)
        )
        if isinstance(d.expected, str) and isinstance(d.actual, str) and not d.lines
        else d
        for d in diffs
    ]
