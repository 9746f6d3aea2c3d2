"""Where a command's bytes come from and go to: an output file or standard output, and a growing file.

:class:`Target` is the output of ``seqd compress`` and ``seqd decompress``:
standard output, or a file written under a temporary name and renamed into
place when complete, so that an error never leaves a partial or garbage file
behind.  :func:`follow_file` reads a file and, like ``tail -f``, what is
appended to it afterwards: ``seqd publish --follow`` and ``seqd compress
--follow``.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

POLL_SECONDS = 0.25  # how often a followed file is looked at once it is drained


class Target:
    """The output: standard output (``path`` None), or a temporary file renamed into place by ``commit``.

    ``direct`` writes ``path`` itself instead (``--follow``, whose output is
    meant to be read while it grows).  Standard output is refused when it is
    a terminal, unless ``force``; an existing file too, unless ``force``.
    """

    def __init__(self, path: Path | None, force: bool, direct: bool = False):
        self.path = path
        if path is None:
            if sys.stdout.isatty() and not force:
                raise ValueError("refusing to write compressed data to a terminal (use -f to force, or name OUT)")
            self.file = sys.stdout.buffer
            self.temp = None
            return
        if path.exists() and not force:
            raise ValueError(f"{path} already exists (use -f to overwrite)")
        if path.is_dir():
            raise ValueError(f"{path} is a directory")
        self.temp = None if direct else path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self.file = open(self.temp or path, "wb")

    def write(self, data: bytes) -> None:
        try:
            self.file.write(data)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise OSError(exc.errno, f"out of disk space writing {self.path or 'standard output'}") from None
            raise

    def sync(self) -> None:
        self.file.flush()
        if self.path is not None:
            os.fsync(self.file.fileno())

    def commit(self) -> None:
        self.file.flush()
        if self.path is None:
            return
        os.fsync(self.file.fileno())
        self.file.close()
        if self.temp is not None:
            os.replace(self.temp, self.path)

    def abandon(self) -> None:
        if self.path is None:
            return
        self.file.close()
        if self.temp is not None:
            self.temp.unlink(missing_ok=True)


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
