"""The state directory: one daemon's lock on it, its streams' folders, its trash, and what a crash left.

Layout (``docs/daemon.md``)::

    <state_dir>/lock              held (flock) by the daemon that serves the directory; holds its pid
    <state_dir>/streams/<name>/   one folder per stream (:mod:`.streams`)
    <state_dir>/streams/.new-*    a creation under way; one a crash interrupted is removed at start
    <state_dir>/trash/            dropped streams' folders, moved here at once and deleted by a worker

Everything here happens at start, before any socket is bound, except
:meth:`StateDirectory.trash_for`, which a drop uses.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import uuid
from pathlib import Path
from typing import Callable

from . import stream_meta
from .budget import STREAM_BYTES, return_freed_memory
from .learner_store import most_bytes
from .streams import Stream
from .wal import PRIVATE_DIR, PRIVATE_FILE

log = logging.getLogger("seqd")


class StateDirectory:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.streams = self.path / "streams"
        self.trash = self.path / "trash"
        self._lock_file = None

    def lock(self) -> None:
        """One daemon per state directory: two writers would interleave their logs.  Creates the
        directory; ValueError naming the owner's pid when another daemon holds it."""
        if not self.path.exists():  # private: the logs hold the raw published data
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        elif self.path.stat().st_mode & 0o077:
            log.warning("state directory %s is open to other users (mode %o); seqd creates its own 0700",
                        self.path, self.path.stat().st_mode & 0o777)
        self.streams.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        self._lock_file = os.fdopen(os.open(self.path / "lock", os.O_RDWR | os.O_CREAT | os.O_APPEND, PRIVATE_FILE),
                                    "a+")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.seek(0)
            owner = self._lock_file.read().strip() or "unknown"
            self._lock_file.close()
            self._lock_file = None
            raise ValueError(f"state directory {self.path} is in use by another seqd (pid {owner})") from None
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(f"{os.getpid()}\n")
        self._lock_file.flush()

    def unlock(self) -> None:
        if self._lock_file:
            self._lock_file.close()

    def empty_trash(self) -> None:
        """Delete what drops left in the trash (a crash may have come before a worker deleted it)."""
        if self.trash.is_dir() and not self.trash.is_symlink():
            shutil.rmtree(self.trash, ignore_errors=True)
        elif self.trash.exists() or self.trash.is_symlink():  # not the folder seqd made: it goes too
            self.trash.unlink()

    def trash_for(self, name: str) -> Path:
        """A new place in the trash for stream ``name``'s folder (the trash is created if need be)."""
        path = self.trash / f"{name}.{uuid.uuid4().hex}"
        path.parent.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        return path

    def restore(self, *, threads: int, fsync: bool, budget: int | None = None, repair: bool = False,
                progress: Callable[[int, int], None] | None = None) -> list[tuple[Path, Stream | str]]:
        """Remove the creations a crash interrupted, then open every stream's folder, ``threads`` at a time;
        returns each folder (sorted by name) with its stream, or with why it was refused (a line naming the
        file).  ``progress(done, total)`` is called as streams are opened.

        Each folder stands alone: whatever one holds (a malformed ``stream.json``, a model over the limits, a
        damaged snapshot or log) refuses that stream, and the memory its attempt took is released.

        The learners stay within ``budget`` (``max_state_bytes``) all along.  A stream's ``stream.json``
        says the most its learner can take before anything is read; a stream is opened only once that room is
        free, beside the learners kept in memory and those being opened.  An opened learner stays in memory
        only while enough room is left to open the rest; otherwise it is hibernated at once (a snapshot at its
        learned position, if its log held batches after the last one), as the running daemon would have.
        ``repair``: a damaged log is cut where the damage starts, rather than refusing its stream."""
        for unfinished in self.streams.glob(".new-*"):  # a create that a crash interrupted
            shutil.rmtree(unfinished, ignore_errors=True)
        dirs = sorted(p for p in self.streams.iterdir() if p.is_dir() and not p.name.startswith("."))
        results: dict[Path, Stream | str] = {}
        metas: dict[Path, tuple] = {}
        for path in dirs:
            try:
                metas[path] = stream_meta.read(path, budget)
            except stream_meta.BadStreamFile as exc:
                results[path] = str(exc)
        needs = {path: STREAM_BYTES + most_bytes(meta[2]) for path, meta in metas.items()}
        pending = sorted(metas, reverse=True)  # popped from the end: in name order
        done = [len(results)]
        kept = [0]  # the learners kept in memory, and every stream's own bytes
        opening = [0]  # the room taken by the streams being opened
        room = threading.Condition()
        if progress:
            progress(done[0], len(dirs))

        def reserve_for_rest(workers: int) -> int:  # the room the streams still to open may need at once
            return sum(sorted((needs[p] for p in pending), reverse=True)[:workers])

        def restore(path: Path) -> None:
            need = needs[path]
            with room:
                while budget is not None and opening[0] and kept[0] + opening[0] + need > budget:
                    room.wait()
                opening[0] += need
            stream = None
            try:
                stream = Stream.open(path, metas[path], fsync=fsync, repair=repair)
                with room:
                    fits = budget is None or (kept[0] + opening[0] - need + STREAM_BYTES + stream.learner_bytes
                                              + reserve_for_rest(threads) <= budget)
                if not fits:
                    stream.hibernate_at_restore()
                with room:
                    kept[0] += STREAM_BYTES + (stream.learner_bytes if stream.resident else 0)
                results[path] = stream
            except Exception as exc:  # refused alone; only its message is kept (a traceback holds the learner)
                results[path] = f"{type(exc).__name__}: {exc}"
                if stream is not None:
                    _close_quietly(stream)
                del stream
            finally:
                with room:
                    opening[0] -= need
                    done[0] += 1
                    room.notify_all()
                if progress:
                    progress(done[0], len(dirs))

        def run():
            while True:
                with room:
                    if not pending:
                        return
                    path = pending.pop()
                restore(path)

        workers = [threading.Thread(target=run, name=f"seqd-restore-{i}") for i in range(min(threads, len(pending)))]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        if any(isinstance(r, str) for r in results.values()):  # (what they allocated went with them: no cycle
            return_freed_memory()  # holds it, tests/test_state_dir.py checks; a full collection costs seconds)
        return [(path, results[path]) for path in dirs]


def _close_quietly(stream: Stream) -> None:
    """A stream opened but refused after (its hibernation failed): its log is closed, its learner let go."""
    try:
        stream.log.close()
    except OSError:
        pass
    stream.learner = None
