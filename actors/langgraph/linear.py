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


def _header(data: bytes) -> tuple[int, int] | None:
    """Return ``(count, header length)`` of a msgpack array, or None when not one."""
    if not data:
        return None
    first = data[0]
    if first & 0xF0 == _FIXARRAY:
        return first & 0x0F, 1
    if first == _ARRAY16 and len(data) >= 3:
        return struct.unpack_from(">H", data, 1)[0], 3
    if first == _ARRAY32 and len(data) >= 5:
        return struct.unpack_from(">I", data, 1)[0], 5
    return None


def split_array(data: bytes) -> tuple[int, memoryview] | None:
    """Return ``(count, body)`` of a msgpack array, or None when ``data`` is not one."""
    found = _header(data)
    if found is None:
        return None
    return found[0], memoryview(data)[found[1] :]


def increment(old: bytes, new: bytes) -> bytes | None:
    """Return the array of the items ``new`` appends to ``old``, or None if it does not
    extend it (either is not an array, or ``new`` does not start with ``old``'s items)."""
    old_head = _header(old)
    new_head = _header(new)
    if old_head is None or new_head is None:
        return None
    (old_n, old_at), (new_n, new_at) = old_head, new_head
    body = len(old) - old_at
    if new_n < old_n or len(new) - new_at < body:
        return None
    # Byte slices compare with memcmp (a memoryview compares item by item: 100× slower).
    if new[new_at : new_at + body] != old[old_at:]:
        return None
    return array_header(new_n - old_n) + new[new_at + body :]


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
