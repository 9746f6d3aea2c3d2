"""Where a command's bytes come from and go to: an output file or standard output, and blocks of input.

:class:`Target` is the output of ``seqd compress`` and ``seqd decompress``:
standard output, or a file written under a temporary name and renamed into
place when complete, so that an error never leaves a partial or garbage file
behind.  :func:`read_block` reads a block of input in bounded reads.  A
growing file is followed by ``_follow.py``.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path


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
