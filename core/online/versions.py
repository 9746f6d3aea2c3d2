"""The byte model's versions: one table, from which every reader of an old stream, snapshot or file learns what
its model was.

Each row of :data:`BYTE_MODEL` is a preset, frozen once released: its name, the seqd release that made it the
default of ``OnlineConfig.bytes_default()`` (``seqd compress``, and a daemon stream created as ``bytes``), and
the settings it changed from the row before.  Three things derive from it:

* :data:`PRESETS`, every preset's whole settings: a ``.sqd`` header names its preset and stores only the
  settings that differ (``core/container.py``), so a file decodes with the model that wrote it forever;
* :func:`earlier_byte_models`, each earlier default as changes to today's: a daemon recognises a stream an
  older seqd created as ``bytes`` (``daemon/models.py``, ``EARLIER``);
* :data:`UNWRITTEN`, what a setting meant before seqd wrote it: a snapshot, ``stream.json`` or header without
  one of :data:`ADDED_SETTINGS` has the value the first preset gives it (``OnlineConfig.from_settings``).

A new byte model is a new row (``tests/test_container.py`` checks that the last row is
``OnlineConfig.bytes_default()``), and a setting seqd starts writing joins :data:`ADDED_SETTINGS` with its old
meaning in the first row.  This module reads no other part of seqd: the configuration imports it.
"""

from __future__ import annotations

from typing import NamedTuple


class ByteModel(NamedTuple):
    preset: str  # the name a .sqd header gives it
    release: str  # the seqd release that made it the default
    changes: dict  # settings that differ from the row before (the first row: all of them)
    what: str  # the change, in words


_FIRST = {
    "activation": "tanh", "alphabet_cap": 256, "column_context": True, "context_bits": 16, "context_entries": 16,
    "context_orders": [1, 2, 3, 4, 6, 8, 12, 16], "context_prior": 10.0, "context_weight": 0.3,
    "count_limit": 127, "degree": 3, "history_bits": 20, "input_scale": 16.0, "match_bits": 18, "match_min": 6,
    "max_transition_rate": 1.0, "method": "rbpm", "metric_discount": 0.0009765625, "metric_prior": 1.0,
    "model": "glnn", "rate_growth": 1.1, "rate_shrink": 0.5, "seed": 0, "transition_rate": None, "units": 4,
    "window": 16, "word_context": True, "writing_discount": 0.000244140625, "writing_prior": 1.0,
    "writing_rate": 1.0, "numerics": "libm",  # format 1 had no numerics setting: it used the C library's
    "selected_weights": False,  # nor the mixer (named here since bytes-3 made it the default)
    "selected_prior": 100.0, "selected_step": "diagonal", "selected_rate": 1.0, "selected_discount": 0.000244140625,
    "field_column_context": False, "indirect_context": False,  # nor the field column and indirect sources
    "field_selected_weights": False,  # nor the mixer's field-selected weights
    "number_context": False,  # nor the number source
    "order2_selected_weights": False,  # nor the mixer's order-2-selected weights
    "field_selecting_fields": 1, "field_selecting_positions": 4,  # the field set's rows of bytes-5 to bytes-7
    "unit_selected_weights": False, "probability_maps": False,  # nor the unit set and the probability maps
    "transition_prior": False,  # nor the pull of the metric prior on the units' transition weights
    "writing_evidence_floor": 1.0,  # its writing sums were discounted by the clock
    "credit_horizon": 0,  # nor credit beyond the window for its units' transitions
    "close_escape": False,  # the escape kept its share until the window that filled the alphabet ended
    "table_growth": False,  # its tables had their full size from the start, with seqd 0.16's slots and tags
    "context_step_floor": 0.0,  # every symbol a context voted for stepped its context weights
}

BYTE_MODEL = (
    ByteModel("bytes-1", "0.1", _FIRST, "4 recurrent units and the context units, exp/log/tanh from the C library"),
    ByteModel("bytes-2", "0.2", {"numerics": "ieee"}, "seqd's own exp/log/tanh: the same bits on every machine"),
    ByteModel("bytes-3", "0.3", {"selected_weights": True}, "the mixer: weights shared across symbols"),
    ByteModel("bytes-4", "0.4", {"field_column_context": True, "indirect_context": True,
                                 "context_orders": [1, 2, 3, 4, 6, 12, 16]},
              "the field column and indirect sources, order 8 dropped"),
    ByteModel("bytes-5", "0.5", {"field_selected_weights": True}, "the mixer's field-selected weights"),
    ByteModel("bytes-6", "0.6", {"number_context": True}, "the number source"),
    ByteModel("bytes-7", "0.7", {"order2_selected_weights": True}, "the mixer's order-2-selected weights"),
    ByteModel("bytes-8", "0.8", {"field_selecting_fields": 16, "field_selecting_positions": 8},
              "the field set's rows by field (0-14, then the rest) and position in it (0-6, then the rest)"),
    ByteModel("bytes-9", "0.9", {"unit_selected_weights": True, "probability_maps": True},
              "the unit-selected weights and the probability maps"),
    ByteModel("bytes-10", "0.13", {"close_escape": True}, "the escape closed when the alphabet fills"),
    ByteModel("bytes-11", "0.17", {"history_bits": 26, "match_bits": 22, "context_bits": 18, "table_growth": True},
              "64 MiB of history, and tables that grow, up to 2^18 slots a source"),
    ByteModel("bytes-12", "0.19", {"context_step_floor": 1e-5},
              "a voted symbol predicted at under about 10^-5 leaves its context weights as they are"),
)

# settings seqd did not always write (the release that first did, for each): before, they had the value the
# first preset gives them, which is what a record without them means.  Settings whose OnlineConfig default is
# what seqd did before them (the sources, the mixer's sets, the maps) need no entry.
ADDED_SETTINGS = {"transition_prior": "0.11", "writing_evidence_floor": "0.11", "credit_horizon": "0.12",
                  "close_escape": "0.13", "table_growth": "0.17", "context_step_floor": "0.19"}
UNWRITTEN = {name: _FIRST[name] for name in ADDED_SETTINGS}


def _cumulative() -> dict[str, dict]:
    presets, settings = {}, {}
    for row in BYTE_MODEL:
        settings = {**settings, **row.changes}
        presets[row.preset] = settings
    return presets


PRESETS = _cumulative()  # every preset's whole settings, oldest first
PRESET = BYTE_MODEL[-1].preset  # today's: what OnlineConfig.bytes_default() is


def earlier_byte_models() -> list[dict]:
    """Each earlier default the daemon served (bytes-2 on; bytes-1 was format 1's, never a stream's), newest first,
    as the settings in which it differs from today's."""
    now = PRESETS[PRESET]
    return [{k: v for k, v in PRESETS[row.preset].items() if v != now[k]} for row in reversed(BYTE_MODEL[1:-1])]
