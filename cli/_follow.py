"""Following a growing file by its name, as ``tail -F`` does: through rotation and truncation.

``seqd compress --follow`` and ``seqd publish --follow`` read a log and then
what is appended to it, for as long as they run.  Logs are rotated under
them, by ``logrotate`` or by the program that writes them, in two ways:

* **the name moves to a new file** (``create``: rename, then create; or
  delete, then create).  The file first opened is still held open, so it
  can be read to its end whatever became of its name, and its inode cannot
  be reused while it is held: comparing the name's ``(st_dev, st_ino)`` with
  the open file's is a safe test of "a new file".  The switch waits until
  the new file holds a byte: until then its writer may still be appending to
  the old one (between the rename and the signal that makes it reopen its
  log), and those bytes are read too.  Once the new file holds a byte, the
  old one is drained to its end and the new one is followed from its start.
  A name that is missing for a while (between a rename and the create) is
  waited for, the old file read on meanwhile.
* **the file is truncated in place** (``copytruncate``: copy, then truncate
  to zero; the writer goes on appending to the same inode).  A size below
  the offset read so far means a truncation: the file is followed from its
  new start.  A file truncated and then written past that offset before it
  is looked at again cannot be told by its size; the first
  :data:`FINGERPRINT_BYTES` bytes read are kept and compared with the
  file's, which tells it unless the new content begins with the same bytes.

What the follower guarantees, and what it cannot (``docs/format.md``,
"Following a log"): every byte it gives, it gives once, in the order of each
file, the files in the order they had the name.  Lost, as with ``tail -F``:
the bytes of a file that had the name only between two looks (two rotations
within one poll); what a writer appends to the old file after the new one
holds a byte; with ``copytruncate``, what the writer appended after the last
look and before the truncation (it is in logrotate's copy, no longer in the
file), what logrotate itself loses between its copy and its truncation, and
the bytes up to the old offset of a rewrite that begins with the bytes
already read (taken for an append).  Read twice: only the bytes of a truncation and a rewrite
past the offset that fall between the check before a read and the read, two
system calls microseconds apart.

The file is looked at when it has been read to its end, every ``poll``
seconds, and is checked for truncation before every read.  ``sleep`` and
``keep_going`` are parameters so that tests can drive the follower with
scripted file operations instead of a clock.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

POLL_SECONDS = 0.25  # how often a drained file and its name are looked at again
FINGERPRINT_BYTES = 1024  # the file's first bytes, kept to notice a truncation the size cannot show


class Follower:
    """The bytes of ``path`` in chunks of at most ``size``, then what is appended, through rotation and truncation.

    The file is opened here, so that one that cannot be read is an error at
    the call, not in whichever thread iterates.  Iterating yields chunks;
    once the file is drained it is looked at again every ``poll`` seconds,
    for as long as ``keep_going()`` says so (asked each time the file is
    drained: a stop reads what is there, then ends).  Iteration closes the
    file when it ends.
    """

    def __init__(self, path: str | os.PathLike, size: int, *, poll: float = POLL_SECONDS,
                 keep_going: Callable[[], bool] = lambda: True, sleep: Callable[[float], None] = time.sleep):
        if size < 1:
            raise ValueError(f"chunk size must be >= 1, got {size}")
        if poll <= 0:
            raise ValueError(f"poll interval must be > 0, got {poll}")
        self.path = os.fspath(path)
        self.size, self.poll, self.keep_going, self.sleep = size, poll, keep_going, sleep
        self._file = open(self.path, "rb", buffering=0)
        self._at_start()

    def _at_start(self) -> None:
        """Read the open file from its start: offset 0, nothing fingerprinted yet."""
        st = os.fstat(self._file.fileno())
        self._identity = (st.st_dev, st.st_ino)
        self._offset = 0
        self._head = b""  # the file's first bytes as read: [0, len(head))

    def __iter__(self) -> Iterator[bytes]:
        try:
            while True:
                yield from self._drain()
                if not self.keep_going():
                    return
                self.sleep(self.poll)
                yield from self._look()
        finally:
            self._file.close()

    def close(self) -> None:
        """Close the file (iteration closes it when it ends; this is for a follower never iterated to its end)."""
        self._file.close()

    # -- the open file ------------------------------------------------------------------------------

    def _drain(self) -> Iterator[bytes]:
        """The open file from the offset to its end, checked for truncation before every read."""
        fd = self._file.fileno()
        while True:
            if self._truncated():
                self._offset, self._head = 0, b""
            chunk = os.pread(fd, self.size, self._offset)
            if not chunk:
                return
            self._offset += len(chunk)
            if len(self._head) < FINGERPRINT_BYTES:
                self._head += chunk[:FINGERPRINT_BYTES - len(self._head)]
            yield chunk

    def _truncated(self) -> bool:
        """Whether the open file was truncated since it was read: smaller than the offset, or another beginning."""
        fd = self._file.fileno()
        if os.fstat(fd).st_size < self._offset:
            return True
        return bool(self._head) and os.pread(fd, len(self._head), 0) != self._head

    # -- the name -----------------------------------------------------------------------------------

    def _look(self) -> Iterator[bytes]:
        """If the name now holds a new file with a byte in it: the old file to its end, then the new one is followed."""
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, PermissionError):  # rotated away, not created again yet: read the old one on
            return
        if (st.st_dev, st.st_ino) == self._identity or st.st_size == 0:
            return  # the same file, or a new one its writer may not have moved to yet
        try:
            new = open(self.path, "rb", buffering=0)
        except (FileNotFoundError, PermissionError):  # gone again meanwhile: the next look decides
            return
        try:
            yield from self._drain()  # what was written to the old file before the writer moved on
        except BaseException:
            new.close()
            raise
        self._file.close()
        self._file = new
        self._at_start()
