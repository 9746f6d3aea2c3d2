"""The bitwise model's versions: one table, from which every reader of an old stream, snapshot or file learns
what its model was (the byte model's is ``online/versions.py``, of the same shape).

Each row of :data:`BITWISE_MODEL` is a preset, frozen once released: its name, the seqd release that made it
``BitsConfig()``, and the settings it changed from the row before.  From it derive :data:`PRESETS` (a format-4
``.sqd`` header names its preset and stores the settings that differ, ``core/container.py``), the earlier
models a daemon recognises a ``bitwise`` stream by (``daemon/models.py``, ``EARLIER``), and :data:`UNWRITTEN`,
what a setting seqd did not write yet meant: a snapshot, ``stream.json`` or header without it has the first
row's value (``BitsConfig.from_settings``).  A new bitwise model is a new row (``tests/test_container.py``
checks that the last row is ``BitsConfig()``).  This module reads no other part of seqd.
"""

from __future__ import annotations

from typing import NamedTuple


class BitwiseModel(NamedTuple):
    preset: str  # the name a .sqd header gives it
    release: str  # the seqd release that made it BitsConfig()
    changes: dict  # settings that differ from the row before (the first row: all of them)
    what: str  # the change, in words


_FIRST = {
    "alphabet_cap": 256, "table_bits": 18, "history_bits": 22, "match_bits": 20, "rate": 0.02, "rate_floor": 0.002,
    "rate_bits": 200000.0, "slot_limit": 60, "history_limit": 1023, "apm_rate": 0.02, "apm_weight": 0.5, "seed": 0,
    # settings seqd 0.20 did not have: what its model was
    "revision": 1, "apm2_bits": 18, "runs": False, "units": 0,
    "unit_degree": 3, "unit_window": 16, "unit_input_scale": 16.0, "unit_writing_discount": 0.000244140625,
    "unit_writing_prior": 1.0, "unit_metric_discount": 0.0009765625, "unit_metric_prior": 1.0,
}

BITWISE_MODEL = (
    BitwiseModel("bitwise-1", "0.20", _FIRST, "12 context sources, a match and a number model, four mixers, two maps"),
    BitwiseModel("bitwise-2", "0.21", {"revision": 2, "apm2_bits": 16, "runs": True, "units": 4},
                 "each source's run votes; 4 recurrent units (the GLNN, its writing layer the byte's tree); three "
                 "mixers, their dot products in four lanes; squash by a table; the order-2 map's rows in blocks"),
)

# settings seqd did not always write (the release that first did, for each): a record without one means the
# first row's value
ADDED_SETTINGS = {name: "0.21" for name in ("revision", "apm2_bits", "runs", "units", "unit_degree", "unit_window",
                                            "unit_input_scale", "unit_writing_discount", "unit_writing_prior",
                                            "unit_metric_discount", "unit_metric_prior")}
UNWRITTEN = {name: _FIRST[name] for name in ADDED_SETTINGS}


def _cumulative() -> dict[str, dict]:
    presets, settings = {}, {}
    for row in BITWISE_MODEL:
        settings = {**settings, **row.changes}
        presets[row.preset] = settings
    return presets


PRESETS = _cumulative()  # every preset's whole settings, oldest first
PRESET = BITWISE_MODEL[-1].preset  # today's: what BitsConfig() is


def earlier_bitwise_models() -> list[dict]:
    """Each earlier BitsConfig() (newest first) as the settings in which it differs from today's."""
    now = PRESETS[PRESET]
    return [{k: v for k, v in PRESETS[row.preset].items() if v != now[k]} for row in reversed(BITWISE_MODEL[:-1])]
