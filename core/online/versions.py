"""The GLNN byte model's versions, and the ``glnn`` preset's: two tables of ``kit/versions.py``'s kind.

Each row of :data:`BYTE_MODEL` is a preset of the byte model, frozen once released: its name, the seqd release
that made it the default of ``OnlineConfig.bytes_default()``, and the settings it changed from the row before.
From it derive ``.sqd`` files' presets (``core/container.py``, through the model's face), the earlier models a
daemon recognises a ``bytes`` stream of this model by (``daemon/models.py``, ``EARLIER``: ``bytes-2`` on, as
``bytes-1`` was format 1's and never a stream's) and ``UNWRITTEN``, what a setting meant before seqd wrote it
(``OnlineConfig.from_settings``).  :data:`GLNN` is the same for the ``glnn`` preset (``OnlineConfig()``, seed
000's GLNN alone), over the settings it changed.  Since seqd 0.22 the ``bytes`` preset is the bitwise model's
(``bits/versions.py``); this model learns on for the streams and decodes the files made with it, and gets no new
row.  This module reads no other part of seqd but the table's type: the configuration imports it.
"""

from __future__ import annotations

from ..kit.versions import Version, VersionTable

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

BYTE_MODEL = VersionTable((
    Version("bytes-1", "0.1", _FIRST, "4 recurrent units and the context units, exp/log/tanh from the C library"),
    Version("bytes-2", "0.2", {"numerics": "ieee"}, "seqd's own exp/log/tanh: the same bits on every machine"),
    Version("bytes-3", "0.3", {"selected_weights": True}, "the mixer: weights shared across symbols"),
    Version("bytes-4", "0.4", {"field_column_context": True, "indirect_context": True,
                               "context_orders": [1, 2, 3, 4, 6, 12, 16]},
            "the field column and indirect sources, order 8 dropped"),
    Version("bytes-5", "0.5", {"field_selected_weights": True}, "the mixer's field-selected weights"),
    Version("bytes-6", "0.6", {"number_context": True}, "the number source"),
    Version("bytes-7", "0.7", {"order2_selected_weights": True}, "the mixer's order-2-selected weights"),
    Version("bytes-8", "0.8", {"field_selecting_fields": 16, "field_selecting_positions": 8},
            "the field set's rows by field (0-14, then the rest) and position in it (0-6, then the rest)"),
    Version("bytes-9", "0.9", {"unit_selected_weights": True, "probability_maps": True},
            "the unit-selected weights and the probability maps"),
    Version("bytes-10", "0.13", {"close_escape": True}, "the escape closed when the alphabet fills"),
    Version("bytes-11", "0.17", {"history_bits": 26, "match_bits": 22, "context_bits": 18, "table_growth": True},
            "64 MiB of history, and tables that grow, up to 2^18 slots a source"),
    Version("bytes-12", "0.19", {"context_step_floor": 1e-5},
            "a voted symbol predicted at under about 10^-5 leaves its context weights as they are"),
),
    # settings seqd did not always write (the release that first did, for each): before, they had the value the
    # first preset gives them.  Settings whose OnlineConfig default is what seqd did before them (the sources, the
    # mixer's sets, the maps) need no entry.
    added={"transition_prior": "0.11", "writing_evidence_floor": "0.11", "credit_horizon": "0.12",
           "close_escape": "0.13", "table_growth": "0.17", "context_step_floor": "0.19"},
    served_from=1)  # bytes-1 was format 1's, never a stream's

# The glnn preset (OnlineConfig(), seed 000's GLNN alone), over the settings it changed since seqd 0.10
GLNN = VersionTable((
    Version("glnn-0.10", "0.1", {"close_escape": False, "credit_horizon": 0, "metric_prior": 1.0,
                                 "transition_prior": False, "writing_evidence_floor": 1.0, "transition_rate": None},
            "seqd 0.10's: the prior's mass on tau without its pull, the writing sums by the clock, eta_tau from 1/N"),
    Version("glnn-0.11", "0.11", {"metric_prior": 4.0, "transition_prior": True, "writing_evidence_floor": 0.25,
                                  "transition_rate": 1.0}, "the pull of the metric prior, the writing evidence floor"),
    Version("glnn-0.12", "0.12", {"credit_horizon": 10}, "credit beyond the window"),
    Version("glnn-0.13", "0.13", {"close_escape": True}, "the escape closed when the alphabet fills"),
))

PRESETS, PRESET, UNWRITTEN = BYTE_MODEL.presets, BYTE_MODEL.preset, BYTE_MODEL.unwritten
