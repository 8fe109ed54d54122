"""Linear storage of a growing list: store what a msgpack array gained, not all of it.

LangGraph's ``add_messages`` makes each new value of ``messages`` the old list plus the
new items; storing every version whole makes a thread's bytes quadratic in its length.
The serde encodes a list as a msgpack array — a header with the item count, then the
items one after another, each encoded on its own — so a new value *extends* an old one
exactly when its body starts with the old body (byte for byte: two values that merely
compare equal, ``1`` and ``True``, do not). Then only the new items are stored, as an
array of their own, and reading concatenates the bodies again: the rebuilt bytes are
the bytes the serde produced, so the value round-trips exactly.
"""

from __future__ import annotations

import struct

_FIXARRAY = 0x90
_ARRAY16 = 0xDC
_ARRAY32 = 0xDD
_MAX_FIX = 15
_MAX_16 = 0xFFFF


def array_header(count: int) -> bytes:
    """Return the msgpack header of an array of ``count`` items."""
    if count <= _MAX_FIX:
        return bytes((_FIXARRAY | count,))
    if count <= _MAX_16:
        return bytes((_ARRAY16,)) + struct.pack(">H", count)
    return bytes((_ARRAY32,)) + struct.pack(">I", count)


def split_array(data: bytes) -> tuple[int, memoryview] | None:
    """Return ``(count, body)`` of a msgpack array, or None when ``data`` is not one."""
    if not data:
        return None
    first = data[0]
    view = memoryview(data)
    if first & 0xF0 == _FIXARRAY:
        return first & 0x0F, view[1:]
    if first == _ARRAY16 and len(data) >= 3:
        return struct.unpack_from(">H", data, 1)[0], view[3:]
    if first == _ARRAY32 and len(data) >= 5:
        return struct.unpack_from(">I", data, 1)[0], view[5:]
    return None


def increment(old: bytes, new: bytes) -> bytes | None:
    """Return the array of the items ``new`` appends to ``old``, or None if it does not
    extend it (either is not an array, or ``new`` does not start with ``old``'s items)."""
    old_split = split_array(old)
    new_split = split_array(new)
    if old_split is None or new_split is None:
        return None
    old_n, old_body = old_split
    new_n, new_body = new_split
    if new_n < old_n or len(new_body) < len(old_body):
        return None
    if new_body[: len(old_body)] != old_body:
        return None
    return array_header(new_n - old_n) + new_body[len(old_body) :].tobytes()


def rebuild(base: bytes, increments: list[bytes]) -> bytes:
    """Return the array ``base`` extended by each array of ``increments`` in turn.

    Raises:
        ValueError: ``base`` or an increment is not a msgpack array.
    """
    if not increments:
        return base
    parts: list[memoryview] = []
    total = 0
    for data in (base, *increments):
        split = split_array(data)
        if split is None:
            raise ValueError("a stored increment or its base is not a msgpack array")
        total += split[0]
        parts.append(split[1])
    return array_header(total) + b"".join(parts)
