"""The file-handling rules of ``seqd compress`` and ``seqd decompress``: what is read, what is written, what is kept.

They follow gzip's and zstd's, and where those can destroy data, the safer choice:

- **Inputs** (:func:`open_input`) are regular files or standard input (``-``).
  A missing file or a directory is an error; a symbolic link is refused
  unless ``-f`` (as gzip refuses it); a device, FIFO or socket is skipped
  with a warning unless ``-f``; compressing a name that already ends in
  ``.sqd`` into a file is skipped with a warning unless ``-f``.  Compressed
  data is never read from a terminal unless ``-f``.
- **Outputs** (:class:`Output`) go to standard output, to a device, FIFO or
  socket that already exists (written into, as zstd does: never replaced,
  never unlinked), or to a regular file.  A regular file is written under a
  temporary name in the same directory and renamed into place only when
  complete, after the input's mode, times (and owner, when allowed) are
  copied onto it, so that a failure at any point (disk full at open or at
  write, a permission error, a decoding error, an interrupt) leaves neither a
  partial file nor a temporary one.  An existing file or symbolic link is
  not replaced unless ``-f`` (a link is then replaced, not its target).
  Compressed data is never written to a terminal unless ``-f``.
- **The input is removed** only after success, and only when the output is a
  regular file that now holds everything: writing into a device or to
  standard output keeps it.

A problem with one file is a :class:`FileProblem` naming the file: an error
(exit code 1), or with ``skip`` a warning that leaves the file alone (exit
code 2), as gzip reports a file it will not touch.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from typing import BinaryIO

SUFFIX = ".sqd"

# What to do about an operating-system error, by errno: appended to its message.
_ERRNO_HINTS = {
    errno.ENOSPC: "free some space, or write elsewhere with -o or -c",
    errno.EDQUOT: "free some space, or write elsewhere with -o or -c",
    errno.EACCES: "check the permissions of the file and its directory",
    errno.EPERM: "check the permissions of the file and its directory",
    errno.EROFS: "the file system is read-only: write elsewhere with -o or -c",
}


class FileProblem(Exception):
    """Why one file was not processed: ``path`` and a one-line ``message``; ``skip`` for a warning (exit 2)."""

    def __init__(self, path: str, message: str, skip: bool = False):
        super().__init__(f"{path}: {message}")
        self.path, self.message, self.skip = path, message, skip


def explain(exc: OSError, path: str, named: bool = False) -> FileProblem:
    """An operating-system error as a one-line problem naming the file it concerns, and what to do.

    With ``named``, the problem names ``path`` whatever file the error names
    (an output's temporary file is named by the output it stands for).
    """
    what = exc.strerror or str(exc)
    hint = _ERRNO_HINTS.get(exc.errno)
    return FileProblem(path if named else exc.filename or path, f"{what} ({hint})" if hint else what)


class Input:
    """An opened input: ``file`` to read, ``path`` (None for standard input), its ``stat`` (None for a pipe)."""

    def __init__(self, file: BinaryIO, path: str | None, st: os.stat_result | None):
        self.file, self.path, self.stat = file, path, st

    @property
    def name(self) -> str:
        return self.path if self.path is not None else "-"

    @property
    def size(self) -> int | None:
        return self.stat.st_size if self.stat is not None and stat.S_ISREG(self.stat.st_mode) else None

    def close(self) -> None:
        if self.path is not None:
            self.file.close()


def open_input(name: str, *, force: bool, compressed: bool, suffix_check: bool) -> Input:
    """Open ``name`` (``-``: standard input) for reading, or raise the :class:`FileProblem` that forbids it.

    ``compressed``: the input holds ``.sqd`` data (decompress, test, list),
    which is never read from a terminal unless ``force``.  ``suffix_check``:
    compressing into a file, so a name already ending in ``.sqd`` is skipped.
    """
    if name == "-":
        if compressed and sys.stdin.isatty() and not force:
            raise FileProblem("-", "compressed data not read from a terminal; use -f to force it, or redirect "
                                   "the input")
        return Input(sys.stdin.buffer, None, None)
    try:
        st = os.lstat(name)
    except OSError as exc:
        raise explain(exc, name) from None
    if stat.S_ISLNK(st.st_mode):
        if not force:
            raise FileProblem(name, "is a symbolic link; name the file it points to, or use -f to follow it")
        try:
            st = os.stat(name)
        except OSError as exc:
            raise explain(exc, name) from None
    if stat.S_ISDIR(st.st_mode):
        raise FileProblem(name, "is a directory (seqd does not recurse: name the files in it)")
    if not stat.S_ISREG(st.st_mode) and not force:
        raise FileProblem(name, "is not a regular file -- ignored (use -f to read it)", skip=True)
    if suffix_check and name.endswith(SUFFIX) and not force:
        raise FileProblem(name, f"already has the {SUFFIX} suffix -- unchanged (use -f to compress it again)",
                          skip=True)
    try:
        file = open(name, "rb")
    except OSError as exc:
        raise explain(exc, name) from None
    return Input(file, name, os.fstat(file.fileno()))


def output_name(name: str, compressing: bool) -> str:
    """The file ``name`` compresses to (``name.sqd``) or decompresses to (``name`` without ``.sqd``)."""
    if compressing:
        return name + SUFFIX
    base = os.path.basename(name)
    if not base.endswith(SUFFIX) or base == SUFFIX:
        raise FileProblem(name, f"unknown suffix (expected {SUFFIX}) -- ignored (name the output with -o, "
                                "or use -c)", skip=True)
    return name[:-len(SUFFIX)]


class Output:
    """Where one input's bytes go: standard output (``path`` None), into a device, or a regular file.

    A regular file is written under a temporary name and renamed by
    :meth:`commit`; ``direct`` writes it in place instead (``--follow``,
    whose output is meant to be read while it grows).  :meth:`abandon`
    removes whatever this object created.  ``replaces`` says whether the
    output is a regular file that holds everything once committed, so that
    the input may be removed.
    """

    def __init__(self, path: str | None, *, force: bool, binary: bool, direct: bool = False):
        self.path, self.temp, self.replaces, self._fd_owned = path, None, False, True
        if path is None:
            if binary and sys.stdout.isatty() and not force:
                raise FileProblem("-", "compressed data not written to a terminal; use -f to force it, or "
                                       "redirect the output")
            self.file = sys.stdout.buffer
            self._fd_owned = False
            return
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise explain(exc, path, named=True) from None
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                raise FileProblem(path, "is a directory; name a file to write")
            if stat.S_ISLNK(st.st_mode) and not force:
                raise FileProblem(path, "is a symbolic link; not overwritten (use -f to replace the link "
                                        "itself)", skip=True)
            if stat.S_ISREG(st.st_mode) and not force:
                raise FileProblem(path, "already exists; not overwritten (use -f to overwrite it)", skip=True)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                self.file = self._open(path, os.O_WRONLY)  # a device, FIFO or socket: written into, kept
                return
        self.replaces = True
        if direct:
            self.file = self._open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW)
            return
        folder, base = os.path.split(path)
        try:
            fd, self.temp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=folder or ".")
        except OSError as exc:
            raise explain(exc, path, named=True) from None
        self.file = os.fdopen(fd, "wb")

    @staticmethod
    def _open(path: str, flags: int) -> BinaryIO:
        try:
            return os.fdopen(os.open(path, flags, 0o666), "wb")
        except OSError as exc:
            raise explain(exc, path, named=True) from None

    @property
    def name(self) -> str:
        return self.path if self.path is not None else "standard output"

    def write(self, data: bytes) -> None:
        try:
            self.file.write(data)
        except OSError as exc:
            raise explain(exc, self.name, named=True) from None

    def sync(self) -> None:
        """Make what was written so far durable (``--follow`` after each block)."""
        try:
            self.file.flush()
            if self.replaces:
                os.fsync(self.file.fileno())
        except OSError as exc:
            raise explain(exc, self.name, named=True) from None

    def commit(self, meta: os.stat_result | None = None) -> None:
        """Finish: flush, copy ``meta`` (the input's mode, owner, times) onto a file, rename it into place."""
        try:
            self.file.flush()
            if not self.replaces:
                return
            fd = self.file.fileno()
            os.fsync(fd)
            if meta is not None:
                copy_metadata(fd, meta)
            elif self.temp is not None:  # from a pipe: the mode a new file gets, not the temporary file's 0600
                os.fchmod(fd, 0o666 & ~_umask())
            self.file.close()
            if self.temp is not None:
                os.replace(self.temp, self.path)
                self.temp = None
        except OSError as exc:
            raise explain(exc, self.name, named=True) from None

    def abandon(self) -> None:
        """Give up: close, and remove the temporary file (a device, standard output and ``direct`` are kept)."""
        try:
            if self._fd_owned:
                self.file.close()
        except OSError:
            pass  # the close flushes, and the flush fails as the writes did (a full disk): the file goes anyway
        finally:
            if self.temp is not None:
                try:
                    os.unlink(self.temp)
                except FileNotFoundError:
                    pass
                self.temp = None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def copy_metadata(fd: int, meta: os.stat_result) -> None:
    """Give the open file ``fd`` the owner and group (where allowed), mode and times of ``meta``.

    The owner comes first, since changing it clears the set-user-ID and
    set-group-ID bits; a user who may not give the file away keeps it (as
    gzip does), but the group is still tried.  The access and modification
    times are set last, in nanoseconds.
    """
    try:
        os.fchown(fd, meta.st_uid, meta.st_gid)
    except PermissionError:
        try:
            os.fchown(fd, -1, meta.st_gid)
        except PermissionError:
            pass
    os.fchmod(fd, stat.S_IMODE(meta.st_mode))
    os.utime(fd, ns=(meta.st_atime_ns, meta.st_mtime_ns))
