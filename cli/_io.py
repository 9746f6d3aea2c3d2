"""Reading a command's input in exact blocks, in bounded reads (a growing file is followed by ``_follow.py``)."""

from __future__ import annotations


def read_block(reader, size: int, read_size: int) -> bytes:
    """Exactly ``size`` bytes from ``reader`` (fewer only at its end), read ``read_size`` at a time."""
    parts, got = [], 0
    while got < size:
        chunk = reader.read(min(read_size, size - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)
