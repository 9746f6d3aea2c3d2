"""Reading what a command consumes: a growing file, and exact blocks.

:func:`follow_file` reads a file and, like ``tail -f``, what is
appended to it afterwards: ``seqd publish --follow`` and ``seqd compress
--follow``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

POLL_SECONDS = 0.25  # how often a followed file is looked at once it is drained


def follow_file(path: str | os.PathLike, size: int, *, follow: bool = False, poll: float = POLL_SECONDS,
                keep_going: Callable[[], bool] = lambda: True, reopen: bool = True) -> Iterator[bytes]:
    """The bytes of ``path`` in chunks of at most ``size``; with ``follow``, then what is appended.

    Once the file is drained it is looked at again every ``poll`` seconds, for
    as long as ``keep_going()`` says so.  With ``reopen`` it is followed as
    ``tail -F`` follows: a truncated file is read again from its start, a
    replaced one (rotation) is reopened after the old one is drained.
    Without it, as ``tail -f``: the file first opened is read on, whatever
    becomes of its name.  The file is opened at the call, so that one that
    cannot be read is an error there (not in whichever thread reads the chunks).
    """
    return _chunks(open(path, "rb"), path, size, follow, poll, keep_going, reopen)


def _chunks(f, path, size: int, follow: bool, poll: float, keep_going: Callable[[], bool],
            reopen: bool) -> Iterator[bytes]:
    try:
        while True:
            while chunk := f.read(size):
                yield chunk
            if not follow or not keep_going():
                return
            time.sleep(poll)
            if not reopen:
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:  # rotated away, the new file not there yet
                continue
            if st.st_ino != os.fstat(f.fileno()).st_ino:
                while chunk := f.read(size):  # what was written to the old file before it was replaced
                    yield chunk
                try:
                    new = open(path, "rb")
                except FileNotFoundError:  # replaced again meanwhile: try on the next poll
                    continue
                f.close()
                f = new
            elif st.st_size < f.tell():
                f.seek(0)
    finally:
        f.close()


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
