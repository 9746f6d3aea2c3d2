"""``seqd decompress -l``: what a ``.sqd`` file holds, read from its records without decoding a byte.

The block records give each block's original and payload lengths and the end
record the total original length (``docs/format.md``), so a listing costs a
read of the file and no model.  The lengths are checked against each other:
a file whose end record disagrees with its blocks, or that has no end record,
is reported as damaged (``-t`` decodes and checks every checksum).
"""

from __future__ import annotations

import dataclasses
import json
import sys

from seqd.core import container
from seqd.core.container import End, FormatError, Header
from seqd.core.limits import byte_face

from ._decode import Decoded, Reader, containers
from ._files import SUFFIX
from ._report import FileReport


def scan(reader: Reader) -> Decoded:
    """The sizes and blocks of every container in ``reader``, from their records alone."""
    result = Decoded()
    for start, header in containers(reader):
        result.header = result.header or header
        result.containers += 1
        length = 0
        for record in container.read_records(reader, header, start + header.size):
            if isinstance(record, End):
                if record.total_length != length:
                    raise FormatError(f"the end record says {record.total_length} bytes, the blocks hold "
                                      f"{length} (damaged end record)")
                break
            result.blocks += 1
            length += record.length
        result.length += length
    return result


def model_name(header: Header) -> str:
    """The file's preset ('bitwise-3'), its preset and this release's level ('bitwise-3 fast'), or its preset and
    how many settings differ ('bitwise-3+2 settings')."""
    face = byte_face(header.config)
    preset = face.preset(header.preset)
    if header.config == preset:
        return header.preset
    if header.preset == face.versions.preset:  # this release's levels of its newest preset; they may be re-tuned
        for name, changes in face.levels.items():
            if changes and header.config == face.preset(**changes):
                return f"{header.preset} {name}"
    settings = json.loads(json.dumps(dataclasses.asdict(header.config)))
    reference = json.loads(json.dumps(dataclasses.asdict(preset)))
    changed = sum(reference[k] != v for k, v in settings.items())
    return f"{header.preset}+{changed} settings"


def writer_version(header: Header) -> str:
    """The seqd that wrote the file, from the header's ``build`` ('seqd 0.1.0, numba …' → 'seqd 0.1.0')."""
    return header.build.split(",")[0].strip() or "unknown"


COLUMNS = ("compressed", "uncompressed", "bits/byte", "blocks", "model", "written by", "name")


def print_table(reports: list[FileReport]) -> None:
    """gzip -l's table: one row per listed file, and a total row when there are several."""
    listed = [r for r in reports if r.status == "ok"]
    rows = [COLUMNS]
    for r in listed:
        rows.append((str(r.bytes_in), str(r.bytes_out), _rate(r.bits_per_byte), str(r.blocks), r.model or "",
                     r.written_by or "", _uncompressed_name(r.input)))
    if len(listed) > 1:
        packed, plain = sum(r.bytes_in for r in listed), sum(r.bytes_out for r in listed)
        rows.append((str(packed), str(plain), _rate(8 * packed / plain if plain else None),
                     str(sum(r.blocks for r in listed)), "", "", "(totals)"))
    if len(rows) == 1:
        return
    widths = [max(len(row[k]) for row in rows) for k in range(len(COLUMNS))]
    for row in rows:
        cells = [cell.rjust(w) if k < 4 else cell.ljust(w) for k, (cell, w) in enumerate(zip(row, widths))]
        print("  ".join(cells).rstrip(), file=sys.stdout)


def _uncompressed_name(name: str) -> str:
    """The name the file decompresses to, as gzip -l shows it: ``app.log`` for ``app.log.sqd``; a pipe's is
    ``-``, and a name without the suffix is shown as it is."""
    return name[:-len(SUFFIX)] if name.endswith(SUFFIX) and name != SUFFIX else name


def _rate(bits: float | None) -> str:
    return "—" if bits is None else f"{bits:.3f}"
