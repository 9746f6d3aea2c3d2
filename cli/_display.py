"""What the commands show a person at a terminal: a progress line on standard error, and sizes.

A progress line is only drawn when standard error is a terminal (and the
command is not asked to be quiet or to print JSON): it is rewritten in place
with a carriage return, padded to the longest line drawn so far so that a
shorter line leaves no trace of a longer one, and cleared when the work ends.
"""

from __future__ import annotations

import math
import sys
import time

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
