"""A stream's ``repairs`` file: one JSON line per repair of its write-ahead log (``seqd serve --repair``).

A repair cuts a damaged log where its damage starts, losing the records
after it (:class:`~.wal.LogDamage`).  The stream goes on from there, and this
file keeps the operator's record of what was lost: when, from which position,
how many bytes of log, in which file and why.  The stream's stats show the
last entries, restart after restart.  It is the operator's record, not the
stream's state: a line that does not read back is skipped.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from . import wal

NAME = "repairs"  # one JSON line per repair of the stream's log: when, where, what was lost
MAX_REPAIRS_SHOWN = 16


def remember(directory: Path, damage: wal.LogDamage) -> None:
    """Add a line for ``damage``, cut off by a repair of the log in ``directory`` (appended, fsynced)."""
    line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "position": damage.position,
                       "lost_log_bytes": damage.lost_bytes,
                       "lost_symbols_at_least": damage.lost_symbols, "file": damage.path.name, "offset": damage.offset,
                       "reason": damage.reason}) + "\n"
    fd = os.open(directory / NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, wal.PRIVATE_FILE)
    try:
        wal.write_all(fd, line.encode(), os.fstat(fd).st_size)
        os.fsync(fd)
    finally:
        os.close(fd)


def read(directory: Path) -> list[dict]:
    """The last repairs of a stream's log (:data:`MAX_REPAIRS_SHOWN`), oldest first; a line that does not read
    back is skipped (it is the operator's record, not the stream's state)."""
    try:
        lines = (directory / NAME).read_bytes()[-(1 << 16):].splitlines()
    except OSError:
        return []
    out = []
    for line in lines[-MAX_REPAIRS_SHOWN:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out
