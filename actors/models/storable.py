"""What the log can hold: checked at the seams, before an event is built from outside data.

Every event is stored as JSON text (msgspec, UTF-8). Content that comes from outside
the code — a tool's output, a model's reply, a prompt, an exception's message — may not
fit: a lone surrogate (``'\\udcff'``, what ``surrogateescape`` makes of a non-UTF-8
byte), an object JSON cannot hold, or nesting so deep that encoding or a later decode
overflows the stack. Such content must never reach the writer: the append would fail
with ``StoreError`` — an environment failure to the runtime — and re-executing the run
would meet the same content again.

So each seam checks first, and what it decides is recorded like any outcome:

- a tool output → :func:`check_storable`; unencodable → a ``tool_failed``
  (``error_type`` ``Unencodable``) the model sees;
- a model reply → :func:`check_storable`; unencodable → a ``model_failed`` (the chain
  falls back to its next model);
- a prompt or session metadata given through the API → refused (``UsageError``)
  before anything is written;
- an exception's message or type name in a failure event → :func:`safe_text`
  (a lone surrogate becomes the escape ``\\udcff``: the error is still shown).
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any, Final

import msgspec

from actors.errors import Unencodable

#: Deepest nesting of lists/objects a stored value may have. Decoding a stored event
#: adds a few levels and msgspec's encoder and decoder recurse on the C stack; 100
#: levels is far beyond real tool output and far below where either overflows (~1,000).
MAX_DEPTH: Final = 100

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
#: Longest JSON path an error message shows.
_PATH_SHOWN: Final = 80
#: ``bytes.translate`` deletes these: every byte but the four brackets.
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
#: Depth step per byte: +1 for an opening bracket, -1 for a closing one.
_STEP = [0] * 256
for _c in b"[{":
    _STEP[_c] = 1
for _c in b"]}":
    _STEP[_c] = -1


def safe_text(text: str) -> str:
    """Return ``text`` with every lone surrogate replaced by its ``\\udcXX`` escape."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def check_storable(value: object, what: str) -> None:
    """Check that ``value`` can be stored in the log as it is.

    Args:
        what: names the value in the error ("the tool's output").

    Raises:
        Unencodable: a lone surrogate, a type JSON cannot hold, or nesting deeper than
            :data:`MAX_DEPTH`; the message says what and where (a JSON path).
    """
    try:
        encoded = _encode(value)
    except (TypeError, ValueError, OverflowError, RecursionError) as e:
        # UnicodeEncodeError (a lone surrogate) is a ValueError.
        raise Unencodable(f"{what} cannot be stored: {_why(value, e)}") from None
    # Counting every bracket (those inside strings too) bounds the depth from above, at C
    # speed (~10 ms per MB here); only a bound over the limit needs the exact walk.
    bound = max(
        accumulate(map(_STEP.__getitem__, encoded.translate(None, _NOT_BRACKETS))), default=0
    )
    path = _too_deep(_decode(encoded)) if bound > MAX_DEPTH else None
    if path is not None:
        raise Unencodable(
            f"{what} cannot be stored: it is nested deeper than {MAX_DEPTH} levels (at {path})"
        )


def check_text(text: str, what: str) -> None:
    """Check that ``text`` is valid Unicode (no lone surrogate).

    Raises:
        Unencodable: naming the first bad character and its position.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise Unencodable(
            f"{what} is not valid text: {text[e.start]!r} at position {e.start} is a lone"
            " surrogate (undecodable input, e.g. a non-UTF-8 byte)"
        ) from None


def _why(value: object, e: BaseException) -> str:
    if isinstance(e, RecursionError):
        return f"it is nested deeper than {MAX_DEPTH} levels"
    if isinstance(e, UnicodeEncodeError):
        where = _surrogate_path(value)
        if where is not None and len(where) > _PATH_SHOWN:
            where = where[: _PATH_SHOWN - 1] + "…"
        at = f" at {where}" if where else ""
        bad = e.object[e.start] if isinstance(e.object, str) else "?"
        return f"text{at} holds the lone surrogate {bad!r} (undecodable input)"
    return str(e)


def _children(value: Any, path: str) -> list[tuple[Any, str]]:
    if isinstance(value, dict):
        return [(v, f"{path}.{k}") for k, v in value.items()] + [
            (k, f"{path} (a key)") for k in value if isinstance(k, str)
        ]
    if isinstance(value, list | tuple):
        return [(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, msgspec.Struct):
        return [(getattr(value, f), f"{path}.{f}") for f in value.__struct_fields__]
    return []


def _surrogate_path(value: object) -> str | None:
    """Return the JSON path of the first string holding a lone surrogate, if any."""
    stack: list[tuple[Any, str, int]] = [(value, "$", 0)]
    while stack:
        v, path, depth = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return path
        elif depth < MAX_DEPTH:
            stack.extend((c, p, depth + 1) for c, p in reversed(_children(v, path)))
    return None


def _too_deep(value: Any) -> str | None:
    """Return the path where ``value`` (decoded JSON) nests deeper than MAX_DEPTH, if it does.

    Each container keeps only a link to its parent's ``(link, key)``; the path string is
    built once, for the container found too deep.
    """
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        v, depth, link = stack.pop()
        if depth >= MAX_DEPTH:
            return _path_of(link)
        items = v.items() if isinstance(v, dict) else enumerate(v)
        stack.extend((c, depth + 1, (link, k)) for k, c in items if isinstance(c, dict | list))
    return None


def _path_of(link: Any) -> str:
    keys: list[object] = []
    while link is not None:
        link, key = link
        keys.append(key)
    path = "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in reversed(keys))
    return path if len(path) <= _PATH_SHOWN else path[: _PATH_SHOWN - 1] + "…"
