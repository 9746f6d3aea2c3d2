"""Learning curves for ``seqd eval --curve``: bits per byte along each file, as a CSV table or a picture.

A curve is kept as the code length of each block of the file (``Curve``):
the blocks are small enough for a few thousand points per file whatever its
size.  Two lines are drawn from it: the rate over a sliding stretch of about
a fiftieth of the file (what the learner pays *now*), and the running mean
(what the file costs so far, whose last value is the file's bits per byte).
Reference lines (``--reference xz=0.54``) put peers' rates beside them.

The CSV needs nothing beyond the standard library; PNG and SVG are drawn with
Matplotlib, an optional dependency (``pip install 'seqd[plot]'``), imported
only when a picture is asked for.
"""

from __future__ import annotations

import csv
import importlib.util
import math
from dataclasses import dataclass, field
from pathlib import Path

MAX_POINTS = 2000  # blocks per file: a curve's resolution
MIN_BLOCK = 256  # bytes
SLIDING_SHARE = 50  # the sliding rate covers about 1/SLIDING_SHARE of the file
FORMATS = (".csv", ".png", ".svg")


@dataclass
class Curve:
    """The code length of each ``block`` bytes of one file (the last block may be shorter)."""

    name: str
    size: int
    block: int
    bits: list[float] = field(default_factory=list)
    _pending: float = 0.0
    _filled: int = 0

    @classmethod
    def for_size(cls, name: str, size: int) -> "Curve":
        return cls(name, size, max(MIN_BLOCK, math.ceil(size / MAX_POINTS)))

    def add(self, bits) -> None:
        """The code lengths of the next symbols, in order (a NumPy array or a list)."""
        at = 0
        n = len(bits)
        while at < n:
            take = min(self.block - self._filled, n - at)
            self._pending += float(bits[at:at + take].sum()) if hasattr(bits, "sum") else sum(bits[at:at + take])
            self._filled += take
            at += take
            if self._filled == self.block:
                self._close()

    def finish(self) -> "Curve":
        if self._filled:
            self._close()
        return self

    def _close(self) -> None:
        self.bits.append(self._pending)
        self._pending, self._filled = 0.0, 0

    def points(self) -> list[tuple[int, float, float]]:
        """(position after the block, bits per byte over the sliding stretch ending there, running mean)."""
        ends = [min((i + 1) * self.block, self.size) for i in range(len(self.bits))]
        span = max(1, round(len(self.bits) / SLIDING_SHARE))
        out, total, window = [], 0.0, 0.0
        for i, b in enumerate(self.bits):
            total += b
            window += b
            if i >= span:
                window -= self.bits[i - span]
            first = ends[i - span] if i >= span else 0
            out.append((ends[i], window / (ends[i] - first), total / ends[i]))
        return out


def parse_reference(text: str) -> tuple[str, float]:
    """``NAME=BITS_PER_BYTE`` (an argparse type)."""
    import argparse

    name, sep, value = text.partition("=")
    try:
        rate = float(value)
    except ValueError:
        rate = math.nan
    if not sep or not name or not math.isfinite(rate) or rate < 0:
        raise argparse.ArgumentTypeError(f"expected NAME=BITS_PER_BYTE (e.g. xz=0.54), got {text!r}")
    return name, rate


def check_target(path: Path) -> None:
    """Fail before the work, not after: a known format, a folder that exists, and Matplotlib for pictures."""
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"--curve {path}: the file's suffix says its format: one of {', '.join(FORMATS)}")
    if not path.parent.is_dir():
        raise ValueError(f"--curve {path}: no folder {path.parent}")
    if path.suffix.lower() != ".csv" and importlib.util.find_spec("matplotlib") is None:
        raise ValueError(f"--curve {path}: drawing a picture needs Matplotlib: pip install 'seqd[plot]' "
                         "(or ask for a .csv)")


def write(path: Path, curves: list[Curve], references: list[tuple[str, float]], title: str) -> None:
    if path.suffix.lower() == ".csv":
        with open(path, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["file", "position", "bits_per_byte_sliding", "bits_per_byte_so_far"])
            for c in curves:
                for position, sliding, mean in c.points():
                    out.writerow([c.name, position, f"{sliding:.6f}", f"{mean:.6f}"])
        return
    figure(curves, references, title).savefig(path, dpi=110)


def figure(curves: list[Curve], references: list[tuple[str, float]], title: str,
           per_file: dict[str, list[tuple[str, float]]] | None = None):
    """The curves as a Matplotlib figure: one panel per file, a shared vertical scale; ``references`` are
    drawn in every panel, ``per_file[name]`` in that file's only (a peer's figure for that file)."""
    per_file = per_file or {}
    import matplotlib

    matplotlib.use("Agg")  # files only: no window, no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter

    cols = min(3, len(curves))
    rows = math.ceil(len(curves) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.2 * rows), squeeze=False, sharey=True)
    # the scale shows where the learner settles: its first symbols, at several bits each, run off the top
    sliding = sorted(p[1] for c in curves for p in c.points() if math.isfinite(p[1]))
    settled = sliding[int(0.95 * (len(sliding) - 1))] if sliding else 1.0
    top = max([r for _, r in references] + [r for refs in per_file.values() for _, r in refs] + [settled, 0.1]) * 1.3
    colours = {name: f"C{(i + 1) % 10}" for i, name in
               enumerate(dict.fromkeys([n for n, _ in references] + [n for refs in per_file.values() for n, _ in refs]))}
    for ax, c in zip(axes.flat, curves):
        points = c.points()
        x = [p[0] for p in points]
        ax.plot(x, [p[1] for p in points], lw=0.9, color="tab:blue", label="sliding (1/50 of the file)")
        ax.plot(x, [p[2] for p in points], lw=1.6, color="black", label="so far")
        for name, rate in references + per_file.get(c.name, []):
            ax.axhline(rate, ls="--", lw=0.9, color=colours[name], label=name)
        ax.set_title(f"{c.name}: {points[-1][2]:.3f} bits/byte" if points else c.name, fontsize=9)
        ax.xaxis.set_major_formatter(EngFormatter(unit="B"))
        ax.set_ylim(0, min(8.0, top))
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("bits per byte")
    for ax in axes.flat[len(curves):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7, loc="upper right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
