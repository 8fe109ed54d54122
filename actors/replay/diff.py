"""Field-level differences between a recorded event and the re-executed one."""

from __future__ import annotations

from typing import Any

import msgspec


class FieldDiff(msgspec.Struct, frozen=True, kw_only=True):
    """One differing field: a dotted path, the recorded value and the re-executed one."""

    path: str
    expected: Any
    actual: Any


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
        return [FieldDiff(path=path or "(value)", expected=expected, actual=actual)]
    return []
