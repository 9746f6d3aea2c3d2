"""What the commands show: a progress line on standard error, sizes, and JSON that stays JSON.

A progress line is only drawn when standard error is a terminal (and the
command is not asked to be quiet or to print JSON): it is rewritten in place
with a carriage return, padded to the longest line drawn so far so that a
shorter line leaves no trace of a longer one, and cleared when the work ends.
:class:`Progress` is the line of ``seqd compress`` and ``seqd decompress``:
how far, and how fast over the last few seconds (not since the start, so a
stall shows).
"""

from __future__ import annotations

import collections
import math
import sys
import threading
import time

RATE_SECONDS = 3.0  # the progress line's rate is measured over this many seconds
PROGRESS_SECONDS = 0.2  # and the line is redrawn at most this often
PROGRESS_COLUMNS = 100  # and cut to this width: a line that wraps cannot be redrawn in place

# Size suffixes a person may type: 512K, 4M, 1G (binary multiples, as the container's block sizes are).
SIZE_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class StatusLine:
    """One line on standard error, rewritten at most once every ``every`` seconds; nothing unless ``enabled``."""

    def __init__(self, enabled: bool, every: float = 0.0):
        self.enabled = enabled
        self.every = every
        self._last = -math.inf
        self._width = 0

    def show(self, text: str) -> None:
        now = time.monotonic()
        if not self.enabled or now - self._last < self.every:
            return
        self._last = now
        self._width = max(self._width, len(text))
        sys.stderr.write("\r" + text.ljust(self._width))
        sys.stderr.flush()

    def clear(self) -> None:
        """Erase the line (the cursor goes back to its start), so that what is printed next stands alone."""
        if self.enabled and self._width:
            sys.stderr.write("\r" + " " * self._width + "\r")
            sys.stderr.flush()


class Progress:
    """How far one file is, how fast it goes now, and the bits per byte of what is done (``note``).

    ``show`` may be called from several threads at once (``-T``): the line
    is drawn under a lock.
    """

    def __init__(self, name: str, total: int | None, enabled: bool):
        self.name, self.total = name, total
        self.line = StatusLine(enabled, every=PROGRESS_SECONDS)
        self._recent: collections.deque = collections.deque()  # (time, bytes done), the last RATE_SECONDS
        self._lock = threading.Lock()

    def show(self, done: int, note: str = "", fraction: float | None = None) -> None:
        """``done`` original bytes processed, ``note`` appended (bits per byte so far); ``fraction`` done of all.

        Without ``fraction``, the share done is ``done`` of ``total`` (when known).
        """
        if not self.line.enabled:
            return
        with self._lock:
            now = time.monotonic()
            self._recent.append((now, done))
            while len(self._recent) > 2 and now - self._recent[1][0] >= RATE_SECONDS:
                self._recent.popleft()
            t0, d0 = self._recent[0]
            rate = f"{human_size((done - d0) / (now - t0))}/s " if now - t0 > 0 else ""
            if fraction is None and self.total:
                fraction = done / self.total
            pct = f"{100 * fraction:5.1f}% " if fraction is not None else ""
            self.line.show(f"{self.name}: {pct}{human_size(done)} {rate}{note}"[:PROGRESS_COLUMNS])

    def clear(self) -> None:
        with self._lock:
            self.line.clear()


def human_size(n: float) -> str:
    """A count of bytes as a person reads it: '999 B', '1.5 kB', '12.3 MB' (decimal units, as rates are)."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable: GB ends the loop")


def parse_size(text: str) -> int:
    """A size as a person types it: '65536', '512K', '4M', '1g', '64kb' (binary multiples).

    >>> parse_size("512K"), parse_size("4M"), parse_size("65536")
    (524288, 4194304, 65536)
    """
    t = text.strip().lower().removesuffix("b")
    return int(float(t[:-1]) * SIZE_UNITS[t[-1]]) if t and t[-1] in SIZE_UNITS else int(t)


def json_safe(value):
    """``value`` with every non-finite float as None, for ``--json`` output: JSON has no infinity or NaN
    (a model that gave a symbol probability 0 has an infinite code length)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
