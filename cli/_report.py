"""What ``seqd compress`` / ``decompress`` say about each file: one-line messages, ``-v``, ``--json``, the exit code.

Every mode (compress, decompress, test, list) reports each file as one
:class:`FileReport`, so ``--json`` has one shape for all of them::

    {"files": [{"input": ..., "output": ..., "bytes_in": ..., "bytes_out": ...,
                "bits_per_byte": ..., "blocks": ..., "model": ..., "written_by": ...,
                "seconds": ..., "cpu_seconds": ..., "status": "ok" | "error" | "skipped",
                "error": ... | null, "warnings": [...]}],
     "exit": N}

``bytes_in`` and ``bytes_out`` are what the command read and wrote (for
test and list, ``bytes_out`` is the original length, not written);
``bits_per_byte`` is always the compressed size in bits per original byte.
The exit code is gzip's: 1 if any file had an error, else 2 if any was
skipped or warned about, else 0.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field

OK, ERROR, WARNING = 0, 1, 2


@dataclass
class FileReport:
    input: str
    output: str | None = None
    bytes_in: int | None = None
    bytes_out: int | None = None
    compressed: bool = True  # bytes_out is the compressed side (compress), else bytes_in is
    blocks: int | None = None
    model: str | None = None
    written_by: str | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    status: str = "ok"
    error: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def bits_per_byte(self) -> float | None:
        packed, plain = (self.bytes_out, self.bytes_in) if self.compressed else (self.bytes_in, self.bytes_out)
        return 8 * packed / plain if packed is not None and plain else None

    def as_json(self) -> dict:
        d = dataclasses.asdict(self)
        del d["compressed"]
        keys = list(d)
        keys.insert(keys.index("bytes_out") + 1, "bits_per_byte")
        d["bits_per_byte"] = self.bits_per_byte
        return {k: d[k] for k in keys}

    @property
    def code(self) -> int:
        if self.status == "error":
            return ERROR
        return WARNING if self.status == "skipped" or self.warnings else OK


def exit_code(reports: list[FileReport]) -> int:
    """gzip's rule over several files: an error wins over a warning, which wins over success."""
    codes = {r.code for r in reports}
    return ERROR if ERROR in codes else WARNING if WARNING in codes else OK


class Messages:
    """One line per problem on standard error, ``seqd compress: FILE: what (what to do)``; ``-q`` hides warnings."""

    def __init__(self, command: str, quiet: bool):
        self.prefix, self.quiet = f"seqd {command}", quiet

    def error(self, text: str) -> None:
        print(f"{self.prefix}: {text}", file=sys.stderr)

    def warning(self, text: str) -> None:
        if not self.quiet:
            print(f"{self.prefix}: {text}", file=sys.stderr)


def verbose_line(mode: str, r: FileReport, replaced: bool) -> str:
    """``-v``'s line for one successful file, as gzip's ``-v`` reports it (``replaced``: the input was removed)."""
    rate = f"{r.bits_per_byte:.3f} bits/byte" if r.bits_per_byte is not None else "empty"
    if mode == "test":
        return f"{r.input}: OK ({r.bytes_out} bytes, {r.blocks} block{'' if r.blocks == 1 else 's'}, {rate})"
    if r.output in (None, "-"):
        return f"{r.input}: {rate}"
    return f"{r.input}: {rate} -- {'replaced with' if replaced else 'created'} {r.output}"


def dump_json(reports: list[FileReport], code: int, to_stderr: bool) -> None:
    out = sys.stderr if to_stderr else sys.stdout
    json.dump({"files": [r.as_json() for r in reports], "exit": code}, out, indent=1)
    out.write("\n")
    out.flush()
