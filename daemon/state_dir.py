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

from .budget import STREAM_BYTES
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
        if self.trash.exists():
            shutil.rmtree(self.trash, ignore_errors=True)

    def trash_for(self, name: str) -> Path:
        """A new place in the trash for stream ``name``'s folder (the trash is created if need be)."""
        path = self.trash / f"{name}.{uuid.uuid4().hex}"
        path.parent.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        return path

    def restore(self, *, threads: int, fsync: bool, budget: int | None = None) -> list[tuple[Path, Stream | Exception]]:
        """Remove the creations a crash interrupted, then open every stream's folder, ``threads`` at a
        time; returns each folder (sorted by name) with its stream, or with why it could not be opened.

        Once the streams opened take ``budget`` bytes (their learners and :data:`~.budget.STREAM_BYTES`
        each), a stream whose snapshot holds its whole learner (its
        log has nothing after it) is served hibernated: its learner goes back to the snapshot it came from,
        so that a daemon of many streams starts within its memory, as it ran."""
        for unfinished in self.streams.glob(".new-*"):  # a create that a crash interrupted
            shutil.rmtree(unfinished, ignore_errors=True)
        dirs = sorted(p for p in self.streams.iterdir() if p.is_dir() and not p.name.startswith("."))
        results: dict[Path, Stream | Exception] = {}
        held = [0]
        counting = threading.Lock()

        def restore(path: Path) -> None:
            try:
                stream = Stream.open(path, fsync=fsync)
                with counting:
                    held[0] += STREAM_BYTES
                    if budget is None or held[0] + stream.learner_bytes <= budget or not stream.sleep_as_opened():
                        held[0] += stream.learner_bytes
                results[path] = stream
            except Exception as exc:
                results[path] = exc

        pending = list(dirs)
        workers = []
        for _ in range(min(threads, len(pending))):
            def run():
                while True:
                    try:
                        path = pending.pop()
                    except IndexError:
                        return
                    restore(path)
            t = threading.Thread(target=run)
            t.start()
            workers.append(t)
        for t in workers:
            t.join()
        return [(path, results[path]) for path in dirs]
