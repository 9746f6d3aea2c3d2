"""The bitwise model's versions: one table of ``kit/versions.py``'s kind.

Each row of :data:`BITWISE_MODEL` is a preset, frozen once released: its name, the seqd release that made it
``BitsConfig()``, and the settings it changed from the row before.  From it derive a format-4 ``.sqd`` file's
presets (``core/container.py``, through the model's face), the earlier models a daemon recognises a stream of
this model by (``daemon/models.py``, ``EARLIER``), and ``UNWRITTEN``, what a setting seqd did not write yet meant:
a snapshot, ``stream.json`` or header without it has the first row's value (``BitsConfig.from_settings``).  A new
bitwise model is a new row (``tests/test_container.py`` checks that the last row is ``BitsConfig()``).  This
module reads no other part of seqd but the table's type.
"""

from __future__ import annotations

from ..kit.versions import Version, VersionTable

_FIRST = {
    "alphabet_cap": 256, "table_bits": 18, "history_bits": 22, "match_bits": 20, "rate": 0.02, "rate_floor": 0.002,
    "rate_bits": 200000.0, "slot_limit": 60, "history_limit": 1023, "apm_rate": 0.02, "apm_weight": 0.5, "seed": 0,
    # settings seqd 0.20 did not have: what its model was
    "revision": 1, "apm2_bits": 18, "runs": False, "units": 0,
    "unit_degree": 3, "unit_window": 16, "unit_input_scale": 16.0, "unit_writing_discount": 0.000244140625,
    "unit_writing_prior": 1.0, "unit_metric_discount": 0.0009765625, "unit_metric_prior": 1.0,
    # nor did seqd 0.21
    "table_growth": False, "table_ways": 1, "table_fill": 4, "number_bits": 16,
}

BITWISE_MODEL = VersionTable((
    Version("bitwise-1", "0.20", _FIRST, "12 context sources, a match and a number model, four mixers, two maps"),
    Version("bitwise-2", "0.21", {"revision": 2, "apm2_bits": 16, "runs": True, "units": 4},
            "each source's run votes; 4 recurrent units (the GLNN, its writing layer the byte's tree); three "
            "mixers, their dot products in four lanes; squash by a table; the order-2 map's rows in blocks"),
    Version("bitwise-3", "0.22", {"revision": 3, "table_growth": True, "table_ways": 4, "history_bits": 26,
                                  "match_bits": 22},
            "lifelong: 64 MiB of history; tables that start small and grow with the stream, the context "
            "sources' in sets of 4 buckets; maps of probabilities; the default byte model"),
),
    # settings seqd did not always write (the release that first did, for each): a record without one means the
    # first row's value
    added={**{name: "0.21" for name in ("revision", "apm2_bits", "runs", "units", "unit_degree", "unit_window",
                                        "unit_input_scale", "unit_writing_discount", "unit_writing_prior",
                                        "unit_metric_discount", "unit_metric_prior")},
           **{name: "0.22" for name in ("table_growth", "table_ways", "table_fill", "number_bits")}})

PRESETS, PRESET, UNWRITTEN = BITWISE_MODEL.presets, BITWISE_MODEL.preset, BITWISE_MODEL.unwritten
