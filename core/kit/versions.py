"""A model's table of versions: each row a preset, frozen once released, and what every reader derives from it.

A byte model changes from release to release, while every file, snapshot
and stream an older release made keeps the model that made it.  So each
model keeps one table (``online/versions.py``, ``bits/versions.py``): a row
per preset, oldest first, holding the settings that differ from the row
before (the first row: all of them).  From the table derive

* :attr:`VersionTable.presets`, every preset's whole settings: a ``.sqd``
  header names its preset and stores only the settings that differ;
* :meth:`VersionTable.earlier`, each earlier row as the settings in which it
  differs from today's: a daemon recognises a stream an older seqd created
  with the same preset name (``daemon/models.py``, ``EARLIER``);
* :attr:`VersionTable.unwritten`, what a setting meant before seqd wrote
  it: a snapshot, ``stream.json`` or header without one of the table's
  added settings has the value the first row gives it.

A new model is a new row; the last row is what the model's configuration
is today (each model's tests check it).  This module reads no other part of
seqd, so a configuration can import its table.
"""

from __future__ import annotations

from typing import NamedTuple


class Version(NamedTuple):
    """One row: a preset of a model."""

    preset: str  # the name a .sqd header or a stream gives it
    release: str  # the seqd release that made it today's
    changes: dict  # settings that differ from the row before (the first row: all of them)
    what: str  # the change, in words


class VersionTable:
    """A model's presets in the order they were released (:mod:`versions`' docstring).

    ``added`` names the settings seqd did not always write, each with the release that first did: a record
    without one means the first row's value.  ``served_from`` is the first row a daemon ever served (older rows
    were only ever in files), so :meth:`earlier` stops there.
    """

    def __init__(self, rows: tuple[Version, ...], added: dict[str, str] | None = None, served_from: int = 0):
        self.rows = rows
        self.added = dict(added or {})
        self.served_from = served_from
        self.presets: dict[str, dict] = {}  # every preset's whole settings, oldest first
        settings: dict = {}
        for row in rows:
            settings = {**settings, **row.changes}
            self.presets[row.preset] = settings
        self.preset = rows[-1].preset  # today's
        self.unwritten = {name: rows[0].changes[name] for name in self.added}

    def earlier(self) -> list[dict]:
        """Each earlier row a daemon served (newest first), as the settings in which it differs from today's."""
        now = self.presets[self.preset]
        return [{k: v for k, v in self.presets[row.preset].items() if v != now.get(k, v)}
                for row in reversed(self.rows[self.served_from:-1])]

    def release_of(self, preset: str) -> str:
        """The seqd release that made ``preset`` today's."""
        for row in self.rows:
            if row.preset == preset:
                return row.release
        raise KeyError(preset)
